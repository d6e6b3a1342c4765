/**
 * The pino logger factory. Every logger of dssync comes from here so that redaction of
 * secrets is applied in one place.
 */
import { pino, type Logger, type LoggerOptions, type DestinationStream } from 'pino';
import pinoPretty from 'pino-pretty';

export type { Logger };

/**
 * Paths pino must censor. pino's redaction is case-sensitive, so both spellings of the
 * header are listed.
 */
export const REDACT_PATHS = [
  'token',
  'accessToken',
  'authorization',
  'Authorization',
  'headers.authorization',
  'headers.Authorization',
  'req.headers.authorization',
  'req.headers.Authorization',
  'config.token',
  '*.token',
  '*.accessToken',
];

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

export interface CreateLoggerOptions {
  level?: LogLevel;
  /** Pretty, human output (used on a TTY). JSON lines otherwise (journald). */
  pretty?: boolean;
  /** Where to write; defaults to stdout. Tests pass a stream to capture lines. */
  destination?: DestinationStream;
  name?: string;
}

export function createLogger(opts: CreateLoggerOptions = {}): Logger {
  const options: LoggerOptions = {
    level: opts.level ?? 'info',
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    base: opts.name ? { name: opts.name } : { pid: process.pid },
    timestamp: pino.stdTimeFunctions.isoTime,
  };
  if (opts.destination) return pino(options, opts.destination);
  if (opts.pretty) {
    // pino-pretty synchronously in this thread: a worker transport loses lines on exit.
    return pino(options, prettyStream());
  }
  return pino(options, pino.destination({ fd: 1, sync: true }));
}

function prettyStream(): DestinationStream {
  return pinoPretty({ colorize: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname', sync: true });
}

/** A logger that drops everything: for library code called without one. */
export const silentLogger: Logger = pino({ level: 'silent' });

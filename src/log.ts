/**
 * The pino logger factory. Every logger of dssync comes from here so that redaction of
 * secrets is applied in one place: the paths below by name, and every secret the process
 * knows (src/secrets.ts) by value in each line written, whatever field or message carries it.
 */
import { pino, type Logger, type LoggerOptions, type DestinationStream } from 'pino';
import { createRequire } from 'node:module';
import type PinoPretty from 'pino-pretty';
import { printable } from './printable.js';
import { scrub } from './secrets.js';

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
  /** Where to write; defaults to `fd`. Tests pass a stream to capture lines. */
  destination?: DestinationStream;
  /** 1 (stdout, the daemon's: journald) or 2 (stderr, `sync`'s: stdout has the summary). Default 1. */
  fd?: 1 | 2;
  name?: string;
  /** Records (their own fields, not the bindings) left out: e.g. what a report prints anyway. */
  omit?: ((fields: Readonly<Record<string, unknown>>) => boolean) | undefined;
}

export function createLogger(opts: CreateLoggerOptions = {}): Logger {
  const options: LoggerOptions = {
    level: opts.level ?? 'info',
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    base: opts.name ? { name: opts.name } : { pid: process.pid },
    timestamp: pino.stdTimeFunctions.isoTime,
  };
  // The finished line (JSON; the pretty stream parses it after this) loses every known secret.
  options.hooks = { streamWrite: scrub };
  const omit = opts.omit;
  if (omit) {
    options.hooks.logMethod = function logMethod(args, method) {
      const first: unknown = args[0];
      if (typeof first === 'object' && first !== null && omit(first as Record<string, unknown>)) return;
      method.apply(this, args);
    };
  }
  if (opts.destination) return pino(options, opts.destination);
  if (opts.pretty) {
    // pino-pretty synchronously in this thread: a worker transport loses lines on exit.
    return pino(options, prettyStream(opts.fd ?? 1));
  }
  return pino(options, pino.destination({ fd: opts.fd ?? 1, sync: true }));
}

/**
 * pino-pretty is loaded only for a terminal: JSON lines (journald, a sync piped or run by a
 * script) never use it, and its modules cost every start ~40 ms of CPU. A CommonJS package,
 * so loaded synchronously.
 */
function loadPinoPretty(): typeof PinoPretty {
  return createRequire(import.meta.url)('pino-pretty') as typeof PinoPretty;
}

function prettyStream(fd: 1 | 2): DestinationStream {
  const pinoPretty = loadPinoPretty();
  return pinoPretty({
    destination: fd,
    colorize: true,
    translateTime: 'SYS:HH:MM:ss.l',
    ignore: 'pid,hostname',
    sync: true,
    // One line per event (issue 14.14): pino-pretty's default prints a line per field.
    hideObject: true,
    messageFormat: (log, messageKey) => `${printable(String(log[messageKey] ?? ''))}${compactFields(log, messageKey)}`,
  });
}

/** Keys pino writes itself, shown by the line's head or not at all. */
const OWN_KEYS = new Set(['level', 'time', 'pid', 'hostname', 'v']);

/**
 * A record's fields as `key=value` on one line, for a terminal: the ones that say something
 * (a zero count, an empty list, a missing value say nothing), objects flattened (`a.b=1`),
 * control characters escaped so that a file name cannot draw on the terminal. Empty when
 * nothing is left. The JSON lines (not a terminal: journald) keep every field.
 */
export function compactFields(log: Record<string, unknown>, messageKey = 'msg'): string {
  const parts: string[] = [];
  const add = (key: string, value: unknown): void => {
    if (value === undefined || value === null || value === '' || value === 0) return;
    if (Array.isArray(value)) {
      if (value.length) parts.push(`${key}=${value.map((v) => text(typeof v === 'object' && v !== null ? JSON.stringify(v) : String(v))).join(',')}`);
      return;
    }
    if (typeof value === 'object') {
      for (const [k, v] of Object.entries(value)) add(`${key}.${k}`, v);
      return;
    }
    parts.push(`${key}=${text(String(value))}`);
  };
  for (const [k, v] of Object.entries(log)) if (!OWN_KEYS.has(k) && k !== messageKey) add(k, v);
  return parts.length ? `  ${parts.join(' ')}` : '';
}

function text(value: string): string {
  const safe = printable(value);
  return /[\s="]/.test(safe) ? `"${safe.replace(/"/g, '\\"')}"` : safe;
}

/** A logger that drops everything: for library code called without one. */
export const silentLogger: Logger = pino({ level: 'silent' });

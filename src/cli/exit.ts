/**
 * The one way from an error to an exit code and a message: describeFailure(), whose exit code
 * is the registry's (errors/codes.ts, through disposition()). app.ts applies it to whatever a
 * command throws; commands return or throw rather than call process.exit (the one exception:
 * a second stop signal to `run`, which must end a stop that hangs).
 */
import { connectProblem, isApiError } from '../api/errors.js';
import type { ErrorCode } from '../errors/codes.js';
import { disposition } from '../errors/disposition.js';
import { scrub } from '../secrets.js';
import { fdLimitAdvice, isFdExhaustion, openFileLimit } from './fd-limit.js';

/** Exit codes of the public interface (DESIGN §6; docs/cli.md, "Exit codes"). */
export const ExitCode = {
  OK: 0,
  /** Some work could not be done (service error, not found, file failures). */
  FAILURE: 1,
  /** Usage or configuration error. */
  USAGE: 2,
  /** The service refused the credentials (401/403). */
  AUTH: 3,
} as const;
export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode];

/** A command's own error: its code (the registry, errors/codes.ts) gives the exit code. */
export class CliError extends Error {
  override readonly name = 'CliError';
  constructor(
    message: string,
    readonly code: Extract<ErrorCode, 'E_FAILED' | 'E_USAGE'> = 'E_FAILED',
  ) {
    super(message);
  }
}

/** A usage or configuration error: exit 2. */
export function usageError(message: string): CliError {
  return new CliError(message, 'E_USAGE');
}

/**
 * Chooses the exit code and the one-line message for any error a command threw; no secret
 * the process knows survives in the message, whatever the error quoted (issue 24.5).
 */
export function describeFailure(err: unknown): { exitCode: ExitCode; message: string } {
  const d = failure(err);
  return { exitCode: d.exitCode, message: scrub(d.message) };
}

function failure(err: unknown): { exitCode: ExitCode; message: string } {
  // The exit code is the disposition's (errors/disposition.ts, the table in docs/cli.md);
  // this only words the message.
  const exitCode: ExitCode = disposition(err).exitCode;
  if (isApiError(err)) {
    // The token endpoint (or the token command) refused: its message names it and what it
    // said, its advice the settings to change; nothing about a token from DSSYNC_TOKEN.
    if (err.code === 'E_AUTH_REFUSED') return { exitCode, message: `${err.message}. ${err.advice ?? 'Check the credentials of "auth".'}` };
    if (exitCode === ExitCode.AUTH) {
      return {
        exitCode,
        message:
          `the service refused the credentials (HTTP ${err.status ?? '?'}): ${err.message}. ` +
          `Check the token (from ${err.tokenSource ?? 'DSSYNC_TOKEN, --token-file or tokenFile'}) and the organization id (--org, DSSYNC_ORG or "organizationId").`,
      };
    }
    // baseUrl leads nowhere the service answers: a configuration error, fixed in the message.
    if (err.code === 'E_WRONG_ADDRESS') return { exitCode, message: err.message };
    const where = err.status !== undefined ? `HTTP ${err.status}` : err.code;
    // Retries can take seconds: say so, or the wait before the message looks like a hang.
    const tries = err.attempts > 1 ? `, after ${err.attempts} attempts` : '';
    const hint = err.advice !== undefined ? `; ${err.advice}` : connectProblem(err) === undefined ? '' : '; is the service running, and is baseUrl right?';
    return { exitCode, message: `${err.message} (${where}${tries})${hint}` };
  }
  // Out of file descriptors: the limit is the cause, not the file that happened to fail.
  if (isFdExhaustion(err)) return { exitCode, message: `${err instanceof Error ? err.message : String(err)}: ${fdLimitAdvice(openFileLimit())}` };
  return { exitCode, message: err instanceof Error ? err.message : String(err) };
}

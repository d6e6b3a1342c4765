/**
 * Typed errors of the API client, with stable codes (in the manner of undici's errors).
 *
 * Every failure the client reports is an ApiError: callers branch on `code`, `retryable`
 * and `ambiguous`, never on message text. Messages never contain the access token: every
 * secret the process knows is scrubbed from them as they are made (src/secrets.ts), since a
 * message may quote a service answer that echoes the Authorization header (issue 24.5).
 */
import type { ErrorCode } from '../errors/codes.js';
import { scrub } from '../secrets.js';

/** The codes an ApiError carries: the registry's (errors/codes.ts says what each means). */
export type ApiErrorCode = ErrorCode;

export interface ApiErrorOptions {
  code: ApiErrorCode;
  message: string;
  /** HTTP status when the service answered; undefined for transport failures. */
  status?: number;
  method?: string;
  /** Path of the request, without query string or host. */
  path?: string;
  /** True when trying again later may succeed. */
  retryable?: boolean;
  /**
   * True when a non-idempotent request may have been carried out by the service even
   * though no answer was received (timeout or reset after the body was sent).
   */
  ambiguous?: boolean;
  /** Delay the service asked for (Retry-After), in milliseconds. */
  retryAfterMs?: number;
  /** Number of attempts made before giving up. */
  attempts?: number;
  /** The local file at fault (E_FILE_CHANGED, or a refusal of a one-file upload). */
  file?: string;
  /** Where the refused token came from (401/403), for the message: never the token. */
  tokenSource?: string | undefined;
  /** The settings to look at, when the failure points at one (a header refused...). */
  advice?: string | undefined;
  cause?: unknown;
}

export class ApiError extends Error {
  override readonly name = 'ApiError';
  readonly code: ApiErrorCode;
  readonly status: number | undefined;
  readonly method: string | undefined;
  readonly path: string | undefined;
  readonly retryable: boolean;
  readonly ambiguous: boolean;
  readonly retryAfterMs: number | undefined;
  attempts: number;
  readonly file: string | undefined;
  readonly tokenSource: string | undefined;
  readonly advice: string | undefined;

  constructor(opts: ApiErrorOptions) {
    super(scrub(opts.message), opts.cause === undefined ? undefined : { cause: opts.cause });
    this.code = opts.code;
    this.status = opts.status;
    this.method = opts.method;
    this.path = opts.path;
    this.retryable = opts.retryable ?? false;
    this.ambiguous = opts.ambiguous ?? false;
    this.retryAfterMs = opts.retryAfterMs;
    this.attempts = opts.attempts ?? 1;
    this.file = opts.file;
    this.tokenSource = opts.tokenSource;
    this.advice = opts.advice;
  }

  /** A plain object for logs and --json output (no stack, no cause chain, no secrets). */
  toJSON(): Record<string, unknown> {
    return {
      code: this.code,
      // Scrubbed again: a message may have been extended after construction.
      message: scrub(this.message),
      status: this.status,
      method: this.method,
      path: this.path,
      retryable: this.retryable,
      ambiguous: this.ambiguous,
      attempts: this.attempts,
      ...(this.file === undefined ? {} : { file: this.file }),
    };
  }
}

export function isApiError(e: unknown): e is ApiError {
  return e instanceof ApiError;
}

/** The request's answer, or undefined when what it names is gone (404); any other error is thrown. */
export async function unlessGone<T>(request: Promise<T>): Promise<T | undefined> {
  try {
    return await request;
  } catch (e) {
    if (!isApiError(e) || e.code !== 'E_NOT_FOUND') throw e;
    return undefined;
  }
}

/** Not an ApiError: a bug in the code that sent the request. Never retried. */
export function unexpectedError(e: unknown, method: string, path: string): ApiError {
  return new ApiError({ code: 'E_HTTP', message: `${method} ${path}: ${e instanceof Error ? e.message : String(e)}`, method, path, cause: e });
}

/** Maps an HTTP status to the stable code and whether it is worth retrying. */
export function classifyStatus(status: number): { code: ApiErrorCode; retryable: boolean } {
  if (status === 400 || status === 422) return { code: 'E_BAD_REQUEST', retryable: false };
  if (status === 401) return { code: 'E_UNAUTHORIZED', retryable: false };
  if (status === 403) return { code: 'E_FORBIDDEN', retryable: false };
  if (status === 404) return { code: 'E_NOT_FOUND', retryable: false };
  if (status === 408) return { code: 'E_SERVER', retryable: true };
  if (status === 409) return { code: 'E_CONFLICT', retryable: false };
  if (status === 413) return { code: 'E_PAYLOAD_TOO_LARGE', retryable: false };
  if (status === 415) return { code: 'E_UNSUPPORTED_TYPE', retryable: false };
  if (status === 429) return { code: 'E_RATE_LIMITED', retryable: true };
  if (status >= 500) return { code: 'E_SERVER', retryable: true };
  return { code: 'E_HTTP', retryable: false };
}

/** The system's words for why a connection could not be made, for an operator. */
export const CONNECT_PROBLEMS: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  ENOTFOUND: 'host name not found',
  EAI_AGAIN: 'host name lookup failed',
  UND_ERR_CONNECT_TIMEOUT: 'timed out connecting',
};

/**
 * Why a request could not reach the service ("connection refused"...), from the error's
 * cause; undefined when it reached it (an answer, a timeout waiting for one).
 */
export function connectProblem(e: ApiError): string | undefined {
  if (e.code !== 'E_CONNECTION' && e.code !== 'E_TIMEOUT') return undefined;
  if (e.ambiguous || e.status !== undefined) return undefined;
  const code = (e.cause as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' ? CONNECT_PROBLEMS[code] : undefined;
}

/**
 * `e` again with some fields changed (a file named, the token's source, advice, a code made precise), every other
 * field kept, and `e` as the cause: the one way an ApiError is copied, so no copy drops a
 * field another keeps (`ambiguous` or `retryAfterMs` lost on the way decide a retry).
 */
export function apiErrorWith(e: ApiError, patch: Partial<Omit<ApiErrorOptions, 'cause'>>): ApiError {
  const opts: ApiErrorOptions = { code: e.code, message: e.message, retryable: e.retryable, ambiguous: e.ambiguous, attempts: e.attempts, cause: e };
  if (e.status !== undefined) opts.status = e.status;
  if (e.method !== undefined) opts.method = e.method;
  if (e.path !== undefined) opts.path = e.path;
  if (e.retryAfterMs !== undefined) opts.retryAfterMs = e.retryAfterMs;
  if (e.file !== undefined) opts.file = e.file;
  if (e.tokenSource !== undefined) opts.tokenSource = e.tokenSource;
  if (e.advice !== undefined) opts.advice = e.advice;
  return new ApiError(Object.assign(opts, patch));
}

/**
 * A 400 to a GET: dssync's GETs carry no body, only headers and the paging it builds, so the
 * service is refusing a header, most likely the organization's. The message names the header sent and the settings.
 */
export function headerRefusedError(e: ApiError, organizationHeader: string): ApiError {
  if (e.advice !== undefined) return e;
  return apiErrorWith(e, {
    code: 'E_HEADER_REFUSED',
    advice:
      `a request without a body was refused, so a header was: check "organizationHeader" (dssync sends the organization id in ${organizationHeader}; ` +
      `set it to the header the service reads, e.g. X-Wikit-Organization-Id for Wikit Semantics, or DSSYNC_ORG_HEADER) and "organizationId"`,
  });
}

/**
 * The one retry policy of dssync (DESIGN §2, §3): which failures are worth another attempt,
 * and when a failed write must instead be reported as ambiguous. Pure.
 */
import { ApiError } from './errors.js';

/**
 * Transport failures that happen before a single byte of the request left this machine:
 * the service cannot have acted on the request, so even a create or upload may be resent.
 */
const NOTHING_SENT_CODES = new Set([
  'ECONNREFUSED',
  'UND_ERR_CONNECT_TIMEOUT',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ENETUNREACH',
  'EHOSTUNREACH',
  'EADDRNOTAVAIL',
]);

/** Statuses by which a service says "not now" before doing anything. */
const REFUSED_BEFORE_ACTING = new Set([429, 503]);

export type RetryDecision =
  | { retry: true; /** 429/503: the whole pacer should pause. */ throttle: boolean }
  | { retry: false; error: ApiError };

export function isThrottle(err: ApiError): boolean {
  return err.status !== undefined && REFUSED_BEFORE_ACTING.has(err.status);
}

/** True when the error proves the request never reached the service. */
export function nothingWasSent(err: ApiError): boolean {
  if (err.status !== undefined) return false;
  const cause = err.cause as { code?: unknown } | undefined;
  return typeof cause?.code === 'string' && NOTHING_SENT_CODES.has(cause.code);
}

/**
 * Decides what to do after a failed attempt. `idempotent` requests (GET, PUT, DELETE) are
 * retried on every transient failure. A create or upload is retried only when the service
 * certainly did not act on it (429/503, or nothing was sent); any other transient failure
 * becomes an ambiguous error that the caller resolves by listing before trying again.
 */
export function decideRetry(err: ApiError, idempotent: boolean): RetryDecision {
  if (err.code === 'E_ABORTED' || err.ambiguous || !err.retryable) return { retry: false, error: err };
  if (isThrottle(err)) return { retry: true, throttle: true };
  if (idempotent || nothingWasSent(err)) return { retry: true, throttle: false };
  return { retry: false, error: toAmbiguous(err) };
}

export function toAmbiguous(err: ApiError): ApiError {
  const what = err.status === undefined ? 'no answer was received' : `the service answered ${err.status}`;
  return new ApiError({
    code: err.code,
    message: `${err.message} (${what} after the request was sent: the service may have carried it out; list before trying again)`,
    status: err.status,
    method: err.method,
    path: err.path,
    retryable: true,
    ambiguous: true,
    retryAfterMs: err.retryAfterMs,
    attempts: err.attempts,
    cause: err.cause,
    ...(err.file === undefined ? {} : { file: err.file }),
  });
}

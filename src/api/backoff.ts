/**
 * Pure back-off arithmetic: how long to wait before trying again, and what a Retry-After
 * header asks for. No timers here; the pacer does the waiting.
 */

export interface BackoffOptions {
  /** Delay ceiling of the first retry, in ms. */
  baseMs: number;
  /** No delay ever exceeds this, in ms. */
  maxMs: number;
  /** Uniform in [0, 1); injected so tests are deterministic. */
  random: () => number;
}

/**
 * Exponential back-off with "full jitter": uniform in [0, min(max, base * 2^(n-1))], where
 * `retry` counts from 1. Full jitter spreads clients that failed together, so they do not
 * come back together.
 */
export function backoffDelay(retry: number, opts: BackoffOptions): number {
  return Math.floor(opts.random() * backoffCeiling(retry, opts));
}

/** The upper bound of backoffDelay for this retry. */
export function backoffCeiling(retry: number, opts: Pick<BackoffOptions, 'baseMs' | 'maxMs'>): number {
  const n = Math.max(1, Math.floor(retry));
  // 2^n overflows to Infinity for large n; Math.min then gives maxMs, which is what we want.
  return Math.max(0, Math.min(opts.maxMs, opts.baseMs * 2 ** (n - 1)));
}

/** The longest Retry-After honoured; a larger one (or a far-future date) is clamped to it. */
export const MAX_RETRY_AFTER_MS = 10 * 60 * 1000;

/**
 * Parses a Retry-After value: delay-seconds (integer, or decimal as some services send) or
 * an HTTP date, relative to `nowMs` (wall-clock ms; pass the response's Date header when
 * present so that clock skew between us and the service does not matter).
 * Returns ms, clamped to [0, maxMs]; undefined when the value cannot be understood.
 */
export function parseRetryAfter(
  value: string | string[] | undefined | null,
  nowMs: number,
  maxMs: number = MAX_RETRY_AFTER_MS,
): number | undefined {
  const raw = Array.isArray(value) ? value[0] : value;
  if (raw == null) return undefined;
  const text = raw.trim();
  if (text === '') return undefined;
  if (/^[+-]?(\d+(\.\d*)?|\.\d+)$/.test(text)) {
    const seconds = Number(text);
    if (!Number.isFinite(seconds)) return undefined;
    return clamp(Math.ceil(seconds * 1000), maxMs);
  }
  // Only date-looking text: Date.parse accepts odd things like "1" or "a 1".
  if (!/[a-z]{3}/i.test(text) || !/\d{1,2}:\d{2}/.test(text)) return undefined;
  const at = Date.parse(text);
  if (Number.isNaN(at)) return undefined;
  return clamp(at - nowMs, maxMs);
}

function clamp(ms: number, maxMs: number): number {
  if (ms <= 0) return 0;
  return Math.min(ms, maxMs);
}

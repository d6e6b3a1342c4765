/**
 * What a Retry-After header asks for. The back-off itself is in src/time/backoff.ts.
 */

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

/**
 * The back-off arithmetic, one place for every retry in dssync: a delay that doubles from a
 * base up to a ceiling, and the jitter that keeps clients (or daemons) that failed together
 * from coming back together. No timers here; callers wait through their Clock.
 */

export interface BackoffOptions {
  /** Delay ceiling of the first retry, in ms. */
  baseMs: number;
  /** No delay ever exceeds this, in ms. */
  maxMs: number;
}

/** The doubling delay of the `retry`-th retry (counting from 1): min(max, base * 2^(retry-1)). */
export function backoffCeiling(retry: number, opts: BackoffOptions): number {
  const n = Math.max(1, Math.floor(retry));
  // 2^n overflows to Infinity for large n; Math.min then gives maxMs, which is what we want.
  return Math.max(0, Math.min(opts.maxMs, opts.baseMs * 2 ** (n - 1)));
}

/**
 * "Full jitter": uniform in [0, backoffCeiling(retry)]. Spreads the requests of clients that
 * failed together the most; for requests to a service (the pacer, token renewal).
 * `random` is uniform in [0, 1), injected so tests are deterministic.
 */
export function backoffDelay(retry: number, opts: BackoffOptions & { random: () => number }): number {
  return Math.floor(opts.random() * backoffCeiling(retry, opts));
}

/**
 * `ms` spread by ±`fraction` (0.1: from 90 % to 110 %), rounded to whole ms. For delays that
 * should stay close to their value (a mapping's retry, the periodic rescan) while several
 * daemons do not align.
 */
export function spread(ms: number, fraction: number, random: () => number): number {
  return Math.round(ms * (1 - fraction + 2 * fraction * random()));
}

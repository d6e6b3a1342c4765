/** Timers behind an interface, so the daemon's scheduling can run on a fake clock in tests. */
export interface Timers {
  now(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export const realTimers: Timers = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => {
    const t = setTimeout(fn, ms);
    // Scheduled work never keeps a stopping process alive on its own.
    t.unref();
    return t;
  },
  clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout),
};

/** The first retry delay of a failing mapping (ms), unless configured otherwise. */
export const DEFAULT_RETRY_BASE_MS = 5_000;
export const MAX_RETRY_DELAY_MS = 300_000;

/** Exponential back-off for a failing mapping: 5 s, 10 s, ... up to 5 min, with jitter. */
export function retryDelayMs(failures: number, random: () => number = Math.random, firstMs = DEFAULT_RETRY_BASE_MS): number {
  const base = Math.min(firstMs * 2 ** Math.max(0, failures - 1), MAX_RETRY_DELAY_MS);
  return Math.round(base * (0.8 + 0.4 * random()));
}

/** The periodic rescan interval with ±10 % jitter, so several daemons do not align. */
export function jittered(ms: number, random: () => number = Math.random): number {
  return Math.round(ms * (0.9 + 0.2 * random()));
}

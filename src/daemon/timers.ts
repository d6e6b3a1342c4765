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

/** Exponential back-off for a failing mapping: 5 s, 10 s, ... up to 5 min, with jitter. */
export function retryDelayMs(failures: number, random: () => number = Math.random): number {
  const base = Math.min(5_000 * 2 ** Math.max(0, failures - 1), 300_000);
  return Math.round(base * (0.8 + 0.4 * random()));
}

/** The periodic rescan interval with ±10 % jitter, so several daemons do not align. */
export function jittered(ms: number, random: () => number = Math.random): number {
  return Math.round(ms * (0.9 + 0.2 * random()));
}

/**
 * Time as a dependency: everything that waits, schedules or reads the time does it through
 * one Clock, so that tests drive it with the fake clock of test/helpers/fake-clock.ts
 * instead of sleeping. Wall-clock milliseconds (Date.now()), used for differences and for
 * the timestamps written to the state file.
 */

/** What setTimeout returned; only ever handed back to clearTimeout. */
export type TimerHandle = unknown;

export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Resolves after `ms`; rejects (with the signal's reason) when `signal` aborts first. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
  /** Runs `fn` once after `ms`. */
  setTimeout(fn: () => void, ms: number): TimerHandle;
  /** Cancels a timer that has not run yet; a handle already run or cleared is ignored. */
  clearTimeout(handle: TimerHandle): void;
}

export const realClock: Clock = {
  now: () => Date.now(),
  sleep: (ms, signal) =>
    new Promise<void>((resolve, reject) => {
      if (signal?.aborted) {
        reject(signal.reason);
        return;
      }
      const onAbort = (): void => {
        clearTimeout(timer);
        reject(signal?.reason);
      };
      const timer = setTimeout(() => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      }, Math.max(0, ms));
      signal?.addEventListener('abort', onAbort, { once: true });
    }),
  setTimeout: (fn, ms) => {
    const t = setTimeout(fn, Math.max(0, ms));
    // Scheduled work never keeps a stopping process alive on its own: whoever needs it done
    // waits for it (StateStore.close() flushes the write a timer would have made).
    t.unref();
    return t;
  },
  clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout),
};

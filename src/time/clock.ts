/**
 * Time as a dependency: everything that waits, schedules or reads the time does it through
 * one Clock, so that tests drive it with the fake clock of test/helpers/fake-clock.ts
 * instead of sleeping.
 *
 * Two readings, for two purposes (docs/reliability.md, "Time"):
 * - `monotonic()` never steps: every timer, deadline, back-off, quiet window and duration
 *   is counted on it, so that chrony or an operator stepping the wall clock (an hour back
 *   at a VM's boot, say) neither stalls the daemon for the size of the step nor fires every
 *   timer at once;
 * - `now()` is the wall clock (Date.now()): for display, for the timestamps written to the
 *   state file, and for comparing with file times (the racy rule), which are wall-clock.
 */

/** What setTimeout returned; only ever handed back to clearTimeout. */
export type TimerHandle = unknown;

export interface Clock {
  /** Wall clock: milliseconds since the epoch. May step (backwards too). */
  now(): number;
  /** Milliseconds on a clock that never steps, from an arbitrary origin: deadlines only. */
  monotonic(): number;
  /** Resolves after `ms`; rejects (with the signal's reason) when `signal` aborts first. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
  /** Runs `fn` once after `ms`. */
  setTimeout(fn: () => void, ms: number): TimerHandle;
  /** Cancels a timer that has not run yet; a handle already run or cleared is ignored. */
  clearTimeout(handle: TimerHandle): void;
}

export const realClock: Clock = {
  now: () => Date.now(),
  monotonic: () => performance.now(),
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

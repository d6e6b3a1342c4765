/**
 * Time as a dependency: the pacer waits through a Clock so that tests drive it with a fake
 * clock instead of sleeping.
 */

export interface Clock {
  /** Milliseconds; only differences are used. */
  now(): number;
  /** Resolves after `ms`; rejects (with the signal's reason) when `signal` aborts first. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
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
};

/** Lets the event loop run its I/O callbacks and timers before going on (one setImmediate). */
export const yieldNow = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

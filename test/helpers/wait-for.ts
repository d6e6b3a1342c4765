/**
 * The one way an integration test waits for something a real process or watcher does: poll a
 * condition until it holds, with a timeout that names what was awaited and what was seen.
 */

/** Thrown by a waitFor condition to give up at once (e.g. the process died). */
export class StopWaiting extends Error {}

export interface WaitOptions {
  timeout?: number;
  interval?: number;
  /** Names what is awaited, for the timeout message. */
  what?: string;
  /** Describes the last observation, for the timeout message. */
  describe?: () => string;
}

/**
 * Polls `cond` until it returns true. Errors thrown by `cond` count as "not yet" (the last
 * one is in the timeout message), except StopWaiting, which ends the wait at once.
 */
export async function waitFor(cond: () => boolean | Promise<boolean>, o: WaitOptions = {}): Promise<void> {
  const timeout = o.timeout ?? 60_000;
  const interval = o.interval ?? 100;
  const deadline = Date.now() + timeout;
  let last: unknown;
  for (;;) {
    try {
      if (await cond()) return;
      last = undefined;
    } catch (e) {
      if (e instanceof StopWaiting) throw e;
      last = e;
    }
    if (Date.now() > deadline) {
      const extra = o.describe ? `\nlast seen: ${o.describe()}` : last ? `\nlast error: ${(last as Error).message ?? String(last)}` : '';
      throw new Error(`timed out after ${timeout} ms waiting for ${o.what ?? 'a condition'}${extra}`);
    }
    await new Promise((r) => setTimeout(r, interval));
  }
}

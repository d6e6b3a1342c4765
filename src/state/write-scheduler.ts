/**
 * When to write the state file: coalescing and group commit, with no knowledge of what is
 * written.
 *
 * - At most one write in flight.
 * - markDirty() arms a timer (delayMs): mutations within the delay share one write.
 * - flush() resolves once every mutation made before the call is on disk: it waits for the
 *   write in flight when nothing changed since that write's snapshot, and otherwise for the
 *   next write, which starts as soon as the one in flight ends. Every flush() arriving
 *   meanwhile joins that same next write (group commit), so N concurrent intents cost one
 *   or two writes, not N.
 * - A write takes its snapshot synchronously when it starts (see SnapshotFile.write), so
 *   mutations during a write leave the state dirty and lead to another write.
 * - A failed write leaves the state dirty: the waiting flushes reject with the error, and the
 *   scheduler retries with a growing delay (and immediately on the next flush()).
 */

import { backoffCeiling } from '../time/backoff.js';
import type { Clock } from '../time/clock.js';

export interface WriteSchedulerOptions {
  /** Performs one write; must take its snapshot synchronously before returning. */
  write: () => Promise<void>;
  delayMs: number;
  /** Ceiling of the retry delay after consecutive failures. */
  maxRetryDelayMs: number;
  clock: Pick<Clock, 'setTimeout' | 'clearTimeout'>;
  onError: (err: unknown, consecutiveFailures: number) => void;
  onSuccess: (afterFailures: number) => void;
}

interface Deferred {
  promise: Promise<void>;
  resolve: () => void;
  reject: (err: unknown) => void;
}

function deferred(): Deferred {
  let resolve!: () => void;
  let reject!: (err: unknown) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  // A group member may stop listening (its own caller gone): never an unhandled rejection.
  promise.catch(() => undefined);
  return { promise, resolve, reject };
}

export class WriteScheduler {
  private dirtyFlag = false;
  private inFlight: Promise<void> | undefined;
  /** The write that starts when the one in flight ends, with the flushes waiting for it. */
  private next: Deferred | undefined;
  private timer: unknown;
  private timerArmed = false;
  private failures = 0;
  private stopped = false;

  constructor(private readonly opts: WriteSchedulerOptions) {}

  /** True when some mutation is not yet covered by a write that started. */
  get dirty(): boolean {
    return this.dirtyFlag;
  }

  get writing(): boolean {
    return this.inFlight !== undefined;
  }

  get consecutiveFailures(): number {
    return this.failures;
  }

  markDirty(): void {
    this.dirtyFlag = true;
    this.arm(this.opts.delayMs);
  }

  flush(): Promise<void> {
    if (!this.dirtyFlag) return this.inFlight ?? Promise.resolve();
    if (!this.next) {
      this.next = deferred();
      // A microtask later rather than now: calls made in the same turn join this write.
      if (!this.inFlight) queueMicrotask(() => this.start());
    }
    this.cancelTimer();
    return this.next.promise;
  }

  /** No more timed writes (flush() still works). */
  stop(): void {
    this.stopped = true;
    this.cancelTimer();
  }

  private arm(ms: number): void {
    if (this.stopped || this.timerArmed || this.inFlight || this.next) return;
    this.timerArmed = true;
    this.timer = this.opts.clock.setTimeout(() => {
      this.timerArmed = false;
      this.start();
    }, ms);
  }

  private cancelTimer(): void {
    if (!this.timerArmed) return;
    this.timerArmed = false;
    this.opts.clock.clearTimeout(this.timer);
  }

  private start(): void {
    if (this.inFlight) return; // the end of the write in flight starts the next one
    this.cancelTimer();
    const waiters = this.next;
    this.next = undefined;
    if (!this.dirtyFlag) {
      waiters?.resolve();
      return;
    }
    this.dirtyFlag = false;
    let run: Promise<void>;
    try {
      run = this.opts.write();
    } catch (err) {
      run = Promise.reject(err);
    }
    this.inFlight = run;
    run.then(
      () => {
        this.inFlight = undefined;
        const after = this.failures;
        this.failures = 0;
        if (after > 0) this.opts.onSuccess(after);
        waiters?.resolve();
        this.afterWrite(false);
      },
      (err: unknown) => {
        this.inFlight = undefined;
        this.dirtyFlag = true; // what that write carried is still not on disk
        this.failures++;
        this.opts.onError(err, this.failures);
        waiters?.reject(err);
        this.afterWrite(true);
      },
    );
  }

  private afterWrite(failed: boolean): void {
    if (this.next) {
      this.start();
      return;
    }
    if (!this.dirtyFlag) return;
    // After n failures: delay * 2^n, up to the ceiling.
    this.arm(failed ? backoffCeiling(this.failures + 1, { baseMs: this.opts.delayMs, maxMs: this.opts.maxRetryDelayMs }) : this.opts.delayMs);
  }
}

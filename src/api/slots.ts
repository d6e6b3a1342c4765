/**
 * The pacer's concurrency cap: at most `capacity` holders at once, waiters served retries
 * first, then in arrival order. It replaces p-queue there because p-queue adds and removes
 * two abort listeners per task (one while queued, one while running: ~3 % of a first
 * mirror's CPU, issue 28.1). Here a waiter's signal gets ONE listener per distinct signal
 * with waiters (every request of a pass shares its mapping's signal: one in all), and
 * none while a slot is held: the holder's own work takes the signal (undici, the clock's
 * sleeps, the token provider) and ends on abort, which releases the slot.
 */

interface Waiter {
  resolve: () => void;
  reject: (reason: unknown) => void;
  signal: AbortSignal;
  /** Served or rejected: skipped when found in its line. */
  done: boolean;
  line: Line;
}

/** A first-in first-out line that does not shift its array per take. */
class Line {
  private items: Waiter[] = [];
  private head = 0;
  live = 0;

  push(w: Waiter): void {
    this.items.push(w);
    this.live++;
  }

  /** The first waiter not yet done, taken out; undefined when none. */
  take(): Waiter | undefined {
    while (this.head < this.items.length) {
      const w = this.items[this.head++] as Waiter;
      if (w.done) continue;
      this.live--;
      this.compact();
      return w;
    }
    return undefined;
  }

  private compact(): void {
    if (this.head === this.items.length) {
      this.items = [];
      this.head = 0;
    } else if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
  }
}

export class Slots {
  private held = 0;
  private readonly retries = new Line();
  private readonly firsts = new Line();
  /** The waiters of each signal that has any, and the one listener on it. */
  private readonly bySignal = new Map<AbortSignal, { waiters: Set<Waiter>; onAbort: () => void }>();

  constructor(private readonly capacity: number) {
    if (!(capacity >= 1)) throw new RangeError(`slots capacity must be at least 1 (got ${capacity})`);
  }

  /** Waiters not yet served. */
  get waiting(): number {
    return this.retries.live + this.firsts.live;
  }

  /**
   * Resolves when a slot is this caller's (call `release()` once after); rejects with the
   * signal's reason if it aborts first (no slot is then held).
   */
  acquire(signal: AbortSignal, retry: boolean): Promise<void> {
    if (signal.aborted) return Promise.reject(signal.reason as unknown);
    if (this.held < this.capacity && this.waiting === 0) {
      this.held++;
      return Promise.resolve();
    }
    return new Promise<void>((resolve, reject) => {
      const w: Waiter = { resolve, reject, signal, done: false, line: retry ? this.retries : this.firsts };
      w.line.push(w);
      this.watch(w);
    });
  }

  release(): void {
    this.held--;
    this.serve();
  }

  private serve(): void {
    while (this.held < this.capacity) {
      const w = this.retries.take() ?? this.firsts.take();
      if (w === undefined) return;
      w.done = true;
      this.unwatch(w);
      this.held++;
      w.resolve();
    }
  }

  private watch(w: Waiter): void {
    let entry = this.bySignal.get(w.signal);
    if (entry === undefined) {
      const waiters = new Set<Waiter>();
      const onAbort = (): void => {
        this.bySignal.delete(w.signal);
        for (const x of waiters) {
          x.done = true;
          x.line.live--; // its entry stays in the line, skipped when reached
          x.reject(w.signal.reason);
        }
      };
      entry = { waiters, onAbort };
      this.bySignal.set(w.signal, entry);
      w.signal.addEventListener('abort', onAbort, { once: true });
    }
    entry.waiters.add(w);
  }

  private unwatch(w: Waiter): void {
    const entry = this.bySignal.get(w.signal);
    if (entry === undefined) return;
    entry.waiters.delete(w);
    if (entry.waiters.size === 0) {
      this.bySignal.delete(w.signal);
      w.signal.removeEventListener('abort', entry.onAbort);
    }
  }
}

/**
 * The one fake Clock of the tests: time moves only when a test says so (advance), and then
 * the sleeps and timers that fall due run in time order (ties in the order they were set),
 * each followed by the promise chains it lets progress. No test sleeps for real.
 *
 * Like the real one it has two readings: `monotonic()`, on which timers run, and the wall
 * clock `now()`, equal to it plus an offset that `stepWall()` changes (chrony stepping a
 * VM's clock) without moving any timer.
 */
import type { Clock, TimerHandle } from '../../src/time/clock.js';

interface Task {
  at: number;
  run: () => void;
}

export class FakeClock implements Clock {
  private t: number;
  /** now() - monotonic(): moved by stepWall() only. */
  private wallOffset = 0;
  private seq = 0;
  private readonly tasks = new Map<number, Task>();

  constructor(start = 0) {
    this.t = start;
  }

  now(): number {
    return this.t + this.wallOffset;
  }

  monotonic(): number {
    return this.t;
  }

  /** Steps the wall clock by `ms` (negative: backwards); timers and monotonic() are unmoved. */
  stepWall(ms: number): void {
    this.wallOffset += ms;
  }

  setTimeout(fn: () => void, ms: number): TimerHandle {
    const id = ++this.seq;
    this.tasks.set(id, { at: this.t + Math.max(0, ms), run: fn });
    return id;
  }

  clearTimeout(handle: TimerHandle): void {
    this.tasks.delete(handle as number);
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (signal?.aborted) {
        reject(signal.reason);
        return;
      }
      const onAbort = (): void => {
        this.clearTimeout(id);
        reject(signal?.reason);
      };
      const id = this.setTimeout(() => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      }, ms);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** Sleeps and timers waiting. */
  get sleeping(): number {
    return this.tasks.size;
  }

  /** Delays, from now, of the sleeps and timers waiting, shortest first. */
  delays(): number[] {
    return [...this.tasks.values()].map((x) => x.at - this.t).sort((a, b) => a - b);
  }

  /** Lets every promise chain that can progress without time do so (in-memory I/O included). */
  async settle(): Promise<void> {
    for (let i = 0; i < 30; i++) await new Promise<void>((r) => setImmediate(r));
  }

  /**
   * Moves time forward at once, for code that only reads the time; throws when a sleep or
   * timer would fall due meanwhile (use advance() then).
   */
  tick(ms: number): void {
    const end = this.t + ms;
    if ([...this.tasks.values()].some((x) => x.at <= end)) throw new Error('FakeClock.tick: a timer falls due; use advance()');
    this.t = end;
  }

  /** Moves time forward by `ms`, running what falls due in order and letting each one's work run. */
  async advance(ms: number): Promise<void> {
    const end = this.t + ms;
    for (;;) {
      await this.settle();
      let next: [number, Task] | undefined;
      for (const e of this.tasks) if (e[1].at <= end && (!next || e[1].at < next[1].at)) next = e;
      if (!next) break;
      this.tasks.delete(next[0]);
      this.t = Math.max(this.t, next[1].at);
      next[1].run();
    }
    this.t = end;
    await this.settle();
  }
}

/** A Clock whose time moves only when a test says so; sleepers wake in time order. */
import type { Clock } from '../../../src/api/clock.js';

interface Sleeper {
  at: number;
  resolve: () => void;
}

export class FakeClock implements Clock {
  private t: number;
  private sleepers: Sleeper[] = [];

  constructor(start = 0) {
    this.t = start;
  }

  now(): number {
    return this.t;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (signal?.aborted) {
        reject(signal.reason);
        return;
      }
      const sleeper: Sleeper = {
        at: this.t + Math.max(0, ms),
        resolve: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
      };
      const onAbort = (): void => {
        this.sleepers = this.sleepers.filter((s) => s !== sleeper);
        reject(signal?.reason);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.sleepers.push(sleeper);
    });
  }

  /** Number of pending sleeps. */
  get sleeping(): number {
    return this.sleepers.length;
  }

  /** Lets every promise chain that can progress without time do so. */
  async settle(): Promise<void> {
    for (let i = 0; i < 30; i++) await new Promise<void>((r) => setImmediate(r));
  }

  /** Moves time forward by `ms`, waking sleepers in order and letting each one's work run. */
  async advance(ms: number): Promise<void> {
    const target = this.t + ms;
    await this.settle();
    for (;;) {
      this.sleepers.sort((a, b) => a.at - b.at);
      const next = this.sleepers[0];
      if (next === undefined || next.at > target) break;
      this.sleepers.shift();
      this.t = Math.max(this.t, next.at);
      next.resolve();
      await this.settle();
    }
    this.t = target;
    await this.settle();
  }
}

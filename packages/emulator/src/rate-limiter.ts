/**
 * A sliding-window rate limiter: at most `rps` accepted requests in any window of one
 * second, per key. Only accepted requests count, so a client that keeps retrying too fast
 * still gets the full rate once it slows down. Fractional rates (0.5) widen the window
 * (one request per two seconds) instead of rounding to zero.
 */

export type RateDecision = { allowed: true } | { allowed: false; retryAfterMs: number };

class TimestampQueue {
  private items: number[] = [];
  private head = 0;

  get length(): number {
    return this.items.length - this.head;
  }
  get oldest(): number | undefined {
    return this.items[this.head];
  }
  push(t: number): void {
    this.items.push(t);
  }
  dropUpTo(t: number): void {
    while (this.head < this.items.length && (this.items[this.head] as number) <= t) this.head++;
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
  }
}

export class SlidingWindowLimiter {
  private readonly capacity: number;
  private readonly windowMs: number;
  private readonly windows = new Map<string, TimestampQueue>();

  constructor(rps: number) {
    if (!(rps > 0) || !Number.isFinite(rps)) throw new RangeError(`rate limit must be a positive number, got ${rps}`);
    this.capacity = Math.max(1, Math.floor(rps));
    this.windowMs = (1000 * this.capacity) / rps;
  }

  tryAcquire(key: string, now: number): RateDecision {
    let window = this.windows.get(key);
    if (!window) this.windows.set(key, (window = new TimestampQueue()));
    window.dropUpTo(now - this.windowMs);
    if (window.length < this.capacity) {
      window.push(now);
      return { allowed: true };
    }
    const oldest = window.oldest ?? now;
    return { allowed: false, retryAfterMs: Math.max(1, oldest + this.windowMs - now) };
  }
}

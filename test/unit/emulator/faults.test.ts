import { describe, expect, it } from 'vitest';
import { FaultInjector, type FaultDecision } from '../../../packages/emulator/src/faults.js';
import { SlidingWindowLimiter } from '../../../packages/emulator/src/rate-limiter.js';

describe('SlidingWindowLimiter', () => {
  it('accepts rps requests in any one-second window and says how long until the oldest leaves it', () => {
    const limiter = new SlidingWindowLimiter(3);
    expect(limiter.tryAcquire('org', 0)).toEqual({ allowed: true });
    expect(limiter.tryAcquire('org', 100)).toEqual({ allowed: true });
    expect(limiter.tryAcquire('org', 200)).toEqual({ allowed: true });
    expect(limiter.tryAcquire('org', 300)).toEqual({ allowed: false, retryAfterMs: 700 });
    expect(limiter.tryAcquire('other', 300)).toEqual({ allowed: true });
    expect(limiter.tryAcquire('org', 1000)).toEqual({ allowed: true }); // the request at 0 left the window
    expect(limiter.tryAcquire('org', 1050)).toEqual({ allowed: false, retryAfterMs: 50 });
  });

  it('does not count refused requests, so a client that slows down gets the full rate', () => {
    const limiter = new SlidingWindowLimiter(1);
    expect(limiter.tryAcquire('k', 0).allowed).toBe(true);
    for (let t = 10; t < 1000; t += 10) expect(limiter.tryAcquire('k', t).allowed).toBe(false);
    expect(limiter.tryAcquire('k', 1000).allowed).toBe(true);
  });

  it('widens the window for fractional rates and refuses non-positive ones', () => {
    const limiter = new SlidingWindowLimiter(0.5);
    expect(limiter.tryAcquire('k', 0).allowed).toBe(true);
    expect(limiter.tryAcquire('k', 1500)).toEqual({ allowed: false, retryAfterMs: 500 });
    expect(limiter.tryAcquire('k', 2000).allowed).toBe(true);
    expect(() => new SlidingWindowLimiter(0)).toThrow(RangeError);
  });
});

describe('FaultInjector', () => {
  const clockAt = (t: { now: number }) => () => t.now;

  it('injects nothing without faults', async () => {
    const slept: number[] = [];
    const f = new FaultInjector({}, Date.now, async (ms) => slept.push(ms));
    expect(f.decide('org', true)).toEqual({ kind: 'none', ambiguous: false });
    await f.delay();
    expect(slept).toEqual([]);
  });

  it('delays each request by latencyMs, as set now', async () => {
    const slept: number[] = [];
    const f = new FaultInjector({ latencyMs: 150 }, Date.now, async (ms) => slept.push(ms));
    await f.delay();
    await f.delay();
    expect(slept).toEqual([150, 150]);
    f.set({ latencyMs: 20 });
    await f.delay();
    f.set({});
    await f.delay();
    expect(slept).toEqual([150, 150, 20]);
  });

  it('answers down first, then the rate limit with Retry-After rounded up to whole seconds (>= 1)', () => {
    const t = { now: 10_000 };
    const f = new FaultInjector({ rateLimitRps: 1 }, clockAt(t));
    expect(f.decide('org', false).kind).toBe('none');
    t.now += 999;
    expect(f.decide('org', false)).toEqual({ kind: 'rate-limited', retryAfterSeconds: 1 });
    t.now -= 900;
    expect(f.decide('org', false)).toEqual({ kind: 'rate-limited', retryAfterSeconds: 1 });
    f.set({ rateLimitRps: 1, down: true });
    expect(f.decide('org', false)).toEqual({ kind: 'down', retryAfterSeconds: 1 });
  });

  it('replays the same faults for the same seed, and restarts the sequence when a seed is set again', () => {
    const run = (f: FaultInjector): FaultDecision[] => Array.from({ length: 200 }, (_, i) => f.decide('org', i % 2 === 0));
    const opts = { errorRate: 0.2, dropRate: 0.1, ambiguousRate: 0.3, seed: 7 };
    const a = new FaultInjector(opts);
    const first = run(a);
    expect(run(new FaultInjector(opts))).toEqual(first);
    a.set(opts);
    expect(run(a)).toEqual(first);
    const kinds = new Set(first.map((d) => d.kind));
    expect(kinds).toEqual(new Set(['none', 'error', 'drop']));
    // Ambiguous success only ever applies to writes (even i).
    first.forEach((d, i) => {
      if (d.kind === 'none' && d.ambiguous) expect(i % 2).toBe(0);
    });
    expect(first.some((d) => d.kind === 'none' && d.ambiguous)).toBe(true);
  });

  it('formats Retry-After as seconds, as an HTTP date not earlier than the wait, or not at all', () => {
    const t = { now: Date.UTC(2026, 0, 1, 12, 0, 0, 400) };
    const f = new FaultInjector({}, clockAt(t));
    expect(f.retryAfterHeader(3)).toBe('3');
    f.set({ retryAfter: 'date' });
    const date = f.retryAfterHeader(3) as string;
    expect(Date.parse(date)).toBeGreaterThanOrEqual(t.now + 3000);
    expect(date).toBe('Thu, 01 Jan 2026 12:00:04 GMT');
    f.set({ retryAfter: 'none' });
    expect(f.retryAfterHeader(3)).toBeUndefined();
  });
});

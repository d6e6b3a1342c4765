import { describe, expect, it } from 'vitest';
import { BREAKER_POLL_MS, CircuitBreaker, outcomeOf } from '../../../src/api/breaker.js';
import { ApiError } from '../../../src/api/errors.js';
import { Pacer, type PacerEvent } from '../../../src/api/pacer.js';
import { FakeClock } from '../../helpers/fake-clock.js';

const down = () => new ApiError({ code: 'E_CONNECTION', message: 'connect ECONNREFUSED', retryable: true });
const status = (s: number) => new ApiError({ code: s >= 500 ? 'E_SERVER' : 'E_HTTP', status: s, message: `${s}`, retryable: s >= 500 });

describe('outcomeOf', () => {
  it.each([
    ['no error', undefined, 'answered'],
    ['connection refused', down(), 'outage'],
    ['timeout', new ApiError({ code: 'E_TIMEOUT', message: 't' }), 'outage'],
    ['500', status(500), 'outage'],
    ['502', status(502), 'outage'],
    ['503 (the shared pause handles it)', status(503), 'answered'],
    ['404', status(404), 'answered'],
    ['aborted', new ApiError({ code: 'E_ABORTED', message: 'a' }), 'neutral'],
    ['a local error', new Error('EACCES'), 'neutral'],
  ] as const)('%s', (_n, e, want) => {
    expect(outcomeOf(e)).toBe(want);
  });
});

describe('CircuitBreaker (pure core)', () => {
  it('opens after N consecutive failures; one probe per step; closes on the first answer', () => {
    const b = new CircuitBreaker({ threshold: 3, baseMs: 1000, maxMs: 8000, random: () => 0 });
    for (let i = 0; i < 2; i++) b.outcome(0, false, 'outage');
    expect(b.admit(0)).toEqual({ go: true, probe: false });
    b.outcome(0, false, 'outage');
    expect(b.open).toBe(true);
    // Step 1: 500 ms (half of 1 s, no jitter).
    expect(b.admit(100)).toEqual({ go: false, waitMs: 400 });
    expect(b.admit(500)).toEqual({ go: true, probe: true });
    expect(b.admit(500)).toEqual({ go: false, waitMs: BREAKER_POLL_MS }); // one probe at a time
    b.outcome(600, true, 'outage');
    // Step 2: 1 s from the probe's failure.
    expect(b.admit(1599).go).toBe(false);
    expect(b.admit(1600)).toEqual({ go: true, probe: true });
    b.outcome(1700, true, 'answered');
    expect(b.open).toBe(false);
    expect(b.admit(1700)).toEqual({ go: true, probe: false });
  });

  it('steps grow to the maximum and stay there; an answer in between resets the count', () => {
    const b = new CircuitBreaker({ threshold: 2, baseMs: 1000, maxMs: 4000, random: () => 0.999 });
    b.outcome(0, false, 'outage');
    b.outcome(0, false, 'answered');
    b.outcome(0, false, 'outage');
    expect(b.open).toBe(false);
    b.outcome(0, false, 'outage');
    let t = 0;
    const steps: number[] = [];
    for (let i = 0; i < 5; i++) {
      let a = b.admit(t);
      while (!a.go) {
        t += a.waitMs;
        a = b.admit(t);
      }
      steps.push(t);
      b.outcome(t, a.probe, 'outage');
    }
    const gaps = steps.slice(1).map((s, i) => s - steps[i]!);
    expect(gaps.map((g) => Math.round(g / 1000))).toEqual([2, 4, 4, 4]);
  });

  it('an aborted probe frees the slot without changing the step', () => {
    const b = new CircuitBreaker({ threshold: 1, baseMs: 1000, random: () => 0 });
    b.outcome(0, false, 'outage');
    const a = b.admit(500);
    expect(a).toEqual({ go: true, probe: true });
    b.outcome(600, true, 'neutral');
    expect(b.open).toBe(true);
    expect(b.admit(600)).toEqual({ go: true, probe: true });
  });
});

describe('the breaker in the pacer (fake clock)', () => {
  it('while the service is down only probes go out; every waiting request resumes within a second of the first success', async () => {
    const clock = new FakeClock(0);
    const events: PacerEvent[] = [];
    const pacer = new Pacer({ clock, random: () => 0.5, requestsPerSecond: 0, concurrency: 8, maxAttempts: 1000, backoffBaseMs: 500, backoffMaxMs: 30_000, onEvent: (e) => events.push(e) });
    let up = false;
    const attempts: number[] = [];
    const done: number[] = [];
    const call = () =>
      pacer
        .run({ method: 'GET', path: '/x', idempotent: true }, async () => {
          attempts.push(clock.now());
          if (!up) throw down();
          return 'ok';
        })
        .then(() => done.push(clock.now()));
    const runs = Array.from({ length: 8 }, call);
    await clock.advance(120_000);
    // Down for two minutes: without the breaker 8 requests retrying every ~0.25-15 s would
    // make well over a hundred attempts; with it, about one probe per step (at most 30 s).
    const during = attempts.length;
    expect(during).toBeLessThan(40);
    const lastTwoMinutesProbes = attempts.filter((t) => t > 60_000).length;
    expect(lastTwoMinutesProbes).toBeLessThanOrEqual(4);
    up = true;
    const upAt = clock.now();
    await clock.advance(60_000);
    await Promise.all(runs);
    expect(done).toHaveLength(8);
    // The first success is the next probe; every other request follows within a second.
    const firstSuccess = Math.min(...done);
    expect(firstSuccess).toBeGreaterThanOrEqual(upAt);
    for (const t of done) expect(t - firstSuccess).toBeLessThanOrEqual(1000);
    expect(events.filter((e) => e.type === 'breaker').map((e) => (e as { open: boolean }).open)).toEqual([true, false]);
  });
});

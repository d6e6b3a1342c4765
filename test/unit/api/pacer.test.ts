import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { ApiError } from '../../../src/api/errors.js';
import { Pacer, SlidingWindow, type PacerEvent, type PacerOptions, type RunOptions } from '../../../src/api/pacer.js';
import { decideRetry } from '../../../src/api/retry-policy.js';
import { FakeClock } from '../../helpers/fake-clock.js';

function statusError(status: number, retryAfterMs?: number): ApiError {
  const retryable = status === 408 || status === 429 || status >= 500;
  return new ApiError({
    code: status === 429 ? 'E_RATE_LIMITED' : status >= 500 ? 'E_SERVER' : 'E_HTTP',
    message: `GET /x: ${status}`,
    status,
    retryable,
    ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
  });
}

function connectionError(causeCode: string, code: 'E_CONNECTION' | 'E_TIMEOUT' = 'E_CONNECTION'): ApiError {
  return new ApiError({ code, message: `connection failed (${causeCode})`, retryable: true, cause: Object.assign(new Error(causeCode), { code: causeCode }) });
}

const GET: RunOptions = { method: 'GET', path: '/x', idempotent: true };
const POST: RunOptions = { method: 'POST', path: '/upload', idempotent: false };

function setup(opts: Partial<PacerOptions> = {}): { clock: FakeClock; pacer: Pacer; events: PacerEvent[] } {
  const clock = new FakeClock(1_000_000);
  const events: PacerEvent[] = [];
  const pacer = new Pacer({ clock, random: () => 0.5, requestsPerSecond: 0, concurrency: 4, maxAttempts: 6, onEvent: (e) => events.push(e), ...opts });
  return { clock, pacer, events };
}

/** An attempt function that fails with the given errors in turn, then succeeds. */
function script(clock: FakeClock, ...failures: ApiError[]): { fn: () => Promise<string>; starts: number[] } {
  const starts: number[] = [];
  return {
    starts,
    fn: async () => {
      starts.push(clock.now());
      const f = failures.shift();
      if (f) throw f;
      return 'ok';
    },
  };
}

/** Runs and captures the outcome without an unhandled rejection while time is advanced. */
function track<T>(p: Promise<T>): { done: () => boolean; value: () => T | undefined; error: () => unknown } {
  let done = false;
  let value: T | undefined;
  let error: unknown;
  p.then(
    (v) => {
      value = v;
      done = true;
    },
    (e: unknown) => {
      error = e;
      done = true;
    },
  );
  return { done: () => done, value: () => value, error: () => error };
}

describe('Pacer: retries', () => {
  it('retries transient failures with exponential back-off and full jitter, then succeeds', async () => {
    const { clock, pacer } = setup({ backoffBaseMs: 100, backoffMaxMs: 10_000, random: () => 0.999 });
    const s = script(clock, statusError(500), statusError(502), connectionError('ECONNRESET'), statusError(504));
    const run = track(pacer.run(GET, s.fn));
    await clock.advance(60_000);
    expect(run.value()).toBe('ok');
    const gaps = s.starts.slice(1).map((t, i) => t - (s.starts[i] as number));
    // Ceilings 100, 200, 400, 800; with random 0.999 each delay is just under its ceiling.
    expect(gaps).toEqual([99, 199, 399, 799]);
  });

  it('bounds the attempts and reports how many were made', async () => {
    const { clock, pacer } = setup({ maxAttempts: 3 });
    const s = script(clock, statusError(500), statusError(500), statusError(500), statusError(500));
    const run = track(pacer.run(GET, s.fn));
    await clock.advance(600_000);
    expect(s.starts).toHaveLength(3);
    expect(run.error()).toMatchObject({ code: 'E_SERVER', status: 500, attempts: 3 });
  });

  it('never lets a delay exceed the maximum, however many attempts', async () => {
    const { clock, pacer } = setup({ maxAttempts: 12, backoffBaseMs: 1000, backoffMaxMs: 5000, random: () => 0.9999 });
    const s = script(clock, ...Array.from({ length: 20 }, () => statusError(500)));
    const run = track(pacer.run(GET, s.fn));
    await clock.advance(600_000);
    expect(run.done()).toBe(true);
    const gaps = s.starts.slice(1).map((t, i) => t - (s.starts[i] as number));
    expect(gaps).toHaveLength(11);
    for (const g of gaps) expect(g).toBeLessThanOrEqual(5000);
    expect(Math.max(...gaps)).toBeGreaterThan(4900);
  });

  it.each([401, 403, 404, 409, 413, 415, 400, 422])('does not retry %d', async (status) => {
    const { clock, pacer } = setup();
    const s = script(clock, statusError(status));
    const run = track(pacer.run(GET, s.fn));
    await clock.advance(60_000);
    expect(s.starts).toHaveLength(1);
    expect(run.error()).toMatchObject({ status, attempts: 1 });
  });

  it('honours a Retry-After on a retried 5xx', async () => {
    const { clock, pacer } = setup();
    const s = script(clock, statusError(500, 7_000));
    const run = track(pacer.run(GET, s.fn));
    await clock.advance(60_000);
    expect(run.value()).toBe('ok');
    expect((s.starts[1] as number) - (s.starts[0] as number)).toBe(7_000);
  });
});

describe('Pacer: non-idempotent requests (create, upload)', () => {
  it.each([
    ['500', statusError(500)],
    ['502', statusError(502)],
    ['504', statusError(504)],
    ['408', statusError(408)],
    ['a reset connection', connectionError('ECONNRESET')],
    ['a socket closed without answer', connectionError('UND_ERR_SOCKET')],
    ['a header timeout', connectionError('UND_ERR_HEADERS_TIMEOUT', 'E_TIMEOUT')],
  ])('after %s: rejects as ambiguous and retryable, without retrying', async (_label, err) => {
    const { clock, pacer } = setup();
    const s = script(clock, err);
    const run = track(pacer.run(POST, s.fn));
    await clock.advance(60_000);
    expect(s.starts).toHaveLength(1);
    expect(run.error()).toMatchObject({ ambiguous: true, retryable: true, attempts: 1 });
    expect((run.error() as Error).message).toMatch(/may have carried it out/);
  });

  it.each([
    ['429', statusError(429, 1000)],
    ['503', statusError(503, 1000)],
    ['a refused connection', connectionError('ECONNREFUSED')],
    ['a connect timeout', connectionError('UND_ERR_CONNECT_TIMEOUT', 'E_TIMEOUT')],
    ['an unknown host', connectionError('ENOTFOUND')],
  ])('after %s (the service did not act): retries', async (_label, err) => {
    const { clock, pacer } = setup();
    const s = script(clock, err);
    const run = track(pacer.run(POST, s.fn));
    await clock.advance(60_000);
    expect(run.value()).toBe('ok');
    expect(s.starts).toHaveLength(2);
  });

  it('the same failures are retried for idempotent requests', () => {
    for (const err of [statusError(500), connectionError('ECONNRESET'), connectionError('UND_ERR_HEADERS_TIMEOUT', 'E_TIMEOUT')]) {
      expect(decideRetry(err, true)).toEqual({ retry: true, throttle: false });
    }
    expect(decideRetry(statusError(429), true)).toEqual({ retry: true, throttle: true });
  });

  it('an already ambiguous or aborted error is never retried', () => {
    const amb = new ApiError({ code: 'E_BAD_RESPONSE', message: 'x', retryable: true, ambiguous: true });
    expect(decideRetry(amb, true)).toMatchObject({ retry: false });
    const ab = new ApiError({ code: 'E_ABORTED', message: 'x', retryable: true });
    expect(decideRetry(ab, true)).toMatchObject({ retry: false });
  });
});

describe('Pacer: one shared back-off on 429/503', () => {
  it('holds every other request until the Retry-After has passed', async () => {
    const { clock, pacer, events } = setup({ concurrency: 4 });
    const t0 = clock.now();
    const a = script(clock, statusError(429, 5_000));
    const runA = track(pacer.run(GET, a.fn));
    await clock.settle();
    expect(a.starts).toEqual([t0]);
    // Requests made while the pause holds, from any caller of this pacer.
    const others = [script(clock), script(clock), script(clock)];
    const runs = others.map((s) => track(pacer.run({ ...GET, path: '/other' }, s.fn)));
    await clock.advance(4_999);
    expect(others.every((s) => s.starts.length === 0)).toBe(true);
    expect(a.starts).toHaveLength(1);
    expect(pacer.stats().pausedUntil).toBe(t0 + 5_000);
    await clock.advance(1);
    expect(runA.value()).toBe('ok');
    expect(runs.every((r) => r.value() === 'ok')).toBe(true);
    for (const s of [...others, { starts: a.starts.slice(1) }]) expect(s.starts).toEqual([t0 + 5_000]);
    expect(events.filter((e) => e.type === 'throttle')).toEqual([{ type: 'throttle', status: 429, pauseMs: 5_000, retryAfterMs: 5_000 }]);
    expect(pacer.stats()).toMatchObject({ throttled: 1, retries: 1, requests: 5, pausedUntil: 0 });
  });

  it('without Retry-After pauses for a growing back-off, never zero', async () => {
    const { clock, pacer, events } = setup({ backoffBaseMs: 1000, random: () => 0 });
    const s = script(clock, statusError(503), statusError(503), statusError(503));
    const run = track(pacer.run(GET, s.fn));
    await clock.advance(60_000);
    expect(run.value()).toBe('ok');
    const pauses = events.filter((e): e is Extract<PacerEvent, { type: 'throttle' }> => e.type === 'throttle').map((e) => e.pauseMs);
    expect(pauses).toEqual([1000, 1000, 1000]); // random 0: the floor (the base) applies
    const { clock: c2, pacer: p2, events: e2 } = setup({ backoffBaseMs: 1000, random: () => 0.999 });
    const s2 = script(c2, statusError(429), statusError(429), statusError(429));
    track(p2.run(GET, s2.fn));
    await c2.advance(60_000);
    const grown = e2.filter((e): e is Extract<PacerEvent, { type: 'throttle' }> => e.type === 'throttle').map((e) => e.pauseMs);
    expect(grown).toEqual([999, 1998, 3996].map((v) => Math.max(1000, v)));
  });

  it('a running request is not interrupted by another one\'s 429', async () => {
    const { clock, pacer } = setup();
    let release: () => void = () => undefined;
    const slow = track(pacer.run(GET, () => new Promise<string>((r) => (release = () => r('slow')))));
    const limited = track(pacer.run(GET, script(clock, statusError(429, 10_000)).fn));
    await clock.advance(100);
    release();
    await clock.settle();
    expect(slow.value()).toBe('slow');
    expect(limited.done()).toBe(false);
    await clock.advance(10_000);
    expect(limited.value()).toBe('ok');
  });

  it('clamps an absurd Retry-After', async () => {
    const { clock, pacer, events } = setup({ maxRetryAfterMs: 60_000 });
    track(pacer.run(GET, script(clock, statusError(429, 3_600_000)).fn));
    await clock.advance(60_000);
    expect(events.find((e) => e.type === 'throttle')).toMatchObject({ pauseMs: 60_000 });
  });
});

describe('Pacer: caps', () => {
  it('starts at most requestsPerSecond requests in any one-second window', async () => {
    const { clock, pacer } = setup({ requestsPerSecond: 5, concurrency: 50 });
    const t0 = clock.now();
    const starts: number[] = [];
    const runs = Array.from({ length: 17 }, () =>
      track(
        pacer.run(GET, async () => {
          starts.push(clock.now() - t0);
          return 'ok';
        }),
      ),
    );
    await clock.settle();
    expect(starts).toHaveLength(5);
    await clock.advance(999);
    expect(starts).toHaveLength(5);
    await clock.advance(1);
    expect(starts).toHaveLength(10);
    await clock.advance(2_000);
    expect(starts).toHaveLength(17);
    expect(runs.every((r) => r.value() === 'ok')).toBe(true);
    for (const t of starts) expect(starts.filter((u) => u >= t && u < t + 1000).length).toBeLessThanOrEqual(5);
  });

  it('spreads a fractional rate (0.5 rps: one start per 2 s)', () => {
    const w = SlidingWindow.forRate(0.5);
    w.record(0);
    expect(w.delay(1)).toBe(1999);
    expect(w.delay(2000)).toBe(0);
  });

  it('runs at most `concurrency` requests at once', async () => {
    const { clock, pacer } = setup({ concurrency: 2 });
    let running = 0;
    let peak = 0;
    const runs = Array.from({ length: 6 }, () =>
      track(
        pacer.run(GET, async () => {
          running++;
          peak = Math.max(peak, running);
          await clock.sleep(100);
          running--;
          return 'ok';
        }),
      ),
    );
    await clock.settle();
    expect(running).toBe(2);
    expect(pacer.stats()).toMatchObject({ inFlight: 2, queued: 4 });
    await clock.advance(1_000);
    expect(peak).toBe(2);
    expect(runs.every((r) => r.value() === 'ok')).toBe(true);
  });

  it('reports attempts, latency and waits through onEvent', async () => {
    const { clock, pacer, events } = setup();
    const run = track(
      pacer.run(GET, async () => {
        await clock.sleep(250);
        return 'ok';
      }),
    );
    await clock.advance(1_000);
    expect(run.value()).toBe('ok');
    expect(events).toContainEqual({ type: 'attempt', method: 'GET', path: '/x', attempt: 1 });
    expect(events).toContainEqual({ type: 'response', method: 'GET', path: '/x', attempt: 1, ms: 250, ok: true });
  });
});

describe('Pacer: shutdown', () => {
  it('rejects queued, paused and backing-off work with E_ABORTED and aborts running requests', async () => {
    const shutdown = new AbortController();
    const { clock, pacer } = setup({ concurrency: 1, signal: shutdown.signal });
    let runningSignal: AbortSignal | undefined;
    const running = track(
      pacer.run(GET, ({ signal }) => {
        runningSignal = signal;
        return new Promise<string>((_resolve, reject) => signal.addEventListener('abort', () => reject(new ApiError({ code: 'E_ABORTED', message: 'aborted' }))));
      }),
    );
    const queued = track(pacer.run(GET, script(clock).fn));
    await clock.settle();
    expect(runningSignal?.aborted).toBe(false);
    shutdown.abort();
    await clock.settle();
    expect(runningSignal?.aborted).toBe(true);
    expect(running.error()).toMatchObject({ code: 'E_ABORTED' });
    expect(queued.error()).toMatchObject({ code: 'E_ABORTED' });
    // Anything submitted afterwards fails at once.
    const late = track(pacer.run(GET, script(clock).fn));
    await clock.settle();
    expect(late.error()).toMatchObject({ code: 'E_ABORTED' });
  });

  it('a caller\'s signal aborts its own request during a back-off wait, not the others', async () => {
    const { clock, pacer } = setup();
    const mine = new AbortController();
    const s = script(clock, statusError(500), statusError(500));
    const run = track(pacer.run({ ...GET, signal: mine.signal }, s.fn));
    const other = track(pacer.run(GET, script(clock).fn));
    await clock.settle();
    expect(clock.sleeping).toBe(1);
    mine.abort();
    await clock.settle();
    expect(run.error()).toMatchObject({ code: 'E_ABORTED' });
    expect(other.value()).toBe('ok');
    expect(s.starts).toHaveLength(1);
  });
});

// Issue 23, defect 7: the shared pause and the back-off are deadlines on the monotonic clock.
describe('Pacer: the wall clock steps', () => {
  for (const stepMs of [-3_600_000, 3_600_000]) {
    it(`a Retry-After pause ends after its 5 s when the wall clock steps ${stepMs < 0 ? 'back' : 'forward'} 1 h meanwhile`, async () => {
      const { clock, pacer } = setup({ concurrency: 4 });
      const a = script(clock, statusError(429, 5_000));
      const runA = track(pacer.run(GET, a.fn));
      await clock.settle();
      const other = script(clock);
      const runOther = track(pacer.run({ ...GET, path: '/other' }, other.fn));
      clock.stepWall(stepMs);
      await clock.advance(4_999);
      expect(other.starts).toHaveLength(0);
      await clock.advance(1);
      expect(runA.value()).toBe('ok');
      expect(runOther.value()).toBe('ok');
      expect(a.starts).toHaveLength(2);
    });
  }
});

// Issue 28.1: a first mirror queues thousands of requests on one signal; the concurrency
// cap must not add and remove abort listeners per request.
describe('Pacer: abort listeners', () => {
  it('queued requests of one caller signal put at most one listener on it', async () => {
    const { clock, pacer } = setup({ concurrency: 2 });
    const ctrl = new AbortController();
    const releases: (() => void)[] = [];
    const runs = Array.from({ length: 20 }, () =>
      track(pacer.run({ ...GET, signal: ctrl.signal }, () => new Promise<string>((resolve) => releases.push(() => resolve('ok'))))),
    );
    await clock.settle();
    expect(releases).toHaveLength(2);
    expect(getEventListeners(ctrl.signal, 'abort').length).toBeLessThanOrEqual(1);
    while (runs.some((r) => !r.done())) {
      releases.shift()?.();
      await clock.settle();
    }
    expect(runs.every((r) => r.value() === 'ok')).toBe(true);
    expect(getEventListeners(ctrl.signal, 'abort')).toHaveLength(0);
  });
});

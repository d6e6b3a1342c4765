import { describe, expect, it } from 'vitest';
import { AdaptiveRate } from '../../../src/api/adaptive-rate.js';
import { ApiError } from '../../../src/api/errors.js';
import { Pacer, type PacerEvent, type RunOptions } from '../../../src/api/pacer.js';
import { FakeClock } from '../../helpers/fake-clock.js';

/** Starts one request every `everyMs` from `from` to `to` (exclusive); the first `answered` are answered 10 ms later. */
function startEvery(rate: AdaptiveRate, from: number, to: number, everyMs: number, answered = Infinity) {
  const out = [];
  for (let t = from; t < to; t += everyMs) out.push(rate.record(t));
  for (const s of out.slice(0, answered)) rate.accepted(s, s.at + 10);
  return out;
}

describe('AdaptiveRate', () => {
  it('learns nothing until a 429, then settles at 98 % of the answers of the second before', () => {
    const rate = new AdaptiveRate();
    // 100 requests in one second; the service answered the first 50 and refuses the 51st.
    const starts = startEvery(rate, 0, 1000, 10, 50);
    expect(rate.rps).toBeUndefined();
    expect(rate.delay(1000)).toBe(0);
    expect(rate.throttled(starts[50]!, 520)).toBe(true);
    expect(rate.rps).toBeCloseTo(50 * 0.98);
  });

  it('lowers the rate by 3 % at most once a second, and only for requests sent at the learned rate', () => {
    const changes: number[] = [];
    const rate = new AdaptiveRate({}, (rps) => changes.push(rps));
    const starts = startEvery(rate, 0, 1000, 10, 50);
    rate.throttled(starts[50]!, 520);
    // The rest of the burst, sent before the rate was learned: no news.
    rate.throttled(starts[51]!, 540);
    expect(changes).toEqual([49]);
    const late = [rate.record(1600), rate.record(1610)];
    rate.throttled(late[0]!, 1620);
    rate.throttled(late[1]!, 1630); // the same second: one signal
    expect(changes).toEqual([49, 49 * 0.97]);
  });

  it('without evidence (a lone request refused) learns nothing and tells the caller to pause', () => {
    const rate = new AdaptiveRate();
    const [only] = startEvery(rate, 0, 1, 1, 0);
    expect(rate.throttled(only!, 30)).toBe(false);
    expect(rate.rps).toBeUndefined();
  });

  it('lets a request start only while the answers of the last second and the running ones are under the rate', () => {
    const rate = new AdaptiveRate({ margin: 1 });
    const starts = startEvery(rate, 0, 200, 10, 19); // answered at 10..190; the 20th refused
    rate.throttled(starts[19]!, 210);
    expect(rate.rps).toBe(19);
    // 19 answers in the window: room when the first one (at 10) leaves it.
    expect(rate.delay(210)).toBe(100); // looked at again within 100 ms
    expect(rate.delay(1009)).toBe(1);
    expect(rate.delay(1010)).toBe(0);
    const s = rate.record(1010);
    // Running, it counts too: full again until the next answer (at 20) leaves.
    expect(rate.delay(1015)).toBe(5);
    rate.accepted(s, 1016);
    expect(rate.delay(1020)).toBe(0);
  });

  it('never has more than the whole learned rate accepted in any second, whatever the latency', () => {
    const rate = new AdaptiveRate({ margin: 1, probeAfterMs: Infinity });
    const first = startEvery(rate, 0, 480, 10, 48);
    rate.throttled(first[47]!, 490); // 48 answers: 48 per second
    expect(rate.rps).toBe(48);
    const running: { s: ReturnType<AdaptiveRate['record']>; end: number }[] = [];
    const answers: number[] = [];
    for (let t = 500; t < 6000; t++) {
      // Latency from 5 to 95 ms: requests overtake one another.
      for (const r of running.filter((x) => x.end === t)) {
        rate.accepted(r.s, t);
        answers.push(t);
      }
      if (rate.delay(t) === 0) running.push({ s: rate.record(t), end: t + 5 + ((t * 37) % 91) });
    }
    for (const t of answers) expect(answers.filter((u) => u > t - 1000 && u <= t).length).toBeLessThanOrEqual(48);
    expect(answers.filter((u) => u > 4000 && u <= 5000).length).toBeGreaterThanOrEqual(46);
  });

  it('probes upward only after a quiet spell, and only while it holds requests back', () => {
    const changes: [number, string][] = [];
    const rate = new AdaptiveRate({ margin: 1, probeAfterMs: 5000, probeStep: 0.1 }, (rps, why) => changes.push([rps, why]));
    const starts = startEvery(rate, 0, 1000, 100, 9); // 9 answered, the 10th refused
    rate.throttled(starts[9]!, 1000);
    expect(rate.rps).toBe(9);
    // Not held back (nothing in the window any more): no probe, however long the quiet.
    expect(rate.delay(10_000)).toBe(0);
    expect(changes).toHaveLength(1);
    // Held back after the quiet spell: +10 %.
    startEvery(rate, 10_000, 10_900, 100);
    expect(rate.delay(10_900)).toBeGreaterThanOrEqual(0);
    expect(changes[1]).toEqual([9 * 1.1, 'probe']);
  });
});

// ---- the pacer against a service that limits requests per second ---------------------

const GET: RunOptions = { method: 'GET', path: '/x', idempotent: true };

/** A service accepting `limit` requests in any 1000 ms (sliding), answering 429 Retry-After 1 s otherwise. */
function limitedService(clock: FakeClock, limit: number, latencyMs: number) {
  const accepted: number[] = [];
  let refused = 0;
  const call = async (): Promise<string> => {
    await clock.sleep(latencyMs);
    const now = clock.now();
    while (accepted.length > 0 && accepted[0]! <= now - 1000) accepted.shift();
    if (accepted.length >= limit) {
      refused++;
      throw new ApiError({ code: 'E_RATE_LIMITED', message: 'GET /x: 429', status: 429, retryable: true, retryAfterMs: 1000 });
    }
    accepted.push(now);
    return 'ok';
  };
  return { call, refused: () => refused };
}

async function mirrorThrough(adaptiveRate: boolean): Promise<{ ms: number; refused: number; events: PacerEvent[] }> {
  const clock = new FakeClock(1_000_000);
  const events: PacerEvent[] = [];
  const pacer = new Pacer({ clock, random: () => 0.5, requestsPerSecond: 0, concurrency: 8, maxAttempts: 6, adaptiveRate, onEvent: (e) => events.push(e) });
  const service = limitedService(clock, 20, 20);
  const t0 = clock.now();
  let done = 0;
  const runs = Array.from({ length: 200 }, () => pacer.run(GET, service.call).then(() => done++));
  while (done < 200 && clock.now() - t0 < 120_000) await clock.advance(100);
  await Promise.all(runs);
  return { ms: clock.now() - t0, refused: service.refused(), events };
}

describe('Pacer: a learned rate under a per-second limit', () => {
  it('keeps the pipe full: 200 requests at a limit of 20/s take about 10 s, with few 429s', async () => {
    const { ms, refused, events } = await mirrorThrough(true);
    // 200 / 20 per second = 10 s at best; the learned rate (97 %) and the first burst cost a little.
    expect(ms).toBeLessThanOrEqual(12_000);
    expect(refused).toBeLessThan(40);
    // No request was paused for everyone's sake: the 429s were met by the learned rate.
    expect(events.filter((e) => e.type === 'throttle')).toEqual([]);
    expect(events.find((e) => e.type === 'rate')).toMatchObject({ type: 'rate', reason: 'throttled' });
  });

  it('meets far fewer 429s than pausing every request for each Retry-After, in about the same time', async () => {
    const learned = await mirrorThrough(true);
    const paused = await mirrorThrough(false);
    expect(paused.events.some((e) => e.type === 'throttle')).toBe(true);
    // Pausing collides with the limit again every second; the learned rate stays under it.
    expect(learned.refused * 4).toBeLessThan(paused.refused);
    expect(learned.ms).toBeLessThanOrEqual(paused.ms * 1.1);
  });

  it('still pauses every request for a long Retry-After (a quota, not a per-second limit)', async () => {
    const clock = new FakeClock(0);
    const events: PacerEvent[] = [];
    const pacer = new Pacer({ clock, random: () => 0.5, requestsPerSecond: 0, concurrency: 4, maxAttempts: 6, onEvent: (e) => events.push(e) });
    let calls = 0;
    const fn = async (): Promise<string> => {
      const n = ++calls;
      await clock.sleep(10);
      if (n === 10) throw new ApiError({ code: 'E_RATE_LIMITED', message: '429', status: 429, retryable: true, retryAfterMs: 30_000 });
      return 'ok';
    };
    const runs = Array.from({ length: 12 }, () => pacer.run(GET, fn));
    await clock.advance(31_000);
    await Promise.all(runs);
    expect(events.filter((e) => e.type === 'throttle')).toMatchObject([{ status: 429, pauseMs: 30_000 }]);
    // A quota's answer says nothing about a rate per second: none is learned from it.
    expect(events.filter((e) => e.type === 'rate')).toEqual([]);
    expect(pacer.stats().learnedRps).toBeUndefined();
  });
});

describe('Pacer: 429s under a learned rate are flow control, not failures', () => {
  const tooMany = (): ApiError => new ApiError({ code: 'E_RATE_LIMITED', message: 'GET /x: 429', status: 429, retryable: true, retryAfterMs: 1000 });

  async function withLearnedRate(refusals: number): Promise<{ outcome: unknown; attempts: number }> {
    const clock = new FakeClock(0);
    const pacer = new Pacer({ clock, random: () => 0.5, requestsPerSecond: 0, concurrency: 4, maxAttempts: 3 });
    // Answers in the last second: the evidence a 429 needs to teach a rate.
    await Promise.all(Array.from({ length: 5 }, () => pacer.run(GET, async () => 'ok')));
    let attempts = 0;
    let outcome: unknown;
    pacer
      .run(GET, async () => {
        if (++attempts <= refusals) throw tooMany();
        return 'ok';
      })
      .then(
        (v) => (outcome = v),
        (e: unknown) => (outcome = e),
      );
    for (let i = 0; i < 60 && outcome === undefined; i++) await clock.advance(1000);
    return { outcome, attempts };
  }

  it('a request refused more often than maxAttempts still goes through once the service takes it', async () => {
    const { outcome, attempts } = await withLearnedRate(8);
    expect(outcome).toBe('ok');
    expect(attempts).toBe(9);
  });

  it('but not forever: after 20 such refusals it fails with the 429', async () => {
    const { outcome, attempts } = await withLearnedRate(1000);
    expect(outcome).toMatchObject({ code: 'E_RATE_LIMITED', status: 429 });
    expect(attempts).toBe(21);
  });
});

// ---- recovery after a storm (issue 28.2) ------------------------------------------------

/**
 * A 20 s storm (the service allows 5 requests/s), then the limit lifted to 40/s, with a
 * backlog that keeps the pipe full: how many requests are accepted in each second after
 * the lift, and in which seconds some were refused.
 */
async function stormThenLift(): Promise<{ perSecond: number[]; refusedSeconds: number[]; allowed: number }> {
  const clock = new FakeClock(0);
  const allowed = 40;
  const lift = 20_000;
  const pacer = new Pacer({ clock, random: () => 0.5, requestsPerSecond: 0, concurrency: 8, maxAttempts: 6 });
  const accepted: number[] = [];
  const refusedAt: number[] = [];
  const call = async (): Promise<string> => {
    await clock.sleep(20);
    const now = clock.now();
    const limit = now < lift ? 5 : allowed;
    if (accepted.filter((t) => t > now - 1000).length >= limit) {
      refusedAt.push(now);
      throw new ApiError({ code: 'E_RATE_LIMITED', message: 'GET /x: 429', status: 429, retryable: true, retryAfterMs: 1000 });
    }
    accepted.push(now);
    return 'ok';
  };
  let done = 0;
  const runs = Array.from({ length: 1500 }, () => pacer.run(GET, call).then(() => done++, () => done++));
  while (done < 1500 && clock.now() < lift + 30_000) await clock.advance(100);
  const perSecond = Array.from({ length: 30 }, (_, i) => accepted.filter((t) => t >= lift + i * 1000 && t < lift + (i + 1) * 1000).length);
  const refusedSeconds = [...new Set(refusedAt.filter((t) => t >= lift).map((t) => Math.floor((t - lift) / 1000)))].sort((a, b) => a - b);
  void Promise.allSettled(runs);
  return { perSecond, refusedSeconds, allowed };
}

describe('Pacer: recovery after a 429 storm (issue 28.2)', () => {
  it('is back to 90 % of the allowed rate within 10 s of the storm lifting, and over the limit for no more than a second at a time', async () => {
    const { perSecond, refusedSeconds, allowed } = await stormThenLift();
    const back = perSecond.findIndex((n) => n >= 0.9 * allowed);
    expect(back, `accepted per second after the lift: ${perSecond.join(' ')}`).toBeGreaterThanOrEqual(0);
    expect(back, `accepted per second after the lift: ${perSecond.join(' ')}`).toBeLessThan(10);
    // Each excursion over the limit is met within the second: no two seconds in a row with 429s.
    for (let i = 1; i < refusedSeconds.length; i++) expect(refusedSeconds[i]! - refusedSeconds[i - 1]!, `seconds with 429s: ${refusedSeconds.join(' ')}`).toBeGreaterThan(1);
  });
});

import { describe, expect, it } from 'vitest';
import { backoffCeiling, backoffDelay, spread } from '../../../src/time/backoff.js';

describe('backoffDelay (exponential, full jitter)', () => {
  const opts = { baseMs: 500, maxMs: 30_000 };

  it('doubles its ceiling with each retry up to the maximum', () => {
    expect([1, 2, 3, 4, 5, 6, 7, 8].map((n) => backoffCeiling(n, opts))).toEqual([500, 1000, 2000, 4000, 8000, 16000, 30000, 30000]);
    expect(backoffCeiling(10_000, opts)).toBe(30_000);
  });

  it('draws uniformly between 0 and the ceiling, from the injected random source', () => {
    expect(backoffDelay(3, { ...opts, random: () => 0 })).toBe(0);
    expect(backoffDelay(3, { ...opts, random: () => 0.5 })).toBe(1000);
    expect(backoffDelay(3, { ...opts, random: () => 0.999999 })).toBeLessThanOrEqual(2000);
    expect(backoffDelay(3, { ...opts, random: () => 0.999999 })).toBeGreaterThan(1990);
  });

  it('never exceeds the maximum, whatever the retry count', () => {
    for (let n = 1; n < 100; n++) expect(backoffDelay(n, { ...opts, random: () => 0.999999 })).toBeLessThanOrEqual(30_000);
  });
});

describe('spread (a delay kept close to its value)', () => {
  it('spreads by ± the fraction, rounded to whole ms', () => {
    expect(spread(3_600_000, 0.1, () => 0)).toBe(3_240_000);
    expect(spread(3_600_000, 0.1, () => 1)).toBe(3_960_000);
    expect(spread(5_000, 0.2, () => 0.5)).toBe(5_000);
    expect(spread(5_000, 0.2, () => 0)).toBe(4_000);
  });
});

import { describe, expect, it } from 'vitest';
import { backoffCeiling, backoffDelay, MAX_RETRY_AFTER_MS, parseRetryAfter } from '../../../src/api/backoff.js';

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

describe('parseRetryAfter', () => {
  const now = Date.parse('2025-03-01T12:00:00Z');
  it.each([
    ['120', 120_000],
    ['0', 0],
    ['1.5', 1_500],
    ['0.25', 250],
    [' 3 ', 3_000],
    ['-5', 0],
    ['Sat, 01 Mar 2025 12:00:30 GMT', 30_000],
    ['Sat, 01 Mar 2025 11:59:00 GMT', 0],
    ['Sun, 02 Mar 2025 12:00:00 GMT', MAX_RETRY_AFTER_MS],
    ['999999', MAX_RETRY_AFTER_MS],
  ])('%j -> %d ms', (value, expected) => {
    expect(parseRetryAfter(value, now)).toBe(expected);
  });

  it.each([['soon'], [''], ['1e3'], ['12abc'], ['NaN'], ['Infinity'], ['tomorrow at noon']])('garbage %j -> undefined', (value) => {
    expect(parseRetryAfter(value, now)).toBeUndefined();
  });

  it('is undefined when absent, and takes the first of repeated headers', () => {
    expect(parseRetryAfter(undefined, now)).toBeUndefined();
    expect(parseRetryAfter(null, now)).toBeUndefined();
    expect(parseRetryAfter(['2', '9'], now)).toBe(2_000);
  });

  it('honours a custom clamp', () => {
    expect(parseRetryAfter('60', now, 5_000)).toBe(5_000);
  });
});

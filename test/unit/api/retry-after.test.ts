import { describe, expect, it } from 'vitest';
import { MAX_RETRY_AFTER_MS, parseRetryAfter } from '../../../src/api/retry-after.js';

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

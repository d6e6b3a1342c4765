import { describe, expect, it } from 'vitest';
import { renewalInterval, restPerHour } from '../../../bench/lib/rest-rate.js';

describe('the bench’s requests at rest', () => {
  it('takes the lease’s interval from when its renewals landed, not from how many fell in the window', () => {
    // Renewals 15.03 s apart: a 60 s window that begins just after one holds only three.
    const times = [0, 15_030, 30_060, 45_090];
    expect(renewalInterval(times)).toBe(15_030);
    expect(restPerHour(3, 3, 60, renewalInterval(times))).toBe(240);
  });

  it('adds any other request at the rate the window saw it', () => {
    expect(restPerHour(5, 4, 60, 15_000)).toBe(240 + 60);
  });

  it('counts the window alone when fewer than two renewals were seen', () => {
    expect(renewalInterval([1_000])).toBeUndefined();
    expect(restPerHour(1, 1, 60, undefined)).toBe(60);
  });
});

/**
 * bench/lib/strace.ts: the calls of `strace -f -c`'s summary (cpu-ab.ts --strace), whether a
 * call's errors column is filled or empty; lib/util.ts: the marginal calls per file of two runs.
 */
import { describe, expect, it } from 'vitest';
import { parseStraceSummary } from '../../../bench/lib/strace.js';
import { marginalPerFile } from '../../../bench/lib/util.js';

const SUMMARY = `% time     seconds  usecs/call     calls    errors syscall
------ ----------- ----------- --------- --------- -------------------
 78.39    4.162771        1807      2303       198 futex
  1.28    0.067909          36      1851       240 statx
  0.88    0.046981          69       677           read
  0.00    0.000000           0         1           rename
------ ----------- ----------- --------- --------- -------------------
100.00    5.310283         497     10685       761 total
`;

describe('strace summary', () => {
  it('reads the calls of every row, with or without errors, and leaves out the total', () => {
    expect([...parseStraceSummary(SUMMARY)]).toEqual([
      ['futex', 2303],
      ['statx', 1851],
      ['read', 677],
      ['rename', 1],
    ]);
  });

  it('gives the calls per file between two runs, a call of one run only counting as 0 in the other', () => {
    const small = new Map([['read', 100], ['futex', 50]]);
    const large = new Map([['read', 500], ['openat', 80]]);
    expect(Object.fromEntries(marginalPerFile(small, large, 40))).toEqual({ read: 10, futex: -1.25, openat: 2 });
  });
});

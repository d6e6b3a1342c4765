/**
 * src/at-most.ts: a pass's hashes and an executor's tasks run at most N at once, each next
 * item taken only as a call ends (a million items are never all held as tasks), in order;
 * the first failure stops the taking and is thrown once the calls under way have ended.
 */
import { describe, expect, it } from 'vitest';
import { forEachAtMost } from '../../src/at-most.js';

/** A call per item that ends when the test says so. */
function gate() {
  const open = new Map<number, () => void>();
  const fail = new Map<number, (e: Error) => void>();
  const started: number[] = [];
  const fn = (item: number): Promise<void> =>
    new Promise<void>((resolve, reject) => {
      started.push(item);
      open.set(item, resolve);
      fail.set(item, reject);
    });
  const settle = async (): Promise<void> => {
    for (let i = 0; i < 5; i++) await Promise.resolve();
  };
  return { fn, started, end: (i: number) => open.get(i)!(), fail: (i: number, e: Error) => fail.get(i)!(e), settle };
}

describe('forEachAtMost', () => {
  it('runs at most `limit` calls at once, starts the items in order, and takes an item only when a call ends', async () => {
    let taken = 0;
    function* items(): Generator<number> {
      for (let i = 1; i <= 6; i++) {
        taken++;
        yield i;
      }
    }
    const g = gate();
    const run = forEachAtMost(items(), 2, g.fn);
    await g.settle();
    expect(g.started).toEqual([1, 2]);
    expect(taken).toBe(2);
    g.end(2);
    await g.settle();
    expect(g.started).toEqual([1, 2, 3]);
    expect(taken).toBe(3);
    for (const i of [1, 3, 4, 5, 6]) {
      g.end(i);
      await g.settle();
    }
    await run;
    expect(g.started).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it('stops taking items at the first failure and throws it once the calls under way have ended', async () => {
    const g = gate();
    let ended = false;
    const run = forEachAtMost([1, 2, 3, 4], 2, g.fn).finally(() => (ended = true));
    await g.settle();
    g.fail(1, new Error('first'));
    await g.settle();
    expect(ended).toBe(false); // 2 still under way
    g.fail(2, new Error('second'));
    await expect(run).rejects.toThrow('first');
    expect(g.started).toEqual([1, 2]);
  });

  it('runs one at a time when the limit is below 1, and ends at once over nothing', async () => {
    const g = gate();
    const run = forEachAtMost([1, 2], 0, g.fn);
    await g.settle();
    expect(g.started).toEqual([1]);
    g.end(1);
    await g.settle();
    g.end(2);
    await run;
    await forEachAtMost([], 4, g.fn);
    expect(g.started).toEqual([1, 2]);
  });
});

import { describe, expect, it } from 'vitest';
import { RingBuffer } from '../../../../src/daemon/status/web/ring-buffer.js';

describe('RingBuffer', () => {
  it('keeps the newest `capacity` items, oldest first, with increasing sequence numbers', () => {
    const r = new RingBuffer<string>(3);
    expect(r.items()).toEqual([]);
    expect(r.newest()).toBeUndefined();
    for (const x of ['a', 'b', 'c', 'd', 'e']) r.push(x);
    expect(r.items()).toEqual(['c', 'd', 'e']);
    expect(r.entries().map((e) => e.seq)).toEqual([3, 4, 5]);
    expect(r.size).toBe(3);
    expect(r.newest()).toBe('e');
    expect(r.newestSeq).toBe(5);
  });

  it('never holds more than its capacity, however many are pushed', () => {
    const r = new RingBuffer<number>(100);
    for (let i = 0; i < 100_000; i++) r.push(i);
    expect(r.size).toBe(100);
    expect(r.items()[0]).toBe(99_900);
    expect(r.items().at(-1)).toBe(99_999);
  });

  it('since(seq): what came after, and whether some of it was already dropped', () => {
    const r = new RingBuffer<string>(3);
    for (const x of ['a', 'b', 'c', 'd']) r.push(x); // holds b(2) c(3) d(4)
    expect(r.since(4)).toEqual({ entries: [], complete: true });
    expect(r.since(2)).toEqual({ entries: [{ seq: 3, item: 'c' }, { seq: 4, item: 'd' }], complete: true });
    expect(r.since(1).complete).toBe(true); // b (2) is still there
    expect(r.since(0)).toMatchObject({ complete: false }); // a (1) is gone
    expect(r.since(99)).toEqual({ entries: [], complete: true }); // an id from before a restart: nothing newer
  });

  it('refuses a capacity that is not a positive integer', () => {
    expect(() => new RingBuffer(0)).toThrow(RangeError);
    expect(() => new RingBuffer(1.5)).toThrow(/positive integer/);
  });
});

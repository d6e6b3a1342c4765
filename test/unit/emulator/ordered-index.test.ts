import { describe, expect, it } from 'vitest';
import { OrderedIndex } from '../../../packages/emulator/src/ordered-index.js';

interface Item {
  id: string;
  seq: number;
}
const item = (seq: number): Item => ({ id: `i${seq}`, seq });

function filled(n: number): OrderedIndex<Item> {
  const index = new OrderedIndex<Item>();
  for (let seq = 1; seq <= n; seq++) index.add(item(seq));
  return index;
}

describe('OrderedIndex', () => {
  it('looks items up by id and pages them in order, with a cursor only when more follow', () => {
    const index = filled(5);
    expect(index.get('i3')).toEqual(item(3));
    expect(index.page(0, 2)).toEqual({ items: [item(1), item(2)], nextAfter: 2 });
    expect(index.page(2, 2)).toEqual({ items: [item(3), item(4)], nextAfter: 4 });
    expect(index.page(4, 2)).toEqual({ items: [item(5)], nextAfter: null });
    expect(index.page(3, 2)).toEqual({ items: [item(4), item(5)], nextAfter: null });
    expect(index.page(99, 2)).toEqual({ items: [], nextAfter: null });
  });

  it('skips removed items, also when the cursor names a removed one, and does not hand out a cursor for trailing holes', () => {
    const index = filled(6);
    index.remove('i2');
    index.remove('i6');
    expect(index.page(0, 2)).toEqual({ items: [item(1), item(3)], nextAfter: 3 });
    expect(index.page(2, 10).items.map((i) => i.seq)).toEqual([3, 4, 5]);
    expect(index.page(3, 2)).toEqual({ items: [item(4), item(5)], nextAfter: null });
    expect(index.size).toBe(4);
    expect(index.remove('i2')).toBeUndefined();
  });

  it('stays correct through compaction after many deletions', () => {
    const index = filled(500);
    for (let seq = 1; seq <= 500; seq++) if (seq % 5 !== 0) index.remove(`i${seq}`);
    expect(index.size).toBe(100);
    const seen: number[] = [];
    let after = 0;
    for (;;) {
      const page = index.page(after, 7);
      seen.push(...page.items.map((i) => i.seq));
      if (page.nextAfter === null) break;
      after = page.nextAfter;
    }
    expect(seen).toEqual(Array.from({ length: 100 }, (_, i) => (i + 1) * 5));
    index.add(item(501));
    expect([...index.values()].at(-1)).toEqual(item(501));
  });

  it('pages with a filter, counting only matching items', () => {
    const index = filled(10);
    const even = (i: Item): boolean => i.seq % 2 === 0;
    expect(index.page(0, 2, even)).toEqual({ items: [item(2), item(4)], nextAfter: 4 });
    expect(index.page(8, 2, even)).toEqual({ items: [item(10)], nextAfter: null });
    expect(index.page(6, 2, even)).toEqual({ items: [item(8), item(10)], nextAfter: null });
  });

  it('refuses an item out of order or a duplicate id', () => {
    const index = filled(3);
    expect(() => index.add(item(2))).toThrow(/seq/);
    expect(() => index.add({ id: 'i1', seq: 9 })).toThrow(/duplicate/);
  });
});

/**
 * A file table's paths as UTF-8 bytes (path-column.ts): what is set is read back and
 * compared exactly, whatever the script, through rows cleared and reused and the copy of
 * the paths in use to new pages once more bytes are left behind than used.
 */
import { describe, expect, it } from 'vitest';
import { PathColumn } from '../../../src/state/path-column.js';

function rng(seed: number): (n: number) => number {
  return (n) => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    return seed % n;
  };
}

const SHAPES: ((i: number) => string)[] = [
  (i) => `folder-${i % 97}/file-${i}.txt`,
  (i) => `café/résumé ${i}.docx`,
  (i) => `日本語/報告書-${i}.pdf`,
  (i) => `emoji \u{1F4C4}/${i}`,
  // A lone surrogate, an empty path and one longer than a row's length: kept as strings.
  (i) => `lone-\ud83d-${i}`,
  () => '',
  (i) => `${'long/'.repeat(14_000)}${i}`,
  // Long enough that a page holds few: pages are filled, left and copied often.
  (i) => `${'x'.repeat(30_000)}-${i}`,
];

describe('PathColumn', () => {
  it('reads back and compares every path set, under random sets and clears, across page copies', () => {
    const rnd = rng(11);
    const column = new PathColumn();
    const model = new Map<number, string>();
    for (let step = 0; step < 6_000; step++) {
      const row = rnd(300);
      if (model.has(row)) {
        const had = model.get(row)!;
        expect(column.equals(row, had)).toBe(true);
        column.clear(row);
        model.delete(row);
        expect(column.has(row)).toBe(false);
        expect(column.get(row)).toBeUndefined();
        expect(column.equals(row, had)).toBe(false);
      } else {
        const path = SHAPES[rnd(SHAPES.length)]!(step);
        column.set(row, path);
        model.set(row, path);
      }
      if (step % 499 === 0) {
        for (let r = 0; r < 300; r++) {
          const p = model.get(r);
          expect(column.has(r)).toBe(p !== undefined);
          expect(column.get(r)).toBe(p);
          if (p === undefined) continue;
          expect(column.equals(r, p)).toBe(true);
          // One unit changed, added or removed: not the same path.
          expect(column.equals(r, `${p}a`)).toBe(false);
          if (p.length > 0) {
            expect(column.equals(r, p.slice(0, -1))).toBe(false);
            expect(column.equals(r, `${p.slice(0, -1)}\u00e9`)).toBe(false);
          }
        }
      }
    }
  });

  it('a path set over a row that has one replaces it', () => {
    const column = new PathColumn();
    column.set(0, 'first/path.txt');
    column.set(0, 'second/é.txt');
    expect(column.get(0)).toBe('second/é.txt');
    expect(column.equals(0, 'first/path.txt')).toBe(false);
    column.set(0, 'lone-\ud800');
    column.set(0, 'third');
    expect(column.get(0)).toBe('third');
    column.clear(0);
    expect(column.has(0)).toBe(false);
  });

  it('tells paths apart that differ only past ASCII or by their byte count', () => {
    const column = new PathColumn();
    column.set(0, 'a/é.txt');
    column.set(1, 'a/e\u0301.txt'); // the decomposed form: another path, as the filesystem has it
    column.set(2, 'abc');
    expect(column.equals(0, 'a/é.txt')).toBe(true);
    expect(column.equals(0, 'a/e\u0301.txt')).toBe(false);
    expect(column.equals(1, 'a/é.txt')).toBe(false);
    expect(column.equals(1, 'a/e\u0301.txt')).toBe(true);
    // "é" is two bytes: a three-unit ASCII string of the same byte count is not it.
    expect(column.equals(0, 'a/ex.txt')).toBe(false);
    expect(column.equals(2, 'ab')).toBe(false);
    expect(column.equals(2, 'abcd')).toBe(false);
    expect(column.equals(3, 'abc')).toBe(false);
    // A lone surrogate is not U+FFFD, though UTF-8 would encode it as one.
    column.set(4, 'x/\ufffd');
    expect(column.equals(4, 'x/\ud800')).toBe(false);
    expect(column.equals(4, 'x/\ufffd')).toBe(true);
  });
});

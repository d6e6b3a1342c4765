/** The listing's repeated-document check (src/api/seen-ids.ts): exact on what a listing sees. */
import { describe, expect, it } from 'vitest';
import { SeenIds } from '../../../src/api/seen-ids.js';

describe('SeenIds', () => {
  it('tells a new id from one added before, across the table growing', () => {
    const s = new SeenIds();
    const n = 200_000;
    let added = 0;
    for (let i = 0; i < n; i++) if (s.add(`doc_${i.toString(16).padStart(32, '0')}`)) added++;
    expect(added).toBe(n);
    expect(s.size).toBe(n);
    let again = 0;
    for (let i = 0; i < n; i += 7) if (s.add(`doc_${i.toString(16).padStart(32, '0')}`)) again++;
    expect(again).toBe(0);
    expect(s.size).toBe(n);
  });

  it('ids of every length and alphabet: short, numeric, padded, non-Latin, astral', () => {
    const ids = ['', 'a', 'a\u0000', '\u0000a', '1', '01', '10', 'ab', 'ba', 'x'.repeat(7), 'x'.repeat(8), 'x'.repeat(9), 'x'.repeat(1000), 'é', 'e\u0301', '文档', '😀', 'a'.repeat(15), 'a'.repeat(16), 'a'.repeat(17)];
    const s = new SeenIds();
    for (const id of ids) expect(s.add(id)).toBe(true);
    for (const id of ids) expect(s.add(id)).toBe(false);
    expect(s.size).toBe(ids.length);
  });

  it('UUIDs and sequential ids that differ in one character', () => {
    const s = new SeenIds();
    const seen = new Set<string>();
    let wrong = 0;
    for (let i = 0; i < 50_000; i++) {
      const id = `${i.toString(16).padStart(8, '0')}-0000-4000-8000-${(i * 7919).toString(16).padStart(12, '0')}`;
      if (s.add(id) === seen.has(id)) wrong++;
      seen.add(id);
      if (i % 3 === 0 && s.add(id)) wrong++;
    }
    expect(wrong).toBe(0);
  });
});

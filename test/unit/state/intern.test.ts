import { describe, expect, it } from 'vitest';
import { Interner } from '../../../src/state/intern.js';

describe('Interner', () => {
  it('returns each value unchanged, before and after its table starts over', () => {
    const interner = new Interner(4);
    const values = Array.from({ length: 50 }, (_, i) => new Date(1_700_000_000_000 + (i % 7) * 1000).toISOString());
    // Copies made from bytes, as the snapshot's parse makes them.
    for (const v of values) expect(interner.intern(JSON.parse(JSON.stringify(v)) as string)).toBe(v);
    expect(interner.size).toBeLessThanOrEqual(4);
  });
});

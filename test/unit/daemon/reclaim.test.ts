import { describe, expect, it } from 'vitest';
import { collectGarbage } from '../../../src/daemon/reclaim.js';

describe('collectGarbage', () => {
  it('returns the memory of objects no longer referenced, at once', () => {
    let garbage: { id: string; n: number }[] | undefined = Array.from({ length: 500_000 }, (_, n) => ({ id: `doc-${n}`, n }));
    const held = process.memoryUsage().heapUsed;
    expect(garbage.length).toBe(500_000);
    // Dropping the only reference is the point of the test.
    // eslint-disable-next-line no-useless-assignment
    garbage = undefined;
    expect(collectGarbage()).toBe(true);
    // ~40 MB of objects were dropped; a full collection frees them without waiting for allocations.
    expect(process.memoryUsage().heapUsed).toBeLessThan(held - 20 * 1024 * 1024);
    expect(collectGarbage()).toBe(true);
  });
});

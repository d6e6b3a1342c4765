/**
 * The scale benchmark's restart is measured only when the daemon took its lease from the
 * marker kept beside the state (bench/lib/restart-proof.ts, issue 39): a mapping's first
 * start under the lease (a marker made, or searched for by a listing) is refused.
 */
import { describe, expect, it } from 'vitest';
import { notARestart } from '../../../bench/lib/restart-proof.js';

describe('notARestart', () => {
  it('accepts a start that read the remembered marker: one listing (the pass), no marker made', () => {
    expect(notARestart({ listingsBegun: 1, markersMade: 0, markerUsed: 'doc_1' })).toEqual([]);
  });

  it("refuses the first start of a set without a marker: one made, the data source listed to find it and again after the settle", () => {
    const why = notARestart({ listingsBegun: 3, markersMade: 1, markerUsed: 'doc_2' });
    expect(why).toHaveLength(2);
    expect(why.join('\n')).toMatch(/made 1 lease marker/);
    expect(why.join('\n')).toMatch(/3 listings.*searched for/);
  });

  it('refuses a start that found an existing marker by a listing (its id not kept beside the state)', () => {
    expect(notARestart({ listingsBegun: 2, markersMade: 0, markerUsed: 'doc_1' })).toEqual([expect.stringMatching(/2 listings.*not read from the id kept beside the state/)]);
  });

  it('refuses a start whose lease names no marker', () => {
    expect(notARestart({ listingsBegun: 1, markersMade: 0, markerUsed: undefined })).toEqual([expect.stringMatching(/names no lease marker/)]);
  });
});

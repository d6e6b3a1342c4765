import { describe, expect, it } from 'vitest';
import { checkGuards, DeleteWindow, DELETE_WINDOW_MS, type GuardInput } from '../../../src/engine/guards.js';
import type { Op } from '../../../src/engine/plan.js';

function deletes(n: number): Op[] {
  return Array.from({ length: n }, (_, i) => ({ kind: 'delete', path: `f${i}.txt`, documentId: `d${i}`, reason: 'deleted-locally' }) as Op);
}
const base: GuardInput = {
  root: '/srv/share',
  rootStatus: 'ok',
  localFiles: 10,
  knownDocuments: 100,
  ops: [],
  maxDeletePercent: 50,
  massDeleteMinimum: 10,
  allowMassDelete: false,
};

describe('checkGuards', () => {
  it('a missing root is an outage even with --allow-mass-delete', () => {
    const v = checkGuards({ ...base, rootStatus: 'missing', ops: deletes(100), allowMassDelete: true });
    expect(v).toMatchObject({ ok: false, kind: 'outage' });
    expect(!v.ok && v.message).toMatch(/\/srv\/share is missing.*nothing was deleted/);
  });

  it('an empty folder while documents exist is an outage unless allowed', () => {
    expect(checkGuards({ ...base, localFiles: 0, ops: deletes(100) })).toMatchObject({ ok: false, kind: 'outage' });
    expect(checkGuards({ ...base, localFiles: 0, ops: deletes(100), allowMassDelete: true })).toMatchObject({ ok: true });
  });

  it('deleting more than the share stops the pass', () => {
    const v = checkGuards({ ...base, ops: deletes(51) });
    expect(v).toMatchObject({ ok: false, kind: 'mass-delete', deletes: 51 });
    expect(!v.ok && v.message).toMatch(/51 of 100 documents.*--allow-mass-delete/);
  });

  it("a lost upload of ours whose file the same plan sends again is not counted; one whose file is not sent again is", () => {
    const lost = (name: string): Op => ({ kind: 'delete', path: `.dssync-upload-0a1b2c3d4e5f60718293a4b5.${name}`, documentId: `lost-${name}`, reason: 'lost-upload', unmarked: true });
    const upload = (path: string) => ({ kind: 'upload', path }) as unknown as Op;
    const three = { ...base, knownDocuments: 3, massDeleteMinimum: 3 };
    // A second writer crashed after its uploads: their leftovers go as the files are sent again.
    expect(checkGuards({ ...three, ops: [lost('a.txt'), lost('keep.txt'), lost('e.txt'), upload('a.txt'), upload('keep.txt'), upload('e.txt')] })).toMatchObject({ ok: true, deletes: 0 });
    expect(checkGuards({ ...three, ops: [lost('a.txt'), lost('keep.txt'), lost('e.txt')] })).toMatchObject({ ok: false, kind: 'mass-delete', deletes: 3 });
  });

  it('deleting up to the share, or with --allow-mass-delete, goes ahead', () => {
    expect(checkGuards({ ...base, ops: deletes(50) })).toMatchObject({ ok: true, deletes: 50 });
    expect(checkGuards({ ...base, ops: deletes(90), allowMassDelete: true })).toMatchObject({ ok: true });
  });

  it('a few deletions in a small folder never trip the share check', () => {
    expect(checkGuards({ ...base, knownDocuments: 3, ops: deletes(2) })).toMatchObject({ ok: true });
  });

  it('duplicates and stale versions do not count as deletions', () => {
    const ops: Op[] = deletes(60).map((o) => ({ ...(o as Extract<Op, { kind: 'delete' }>), reason: 'duplicate' }));
    expect(checkGuards({ ...base, ops })).toMatchObject({ ok: true, deletes: 0 });
  });

  it('deletions of unmarked documents count, whatever the reason, in a replace too (issue 9, defect 1)', () => {
    const ops: Op[] = [
      ...deletes(6).map((o) => ({ ...(o as Extract<Op, { kind: 'delete' }>), reason: 'duplicate' as const, unmarked: true })),
      { kind: 'replace', path: 'r.txt', file: { path: 'r.txt', diskPath: '/r', size: 1, mtimeMs: 1, sha256: 'h' }, oldDocumentIds: ['a', 'b', 'c', 'd', 'e'], unmarkedOld: 5 },
    ];
    expect(checkGuards({ ...base, knownDocuments: 20, ops })).toMatchObject({ ok: false, kind: 'mass-delete', deletes: 11 });
  });
});

describe('the mass-delete guard over a sliding window (issue 9)', () => {
  it('DeleteWindow counts what was recorded within the window, with time passed in', () => {
    const w = new DeleteWindow(10_000);
    w.record(0, 3);
    w.record(4_000, 2);
    w.record(5_000, 0);
    expect(w.count(9_999)).toBe(5);
    expect(w.count(10_000)).toBe(2);
    expect(w.count(14_000)).toBe(0);
  });

  it('a tree deleted folder by folder is stopped like one deleted at once', () => {
    const w = new DeleteWindow();
    let known = 100;
    let now = 0;
    const verdicts: boolean[] = [];
    // Ten folders of 10 files, one pass per folder a minute apart: each pass alone deletes 10%.
    for (let folder = 0; folder < 10; folder++) {
      const v = checkGuards({ ...base, knownDocuments: known, ops: deletes(10), recentDeletes: w.count(now) });
      verdicts.push(v.ok);
      if (!v.ok) break;
      w.record(now, 10);
      known -= 10;
      now += 60_000;
    }
    // Stopped once more than half of what the data source held went within the window.
    expect(verdicts.filter((ok) => ok)).toHaveLength(5);
    expect(verdicts.at(-1)).toBe(false);
  });

  it('deletions older than the window no longer count', () => {
    const w = new DeleteWindow();
    w.record(0, 45);
    const later = DELETE_WINDOW_MS + 1;
    expect(checkGuards({ ...base, knownDocuments: 55, ops: deletes(10), recentDeletes: w.count(60_000) })).toMatchObject({ ok: false, kind: 'mass-delete' });
    expect(checkGuards({ ...base, knownDocuments: 55, ops: deletes(10), recentDeletes: w.count(later) })).toMatchObject({ ok: true });
  });

  it('the message names the window', () => {
    const v = checkGuards({ ...base, knownDocuments: 50, ops: deletes(10), recentDeletes: 45 });
    expect(!v.ok && v.message).toMatch(/would delete 10 documents, after 45 deleted in the last 10 minutes: 55 of 95/);
  });
});

import { describe, expect, it } from 'vitest';
import { checkGuards, type GuardInput } from '../../../src/engine/guards.js';
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

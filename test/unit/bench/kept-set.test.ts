/**
 * The benchmark's kept set (bench/lib/kept-set.ts) is read by its kept-set.json: a set
 * seeded before the lease (format 1: no marker document, no marker id beside the state) is
 * told apart, so that the run gives it its lease before measuring a restart over it (issue
 * 39: measured as it was, every "restart" was the mapping's first start under the lease).
 */
import { describe, expect, it } from 'vitest';
import { readKeptSetInfo } from '../../../bench/lib/kept-set.js';
import type { TreeSpec } from '../../../bench/lib/tree.js';

const tree: TreeSpec = { files: 300_000, folders: 15_000, minBytes: 64, maxBytes: 256, seed: 2 };
const marker = (format: string, t: TreeSpec = tree): string => JSON.stringify({ format, tree: t, hashedAt: 1_795_940_169_591, documents: 300_000, builtAt: '2026-11-29T08:20:14.792Z' });

describe('readKeptSetInfo', () => {
  it('tells a set seeded before the lease (format 1) from one that carries it (format 2)', () => {
    expect(readKeptSetInfo(marker('dssync-bench-kept-set 1'), 'kept-set.json', tree)).toMatchObject({ withoutLease: true, info: { tree, hashedAt: 1_795_940_169_591 } });
    expect(readKeptSetInfo(marker('dssync-bench-kept-set 2'), 'kept-set.json', tree)).toMatchObject({ withoutLease: false, info: { tree } });
  });

  it('refuses a set of another format or another tree, naming the file and what to do', () => {
    expect(() => readKeptSetInfo(marker('dssync-bench-kept-set 3'), '/k/kept-set.json', tree)).toThrow(/\/k\/kept-set\.json: not a kept set of this benchmark.*remove the folder/);
    expect(() => readKeptSetInfo(marker('dssync-bench-kept-set 2', { ...tree, files: 1_000_000 }), '/k/kept-set.json', tree)).toThrow(/\/k\/kept-set\.json: the set kept there is of another tree.*"files":1000000/);
  });
});

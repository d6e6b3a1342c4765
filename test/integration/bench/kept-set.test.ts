/**
 * The benchmark's kept set (BENCH_SCALE_DIR, bench/lib/kept-set.ts): the seeded restart's
 * tree, state, documents and lease are built once in a folder and reused by the next run,
 * which still measures a restart over an unchanged, already-mirrored tree — a real one: the
 * daemon reads the lease's marker by the id kept beside the state (issue 39). A set kept
 * before the lease (format 1) is given its lease and kept again; a folder that holds
 * anything else is refused, not deleted.
 */
import { copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningEmulator, StoreSnapshot } from '@dssync/emulator';
import { SIZES, type BenchContext } from '../../../bench/lib/context.js';
import { seedFirstMirror } from '../../../bench/lib/seed.js';
import { treeLayout } from '../../../bench/lib/tree.js';
import { runRestart, type RestartSpec } from '../../../bench/scenarios/restart.js';
import { requireBuiltBinary } from '../cli/run-cli.js';

let tmp: string;
beforeAll(async () => {
  requireBuiltBinary();
  tmp = await mkdtemp(join(tmpdir(), 'dssync-kept-set-'));
});
afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

/**
 * Turns the set in `keptDir` into one kept before the lease (format 1), as that version wrote
 * it: the seeded state alone in seed/state.json, the seeded documents without a marker.
 */
async function keptBeforeTheLease(keptDir: string, spec: RestartSpec): Promise<void> {
  const tree = { files: spec.files, folders: spec.folders, minBytes: spec.minBytes, maxBytes: spec.maxBytes, seed: 2 };
  let snap: StoreSnapshot | undefined;
  const emu = { store: { restore: (s: StoreSnapshot) => void (snap = s) } } as unknown as RunningEmulator;
  const statePath = join(keptDir, 'state', 'state.json');
  await rm(join(keptDir, 'state'), { recursive: true, force: true });
  const hashedAt = Date.now();
  await seedFirstMirror({ emu, share: join(keptDir, 'share'), files: treeLayout(tree), statePath, mappingId: 'bench', dataSourceName: 'Bench', hashedAt });
  await rm(join(keptDir, 'seed'), { recursive: true, force: true });
  await mkdir(join(keptDir, 'seed'));
  await copyFile(statePath, join(keptDir, 'seed', 'state.json'));
  const lines = [JSON.stringify({ ...snap!, documents: [] }), ...snap!.documents.map((d) => JSON.stringify(d))];
  await writeFile(join(keptDir, 'seed', 'documents.ndjson'), `${lines.join('\n')}\n`);
  await writeFile(join(keptDir, 'kept-set.json'), JSON.stringify({ format: 'dssync-bench-kept-set 1', tree, hashedAt, documents: spec.files, builtAt: new Date().toISOString() }));
}

describe('BENCH_SCALE_DIR: a kept seeded set', () => {
  it('is built once with its lease, put back as the first mirror left it for the next run; one kept before the lease is upgraded', { timeout: 180_000 }, async () => {
    const ctx: BenchContext = { mode: 'smoke', sizes: SIZES.smoke, tmp };
    const keptDir = join(tmp, 'kept');
    const spec: RestartSpec = { name: 'scale', files: 120, folders: 6, minBytes: 64, maxBytes: 256, seeded: true, keptDir };

    // The mirror writes and reads nothing; its lease, apart: the claim of the marker whose id
    // the first mirror kept (no marker made, no listing but the pass's).
    const restarted = { files: 120, writes: 0, leaseWrites: 1, listings: 1, contentBytesRead: 0, seeded: true };
    const first = await runRestart(ctx, spec);
    expect(first.restart).toMatchObject(restarted);
    expect(first.restart.keptSet).toBeUndefined();
    expect(first.footprint.reclaimSeconds).toBeGreaterThan(0);
    const marker = JSON.parse(await readFile(join(keptDir, 'kept-set.json'), 'utf8')) as { format: string; documents: number; tree: { files: number } };
    // 120 files' documents and the lease's marker.
    expect(marker).toMatchObject({ format: 'dssync-bench-kept-set 2', documents: 121, tree: { files: 120, folders: 6 } });
    // The first run's daemon wrote its journal: the next run must start from the seeded state.
    const seeded = await readFile(join(keptDir, 'seed', 'state', 'state.json.journal'));

    const second = await runRestart(ctx, spec);
    expect(second.restart).toMatchObject({ ...restarted, keptSet: true });
    expect(second.footprint.watchedFolders).toBe(first.footprint.watchedFolders);
    expect(await readFile(join(keptDir, 'seed', 'state', 'state.json.journal'))).toEqual(seeded);

    // A set kept before the lease: given it, kept again, then measured as a restart.
    await keptBeforeTheLease(keptDir, spec);
    const upgraded = await runRestart(ctx, spec);
    expect(upgraded.restart).toMatchObject({ ...restarted, keptSet: true });
    expect(JSON.parse(await readFile(join(keptDir, 'kept-set.json'), 'utf8'))).toMatchObject({ format: 'dssync-bench-kept-set 2', documents: 121 });
    await expect(readFile(join(keptDir, 'seed', 'state.json'))).rejects.toThrow(/ENOENT/);

    // Another tree in the same folder, or a folder that is not a set: refused, left alone.
    await expect(runRestart(ctx, { ...spec, files: 121 })).rejects.toThrow(/another tree.*"files":120/);
    const other = join(tmp, 'other');
    await rm(other, { recursive: true, force: true });
    await mkdir(other);
    await writeFile(join(other, 'notes.txt'), 'mine');
    await expect(runRestart(ctx, { ...spec, keptDir: other })).rejects.toThrow(/not empty but holds no complete set/);
    expect(await readFile(join(other, 'notes.txt'), 'utf8')).toBe('mine');
  });
});

/**
 * The benchmark's kept set (BENCH_SCALE_DIR, bench/lib/kept-set.ts): the seeded restart's
 * tree, state and documents are built once in a folder and reused by the next run, which
 * still measures a restart over an unchanged, already-mirrored tree; a folder that holds
 * anything else is refused, not deleted.
 */
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SIZES, type BenchContext } from '../../../bench/lib/context.js';
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

describe('BENCH_SCALE_DIR: a kept seeded set', () => {
  it('is built once, then put back as seeded for the next run', { timeout: 90_000 }, async () => {
    const ctx: BenchContext = { mode: 'smoke', sizes: SIZES.smoke, tmp };
    const keptDir = join(tmp, 'kept');
    const spec: RestartSpec = { name: 'scale', files: 120, folders: 6, minBytes: 64, maxBytes: 256, seeded: true, keptDir };

    // The mirror writes and reads nothing; its lease, apart: the marker a seeded set lacks, made, and the claim.
    const first = await runRestart(ctx, spec);
    expect(first.restart).toMatchObject({ files: 120, writes: 0, leaseWrites: 2, contentBytesRead: 0, seeded: true });
    expect(first.restart.keptSet).toBeUndefined();
    const marker = JSON.parse(await readFile(join(keptDir, 'kept-set.json'), 'utf8')) as { documents: number; tree: { files: number } };
    expect(marker).toMatchObject({ documents: 120, tree: { files: 120, folders: 6 } });
    // The first run's daemon wrote its journal: the next run must start from the seeded state.
    const seeded = await readFile(join(keptDir, 'seed', 'state.json'));

    const second = await runRestart(ctx, spec);
    expect(second.restart).toMatchObject({ files: 120, writes: 0, leaseWrites: 2, contentBytesRead: 0, seeded: true, keptSet: true });
    expect(second.footprint.watchedFolders).toBe(first.footprint.watchedFolders);
    expect(await readFile(join(keptDir, 'seed', 'state.json'))).toEqual(seeded);

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

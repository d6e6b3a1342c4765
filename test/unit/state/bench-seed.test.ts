/**
 * The scale benchmark's seeding (bench/lib/seed.ts) writes a state the current decoder reads:
 * a tiny seed over a real three-file tree, read back by readStateFile (issue 27.7: the
 * one-JSON-object format it may once have written is no longer read). The emulator is a
 * stand-in that keeps what it is given: only its store's restore() is used.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { RunningEmulator, StoreSnapshot } from '@dssync/emulator';
import { seedFirstMirror } from '../../../bench/lib/seed.js';
import { writeTree } from '../../../bench/lib/tree.js';
import { readStateFile } from '../../../src/state/store.js';

let dir: string | undefined;
afterEach(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
  dir = undefined;
});

describe('bench seeding', () => {
  it('writes the state in the current format, one entry per document it restores', async () => {
    dir = await mkdtemp(join(tmpdir(), 'dssync-seed-'));
    const share = join(dir, 'share');
    const files = await writeTree(share, { files: 3, folders: 2, minBytes: 10, maxBytes: 40, seed: 1 });
    let restored: StoreSnapshot | undefined;
    const emu = { store: { restore: (s: StoreSnapshot) => void (restored = s) } } as unknown as RunningEmulator;
    const statePath = join(dir, 'state', 'state.json');
    const hashedAt = Date.UTC(2026, 10, 27);
    await seedFirstMirror({ emu, share, files, statePath, mappingId: 'share', dataSourceName: 'Share', hashedAt });

    const state = await readStateFile(statePath);
    const m = state?.mappings['share'];
    expect(m?.root).toBe(share);
    expect(m?.dataSourceId).toBe(restored?.dataSources[0]?.data_source_id);
    expect(new Set(m?.files.keys())).toEqual(new Set(files.map((f) => f.rel)));
    for (const doc of restored?.documents ?? []) {
      const path = files.find((f) => m?.files.get(f.rel)?.documentId === doc.document_id)?.rel;
      expect(path, doc.document_id).toBeDefined();
      expect(m?.files.get(path ?? '')).toMatchObject({ size: doc.size, hashedAt });
    }
    expect(restored?.documents).toHaveLength(3);
  });
});

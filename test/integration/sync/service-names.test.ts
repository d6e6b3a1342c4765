/**
 * Issue 34, cases 6 to 8, with the built CLI against the emulator: a service that rewrites
 * every name it stores (lower-cases it, drops the extension, appends " (1)"), cuts names at
 * a length, or ignores a new name in an update. Each converges with no orphan, and the
 * second and third syncs write nothing but their lease's claim and release: what the service does is learned once, kept in the
 * state, and planned around, not fought on every pass.
 */
import { rename, utimes } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { FaultOptions } from '@dssync/emulator';
import { CONVERGED, SYNC_LEASE_WRITES, checkConvergence, createWorkspace, fileDocuments, writeRequests, type Workspace } from '../../helpers/mirror-check.js';
import { jsonOf, requireBuiltBinary } from '../cli/run-cli.js';

let ws: Workspace | undefined;
beforeAll(() => requireBuiltBinary());
afterEach(async () => {
  await ws?.close();
  ws = undefined;
});

const DEEP = `${'a-folder-with-a-rather-long-name/'.repeat(4)}Deep Report.txt`;
const FILES = ['Upper/Report.txt', 'notes.md', DEEP];

interface SyncJson {
  mappings: { counts: Record<string, number> }[];
}

async function writeAll(w: Workspace, files: readonly string[]): Promise<void> {
  // Older than the stability window: the syncs look at once.
  const past = new Date(Date.now() - 600_000);
  for (const f of files) {
    await w.write(f, `content of ${f}`);
    await utimes(join(w.share, f), past, past);
  }
}

async function syncJson(w: Workspace): Promise<SyncJson['mappings'][number]['counts']> {
  const r = await w.sync('--json');
  expect(r.code, r.stdout + r.stderr).toBe(0);
  return jsonOf<SyncJson>(r).mappings[0]!.counts;
}

describe('a service that rewrites, cuts or keeps names (issue 34, cases 6-8)', () => {
  it.each<[string, FaultOptions]>([
    ['lower-cases names', { nameRules: ['lower'] }],
    ['drops the extension', { nameRules: ['no-extension'] }],
    ['appends " (1)"', { nameRules: ['suffix'] }],
    ['does all three', { nameRules: ['lower', 'no-extension', 'suffix'] }],
    ['cuts names at 100 bytes', { nameMaxBytes: 100 }],
    ['cuts at 60 bytes and lower-cases', { nameMaxBytes: 60, nameRules: ['lower'] }],
    ['ignores a new name in an update', { ignoreRename: true }],
    ['ignores a new url in an update', { ignoreUrl: true }],
  ])('%s: converges, no orphan, and the next two syncs write nothing', { timeout: 90_000 }, async (_what, faults) => {
    ws = await createWorkspace({ emulator: { faults } });
    await writeAll(ws, FILES);
    const first = await syncJson(ws);
    expect(first.uploaded).toBe(FILES.length);
    expect(await checkConvergence(ws)).toEqual(CONVERGED);
    for (let i = 0; i < 2; i++) {
      const before = writeRequests(ws.emu);
      const again = await syncJson(ws);
      // Only the lease's claim and release (docs/reliability.md, "The lease"): nothing for the files.
      expect(writeRequests(ws.emu) - before, `sync ${i + 2} wrote`).toBe(SYNC_LEASE_WRITES);
      expect(again).toMatchObject({ uploaded: 0, updated: 0, renamed: 0, replaced: 0, deleted: 0, unchanged: FILES.length });
    }
    expect(fileDocuments(ws.emu, ws.dataSourceId())).toHaveLength(FILES.length);
  });

  it('a rename the service ignores, in a later run that uploads nothing, is sent once and not retried: the App keeps the old name', { timeout: 90_000 }, async () => {
    ws = await createWorkspace({ emulator: { faults: { ignoreRename: true } } });
    await writeAll(ws, ['a.txt', 'b.txt']);
    await syncJson(ws);
    await rename(join(ws.share, 'a.txt'), join(ws.share, 'renamed.txt'));
    const renamed = await syncJson(ws);
    expect(renamed).toMatchObject({ uploaded: 0, deleted: 0 });
    expect(await checkConvergence(ws)).toEqual(CONVERGED);
    for (let i = 0; i < 2; i++) {
      const before = writeRequests(ws.emu);
      const again = await syncJson(ws);
      expect(writeRequests(ws.emu) - before).toBe(SYNC_LEASE_WRITES);
      expect(again).toMatchObject({ updated: 0, renamed: 0, uploaded: 0 });
    }
    const names = fileDocuments(ws.emu, ws.dataSourceId()).map((d) => d.name).sort();
    expect(names).toEqual(['a.txt', 'b.txt']);
  });
});

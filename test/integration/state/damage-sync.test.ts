/**
 * A damaged or lost journal with the built CLI against the emulator on a real folder
 * (docs/reliability.md, "Damage and torn tails"): the next `dssync sync` keeps a copy of the
 * damaged file, says what was lost, keeps the installation's identity and recognises its
 * documents from the listing: nothing is uploaded twice, nothing is held for `adopt`. A state
 * older than the service (restored from a backup) keeps one record per document.
 */
import { readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { StateStore } from '../../../src/state/store.js';
import { CONVERGED, checkConvergence, createWorkspace, type Workspace } from '../../helpers/mirror-check.js';
import { jsonOf, requireBuiltBinary } from '../cli/run-cli.js';

/** What `sync --json` says of the mapping's counts. */
const countsOf = (r: Parameters<typeof jsonOf>[0]) => jsonOf<{ mappings: { counts: Record<string, number> }[] }>(r).mappings[0]?.counts;

let ws: Workspace | undefined;
beforeAll(() => requireBuiltBinary());
afterEach(() => ws?.close());

async function synced(): Promise<{ ws: Workspace; journal: string; documents: number; id: string }> {
  const w = await createWorkspace();
  ws = w;
  for (const n of ['a.txt', 'b.md', 'sub/c.txt']) await w.write(n, `${n}\n`);
  const first = await w.sync('--json');
  expect(first.code, first.stderr).toBe(0);
  expect(countsOf(first)?.uploaded).toBe(3);
  const identity = JSON.parse(await readFile(`${w.statePath}.identity.json`, 'utf8')) as { installationId: string };
  return { ws: w, journal: `${w.statePath}.journal`, documents: w.emu.store.listDocuments(w.dataSourceId()).length, id: identity.installationId };
}

describe('dssync sync after the journal was damaged or lost', () => {
  it('one flipped byte in the first journal record: a copy kept, a warning naming it, the documents recognised (0 uploads)', { timeout: 60_000 }, async () => {
    const { ws: w, journal, documents, id } = await synced();
    const bytes = await readFile(journal);
    expect(bytes.length).toBeGreaterThan(40);
    bytes[30] = (bytes[30] ?? 0) ^ 0x01;
    await writeFile(journal, bytes);

    const second = await w.sync('--json');
    expect(second.code, second.stderr).toBe(0);
    expect(countsOf(second)).toMatchObject({ uploaded: 0, deleted: 0 });
    expect(w.emu.store.listDocuments(w.dataSourceId()).length).toBe(documents);
    const copies = (await readdir(dirname(journal))).filter((f) => f.startsWith('state.json.journal.damaged-'));
    expect(copies).toHaveLength(1);
    expect(await readFile(join(dirname(journal), copies[0] ?? ''))).toEqual(bytes);
    expect(second.stderr).toContain(`kept a copy as ${join(dirname(journal), copies[0] ?? '')}`);
    const identity = JSON.parse(await readFile(`${w.statePath}.identity.json`, 'utf8')) as { installationId: string };
    expect(identity.installationId).toBe(id);
  });

  it('no snapshot and a 0-byte journal (a power cut) beside the identity file: a warning says the state is lost, its id is kept, nothing uploaded', { timeout: 60_000 }, async () => {
    const { ws: w, journal, documents, id } = await synced();
    await rm(w.statePath);
    await writeFile(journal, '');

    const second = await w.sync('--json');
    expect(second.code, second.stderr).toBe(0);
    expect(second.stderr).toContain('is lost: no snapshot and an empty journal');
    expect(countsOf(second)).toMatchObject({ uploaded: 0, deleted: 0 });
    expect(w.emu.store.listDocuments(w.dataSourceId()).length).toBe(documents);
    const identity = JSON.parse(await readFile(`${w.statePath}.identity.json`, 'utf8')) as { installationId: string };
    expect(identity.installationId).toBe(id);
  });

  it('the state restored from before a folder was moved, the folder then moved again: the rename takes the restored record along, and the next sync does not stop on the listing (seed 9101)', { timeout: 90_000 }, async () => {
    const { ws: w } = await synced();
    const dir = dirname(w.statePath);
    const backup = new Map(await Promise.all((await readdir(dir)).map(async (f) => [f, await readFile(join(dir, f))] as const)));
    await rename(join(w.share, 'sub'), join(w.share, 'staging'));
    const moved = await w.sync('--json');
    expect(moved.code, moved.stderr).toBe(0);
    expect(countsOf(moved)).toMatchObject({ renamed: 1, uploaded: 0 });
    // Restored: the state records sub/c.txt, its document says staging/c.txt.
    for (const f of await readdir(dir)) if (!backup.has(f)) await rm(join(dir, f));
    for (const [f, bytes] of backup) await writeFile(join(dir, f), bytes);
    await rename(join(w.share, 'staging'), join(w.share, 'staging.old'));
    const again = await w.sync('--json');
    expect(again.code, again.stderr).toBe(0);
    expect(countsOf(again)).toMatchObject({ renamed: 1, uploaded: 0 });
    // One record per document: the next listing lacks nothing the state records.
    const next = await w.sync('--json');
    expect(next.code, next.stderr).toBe(0);
    expect(countsOf(next)).toMatchObject({ renamed: 0, uploaded: 0, deleted: 0 });
    expect(await checkConvergence(w)).toEqual(CONVERGED);
  });

  it('a state holding one document at two paths (as versions before the fix left it) syncs: the record whose file is gone is forgotten, nothing uploaded or deleted', { timeout: 60_000 }, async () => {
    const { ws: w, documents } = await synced();
    const store = await StateStore.open(w.statePath);
    try {
      const [mappingId] = store.mappingIds();
      const entry = store.mapping(mappingId!)!.files.get('sub/c.txt')!;
      store.setFile(mappingId!, 'sub/old-c.txt', entry);
    } finally {
      await store.close();
    }
    const healed = await w.sync('--json');
    expect(healed.code, healed.stderr).toBe(0);
    expect(countsOf(healed)).toMatchObject({ uploaded: 0, deleted: 0, forgotten: 1 });
    const next = await w.sync('--json');
    expect(next.code, next.stderr).toBe(0);
    expect(countsOf(next)).toMatchObject({ uploaded: 0, deleted: 0, forgotten: 0 });
    expect(w.emu.store.listDocuments(w.dataSourceId()).length).toBe(documents);
    expect(await checkConvergence(w)).toEqual(CONVERGED);
  });
});

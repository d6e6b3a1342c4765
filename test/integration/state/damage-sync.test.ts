/**
 * A damaged or lost journal with the built CLI against the emulator on a real folder
 * (docs/reliability.md, "Damage and torn tails"): the next `dssync sync` keeps a copy of the
 * damaged file, says what was lost, keeps the installation's identity and recognises its
 * documents from the listing: nothing is uploaded twice, nothing is held for `adopt`.
 */
import { readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createWorkspace, type Workspace } from '../../helpers/mirror-check.js';
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
});

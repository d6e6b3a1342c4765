import { chmod, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { StateStore } from '../../../src/state/store.js';
import type { FileEntry } from '../../../src/state/schema.js';
import { FakeClock } from '../../helpers/fake-clock.js';
import { corruptStateText, cutShort, stateFileText } from '../../helpers/state-fixture.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'dssync-state-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

function entry(i: number): FileEntry {
  return {
    documentId: `0f8e4c1a-7b2d-4e5f-9a6b-${String(i).padStart(12, '0')}`,
    size: 10_000 + i,
    mtimeMs: 1_700_000_000_000.123 + i * 1000,
    sha256: i.toString(16).padStart(64, 'c'),
    syncedAt: new Date(1_700_000_000_000 + i).toISOString(),
  };
}

const mode = async (p: string) => (await stat(p)).mode & 0o777;

describe('StateStore on a real file system', () => {
  it('creates the missing directory 0700 and the file 0600, leaving no temp file', async () => {
    const statePath = join(dir, 'nested', 'deeper', 'state.json');
    const store = await StateStore.open(statePath);
    store.ensureMapping('m', 'ds', '/srv/m');
    store.setFile('m', 'a.txt', entry(1));
    await store.flush();
    expect(await mode(join(dir, 'nested', 'deeper'))).toBe(0o700);
    // The first durable write puts the snapshot on disk (what any release reads first), and a journal after it.
    expect(await mode(statePath)).toBe(0o600);
    expect(await mode(`${statePath}.journal`)).toBe(0o600);
    expect((await readdir(join(dir, 'nested', 'deeper'))).sort()).toEqual(['state.json', 'state.json.journal', 'state.json.lock']);
    await store.close();
    expect((await readdir(join(dir, 'nested', 'deeper'))).sort()).toEqual(['state.json', 'state.json.journal']);
  });

  it('restricts an existing state file that others can read', async () => {
    const statePath = join(dir, 'state.json');
    await writeFile(statePath, stateFileText());
    await chmod(statePath, 0o644);
    const store = await StateStore.open(statePath);
    expect(await mode(statePath)).toBe(0o600);
    await store.close();
  });

  it('removes temp files of an interrupted write when it opens', async () => {
    const statePath = join(dir, 'state.json');
    await writeFile(join(dir, 'state.json.tmp-999-abcd'), cutShort(stateFileText()));
    await writeFile(join(dir, 'state.json.journal.tmp-999-abcd'), '0000');
    await writeFile(join(dir, 'unrelated.tmp-1'), 'keep');
    const store = await StateStore.open(statePath);
    expect((await readdir(dir)).sort()).toEqual(['state.json.lock', 'unrelated.tmp-1']);
    await store.close();
  });

  it("moves a corrupt file aside with onCorrupt 'reset'", async () => {
    const statePath = join(dir, 'state.json');
    const corrupt = corruptStateText();
    await writeFile(statePath, corrupt);
    const store = await StateStore.open(statePath, { onCorrupt: 'reset', clock: new FakeClock(Date.UTC(2026, 0, 2, 3, 4, 5, 6)) });
    expect(store.mapping('m')).toBeUndefined();
    expect(await readFile(join(dir, 'state.json.corrupt-2026-01-02T03-04-05-006Z'), 'utf8')).toBe(corrupt);
    await store.close();
  });

  it('writes, folds and reloads 100,000 files exactly (speed is measured by the bench, not here)', { timeout: 120_000 }, async () => {
    const statePath = join(dir, 'state.json');
    const store = await StateStore.open(statePath, { foldMinBytes: 1024 * 1024 });
    store.ensureMapping('big', 'ds', '/srv/big');
    for (let i = 0; i < 100_000; i++) store.setFile('big', `dept-${i % 50}/project-${i % 997}/document-${i}.docx`, entry(i));
    await store.flush();
    store.setFile('big', 'dept-1/one more.docx', entry(1));
    await store.flush();
    await store.close();
    expect(store.writeStats.snapshot.writes).toBe(1); // the journal passed the bound: folded once

    const again = await StateStore.open(statePath);
    expect(again.fileCount('big')).toBe(100_001);
    expect(again.mapping('big')?.files.get('dept-7/project-7/document-7.docx')).toEqual(entry(7));
    expect(again.readStats?.replayedOps).toBe(1); // only what came after the snapshot
    await again.close();
  });
});

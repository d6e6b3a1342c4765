/**
 * A damaged journal is copied aside before anything is cut (issue 34 case 1), on real files:
 * a byte flipped in the first record's length, with valid records after it, keeps a copy and
 * every later record; and a copy never replaces an earlier one, though the wall clock came
 * back to the instant of that copy (a step back).
 */
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { journalPathOf } from '../../../src/state/journal.js';
import type { FileEntry } from '../../../src/state/schema.js';
import { StateStore } from '../../../src/state/store.js';
import { FakeClock } from '../../helpers/fake-clock.js';
import { captureLogger } from './fakes.js';

function entry(i: number): FileEntry {
  return { documentId: `doc-${i}`, size: i, mtimeMs: 1000 + i, sha256: `h${i}`, syncedAt: '2026-11-22T00:00:00.000Z' };
}

describe('a damaged journal on disk', () => {
  let dir: string;
  let statePath: string;
  let journal: string;
  const clock = new FakeClock(Date.parse('2026-11-22T02:14:28.123Z'));
  const open = (): Promise<StateStore> => StateStore.open(statePath, { clock, lock: false, logger: captureLogger().logger });
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'dssync-damage-'));
    statePath = join(dir, 'state.json');
    journal = journalPathOf(statePath);
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  /**
   * Writes files `names` to mapping m, one write each (a new state's first write is its
   * snapshot), then flips the journal's first byte: the first record's length, so that
   * record is lost and those after it are valid.
   */
  async function writeAndFlipFirstLength(names: string[]): Promise<Buffer> {
    const store = await open();
    store.ensureMapping('m', 'ds', '/r');
    for (const [i, name] of names.entries()) {
      store.setFile('m', name, entry(i));
      await store.flush();
    }
    await store.close();
    const bytes = await readFile(journal);
    bytes[0] = bytes[0]! ^ 0x20;
    await writeFile(journal, bytes);
    return bytes;
  }

  const copies = async (): Promise<string[]> => (await readdir(dir)).filter((f) => f.startsWith('state.json.journal.damaged-')).sort();

  it('a flipped byte in the first record\'s length: a copy is kept and every later record recovered; a second damage at the same wall instant keeps both copies', async () => {
    const first = await writeAndFlipFirstLength(['a', 'b', 'c']);
    const again = await open();
    expect([...(again.mapping('m')?.files.keys() ?? [])].sort()).toEqual(['a', 'c']);
    await again.close();
    expect(await copies()).toEqual(['state.json.journal.damaged-2026-11-22T02-14-28-123Z']);

    // The wall clock is back at the first copy's instant: that copy stays as it was.
    const second = await writeAndFlipFirstLength(['d', 'e']);
    const third = await open();
    expect([...(third.mapping('m')?.files.keys() ?? [])].sort()).toEqual(['a', 'c', 'e']);
    await third.close();
    const kept = await copies();
    expect(kept).toEqual(['state.json.journal.damaged-2026-11-22T02-14-28-123Z', 'state.json.journal.damaged-2026-11-22T02-14-28-123Z-2']);
    expect((await readFile(join(dir, kept[0]!))).equals(first)).toBe(true);
    expect((await readFile(join(dir, kept[1]!))).equals(second)).toBe(true);
  });
});

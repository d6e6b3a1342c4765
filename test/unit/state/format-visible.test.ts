/**
 * The state's format is visible to every reader (issue 37.1, docs/upgrading.md "What a
 * downgrade does"). Releases out (0.1.0, 0.2.0) read the snapshot first and refuse a format
 * above their own there (`version > STATE_VERSION` on its first line), before they read the
 * journal; a journal record they cannot read they take for a torn tail and cut. So no record
 * is appended before a snapshot of the current format is on disk: from the first write of a
 * new state, and before the first write to a state carried over from those releases (their
 * recorded journals: test/fixtures/state-releases/). This release and later ones also read
 * the format from every journal record ("f") and refuse a newer one, leaving it as it is.
 * `scripts/downgrade-check.mjs` runs the real releases on a state of this build.
 */
import { readFileSync } from 'node:fs';
import { crc32 } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { frameRecord } from '../../../src/state/journal.js';
import { STATE_VERSION, FORMAT_RELEASES } from '../../../src/state/schema.js';
import { StateVersionError } from '../../../src/state/errors.js';
import { readStateFile, StateStore } from '../../../src/state/store.js';
import { FakeClock } from '../../helpers/fake-clock.js';
import { MemFs } from './fakes.js';

const PATH = '/var/lib/dssync/state.json';
const JOURNAL = `${PATH}.journal`;
const HEADER = `dssync-state ${STATE_VERSION} {"needs":"${FORMAT_RELEASES[STATE_VERSION]}"`;

/** Fails the test's expectation when a journal record is written while no current snapshot is on disk. */
function watchOrder(fs: MemFs): { appendsWithoutSnapshot: () => number } {
  let bad = 0;
  fs.onStep = (op, path) => {
    if (op === 'writev' && path === JOURNAL && !fs.text(PATH)?.startsWith(HEADER)) bad++;
  };
  return { appendsWithoutSnapshot: () => bad };
}

const open = (fs: MemFs) => StateStore.open(PATH, { fs, clock: new FakeClock(0), lock: false, onCorrupt: 'reset' });
const entry = { documentId: 'doc-1', size: 1, mtimeMs: 1, sha256: 'h', syncedAt: '2026-11-28T00:00:00.000Z' };

describe('the format a reader sees first', () => {
  it('a new state: its first write puts the snapshot on disk before any journal record', async () => {
    const fs = new MemFs();
    const order = watchOrder(fs);
    const store = await open(fs);
    store.ensureMapping('m', 'ds', '/r');
    store.setFile('m', 'a', entry);
    await store.flush();
    store.setFile('m', 'b', entry);
    await store.close();
    expect(order.appendsWithoutSnapshot()).toBe(0);
    expect(fs.text(PATH)?.split('\n')[0]).toMatch(new RegExp(`^${HEADER.replace(/[{}]/g, '\\$&')}`));
    expect(fs.text(JOURNAL)?.slice(16, 16 + `{"f":${STATE_VERSION},`.length)).toBe(`{"f":${STATE_VERSION},`);
    expect([...((await readStateFile(PATH, fs))?.mappings['m']?.files.keys() ?? [])].sort()).toEqual(['a', 'b']);
  });

  for (const release of ['0.1.0', '0.2.0']) {
    const recorded = readFileSync(new URL(`../../fixtures/state-releases/${release}.journal`, import.meta.url));

    it(`a state carried over from ${release} (its journal alone, as it wrote it) reads as before, and the snapshot comes before this format's first record`, async () => {
      const fs = new MemFs();
      fs.dirs.add('/var/lib/dssync');
      fs.files.set(JOURNAL, { data: Buffer.from(recorded), mode: 0o600 });
      const order = watchOrder(fs);
      const store = await open(fs);
      expect(store.recovery).toBeUndefined();
      expect(store.fileCount('docs')).toBe(1);
      store.setFile('docs', 'new.txt', entry);
      await store.close();
      expect(order.appendsWithoutSnapshot()).toBe(0);
      expect(fs.text(PATH)?.startsWith(HEADER)).toBe(true);
      expect([...((await readStateFile(PATH, fs))?.mappings['docs']?.files.keys() ?? [])].sort()).toEqual(['a.txt', 'new.txt']);
    });

    it(`a state carried over from ${release}, opened and closed without a change, is left byte for byte (it is still that release's)`, async () => {
      const fs = new MemFs();
      fs.files.set(JOURNAL, { data: Buffer.from(recorded), mode: 0o600 });
      fs.dirs.add('/var/lib/dssync');
      const store = await open(fs);
      await store.close();
      expect(fs.files.get(JOURNAL)?.data.equals(recorded)).toBe(true);
      expect(fs.files.has(PATH)).toBe(false);
    });
  }

  it('a journal whose records name a newer format is refused, even with onCorrupt reset, and left byte for byte', async () => {
    const newer = frameRecord(1, [['map', 'm', 'ds', '/r']]);
    const text = newer.toString('latin1').replace(`{"f":${STATE_VERSION},`, `{"f":${STATE_VERSION + 1},`);
    // Framed again: the checksum covers the payload.
    const payload = Buffer.from(text.slice(16, -1), 'latin1');
    const record = Buffer.concat([Buffer.from(`${payload.length.toString(16).padStart(8, '0')}${(crc32(payload) >>> 0).toString(16).padStart(8, '0')}`), payload, Buffer.from('\n')]);
    const fs = new MemFs();
    fs.dirs.add('/var/lib/dssync');
    fs.files.set(JOURNAL, { data: record, mode: 0o600 });
    const err = await open(fs).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StateVersionError);
    expect((err as StateVersionError).code).toBe('E_STATE_NEWER');
    expect((err as Error).message).toContain(`state format ${STATE_VERSION + 1}`);
    expect(fs.files.get(JOURNAL)?.data.equals(record)).toBe(true);
    expect([...fs.files.keys()]).toEqual([JOURNAL]);
    await expect(readStateFile(PATH, fs)).rejects.toBeInstanceOf(StateVersionError);
  });
});

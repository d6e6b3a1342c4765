/**
 * The snapshot file (lines) as the store reads and writes it: streamed in chunks and
 * slices, a cut or damaged file detected, a file of an older format (4) read with its
 * journal and rewritten.
 */
import { describe, expect, it } from 'vitest';
import { SnapshotParser, WINDOW_BYTES, readSnapshot } from '../../../src/state/decode.js';
import { StateCodec, encodeStateToString, type SliceOptions } from '../../../src/state/encoder.js';
import { StateCorruptError } from '../../../src/state/errors.js';
import { frameRecord } from '../../../src/state/journal.js';
import { SYNC_EVERY_BYTES, writeFileAtomic } from '../../../src/state/atomic-file.js';
import { CHUNK_ROWS } from '../../../src/state/file-table.js';
import type { FileEntry, StateFile } from '../../../src/state/schema.js';
import { SnapshotFile } from '../../../src/state/snapshot-file.js';
import { readStateFile, StateStore } from '../../../src/state/store.js';
import { newMappingState, newState } from '../../../src/state/validate.js';
import { captureLogger, MemFs } from './fakes.js';
import { FakeClock } from '../../helpers/fake-clock.js';
import { stateFileText } from '../../helpers/state-fixture.js';
import { toFormat4 } from '../../helpers/state-v3.js';

const PATH = '/var/lib/dssync/state.json';
const JOURNAL = `${PATH}.journal`;

function entry(i: number): FileEntry {
  const e: FileEntry = { documentId: `doc-${i}`, size: i, mtimeMs: 1000.5 + i, sha256: `${i}`.padStart(64, 'f'), syncedAt: '2026-11-22T00:00:00.000Z' };
  return i % 3 === 0 ? { ...e, hashedAt: 2000 + i, ctimeMs: 1000.25 + i, dev: 2049, ino: 10_000 + i } : e;
}

/** Two mappings, `files` files in the first: about 260 bytes per file line. */
function big(files: number): StateFile {
  const s = newState();
  s.journalSeq = 42;
  const m = newMappingState('ds-1', '/srv/share');
  for (let i = 0; i < files; i++) m.files.set(`department-${i % 37}/folder-${i % 501}/a rather long document name ${i} é "q".txt`, entry(i));
  m.intents['i1'] = { kind: 'upload', id: 'i1', startedAt: 't', files: [{ path: 'x', size: 1, mtimeMs: 1, sha256: 'h', documentId: 'doc-1' }] };
  s.mappings['docs'] = m;
  const other = newMappingState('ds-2', '/srv/other');
  other.files.set('a', entry(1));
  s.mappings['other'] = other;
  return s;
}

function plain(s: unknown): unknown {
  return JSON.parse(JSON.stringify(s));
}

const noYield: SliceOptions = { sliceMs: 1e9, now: () => 0, yieldNow: () => Promise.resolve() };

/** A clock that advances by 1 ms each time it is read: every look at it costs a millisecond. */
function tickingClock(): SliceOptions & { yields: number[] } {
  let t = 0;
  const yields: number[] = [];
  return {
    sliceMs: 4,
    now: () => t++,
    yieldNow: () => {
      yields.push(t);
      return Promise.resolve();
    },
    yields,
  };
}

describe('snapshot file', () => {
  it('round-trips a state of several chunks through the file, indexing it as it reads', async () => {
    const s = big(12_000);
    const fs = new MemFs();
    fs.dirs.add('/var/lib/dssync');
    await new SnapshotFile(PATH, fs, new StateCodec(), { slices: noYield }).write(s);
    expect(fs.files.get(PATH)?.data.length).toBeGreaterThan(2 * (1 << 20)); // more than two chunks of the reader
    expect(fs.files.get(PATH)?.mode).toBe(0o600);
    expect(fs.text(PATH)).toBe(encodeStateToString(s));
    const codec = new StateCodec();
    const file = new SnapshotFile(PATH, fs, codec, { slices: noYield });
    const back = await file.read();
    expect(plain(back)).toEqual(plain(s));
    expect(file.migratedFrom).toBeUndefined();
    expect(file.readStats?.bytes).toBe(fs.files.get(PATH)?.data.length);
    const m = back?.mappings['docs'];
    if (!m) throw new Error('no mapping');
    expect(m.files.size).toBe(12_000);
    // Rows are in the file's order: encoding again gives the same bytes.
    expect(Buffer.concat(codec.encode(back)).toString()).toBe(fs.text(PATH));
  });

  it('reads lines longer than its window of text, and longer than a chunk, with non-ASCII paths around them', async () => {
    const s = big(3000);
    const m = s.mappings['docs'];
    if (!m) throw new Error('no mapping');
    // A mapping line of ~1.5 MB (its refused files are in it), its file lines after it.
    for (let i = 0; i < 20_000; i++) m.rejected[`refusé/fichier ${i} « long ».bin`] = { size: i, mtimeMs: i, status: 413, reason: 'too large', at: '2026-01-01T00:00:00.000Z' };
    const text = encodeStateToString(s);
    expect(Math.max(...text.split('\n').map((l) => Buffer.byteLength(l)))).toBeGreaterThan((1 << 20) + WINDOW_BYTES);
    const fs = new MemFs();
    fs.put(PATH, text);
    const r = await readSnapshot(fs, PATH, tickingClock());
    expect(plain(r?.state)).toEqual(plain(s));
  });

  it('detects a snapshot cut short anywhere, or damaged, as corrupt', async () => {
    const text = encodeStateToString(big(6000));
    const bytes = Buffer.byteLength(text);
    const lineEnds = [...text.matchAll(/\n/g)].map((m) => m.index);
    // Cuts at line ends (the lines above are whole: only the count tells), inside lines, on chunk edges.
    const cuts = [0, 1, 10, ...lineEnds.slice(0, 3).map((i) => i + 1), (1 << 20) - 1, 1 << 20, (1 << 20) + 1, bytes - 20, bytes - 1, ...lineEnds.slice(-3).map((i) => i + 1)];
    for (const cut of cuts.filter((c) => c < bytes)) {
      const fs = new MemFs();
      fs.put(PATH, '');
      const f = fs.files.get(PATH);
      if (f) f.data = Buffer.from(text).subarray(0, cut);
      const err = await readSnapshot(fs, PATH, noYield).catch((e: unknown) => e);
      expect(err, `cut at ${cut}`).toBeInstanceOf(StateCorruptError);
    }
    // A byte flipped in the middle of the file.
    const fs = new MemFs();
    const damaged = Buffer.from(text);
    const mid = Math.floor(bytes / 2);
    damaged[mid] = (damaged[mid] ?? 0) ^ 0x01;
    fs.put(PATH, '');
    const f = fs.files.get(PATH);
    if (f) f.data = damaged;
    await expect(readSnapshot(fs, PATH, noYield)).rejects.toThrow(StateCorruptError);
  });

  it('a truncated snapshot is moved aside by onCorrupt reset, with its journal', async () => {
    const fs = new MemFs();
    const text = encodeStateToString(big(100));
    fs.put(PATH, text.slice(0, text.length - 30));
    fs.put(JOURNAL, frameRecord(43, [['del', 'docs', 'x']]).toString('latin1'));
    await expect(StateStore.open(PATH, { fs, clock: new FakeClock(), lock: false })).rejects.toThrow(/no end line after line \d+: the file is cut short/);
    const { logger, lines } = captureLogger();
    const store = await StateStore.open(PATH, { fs, clock: new FakeClock(0), lock: false, onCorrupt: 'reset', logger });
    expect(store.mapping('m')).toBeUndefined();
    expect([...fs.files.keys()].sort()).toEqual([`${PATH}.corrupt-1970-01-01T00-00-00-000Z`, `${JOURNAL}.corrupt-1970-01-01T00-00-00-000Z`]);
    expect(String(lines().find((l) => l['level'] === 40)?.['msg'])).toMatch(/cut short/);
    await store.close();
  });

  it('reads a snapshot of an older format (4) and its journal, and rewrites it in the current one at once', async () => {
    const fs = new MemFs();
    // As dssync 0.2.0 wrote it.
    const v4 = stateFileText(
      {
        docs: {
          dataSourceId: 'ds-1',
          root: '/srv/docs',
          intents: { i1: { kind: 'upload', id: 'i1', startedAt: 't', files: [{ path: 'gone.txt', size: 1, mtimeMs: 1, sha256: 'h', documentId: 'doc-9' }] } },
          rejected: { 'big.bin': { size: 1e9, mtimeMs: 7, status: 413, reason: 'too large', at: 't' } },
          lastPass: { startedAt: 'a', finishedAt: 'b', ok: true, summary: { uploaded: 2 } },
          files: {
            'a.txt': { documentId: 'doc-1', size: 10, mtimeMs: 1000.5, sha256: 'h1', syncedAt: '2026-01-01T00:00:00.000Z' },
            'b.txt': { documentId: 'doc-2', size: 11, mtimeMs: 1001.5, sha256: 'h2', syncedAt: '2026-01-01T00:00:00.000Z', hashedAt: 3000, ctimeMs: 1001.25, dev: 2049, ino: 77 },
          },
        },
      },
      { journalSeq: 5 },
    );
    fs.put(PATH, toFormat4(v4));
    fs.put(JOURNAL, frameRecord(6, [['set', 'docs', 'c.txt', ['doc-3', 12, 1002.5, 'h3', 't']]]).toString('latin1'));
    const { logger, lines } = captureLogger();
    const store = await StateStore.open(PATH, { fs, clock: new FakeClock(), lock: false, logger });
    expect([...(store.mapping('docs')?.files.keys() ?? [])].sort()).toEqual(['a.txt', 'b.txt', 'c.txt']);
    expect(store.mapping('docs')?.files.get('b.txt')).toEqual({ documentId: 'doc-2', size: 11, mtimeMs: 1001.5, sha256: 'h2', syncedAt: '2026-01-01T00:00:00.000Z', hashedAt: 3000, ctimeMs: 1001.25, dev: 2049, ino: 77 });
    expect(lines().some((l) => String(l['msg']).includes('migrated from version 4'))).toBe(true);
    await store.fold(); // the fold the migration started
    const text = fs.text(PATH) ?? '';
    expect(text.startsWith('dssync-state 5 {"needs":"0.3.0","journalSeq":6}\n')).toBe(true);
    expect(fs.text(JOURNAL)).toBe('');
    const before = plain(store.mapping('docs'));
    await store.close();
    expect(plain((await readStateFile(PATH, fs))?.mappings['docs'])).toEqual(before);
    expect(store.fileCount('docs')).toBe(3);
  });

  it('encodes in slices: no slice runs past the bound, whatever the size', async () => {
    const s = big(20_000);
    const clock = tickingClock();
    let writes = 0;
    const result = await new StateCodec().snapshot(s).run(clock, async () => {
      writes++;
    });
    // One chunk of CHUNK_ROWS rows is the unit: a slice ends at the first look at the clock past 4 ms.
    expect(result.maxBlockMs).toBeLessThanOrEqual(clock.sliceMs + 1);
    expect(clock.yields.length + writes).toBeGreaterThan(Math.ceil(20_000 / CHUNK_ROWS) / (clock.sliceMs + 1) - 1);
    expect(result.bytes).toBeGreaterThan(3 * (1 << 20));
    expect(writes).toBeGreaterThanOrEqual(Math.floor(result.bytes / (1 << 20))); // handed to the file a MiB at a time, never whole
  });

  it('reads in slices: no slice parses more than its bound of lines', async () => {
    const fs = new MemFs();
    const text = encodeStateToString(big(20_000));
    fs.put(PATH, text);
    const shortestLine = Math.min(...text.split('\n').filter((l) => l.startsWith('[')).map((l) => Buffer.byteLength(l) + 1));
    const clock = tickingClock();
    const parser = new SnapshotParser(PATH); // the lines parsed so far, counted at each turn
    const counts: number[] = [];
    const yieldNow = clock.yieldNow;
    clock.yieldNow = () => {
      counts.push(parser.lineCount);
      return yieldNow();
    };
    // Each read of a chunk is a turn of the event loop as well.
    const open = fs.open.bind(fs);
    fs.open = async (path, flags, mode) => {
      const h = await open(path, flags, mode);
      return {
        ...h,
        read: (...a) => {
          counts.push(parser.lineCount);
          return h.read(...a);
        },
      };
    };
    const r = await readSnapshot(fs, PATH, clock, parser);
    expect([...(r?.state.mappings['docs']?.files.keys() ?? [])]).toHaveLength(20_000);
    const slices = counts.map((n, i) => n - (counts[i - 1] ?? 0));
    // The clock is read after each window of WINDOW_BYTES and a slice ends past 4 ms: at
    // most 4 windows of lines.
    const bound = 4 * Math.ceil(WINDOW_BYTES / shortestLine);
    expect(Math.max(...slices)).toBeLessThanOrEqual(bound);
    expect(counts.length).toBeGreaterThanOrEqual(Math.floor(20_000 / bound));
  });
});

describe('a streamed snapshot reaches the disk as it is written (writeFileAtomic)', () => {
  it('is fsynced every SYNC_EVERY_BYTES, so that a journal fsync beside it never waits for the whole file', async () => {
    const fs = new MemFs();
    fs.dirs.add('/var/lib/dssync');
    const steps: string[] = [];
    fs.onStep = (op, path) => steps.push(`${op} ${path.includes('.tmp-') ? 'tmp' : path}`);
    const part = SYNC_EVERY_BYTES / 4;
    const chunk = Buffer.alloc(part, 0x61);
    await writeFileAtomic(fs, PATH, async (write) => {
      for (let i = 0; i < 2 * 4 + 3; i++) await write([chunk]);
    });
    const tmpSteps = steps.filter((s) => s.endsWith(' tmp'));
    // Two syncs on the way (after each SYNC_EVERY_BYTES), one at the end, then the rename.
    expect(tmpSteps.filter((s) => s === 'sync tmp')).toHaveLength(3);
    const firstSync = tmpSteps.indexOf('sync tmp');
    expect(tmpSteps.slice(0, firstSync).filter((s) => s === 'writev tmp')).toHaveLength(4);
    expect(tmpSteps.at(-1)).toBe('rename tmp');
    expect(fs.files.get(PATH)?.data.length).toBe(2 * SYNC_EVERY_BYTES + 3 * part);
  });
});

import { describe, expect, it } from 'vitest';
import { frameRecord, parseJournal } from '../../../src/state/journal.js';
import type { StateOp } from '../../../src/state/ops.js';
import type { FileEntry } from '../../../src/state/schema.js';
import { decodeState } from '../../../src/state/decode.js';
import { readStateFile, StateStore } from '../../../src/state/store.js';
import { captureLogger, MemFs, settle } from './fakes.js';
import { FakeClock } from '../../helpers/fake-clock.js';
import { stateFileText } from '../../helpers/state-fixture.js';

const PATH = '/var/lib/dssync/state.json';
const JOURNAL = `${PATH}.journal`;

function entry(i: number): FileEntry {
  return { documentId: `doc-${i}`, size: i, mtimeMs: 1000 + i, sha256: `h${i}`, syncedAt: '2026-11-22T00:00:00.000Z' };
}

const OPS: StateOp[][] = [
  [['map', 'm', 'ds', '/r']],
  [
    ['set', 'm', 'é/"a".txt', ['d1', 1, 2.5, 'h', 't']],
    ['del', 'm', 'x'],
    // With the racy check's stat fields (an entry of an older version has none, as above).
    ['set', 'm', 'b.txt', ['d2', 1, 2.5, 'h', 't', 9000, 2.25, 2049, 77]],
    ['set', 'm', 'c.txt', ['d3', 1, 2.5, 'h', 't', 9000, null, null, null]],
  ],
  [['pass', 'm', { startedAt: 'a', finishedAt: 'b', ok: true, summary: { n: 1 } }]],
];

/** A state whose journal holds one file ('a') and then a record cut short by a crash. */
async function tornJournal(): Promise<{ fs: MemFs; good: string }> {
  const fs = new MemFs();
  const store = await open(fs);
  store.ensureMapping('m', 'ds', '/r');
  store.setFile('m', 'a', entry(1));
  await store.close();
  const good = fs.text(JOURNAL) ?? '';
  fs.put(JOURNAL, good + frameRecord(3, [['set', 'm', 'b', ['d', 1, 1, 'h', 't']]]).subarray(0, 30).toString('latin1'));
  return { fs, good };
}

describe('journal records', () => {
  it('round-trip, and every cut of the last record keeps the ones before it', () => {
    const recs = OPS.map((ops, i) => frameRecord(i + 1, ops));
    const whole = Buffer.concat(recs);
    const parsed = parseJournal(whole);
    expect(parsed.problem).toBeUndefined();
    expect(parsed.records.map((r) => r.ops)).toEqual(OPS);
    expect(parsed.validBytes).toBe(whole.length);
    const before = whole.length - (recs[2]?.length ?? 0);
    for (let cut = before; cut < whole.length; cut++) {
      const p = parseJournal(whole.subarray(0, cut));
      expect(p.records).toHaveLength(2);
      expect(p.validBytes).toBe(before);
      if (cut > before) expect(p.problem).toMatch(/incomplete record/);
    }
  });

  it('a flipped byte fails the checksum, and reading stops there', () => {
    const whole = Buffer.concat(OPS.map((ops, i) => frameRecord(i + 1, ops)));
    const first = frameRecord(1, OPS[0] ?? []).length;
    const bad = Buffer.from(whole);
    bad[first + 20] = (bad[first + 20] ?? 0) ^ 0x01;
    const p = parseJournal(bad);
    expect(p.records).toHaveLength(1);
    expect(p.problem).toMatch(/checksum/);
  });
});

/** JSON with the files in path order (a load does not keep the order of insertion). */
function canonical(m: unknown): string {
  if (!m) return 'null';
  // Through JSON: the files table is written as a plain object (FileTable.toJSON).
  const mm = JSON.parse(JSON.stringify(m)) as { files: Record<string, unknown> };
  return JSON.stringify({ ...mm, files: Object.keys(mm.files).sort().map((k) => [k, mm.files[k]]) });
}

async function open(fs: MemFs, foldMinBytes = 8 * 1024 * 1024) {
  return StateStore.open(PATH, { fs, clock: new FakeClock(0), lock: false, foldMinBytes });
}

describe('StateStore journal', () => {
  it('a durable write appends a record whose size depends on the change, not on the files held', async () => {
    const fs = new MemFs();
    const store = await open(fs);
    store.ensureMapping('m', 'ds', '/r');
    const sizes: number[] = [];
    for (const n of [100, 10_000]) {
      for (let i = 0; i < n; i++) store.setFile('m', `dir/f${i}`, entry(i));
      await store.flush();
      await store.beginIntent('m', { kind: 'upload', files: [{ path: 'new', size: 1, mtimeMs: 1, sha256: 'h' }] });
      sizes.push(store.writeStats.lastBytes);
    }
    // Only the digits of the op numbers differ.
    expect(Math.abs((sizes[0] ?? 0) - (sizes[1] ?? 0))).toBeLessThan(8);
    expect(fs.files.has(PATH)).toBe(false); // no snapshot yet: the journal is far below the fold bound
    await store.close();
  });

  it('folds the journal into a snapshot past the bound, and a reload is exact', async () => {
    const fs = new MemFs();
    const store = await open(fs, 4096);
    store.ensureMapping('m', 'ds', '/r');
    for (let round = 0; round < 30; round++) {
      for (let i = 0; i < 20; i++) store.setFile('m', `f${(round * 7 + i) % 150}`, entry(round * 100 + i));
      store.deleteFile('m', `f${round}`);
      await store.flush();
      await settle(); // a fold encodes between turns of the event loop
    }
    await store.close();
    expect(store.writeStats.snapshot.writes).toBeGreaterThan(0);
    expect(store.writeStats.journalBytes).toBeLessThan(8192);
    const snap = decodeState(PATH, fs.text(PATH) ?? '').state;
    expect(snap.journalSeq).toBeGreaterThan(0);
    const again = await open(fs, 4096);
    expect(JSON.parse(JSON.stringify(again.mapping('m')))).toEqual(JSON.parse(JSON.stringify(store.mapping('m'))));
    await again.close();
  });

  it('a torn final record is ignored with a warning and cut off; later writes load again', async () => {
    const { fs, good } = await tornJournal();
    const { logger, lines } = captureLogger();
    const again = await StateStore.open(PATH, { fs, clock: new FakeClock(), lock: false, logger });
    expect([...(again.mapping('m')?.files.keys() ?? [])]).toEqual(['a']);
    expect(lines().some((l) => l['level'] === 40 && String(l['msg']).includes('incomplete record'))).toBe(true);
    expect(fs.text(JOURNAL)).toBe(good);
    again.setFile('m', 'c', entry(3));
    await again.close();
    expect([...((await readStateFile(PATH, fs))?.mappings['m']?.files.keys() ?? [])].sort()).toEqual(['a', 'c']);
  });

  it('a torn final record is cut off in place: a full disk does not keep the state from opening (the chaos run, state-disk-full)', async () => {
    const { fs, good } = await tornJournal();
    // The disk is full: every write fails (a copy of the valid part could not be made).
    fs.fail('writev', 'ENOSPC', 100);
    const again = await StateStore.open(PATH, { fs, clock: new FakeClock(), lock: false, logger: captureLogger().logger });
    expect([...(again.mapping('m')?.files.keys() ?? [])]).toEqual(['a']);
    expect(fs.text(JOURNAL)).toBe(good);
    await again.close().catch(() => undefined);
  });

  it('a journal that does not follow its snapshot is corrupt (reset moves both aside)', async () => {
    const fs = new MemFs();
    fs.put(PATH, stateFileText({}, { journalSeq: 5 }));
    fs.put(JOURNAL, frameRecord(9, [['map', 'm', 'ds', '/r']]).toString('latin1'));
    await expect(open(fs)).rejects.toThrow(/resumes at op 9 while its snapshot ends at op 5/);
    const store = await StateStore.open(PATH, { fs, clock: new FakeClock(0), lock: false, onCorrupt: 'reset' });
    expect(store.mapping('m')).toBeUndefined();
    expect([...fs.files.keys()].sort()).toEqual([`${PATH}.corrupt-1970-01-01T00-00-00-000Z`, `${JOURNAL}.corrupt-1970-01-01T00-00-00-000Z`]);
  });

  it('a crash at any step of writes and folds leaves every acknowledged change, and a state that was real', async () => {
    const fs = new MemFs();
    const store = await open(fs, 2048);
    store.ensureMapping('m', 'ds', '/r');
    await store.flush();
    /** The states the store went through at each flush (JSON of the mapping), in order. */
    const states: string[] = [canonical(store.mapping('m'))];
    let acked = 0;
    const images: { disk: MemFs; acked: number }[] = [];
    fs.onStep = () => void images.push({ disk: fs.image(), acked });
    let seed = 3;
    const rnd = (n: number) => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return (seed >>> 8) % n;
    };
    for (let round = 0; round < 40; round++) {
      const changes = 1 + rnd(12);
      for (let i = 0; i < changes; i++) {
        const p = `d${rnd(5)}/f${rnd(80)}`;
        if (rnd(4) === 0) store.deleteFile('m', p);
        else store.setFile('m', p, entry(round * 100 + i));
      }
      if (rnd(5) === 0) store.setLastPass('m', { startedAt: 'a', finishedAt: 'b', ok: true, summary: { round } });
      states.push(canonical(store.mapping('m')));
      await store.flush();
      acked = states.length - 1;
      if (rnd(2) === 0) await settle(); // lets a fold go on between writes
    }
    await store.close();
    fs.onStep = undefined;
    expect(store.writeStats.snapshot.writes).toBeGreaterThan(2);
    expect(images.length).toBeGreaterThan(50);
    for (const { disk, acked: ackedThen } of images) {
      const s = await StateStore.open(PATH, { fs: disk, clock: new FakeClock(), lock: false });
      const found = states.lastIndexOf(canonical(s.mapping('m')));
      expect(found).toBeGreaterThanOrEqual(ackedThen);
      await s.close();
    }
  });

  it('readStateFile reads again when a fold lands between its reads of the snapshot and the journal', async () => {
    const fs = new MemFs();
    const store = await open(fs);
    store.ensureMapping('m', 'ds', '/r');
    store.setFile('m', 'a', entry(1));
    await store.flush();
    const before = fs.image(); // journal only, ops 1..2
    store.setFile('m', 'b', entry(2));
    await store.fold(); // snapshot at op 3, journal emptied
    store.setFile('m', 'c', entry(3));
    await store.close(); // journal: op 4
    const after = fs.image();
    // The reader sees the old snapshot (none) and then the new journal (starting at op 4).
    let swapped = false;
    const racy = before.image();
    const read = racy.readFile.bind(racy);
    racy.readFile = async (path: string) => {
      if (path === JOURNAL && !swapped) {
        swapped = true;
        for (const [p, f] of after.files) racy.files.set(p, f);
      }
      return read(path);
    };
    const s = await readStateFile(PATH, racy);
    expect(swapped).toBe(true);
    expect([...(s?.mappings['m']?.files.keys() ?? [])].sort()).toEqual(['a', 'b', 'c']);
  });
});

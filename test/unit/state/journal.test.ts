import { crc32 } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { STATE_VERSION } from '../../../src/state/schema.js';
import { frameRecord, parseJournal } from '../../../src/state/journal.js';
import type { StateOp } from '../../../src/state/ops.js';
import type { FileEntry } from '../../../src/state/schema.js';
import { decodeState } from '../../../src/state/decode.js';
import { readStateFile, StateStore } from '../../../src/state/store.js';
import { StateWriteError } from '../../../src/state/errors.js';
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
  const recs = OPS.map((ops, i) => frameRecord(i + 1, ops));
  const whole = Buffer.concat(recs);
  const starts = recs.map((_, i) => recs.slice(0, i).reduce((n, r) => n + r.length, 0));
  const flip = (at: number): Buffer => {
    const bad = Buffer.from(whole);
    bad[at] = (bad[at] ?? 0) ^ 0x01;
    return bad;
  };

  it('round-trip, and every cut of the last record is a torn tail that keeps the ones before it', () => {
    const parsed = parseJournal(whole);
    expect(parsed.torn).toBeUndefined();
    expect(parsed.damaged).toEqual([]);
    expect(parsed.records.map((r) => r.ops)).toEqual(OPS);
    expect(parsed.validBytes).toBe(whole.length);
    const before = starts[2] ?? 0;
    for (let cut = before + 1; cut < whole.length; cut++) {
      const p = parseJournal(whole.subarray(0, cut));
      expect(p.records).toHaveLength(2);
      expect(p.validBytes).toBe(before);
      expect(p.damaged).toEqual([]);
      expect(p.torn).toMatch(/incomplete record/);
    }
  });

  it('every record names the state format first, and a record of a newer format is reported, not taken for damage', () => {
    expect(whole.toString('latin1', 16, 23)).toBe(`{"f":${STATE_VERSION},`);
    const newer = Buffer.from(whole.toString('latin1').replaceAll(`{"f":${STATE_VERSION},`, `{"f":${STATE_VERSION + 1},`), 'latin1');
    // The checksums no longer match the rewritten payloads: frame them again.
    const framed = Buffer.concat(OPS.map((ops, i) => reframe(frameRecord(i + 1, ops), STATE_VERSION + 1)));
    expect(parseJournal(newer).newerFormat).toBeUndefined();
    const p = parseJournal(framed);
    expect(p.newerFormat).toBe(STATE_VERSION + 1);
    expect(p.records).toEqual([]);
    expect(p.damaged).toEqual([]);
  });

  it('a journal of a release that wrote no format (0.1.0 to 0.3.0) reads as before', () => {
    const old = Buffer.concat(OPS.map((ops, i) => reframe(frameRecord(i + 1, ops), undefined)));
    const p = parseJournal(old);
    expect(p.records.map((r) => r.ops)).toEqual(OPS);
    expect(p.damaged).toEqual([]);
  });

  it('a flipped byte in the first, a middle or the last record is damage: every other record is read, before and after it', () => {
    for (const [i, at] of starts.entries()) {
      for (const offset of [3, 12, 20, (recs[i]?.length ?? 0) - 1]) {
        const p = parseJournal(flip(at + offset));
        expect(p.records.map((r) => r.first), `record ${i}, byte ${offset}`).toEqual([1, 2, 3].filter((n) => n !== i + 1));
        expect(p.torn).toBeUndefined();
        expect(p.damaged).toHaveLength(1);
        expect(p.damaged[0]?.from).toBe(at);
      }
    }
  });

  it('a cut inside the only record, with no snapshot, is damage (nothing else holds it); after a snapshot it is a torn tail', () => {
    const one = recs[0] ?? Buffer.alloc(0);
    const cut = one.subarray(0, 25);
    expect(parseJournal(cut).damaged).toEqual([{ from: 0, to: 25, problem: 'an incomplete record at byte 0' }]);
    expect(parseJournal(cut).torn).toBeUndefined();
    expect(parseJournal(cut, true).torn).toMatch(/incomplete record/);
    expect(parseJournal(Buffer.alloc(0))).toEqual({ records: [], validBytes: 0, damaged: [] });
  });
});

/** The record framed again with another format field (undefined: none, as before 0.4.0). */
function reframe(rec: Buffer, format: number | undefined): Buffer {
  const payload = JSON.parse(rec.toString('utf8', 16, rec.length - 1)) as { f?: number; s: number; o: unknown[] };
  const body = Buffer.from(JSON.stringify(format === undefined ? { s: payload.s, o: payload.o } : { f: format, s: payload.s, o: payload.o }));
  const header = `${body.length.toString(16).padStart(8, '0')}${(crc32(body) >>> 0).toString(16).padStart(8, '0')}`;
  return Buffer.concat([Buffer.from(header, 'latin1'), body, Buffer.from('\n')]);
}

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
    // One snapshot, written before the first record (what an older dssync reads first), and no fold since: the journal is far below the bound.
    expect(store.writeStats.snapshot.writes).toBe(1);
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

  it('a fold gives way to a durable write: nothing of the snapshot is written while a journal append is in flight', async () => {
    const fs = new MemFs();
    const store = await open(fs);
    store.ensureMapping('m', 'ds', '/r');
    for (let i = 0; i < 2000; i++) store.setFile('m', `dir/f${i}`, entry(i));
    await store.flush();
    const written = fs.writes.length;
    const releaseSync = fs.gate('sync'); // the journal's fsync of the write below, held
    const fold = store.fold();
    store.setFile('m', 'dir/f1', entry(99));
    const write = store.beginIntent('m', { kind: 'upload', files: [{ path: 'new', size: 1, mtimeMs: 1, sha256: 'h' }] });
    for (let k = 0; k < 20; k++) await settle();
    expect(fs.writes.slice(written).filter((p) => p.includes('.tmp-'))).toEqual([]);
    releaseSync();
    await write;
    await fold;
    expect(fs.writes.slice(written).some((p) => p.includes('.tmp-'))).toBe(true);
    await store.close();
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

  it('a damaged journal on a full disk: no copy can be kept, so nothing is cut; the start fails naming the damage and the cause', async () => {
    const { fs } = await tornJournal();
    // No snapshot: the journal's only record, cut, is damage (nothing else holds it), not a torn tail.
    const damaged = Buffer.from(fs.files.get(JOURNAL)?.data ?? Buffer.alloc(0));
    damaged[20] = (damaged[20] ?? 0) ^ 0x01;
    fs.files.set(JOURNAL, { data: damaged, mode: 0o600 });
    fs.files.delete(PATH);
    fs.fail('writev', 'ENOSPC', 100);
    const err = await StateStore.open(PATH, { fs, clock: new FakeClock(), lock: false, onCorrupt: 'reset', logger: captureLogger().logger }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StateWriteError);
    expect((err as StateWriteError).errno).toBe('ENOSPC');
    expect((err as Error).message).toMatch(/journal is damaged \(bytes 0-\d+: .*\) and no copy of it could be kept .*: it was left as it is/);
    expect(fs.files.get(JOURNAL)?.data.equals(damaged)).toBe(true);
    expect([...fs.files.keys()].filter((p) => p !== JOURNAL && !p.endsWith('.identity.json'))).toEqual([]);
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

  it('a corrupt state set aside at the instant of an earlier one (the wall clock stepped back) keeps the earlier copy', async () => {
    const fs = new MemFs();
    fs.put(PATH, stateFileText({}, { journalSeq: 5 }));
    fs.put(JOURNAL, frameRecord(9, [['map', 'm', 'ds', '/r']]).toString('latin1'));
    fs.put(`${PATH}.corrupt-1970-01-01T00-00-00-000Z`, 'the earlier copy');
    await StateStore.open(PATH, { fs, clock: new FakeClock(0), lock: false, onCorrupt: 'reset', logger: captureLogger().logger });
    expect(fs.text(`${PATH}.corrupt-1970-01-01T00-00-00-000Z`)).toBe('the earlier copy');
    expect([...fs.files.keys()].filter((f) => f.includes('.corrupt-')).sort()).toEqual([
      `${PATH}.corrupt-1970-01-01T00-00-00-000Z`,
      `${PATH}.corrupt-1970-01-01T00-00-00-000Z-2`,
      `${JOURNAL}.corrupt-1970-01-01T00-00-00-000Z`,
    ]);
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
    store.setFile('m', 'b', entry(2));
    await store.flush();
    const before = fs.image(); // the first write's snapshot (ops 1..2), the journal: op 3
    store.setFile('m', 'c', entry(3));
    await store.fold(); // snapshot at op 4, journal emptied
    store.setFile('m', 'd', entry(4));
    await store.close(); // journal: op 5
    const after = fs.image();
    // The reader sees the old snapshot and then the new journal (starting at op 5).
    let swapped = false;
    const racy = before.image();
    const openFile = racy.open.bind(racy);
    racy.open = async (path: string, flags: string, mode?: number) => {
      if (path === JOURNAL && flags === 'r' && !swapped) {
        swapped = true;
        for (const [p, f] of after.files) racy.files.set(p, f);
      }
      return openFile(path, flags, mode);
    };
    const s = await readStateFile(PATH, racy);
    expect(swapped).toBe(true);
    expect([...(s?.mappings['m']?.files.keys() ?? [])].sort()).toEqual(['a', 'b', 'c', 'd']);
  });
});

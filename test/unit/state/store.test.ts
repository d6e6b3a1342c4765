import { describe, expect, it } from 'vitest';
import { encodeStateToString } from '../../../src/state/encoder.js';
import { newMappingState, newState } from '../../../src/state/validate.js';
import { StateCorruptError, StateFormatRetiredError, StateVersionError, StateWriteError } from '../../../src/state/errors.js';
import type { FileEntry, Intent } from '../../../src/state/schema.js';
import { readStateFile, StateStore, type StateStoreOptions } from '../../../src/state/store.js';
import { captureLogger, MemFs, settle } from './fakes.js';
import { FakeClock } from '../../helpers/fake-clock.js';
import { corruptStateText, stateFileText } from '../../helpers/state-fixture.js';

const PATH = '/var/lib/dssync/state.json';
const JOURNAL = `${PATH}.journal`;
const T0 = Date.UTC(2026, 10, 22, 2, 14, 28, 123);

function entry(i: number): FileEntry {
  return { documentId: `doc-${i}`, size: i, mtimeMs: 1000 + i, sha256: `h${i}`, syncedAt: '2026-11-22T00:00:00.000Z' };
}

/** The open intents of a mapping, oldest first. */
function intentsOf(store: StateStore, id: string): Intent[] {
  return Object.values(store.mapping(id)?.intents ?? {}).sort((a, b) => (a.startedAt < b.startedAt ? -1 : a.startedAt > b.startedAt ? 1 : 0));
}

async function setup(opts: Partial<StateStoreOptions> & { fs?: MemFs } = {}) {
  const fs = opts.fs ?? new MemFs();
  const timers = new FakeClock(T0);
  const log = captureLogger();
  const writeErrors: StateWriteError[] = [];
  const store = await StateStore.open(PATH, {
    fs,
    clock: timers,
    lock: false,
    logger: log.logger,
    onWriteError: (e) => void writeErrors.push(e),
    ...opts,
  });
  store.ensureMapping('docs', 'ds-1', '/srv/docs');
  await store.flush();
  fs.writes = [];
  /** What a restart would load. */
  const onDisk = async () => (await readStateFile(PATH, fs)) ?? newState();
  /** Durable writes that reached the disk: journal appends. */
  const appends = () => fs.writes.filter((p) => p === JOURNAL);
  return { fs, timers, log, store, writeErrors, onDisk, appends };
}

describe('StateStore coalescing', () => {
  it('several mutations make one write, after writeDelayMs', async () => {
    const { timers, store, onDisk, appends } = await setup();
    store.setFile('docs', 'a', entry(1));
    store.setFile('docs', 'b', entry(2));
    await timers.advance(100);
    store.deleteFile('docs', 'a');
    store.renameFile('docs', 'b', 'c', entry(3));
    await timers.advance(149);
    expect(appends()).toHaveLength(0);
    await timers.advance(1);
    expect(appends()).toHaveLength(1);
    expect([...((await onDisk()).mappings['docs']?.files.keys() ?? [])]).toEqual(['c']);
    await timers.advance(10_000);
    expect(appends()).toHaveLength(1);
  });

  it('a mutation made during a write is written by a second write', async () => {
    const { fs, timers, store, onDisk, appends } = await setup();
    store.setFile('docs', 'a', entry(1));
    const release = fs.gate('sync');
    await timers.advance(250); // write 1 started, waiting on its rename
    store.setFile('docs', 'b', entry(2));
    release();
    await settle();
    expect(appends()).toHaveLength(1);
    expect([...((await onDisk()).mappings['docs']?.files.keys() ?? [])]).toEqual(['a']);
    await timers.advance(250);
    expect(appends()).toHaveLength(2);
    expect([...((await onDisk()).mappings['docs']?.files.keys() ?? [])].sort()).toEqual(['a', 'b']);
  });

  it('flush() covers every mutation made before it, even those made during a write in flight', async () => {
    const { fs, timers, store, onDisk } = await setup();
    store.setFile('docs', 'a', entry(1));
    const release = fs.gate('sync');
    await timers.advance(250);
    store.setFile('docs', 'b', entry(2));
    const flushed = store.flush();
    release();
    await flushed;
    expect([...((await onDisk()).mappings['docs']?.files.keys() ?? [])].sort()).toEqual(['a', 'b']);
  });

  it('endIntent, setRejected, clearRejected and setLastPass are coalesced like the rest', async () => {
    const { fs, timers, store, onDisk, appends } = await setup();
    const id = await store.beginIntent('docs', { kind: 'upload', files: [{ path: 'p', size: 1, mtimeMs: 1, sha256: 'h' }] });
    fs.writes = [];
    store.endIntent('docs', id);
    store.setRejected('docs', 'big.bin', { size: 1, mtimeMs: 2, status: 413, reason: 'too large', at: 't' });
    store.setRejected('docs', 'bad.exe', { size: 1, mtimeMs: 2, reason: 'type', at: 't' });
    store.clearRejected('docs', 'bad.exe');
    store.setLastPass('docs', { startedAt: 'a', finishedAt: 'b', ok: true, summary: { uploaded: 1 } });
    expect(appends()).toHaveLength(0);
    await timers.advance(250);
    expect(appends()).toHaveLength(1);
    const m = (await onDisk()).mappings['docs'];
    expect(Object.keys(m?.intents ?? {})).toEqual([]);
    expect(Object.keys(m?.rejected ?? {})).toEqual(['big.bin']);
    expect(m?.lastPass?.summary).toEqual({ uploaded: 1 });
  });
});

describe('StateStore intents', () => {
  it('beginIntent resolves only once the intent is on disk', async () => {
    const { fs, store, onDisk } = await setup();
    const release = fs.gate('sync');
    let id: string | undefined;
    const p = store.beginIntent('docs', { kind: 'upload', files: [{ path: 'a', size: 1, mtimeMs: 2, sha256: 'h' }] }).then((x) => (id = x));
    await settle();
    expect(id).toBeUndefined(); // written, not yet fsync'd
    release();
    await p;
    expect(id).toBeDefined();
    const intent = (await onDisk()).mappings['docs']?.intents[id as string];
    expect(intent).toMatchObject({ kind: 'upload', id, startedAt: new Date(T0).toISOString() });
    expect(intentsOf(store, 'docs').map((i) => i.id)).toEqual([id]);
  });

  it('many concurrent beginIntent calls share writes (group commit)', async () => {
    const { fs, store, onDisk, appends } = await setup();
    store.setFile('docs', 'x', entry(1));
    const release = fs.gate('sync');
    const first = store.flush(); // a write in flight
    await settle();
    const ids = Promise.all(
      Array.from({ length: 50 }, (_, i) => store.beginIntent('docs', { kind: 'upload', files: [{ path: `p${i}`, size: 1, mtimeMs: 1, sha256: 'h' }] })),
    );
    await settle();
    release();
    await first;
    const all = await ids;
    expect(appends()).toHaveLength(2); // the one in flight, and one for all fifty
    expect(Object.keys((await onDisk()).mappings['docs']?.intents ?? {}).sort()).toEqual([...all].sort());
  });

  it('when the intent cannot be written, beginIntent rejects and forgets it', async () => {
    const { fs, store, writeErrors, onDisk } = await setup();
    fs.fail('writev', 'ENOSPC');
    const p = store.beginIntent('docs', { kind: 'upload', files: [{ path: 'p', size: 1, mtimeMs: 1, sha256: 'h' }] });
    await expect(p).rejects.toBeInstanceOf(StateWriteError);
    expect(intentsOf(store, 'docs')).toEqual([]);
    expect(writeErrors).toHaveLength(1);
    await store.flush();
    expect(Object.keys((await onDisk()).mappings['docs']?.intents ?? {})).toEqual([]);
  });

  it('validates intents and keeps only their known fields', async () => {
    const { store, onDisk } = await setup();
    await expect(
      store.beginIntent('docs', { kind: 'upload', files: [{ path: 'a', size: Number.NaN, mtimeMs: 1, sha256: 'h' }] }),
    ).rejects.toThrow(/intent for mapping docs: files\.0\.size/);
    const withExtra = { kind: 'upload' as const, files: [{ path: 'p', token: 'secret-token', size: 1, mtimeMs: 1, sha256: 'h' }] };
    const id = await store.beginIntent('docs', withExtra);
    expect(JSON.stringify((await onDisk()))).not.toContain('secret-token');
    expect(intentsOf(store, 'docs')[0]?.id).toBe(id);
  });
});

describe('StateStore write failures', () => {
  it('a failing write leaves the old file intact, is reported, and a later flush succeeds', async () => {
    const { fs, store, writeErrors, log, onDisk } = await setup();
    store.setFile('docs', 'a', entry(1));
    await store.flush();
    const before = fs.text(PATH);
    store.setFile('docs', 'b', entry(2));
    fs.fail('writev', 'ENOSPC');
    const err = await store.flush().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StateWriteError);
    const e = err as StateWriteError;
    expect(e.errno).toBe('ENOSPC');
    expect(e.message).toContain(PATH);
    expect(e.message).toContain('no space left on device');
    expect(writeErrors).toEqual([e]);
    expect(log.lines().some((l) => l['level'] === 50 && String(l['msg']).includes(PATH))).toBe(true);
    expect(fs.text(PATH)).toBe(before);
    expect([...fs.files.keys()].sort()).toEqual([PATH, JOURNAL]); // no temp file left behind
    await store.flush();
    expect(log.lines().some((l) => String(l['msg']).includes('written again after 1 failed attempts'))).toBe(true);
    expect([...((await onDisk()).mappings['docs']?.files.keys() ?? [])].sort()).toEqual(['a', 'b']);
  });

  it('retries by itself with back-off after a failed timed write', async () => {
    const { fs, timers, store, onDisk, appends, writeErrors } = await setup();
    fs.fail('open', 'EACCES');
    store.setFile('docs', 'a', entry(1));
    await timers.advance(250);
    expect(writeErrors.map((e) => e.errno)).toEqual(['EACCES']);
    expect(appends()).toHaveLength(0);
    await timers.advance(500);
    expect(appends()).toHaveLength(1);
    expect(writeErrors).toHaveLength(1);
    expect([...((await onDisk()).mappings['docs']?.files.keys() ?? [])]).toEqual(['a']);
  });

  it('a failed fsync of the journal: the partial record is cut off, and the retry writes it once', async () => {
    const { fs, store, onDisk } = await setup();
    store.setFile('docs', 'a', entry(1));
    await store.flush();
    const good = fs.text(JOURNAL);
    store.setFile('docs', 'b', entry(2));
    fs.fail('sync', 'EIO');
    await expect(store.flush()).rejects.toThrow(/EIO/);
    expect(fs.text(JOURNAL)?.startsWith(good ?? '')).toBe(true);
    store.setFile('docs', 'c', entry(3));
    await store.flush();
    // The records before, then one holding b (the failed one, cut off and written again) and c.
    const records = (fs.text(JOURNAL) ?? '').split('\n').filter(Boolean);
    expect(records).toHaveLength((good ?? '').split('\n').filter(Boolean).length + 1);
    expect([...((await onDisk()).mappings['docs']?.files.keys() ?? [])].sort()).toEqual(['a', 'b', 'c']);
    expect([...fs.files.keys()].sort()).toEqual([PATH, JOURNAL]);
  });
});

describe('StateStore open', () => {
  it('creates nothing until the first mutation and starts empty', async () => {
    const fs = new MemFs();
    const store = await StateStore.open(PATH, { fs, clock: new FakeClock(), lock: false });
    expect(store.mapping('docs')).toBeUndefined();
    expect(fs.dirs.has('/var/lib/dssync')).toBe(true);
    expect(fs.files.size).toBe(0);
  });

  it('reloads what it wrote', async () => {
    const { fs, store } = await setup();
    store.setFile('docs', '__proto__', entry(1));
    store.setFile('docs', 'dir/ü.txt', entry(2));
    await store.close();
    const again = await StateStore.open(PATH, { fs, clock: new FakeClock(), lock: false });
    expect(again.mapping('docs')?.files.get('__proto__')).toEqual(entry(1));
    expect(again.mapping('docs')?.files.get('dir/ü.txt')).toEqual(entry(2));
    expect(again.readStats?.journalBytes).toBe(Buffer.byteLength(fs.text(JOURNAL) ?? ''));
  });

  it('an upload intent keeps the documents its answer named and the ones that existed before, across a restart', async () => {
    const { fs, store, onDisk } = await setup();
    const files = [
      { path: 'a', size: 1, mtimeMs: 2, sha256: 'h1' },
      { path: 'b', size: 1, mtimeMs: 2, sha256: 'h2' },
    ];
    const id = await store.beginIntent('docs', { kind: 'upload', files, preexisting: ['p1'] });
    store.setIntentDocuments('docs', id, ['d1', undefined]);
    await store.flush();
    // From the journal...
    expect((await onDisk()).mappings['docs']?.intents[id]).toEqual({ kind: 'upload', id, startedAt: new Date(T0).toISOString(), files: [{ ...files[0], documentId: 'd1' }, files[1]], preexisting: ['p1'] });
    await store.close();
    // ...and from the snapshot it is folded into.
    const again = await StateStore.open(PATH, { fs, clock: new FakeClock(), lock: false });
    const intent = again.mapping('docs')?.intents[id];
    expect(intent?.kind === 'upload' && intent.files.map((f) => f.documentId)).toEqual(['d1', undefined]);
  });

  it('loads an upload intent written before intents named their documents', async () => {
    const fs = new MemFs();
    const old = newState();
    const m = newMappingState('ds-1', '/srv/docs');
    m.intents['i1'] = { kind: 'upload', id: 'i1', startedAt: 't', files: [{ path: 'a', size: 1, mtimeMs: 2, sha256: 'h' }] };
    old.mappings['docs'] = m;
    fs.put(PATH, encodeStateToString(old));
    const store = await StateStore.open(PATH, { fs, clock: new FakeClock(), lock: false });
    expect(store.mapping('docs')?.intents['i1']).toEqual(m.intents['i1']);
  });

  it('writes the file and its temp file with mode 0600, and restricts a more open file', async () => {
    const fs = new MemFs();
    const s = newState();
    s.mappings['m'] = newMappingState('d', '/r');
    fs.put(PATH, encodeStateToString(s), 0o644);
    const { logger, lines } = captureLogger();
    const store = await StateStore.open(PATH, { fs, clock: new FakeClock(), lock: false, logger });
    expect(fs.files.get(PATH)?.mode).toBe(0o600);
    expect(lines().some((l) => l['level'] === 40 && String(l['msg']).includes('644'))).toBe(true);
    store.setFile('m', 'a', entry(1));
    await store.flush();
    expect(fs.files.get(PATH)?.mode).toBe(0o600);
  });

  it('a corrupt file fails with StateCorruptError naming it', async () => {
    const fs = new MemFs();
    fs.put(PATH, corruptStateText());
    const err = await StateStore.open(PATH, { fs, clock: new FakeClock(), lock: false }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StateCorruptError);
    expect((err as Error).message).toContain(PATH);
  });

  it("a file of format 1 or 2 (one JSON object) is refused and left as it is, even with onCorrupt 'reset'", async () => {
    const fs = new MemFs();
    const v2 = '{"version":2,"journalSeq":0,"mappings":{"docs":{"dataSourceId":"ds-1","root":"/srv/docs","intents":{},"rejected":{},"files":[]}}}';
    fs.put(PATH, v2);
    // Larger than a read chunk (1 MiB) as well: the first bytes decide.
    fs.put(`${PATH}2`, `${v2.slice(0, -2)}${',"x":1'.repeat(300_000)}}}`);
    for (const path of [PATH, `${PATH}2`]) {
      const before = fs.text(path);
      const err = await StateStore.open(path, { fs, clock: new FakeClock(), lock: false, onCorrupt: 'reset' }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(StateFormatRetiredError);
      expect((err as Error).message).toContain(`state file ${path} is one JSON object`);
      expect(fs.text(path)).toBe(before);
    }
    // Nothing moved aside, nothing written beside it.
    expect([...fs.files.keys()].sort()).toEqual([PATH, `${PATH}2`]);
    await expect(readStateFile(PATH, fs)).rejects.toThrow(StateFormatRetiredError);
  });

  it("onCorrupt 'reset' moves the bad file aside, warns naming it, and starts empty", async () => {
    const fs = new MemFs();
    fs.put(PATH, 'garbage');
    const { logger, lines } = captureLogger();
    const store = await StateStore.open(PATH, { fs, clock: new FakeClock(T0), lock: false, logger, onCorrupt: 'reset' });
    const aside = `${PATH}.corrupt-2026-11-22T02-14-28-123Z`;
    expect(fs.text(aside)).toBe('garbage');
    expect(fs.files.has(PATH)).toBe(false);
    expect(store.mapping('docs')).toBeUndefined();
    const warn = lines().find((l) => l['level'] === 40);
    expect(String(warn?.['msg'])).toContain(aside);
    expect(warn?.['movedTo']).toBe(aside);
  });

  it('a file of a newer version is refused, even with onCorrupt reset, and left alone', async () => {
    const fs = new MemFs();
    fs.put(PATH, 'dssync-state 7 {"journalSeq":0}\n');
    const err = await StateStore.open(PATH, { fs, clock: new FakeClock(), lock: false, onCorrupt: 'reset' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StateVersionError);
    expect((err as Error).message).toBe(
      `state file ${PATH} is in state format 7, written by a newer dssync; this dssync reads formats up to 5 (that of dssync 0.3.0): install dssync newer than this one, or restore the state backup taken before the upgrade (docs/upgrading.md, "Rolling back")`,
    );
    expect(fs.text(PATH)).toBe('dssync-state 7 {"journalSeq":0}\n');
  });

  it('names the file when it cannot be read', async () => {
    const fs = new MemFs();
    fs.put(PATH, stateFileText());
    fs.fail('open', 'EACCES');
    await expect(StateStore.open(PATH, { fs, clock: new FakeClock(), lock: false })).rejects.toThrow(
      `cannot read state file ${PATH}`,
    );
  });
});

describe('readStateFile', () => {
  it('reads the state without a lock, and undefined when there is none', async () => {
    const { fs, store } = await setup();
    store.setFile('docs', 'a', entry(1));
    await store.flush();
    const s = await readStateFile(PATH, fs);
    expect(s?.mappings['docs']?.files.get('a')).toEqual(entry(1));
    expect(await readStateFile('/nowhere/state.json', fs)).toBeUndefined();
    fs.put(PATH, 'dssync-state 9 {"needs":"9.0.0","journalSeq":0}\n');
    await expect(readStateFile(PATH, fs)).rejects.toBeInstanceOf(StateVersionError);
  });
});

describe('StateStore mappings', () => {
  it('keeps the configured name a data source was resolved by, in the journal and the snapshot; a new data source forgets it', async () => {
    const { fs, store, onDisk } = await setup();
    store.ensureMapping('docs', 'ds-1', '/srv/docs');
    store.recordDataSourceName('docs', 'Handbook');
    await store.flush();
    expect((await onDisk()).mappings['docs']?.dataSourceName).toBe('Handbook');
    await store.close();
    const again = await StateStore.open(PATH, { fs, clock: new FakeClock(), lock: false });
    expect(again.mapping('docs')?.dataSourceName).toBe('Handbook');
    expect(again.ensureMapping('docs', 'ds-2', '/srv/docs').dataSourceName).toBeUndefined();
    await again.close();
  });

  it('ensureMapping keeps a mapping whose data source is unchanged and records a new root', async () => {
    const { store, onDisk } = await setup();
    store.setFile('docs', 'a', entry(1));
    const m = store.ensureMapping('docs', 'ds-1', '/mnt/docs');
    expect(m.files.get('a')).toEqual(entry(1));
    await store.flush();
    expect((await onDisk()).mappings['docs']?.root).toBe('/mnt/docs');
  });

  it('ensureMapping resets a mapping that now points to another data source', async () => {
    const { store, log, onDisk } = await setup();
    store.setFile('docs', 'a', entry(1));
    store.setRejected('docs', 'r', { size: 1, mtimeMs: 1, reason: 'x', at: 't' });
    await store.beginIntent('docs', { kind: 'upload', files: [{ path: 'p', size: 1, mtimeMs: 1, sha256: 'h' }] });
    const m = store.ensureMapping('docs', 'ds-2', '/srv/docs');
    expect(m.dataSourceId).toBe('ds-2');
    expect([...m.files.keys()]).toEqual([]);
    expect(intentsOf(store, 'docs')).toEqual([]);
    expect(Object.keys(m.rejected)).toEqual([]);
    expect(log.lines().some((l) => l['level'] === 40 && String(l['msg']).includes('ds-2'))).toBe(true);
    await store.flush();
    expect((await onDisk()).mappings['docs']).toMatchObject({ dataSourceId: 'ds-2', files: {}, intents: {} });
  });

  it('refuses values the file could not carry, naming them', async () => {
    const { store } = await setup();
    expect(() => store.setFile('docs', 'a', { ...entry(1), size: Number.NaN })).toThrow(/"a" in mapping docs: size/);
    expect(() => store.setFile('nope', 'a', entry(1))).toThrow(/unknown mapping "nope"/);
    expect(() => store.setFile('docs', '', entry(1))).toThrow(/path/);
  });

  it('keeps only the known fields of a file entry (no secret can slip in)', async () => {
    const { store, onDisk } = await setup();
    store.setFile('docs', 'a', { ...entry(1), token: 'secret-token' } as FileEntry);
    await store.flush();
    expect(JSON.stringify((await onDisk()))).not.toContain('secret-token');
  });

  it('random mutations: the file always decodes to exactly the state in memory', async () => {
    const { store, onDisk } = await setup();
    let seed = 7;
    const rnd = (n: number) => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed % n;
    };
    for (let round = 0; round < 20; round++) {
      for (let i = 0; i < 200; i++) {
        const p = `f${rnd(500)}`;
        const op = rnd(4);
        if (op === 0) store.deleteFile('docs', p);
        else if (op === 1) store.renameFile('docs', p, `f${rnd(500)}`, entry(i));
        else store.setFile('docs', p, entry(round * 1000 + i));
      }
      await store.flush();
      expect(JSON.parse(JSON.stringify((await onDisk()).mappings))).toEqual(JSON.parse(JSON.stringify({ docs: store.mapping('docs') })));
    }
  });
});

describe('StateStore close', () => {
  it('flushes pending mutations and refuses later ones', async () => {
    const { store, onDisk, appends } = await setup();
    store.setFile('docs', 'a', entry(1));
    await store.close();
    expect(appends()).toHaveLength(1);
    expect([...((await onDisk()).mappings['docs']?.files.keys() ?? [])]).toEqual(['a']);
    expect(() => store.setFile('docs', 'b', entry(2))).toThrow(/closed/);
  });

  it('also writes what was changed while the final flush ran', async () => {
    const { fs, store, onDisk } = await setup();
    store.setFile('docs', 'a', entry(1));
    const release = fs.gate('sync');
    const closed = store.close();
    await settle();
    store.setFile('docs', 'b', entry(2));
    release();
    await closed;
    expect([...((await onDisk()).mappings['docs']?.files.keys() ?? [])].sort()).toEqual(['a', 'b']);
  });
});

describe('StateStore directory', () => {
  it('recreates the state directory if it vanished while running', async () => {
    const { fs, store, onDisk } = await setup();
    fs.files.clear();
    fs.dirs.clear();
    fs.dirs.add('/');
    store.setFile('docs', 'a', entry(1));
    await store.flush();
    expect([...((await onDisk()).mappings['docs']?.files.keys() ?? [])]).toEqual(['a']);
  });
});

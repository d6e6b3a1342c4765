/**
 * Issue 23, defect 6: the stability window of every full pass. A file the walk finds changed
 * within the window (by the wall clock against its mtime/ctime) is set aside, never read
 * half-written; a later pass sends it once it is older, or once its stat stays the same a
 * window apart on the monotonic clock (a future mtime, a clock stepped back).
 */
import { describe, expect, it } from 'vitest';
import { Mirror } from '../../../src/engine/mirror.js';
import { FakeApi, apiError } from '../../helpers/fake-api.js';
import { FakeClock } from '../../helpers/fake-clock.js';
import { HashedLocal } from '../../helpers/hashed-local.js';
import { MirrorMemoryState as State } from '../../helpers/memory-state.js';

const WINDOW = 2_000;

const silent = { info() {}, warn() {}, error() {}, debug() {}, child() { return silent; } } as never;

function setup(stabilityMs: number | undefined = WINDOW, prune: 'ours' | 'all' = 'ours') {
  const clock = new FakeClock(Date.parse('2026-11-23T00:00:00Z'));
  const api = new FakeApi();
  const state = new State();
  const local = new HashedLocal();
  const mirror = new Mirror({
    spec: { mappingId: 'm1', root: '/srv/share', dataSourceId: 'ds1', prune, maxDeletePercent: 50, massDeleteMinimum: 3, batchFiles: 10, batchBytes: 1e9, concurrency: 2 },
    api,
    state,
    local,
    logger: silent,
    now: () => clock.now(),
    monotonic: () => clock.monotonic(),
    stabilityMs,
  });
  const sizes = (): number[] => api.list().map((d) => d.size ?? -1);
  return { clock, api, state, local, mirror, sizes };
}

/** keep.txt and a.txt synced, a.txt's metadata update acted with its answer lost: a document of ours the state does not record. */
async function withUnrecordedDocument() {
  const t = setup();
  t.local.write('keep.txt', 'keep', t.clock.now() - 60_000);
  t.local.write('a.txt', 'x', t.clock.now() - 60_000);
  t.api.failAfter = (op) => (op === 'updateDocument' ? apiError('E_TIMEOUT', undefined, { ambiguous: true }) : undefined);
  await t.mirror.fullPass({ maxRounds: 1 });
  t.api.failAfter = () => undefined;
  expect(t.state.m.files.documentIdOf('a.txt')).toBeUndefined();
  return t;
}

describe('Mirror: the stability window of full passes', () => {
  it('a file written in two halves around a full pass is never sent half: set aside, then sent whole by the follow-up', async () => {
    const { clock, api, local, mirror, sizes } = setup();
    local.write('old.txt', 'settled long ago', clock.now() - 60_000);
    local.write('big.txt', 'x'.repeat(3000), clock.now() - 500);
    const first = await mirror.fullPass();
    expect(first.settling).toEqual(['big.txt']);
    expect(first.ok).toBe(true);
    expect(api.list().map((d) => d.name)).toEqual(['old.txt']);

    await clock.advance(1_000);
    local.write('big.txt', 'x'.repeat(6000), clock.now());
    await clock.advance(WINDOW);
    const followUp = await mirror.changedPass({ files: ['big.txt'], dirs: [] });
    expect(followUp.settling).toBeUndefined();
    expect(sizes().sort((a, b) => a - b)).toEqual([16, 6000]);
    expect(api.count('uploadDocuments')).toBe(2);
  });

  it('a file that keeps changing is set aside at each look until it is quiet for the window', async () => {
    const { clock, api, local, mirror } = setup();
    local.write('log.txt', 'a', clock.now());
    expect((await mirror.fullPass()).settling).toEqual(['log.txt']);
    await clock.advance(WINDOW);
    local.write('log.txt', 'ab', clock.now() - 100);
    expect((await mirror.changedPass({ files: ['log.txt'], dirs: [] })).settling).toEqual(['log.txt']);
    await clock.advance(WINDOW);
    await mirror.changedPass({ files: ['log.txt'], dirs: [] });
    expect(api.list().map((d) => d.size)).toEqual([2]);
  });

  it('a future mtime (a wall clock stepped back 1 h) is sent once the same stat is seen a window apart', async () => {
    const { clock, api, local, mirror } = setup();
    local.write('a.txt', 'alpha', clock.now());
    clock.stepWall(-3_600_000);
    expect((await mirror.fullPass()).settling).toEqual(['a.txt']);
    await clock.advance(WINDOW);
    const again = await mirror.changedPass({ files: ['a.txt'], dirs: [] });
    expect(again.settling).toBeUndefined();
    expect(api.list().map((d) => d.name)).toEqual(['a.txt']);
  });

  it('an incremental pass of an event (the aggregator held it already) is not held again', async () => {
    const { clock, api, local, mirror } = setup();
    local.write('a.txt', 'alpha', clock.now() - 300);
    expect((await mirror.changedPass({ files: ['a.txt'], dirs: [] })).settling).toBeUndefined();
    expect(api.list()).toHaveLength(1);
  });

  it('a set-aside file gone at the next full pass, then written anew at its path, is held by the follow-up, not sent half-written (seed 8, history 623)', async () => {
    const { clock, api, local, mirror } = setup();
    local.write('a.txt', 'first', clock.now());
    expect((await mirror.fullPass()).settling).toEqual(['a.txt']);
    local.files.delete('a.txt');
    await clock.advance(300);
    await mirror.fullPass();
    await clock.advance(1_500);
    local.write('a.txt', 'slow.0|', clock.now() - 200);
    // The runner's follow-up for the first pass's a.txt: an incremental pass naming it.
    expect((await mirror.changedPass({ files: ['a.txt'], dirs: [] })).settling).toEqual(['a.txt']);
    expect(api.list()).toEqual([]);
    // Gone, and named by a pass that still does not find it: remembered as gone (a later
    // follow-up may meet a new writer's first chunk there: seed 9926), so a file written
    // anew 300 ms ago is held by the window, and sent once it is stable.
    local.files.delete('a.txt');
    await mirror.changedPass({ files: ['a.txt'], dirs: [] });
    local.write('a.txt', 'done', clock.now() - 300);
    expect((await mirror.changedPass({ files: ['a.txt'], dirs: [] })).settling).toEqual(['a.txt']);
    await clock.advance(2_000);
    expect((await mirror.changedPass({ files: ['a.txt'], dirs: [] })).settling).toBeUndefined();
    expect(api.list().map((d) => d.metadata['dssync_path'])).toEqual(['a.txt']);
  });

  it('an unreadable file whose listed document the full pass left unjudged waits while it cannot be read, and is judged by a full pass once it can (seed 9932)', async () => {
    const { clock, api, local, mirror } = await withUnrecordedDocument();
    const uploads = api.count('uploadDocuments');
    // Unreadable at the next full pass: set aside, its listed document left unjudged.
    local.unreadable.add('a.txt');
    await clock.advance(60_000);
    await mirror.fullPass();
    // A pass naming it while it still cannot be read asks for nothing (it is not gone).
    expect((await mirror.changedPass({ files: ['a.txt'], dirs: [] })).needsFullPass).toBeUndefined();
    // Readable again, changed: held for a full pass, whose listing judges the document.
    local.unreadable.delete('a.txt');
    local.write('a.txt', 'y', clock.now() - 60_000);
    expect((await mirror.changedPass({ files: ['a.txt'], dirs: [] })).needsFullPass).toBe(true);
    expect(api.count('uploadDocuments')).toBe(uploads);
    await mirror.fullPass();
    expect(api.list().map((d) => `${d.metadata['dssync_path']}:${d.metadata['dssync_sha256'] ?? ''}`).sort()).toEqual(['a.txt:sha-y', 'keep.txt:sha-keep']);
  });

  it('a set-aside file whose listed documents of ours the state does not record has one recorded, so that its follow-up, finding the file gone, deletes it and asks a full pass for the other (seed 16, history 35,859; seed 9942)', async () => {
    const { clock, api, state, local, mirror } = await withUnrecordedDocument();
    // And a copy of it (another such answer lost, a replace cut before its delete).
    const lost = api.list().find((d) => d.metadata['dssync_path'] === 'a.txt')!;
    api.add({ ...lost, id: undefined });
    expect(api.list().map((d) => d.metadata['dssync_path']).sort()).toEqual(['a.txt', 'a.txt', 'keep.txt']);
    expect(state.m.files.documentIdOf('a.txt')).toBeUndefined();
    // Written again within the window before the next full pass: set aside, its document unjudged.
    await clock.advance(1_000);
    local.write('a.txt', 'y', clock.now());
    expect((await mirror.fullPass()).settling).toEqual(['a.txt']);
    // The full pass recorded the listed document as its metadata describes it.
    expect(state.m.files.documentIdOf('a.txt')).toBeDefined();
    // Deleted before its follow-up: the follow-up (no listing) deletes the recorded document,
    // and only a listing can judge the other.
    local.files.delete('a.txt');
    await clock.advance(WINDOW);
    const followUp = await mirror.changedPass({ files: ['a.txt'], dirs: [] });
    expect(followUp.counts.deleted).toBe(1);
    expect(followUp.needsFullPass).toBe(true);
    expect((await mirror.fullPass()).counts.deleted).toBe(1);
    expect(api.list().map((d) => d.name)).toEqual(['keep.txt']);
  });

  it('a set-aside file released by another pass and rewritten before its follow-up is held by the follow-up (seed 7, history 2,645)', async () => {
    const { clock, api, local, mirror, sizes } = setup();
    local.write('b.txt', 'whole', clock.now());
    expect((await mirror.fullPass()).settling).toEqual(['b.txt']);
    await clock.advance(WINDOW);
    // Another pass (an event's) finds it stable and sends it.
    expect((await mirror.changedPass({ files: ['b.txt'], dirs: [] })).settling).toBeUndefined();
    expect(sizes()).toEqual([5]);
    // Truncated and half rewritten; then the runner's follow-up of the first pass names it.
    local.write('b.txt', 'half', clock.now() - 100);
    expect((await mirror.changedPass({ files: ['b.txt'], dirs: [] })).settling).toEqual(['b.txt']);
    expect(sizes()).toEqual([5]);
    expect(api.count('uploadDocuments')).toBe(1);
  });

  it('without a window (dssync sync) nothing is set aside', async () => {
    const { clock, api, local, mirror } = setup(0);
    local.write('a.txt', 'alpha', clock.now());
    expect((await mirror.fullPass()).settling).toBeUndefined();
    expect(api.list()).toHaveLength(1);
  });

  it('a synced file whose mtime a backward step put in the future is not set aside: a document a person deleted is uploaded again at once', async () => {
    // Issue 23, the simulation's SIM_WALL_BACK_REPAIR (seed 42: slowWrite, stepWallClock(-3600 s),
    // personDeletesOurDocument, writeIgnoreFile): every full pass set it aside until the wall
    // clock caught up with the mtime, an hour.
    const { clock, api, local, mirror } = setup();
    local.write('a.txt', 'alpha', clock.now() - 60_000);
    await mirror.fullPass();
    expect(api.list().map((d) => d.name)).toEqual(['a.txt']);
    local.write('a.txt', 'alpha!', clock.now());
    await clock.advance(WINDOW);
    await mirror.changedPass({ files: ['a.txt'], dirs: [] });
    clock.stepWall(-3_600_000);
    await clock.advance(WINDOW);
    await api.deleteDocument('ds1', api.list()[0]!.id);
    const full = await mirror.fullPass();
    expect(full.settling).toBeUndefined();
    expect(api.list().map((d) => [d.name, d.size])).toEqual([['a.txt', 6]]);
  });

  it('a file whose stat differs from the state\'s with its mtime in the future is still held until seen unchanged a window apart', async () => {
    const { clock, api, local, mirror } = setup();
    local.write('a.txt', 'alpha', clock.now() - 60_000);
    await mirror.fullPass();
    clock.stepWall(-3_600_000);
    local.write('a.txt', 'alpha, half', clock.now() + 3_500_000);
    expect((await mirror.fullPass()).settling).toEqual(['a.txt']);
    expect(api.list().map((d) => d.size)).toEqual([5]);
  });
});

describe('Mirror: renames made within the window before a full pass (issue 34, case 12)', () => {
  /** `from` moved to `to` at `at`: same inode, size and mtime; a new ctime. */
  function rename(local: HashedLocal, from: string, to: string, at: number): void {
    const f = local.files.get(from)!;
    local.files.delete(from);
    local.files.set(to, { ...f, path: to, diskPath: `/srv/share/${to}`, ctimeMs: at });
  }

  it('ten files renamed just before a full pass are ten renames of the same documents: no upload, no delete, no mass-delete stop', async () => {
    const { clock, api, local, mirror } = setup();
    for (let i = 0; i < 10; i++) local.write(`f${i}.txt`, `content ${i}`, clock.now() - 60_000);
    await mirror.fullPass();
    const ids = new Map(api.list().map((d) => [d.name, d.id]));
    await clock.advance(60_000);
    for (let i = 0; i < 10; i++) rename(local, `f${i}.txt`, `moved/f${i}.txt`, clock.now());
    const uploads = api.count('uploadDocuments');
    const pass = await mirror.fullPass();
    expect(pass.ok).toBe(true);
    expect(pass.settling).toBeUndefined();
    expect(pass.counts).toMatchObject({ renamed: 10, uploaded: 0, deleted: 0 });
    expect(api.count('uploadDocuments')).toBe(uploads);
    expect(new Map(api.list().map((d) => [d.name, d.id]))).toEqual(new Map([...ids].map(([name, id]) => [`moved/${name!}`, id])));
  });

  it('a new file being written is still set aside, and so is a moved file whose mtime changed since', async () => {
    const { clock, api, local, mirror } = setup();
    local.write('a.txt', 'alpha', clock.now() - 60_000);
    await mirror.fullPass();
    await clock.advance(60_000);
    rename(local, 'a.txt', 'b.txt', clock.now());
    local.write('b.txt', 'alpha, more', clock.now());
    local.write('c.txt', 'half', clock.now());
    expect((await mirror.fullPass()).settling).toEqual(['b.txt', 'c.txt']);
    expect(api.list().map((d) => d.name)).toEqual([]);
  });
});

describe('Mirror: the mass-delete guard with prune "all"', () => {
  it('counts what it may prune in its base: the only file set aside, three documents of nobody\'s are not all pruned unguarded (seed 7, history 266)', async () => {
    const { clock, api, local, mirror } = setup(WINDOW, 'all');
    for (let i = 0; i < 3; i++) api.addDocument('ds1', { id: `p${i}`, name: 'a.txt', raw: {} });
    local.write('keep.txt', 'keep', clock.now());
    const r = await mirror.fullPass();
    expect(r.settling).toEqual(['keep.txt']);
    expect(r.ok).toBe(false);
    expect(api.list().map((d) => d.id).sort()).toEqual(['p0', 'p1', 'p2']);
  });

  it('still prunes a few of nobody\'s beside its own documents', async () => {
    const { clock, api, local, mirror } = setup(WINDOW, 'all');
    api.addDocument('ds1', { id: 'p0', name: 'stray.txt', raw: {} });
    for (const n of ['a', 'b', 'c']) local.write(`${n}.txt`, n, clock.now() - 60_000);
    expect((await mirror.fullPass()).ok).toBe(true);
    expect(api.list().map((d) => d.name).sort()).toEqual(['a.txt', 'b.txt', 'c.txt']);
  });
});

/**
 * Issue 9, defects 1 and 2 at the mirror's level: the settle window of upload intents (fake
 * clock), a late-landing upload recognised as ours, and a skipped file keeping its intent.
 */
import { describe, expect, it } from 'vitest';
import { Mirror, INTENT_SETTLE_MS, INTENT_STALE_MS, REQUEST_TIMEOUT_MS, type MirrorDeps, type MirrorState } from '../../../src/engine/mirror.js';
import type { LocalSide, ScanResult } from '../../../src/engine/local-side.js';
import type { LocalFileInfo } from '../../../src/engine/plan.js';
import { storedName } from '../../../src/engine/service-names.js';
import { unmarkedName } from '../../../src/engine/document-fields.js';
import type { Intent, MappingState, PassRecord } from '../../../src/state/schema.js';
import { FakeApi, apiError } from '../../helpers/fake-api.js';
import { FakeClock } from '../../helpers/fake-clock.js';
import { MemoryState } from '../../helpers/memory-state.js';
import { neverOpened } from '../../helpers/upload-file.js';


class State extends MemoryState implements MirrorState {
  constructor(private readonly clock: FakeClock) {
    super();
  }
  override async beginIntent(id: string, intent: Omit<Intent, 'id' | 'startedAt'>): Promise<string> {
    const key = await super.beginIntent(id, intent);
    this.m.intents[key]!.startedAt = new Date(this.clock.now()).toISOString();
    return key;
  }
  ensureMapping(): MappingState {
    return this.m;
  }
  setLastPass(_id: string, p: PassRecord): void {
    this.m.lastPass = p;
  }
  async flush(): Promise<void> {}
}

class Local implements LocalSide {
  /** The FakeApi reads no file. */
  open = neverOpened;
  files = new Map<string, LocalFileInfo>();
  unreadable = new Set<string>();
  /** Left out by a setting (larger than maxFileBytes): reported as excluded, as side.ts does. */
  tooLarge = new Set<string>();
  put(path: string, sha256: string, size = 10): void {
    this.files.set(path, { path, diskPath: `/srv/share/${path}`, size, mtimeMs: 1000, sha256 });
  }
  async scan(): Promise<ScanResult> {
    const files = new Map([...this.files].filter(([p]) => !this.unreadable.has(p) && !this.tooLarge.has(p)).map(([p, f]) => [p, { ...f, sha256: undefined }]));
    const skipped = [
      ...[...this.unreadable].map((path) => ({ path, reason: 'unreadable' })),
      ...[...this.tooLarge].map((path) => ({ path, reason: 'excluded: larger than maxFileBytes', excluded: true as const })),
    ];
    return { rootStatus: 'ok', files, skipped, unreadableDirs: [] };
  }
  scanScope(): Promise<ScanResult> {
    return this.scan();
  }
  async hash(f: LocalFileInfo): Promise<{ sha256: string; size: number; mtimeMs: number }> {
    const g = this.files.get(f.path)!;
    return { sha256: g.sha256!, size: g.size, mtimeMs: g.mtimeMs };
  }
}

const silent = { info() {}, warn() {}, error() {}, debug() {}, child() { return silent; } } as never;

/** `another()`: a new process's mirror on the same state, folder and service. */
function setup(extra: { installationId?: string } = {}, deps: Pick<MirrorDeps, 'leaseSettled'> = {}) {
  const clock = new FakeClock(Date.parse('2026-11-23T00:00:00Z'));
  const api = new FakeApi();
  const state = new State(clock);
  const local = new Local();
  const another = (): Mirror =>
    new Mirror({
      spec: { mappingId: 'm1', root: '/srv/share', dataSourceId: 'ds1', prune: 'ours', maxDeletePercent: 50, massDeleteMinimum: 10, batchFiles: 10, batchBytes: 1e9, concurrency: 2, ...extra },
      api,
      state,
      local,
      logger: silent,
      now: () => clock.now(),
      monotonic: () => clock.monotonic(),
      ...deps,
    });
  return { clock, api, state, local, mirror: another(), another };
}

// api.add returns the fake's own record, which an update changes in place: the tests keep
// copies (`{ ...api.add(…) }`), so that `toEqual` proves a document untouched.
function openUpload(state: State): Extract<Intent, { kind: 'upload' }> {
  const [intent] = Object.values(state.m.intents);
  if (intent?.kind !== 'upload') throw new Error('no open upload intent');
  return intent;
}

describe('upload intents (issue 9, defect 2)', () => {
  it('a clean pass inside the settle window keeps the intent; a late-landing upload is then deleted as our duplicate', async () => {
    const { clock, api, state, local, mirror } = setup();
    local.put('sub/report.txt', 'h1');
    // The answer is lost and nothing is visible yet: the service commits it later.
    api.failBefore = (op) => (op === 'uploadDocuments' ? apiError('E_TIMEOUT', undefined, { ambiguous: true }) : undefined);
    const first = await mirror.fullPass({ maxRounds: 1 });
    expect(first.needsFullPass).toBe(true);
    api.failBefore = () => undefined;
    await clock.advance(1000);
    const second = await mirror.fullPass();
    expect(second.ok).toBe(true);
    expect(api.count('uploadDocuments')).toBe(2);
    // The first upload's intent is still open: its window has not passed.
    expect(Object.keys(state.m.intents)).toHaveLength(1);
    // The service commits the first upload now, after the client gave up, under the marked
    // name it was sent with (document-fields.ts markUploadName).
    const sentAs = openUpload(state).files[0]!.uploadName!;
    expect(sentAs).toMatch(/^\.dssync-upload-([0-9a-f]{12})\.sub\/report\.dssync-upload-\1\.txt$/);
    const late = { ...api.add({ name: sentAs, metadata: {}, size: 10 }) };
    await clock.advance(1000);
    await mirror.fullPass();
    expect(api.docs.has(late.id)).toBe(false);
    expect(api.list()).toHaveLength(1);
    // Past the window, a clean full pass closes it.
    await clock.advance(INTENT_SETTLE_MS);
    await mirror.fullPass();
    expect(state.m.intents).toEqual({});
  });

  // Issue 23, defect 7: this process's intents settle on the monotonic clock.
  it('a wall clock stepped forward 1 h does not close an intent of this process early: its late-landing upload is still recognised', async () => {
    const { clock, api, state, local, mirror } = setup();
    local.put('sub/report.txt', 'h1');
    api.failBefore = (op) => (op === 'uploadDocuments' ? apiError('E_TIMEOUT', undefined, { ambiguous: true }) : undefined);
    await mirror.fullPass({ maxRounds: 1 });
    api.failBefore = () => undefined;
    await clock.advance(1000);
    await mirror.fullPass();
    const sentAs = openUpload(state).files[0]!.uploadName!;
    clock.stepWall(3_600_000);
    await clock.advance(1000);
    await mirror.fullPass();
    // Still open: only 2 s of the window have passed, whatever the wall clock says.
    expect(Object.keys(state.m.intents)).toHaveLength(1);
    const late = { ...api.add({ name: sentAs, metadata: {}, size: 10 }) };
    await clock.advance(1000);
    await mirror.fullPass();
    expect(api.docs.has(late.id)).toBe(false);
    expect(api.list()).toHaveLength(1);
    // And a step back does not hold it for the size of the step.
    clock.stepWall(-2 * 3_600_000);
    await clock.advance(INTENT_SETTLE_MS);
    await mirror.fullPass();
    expect(state.m.intents).toEqual({});
  });

  it('a person\'s document with the base name of an open intent is never renamed or deleted (defect 1)', async () => {
    const { clock, api, local, mirror } = setup();
    local.put('sub/report.txt', 'h1');
    api.failBefore = (op) => (op === 'uploadDocuments' ? apiError('E_CONNECTION', undefined, { ambiguous: true }) : undefined);
    await mirror.fullPass({ maxRounds: 1 });
    api.failBefore = () => undefined;
    const theirs = { ...api.add({ name: 'report.txt', metadata: {}, size: 10 }) };
    const theirsToo = { ...api.add({ name: 'sub/report.txt', metadata: {}, size: 99 }) };
    for (let i = 0; i < 3; i++) {
      await clock.advance(1000);
      local.put('sub/report.txt', `h${i + 2}`, 20 + i);
      await mirror.fullPass();
    }
    expect(api.docs.get(theirs.id)).toEqual(theirs);
    expect(api.docs.get(theirsToo.id)).toEqual(theirsToo);
  });

  it('a person\'s document of the same full name and size as a committed upload whose metadata update failed is left alone (the simulation, seed 42)', async () => {
    const { clock, api, local, mirror } = setup();
    const theirs = { ...api.add({ name: 'sub/c.txt', metadata: {}, size: 5 }) };
    local.put('sub/c.txt', 'h-other', 5);
    // The upload commits and answers; the metadata update gets a 503.
    api.failBefore = (op) => (op === 'updateDocument' ? apiError('E_SERVER', 503, { retryable: true }) : undefined);
    await mirror.fullPass({ maxRounds: 1 });
    api.failBefore = () => undefined;
    for (let i = 0; i < 3; i++) {
      await clock.advance(INTENT_SETTLE_MS);
      await mirror.fullPass();
    }
    expect(api.docs.get(theirs.id)).toEqual(theirs);
    const ours = api.list().filter((d) => d.id !== theirs.id);
    expect(ours.map((d) => d.metadata['dssync_path'])).toEqual(['sub/c.txt']);
  });

  it('a lost answer: a person\'s document of the same name and size listed before the upload is left alone; ours is adopted', async () => {
    const { clock, api, state, local, mirror } = setup();
    const theirs = { ...api.add({ name: 'a.txt', metadata: {}, size: 10 }) };
    local.put('a.txt', 'h1');
    api.failAfter = (op) => (op === 'uploadDocuments' ? apiError('E_TIMEOUT', undefined, { ambiguous: true }) : undefined);
    await mirror.fullPass({ maxRounds: 1 });
    api.failAfter = () => undefined;
    // A marked upload is told by its mark: what existed before it is not journalled (issue 27.7).
    expect(openUpload(state).preexisting).toBeUndefined();
    await clock.advance(1000);
    await mirror.fullPass();
    // The first listing after the lost answer pinned our document in the intent.
    expect(openUpload(state).files[0]!.documentId).toMatch(/^doc/);
    // A person's upload of the same name and size while the intent is open is not ours either.
    const later = { ...api.add({ name: 'a.txt', metadata: {}, size: 10 }) };
    await clock.advance(1000);
    await mirror.fullPass();
    await clock.advance(INTENT_SETTLE_MS);
    await mirror.fullPass();
    expect(api.docs.get(theirs.id)).toEqual(theirs);
    expect(api.docs.get(later.id)).toEqual(later);
    expect(api.count('uploadDocuments')).toBe(1);
    expect(api.list().filter((d) => d.metadata['dssync_path'] === 'a.txt')).toHaveLength(1);
    expect(state.m.intents).toEqual({});
  });

  it("a person's upload of the same full name and size since the last listing is never taken for an incremental pass's lost upload, which is removed as our duplicate when it lands (the simulation, SIM_PERSON_RACES_UPLOAD, seed 20261126)", async () => {
    const { clock, api, state, local, mirror } = setup();
    local.put('keep.txt', 'hk');
    await mirror.fullPass();
    // After that listing, a person uploads a.txt; then the file a.txt (same size) appears
    // and an incremental pass sends it: its answer is lost, nothing visible yet.
    const theirs = { ...api.add({ name: 'a.txt', metadata: {}, size: 10 }) };
    local.put('a.txt', 'h1', 10);
    api.failBefore = (op) => (op === 'uploadDocuments' ? apiError('E_TIMEOUT', undefined, { ambiguous: true }) : undefined);
    const lost = await mirror.changedPass({ files: ['a.txt'], dirs: [] });
    expect(lost.needsFullPass).toBe(true);
    api.failBefore = () => undefined;
    expect(openUpload(state).preexistingFresh).toBeUndefined();
    const sentAs = openUpload(state).files[0]!.uploadName!;
    // The next full pass sees only the person's document: not of the name the upload was
    // sent under, so it is theirs — left alone, and no conflict.
    await clock.advance(1000);
    const next = await mirror.fullPass();
    expect(api.docs.get(theirs.id)).toEqual(theirs);
    expect(next.conflicts ?? []).toEqual([]);
    // keep.txt, the lost one, and a.txt sent again under our metadata.
    expect(api.count('uploadDocuments')).toBe(3);
    // The lost upload lands late under its marked name: ours without doubt, a duplicate, deleted.
    const late = { ...api.add({ name: sentAs, metadata: {}, size: 10 }) };
    await clock.advance(1000);
    await mirror.fullPass();
    await clock.advance(INTENT_SETTLE_MS);
    await mirror.fullPass();
    expect(api.docs.get(theirs.id)).toEqual(theirs);
    expect(api.docs.has(late.id)).toBe(false);
    expect(api.list().filter((d) => d.metadata['dssync_path'] === 'a.txt')).toHaveLength(1);
    expect(api.list()).toHaveLength(3);
    expect(state.m.intents).toEqual({});
  });

  it("a crash at an incremental pass's upload: a person's document of its name and size is not claimed by the next full pass (seed 20261127)", async () => {
    const { clock, api, state, local, mirror } = setup();
    local.put('keep.txt', 'hk');
    await mirror.fullPass();
    const theirs = { ...api.add({ name: 'sub/a.txt', metadata: {}, size: 2 }) };
    local.put('sub/a.txt', 'h12', 2);
    // The process dies as it sends the upload (nothing reaches the service): the intent stays.
    api.failBefore = (op) => (op === 'uploadDocuments' ? apiError('E_ABORTED', undefined) : undefined);
    await mirror.changedPass({ files: ['sub/a.txt'], dirs: [] });
    api.failBefore = () => undefined;
    expect(Object.keys(state.m.intents)).toHaveLength(1);
    // A new process (a new Mirror, same state) starts with a full pass.
    const restarted = new Mirror({ ...(mirror as unknown as { d: ConstructorParameters<typeof Mirror>[0] }).d });
    await clock.advance(1000);
    await restarted.fullPass();
    // An earlier process's intent: a window after this one first saw it, and its request's
    // timeout and a window after it began (issue 23, defect 4).
    await clock.advance(INTENT_SETTLE_MS + REQUEST_TIMEOUT_MS);
    await restarted.fullPass();
    expect(api.docs.get(theirs.id)).toEqual(theirs);
    expect(api.list().filter((d) => d.metadata['dssync_path'] === 'sub/a.txt')).toHaveLength(1);
    expect(state.m.intents).toEqual({});
  });

  // Issue 23, defect 4: the next process listed at once and closed the old intent, its
  // window counted from the intent's start; the service committed 15 s later.
  it("an earlier process's intent stays open a full window after this process first saw it: a commit after the restart is still recognised", async () => {
    const { clock, api, state, local, mirror } = setup();
    local.put('a.txt', 'h1');
    // The earlier process's upload is unanswered for 60 s; it gives up and exits.
    api.failBefore = (op) => (op === 'uploadDocuments' ? apiError('E_TIMEOUT', undefined, { ambiguous: true }) : undefined);
    await mirror.fullPass({ maxRounds: 1 });
    const sentAs = openUpload(state).files[0]!.uploadName!;
    api.failBefore = () => undefined;
    await clock.advance(61_000);
    // A new process (same state) lists at once: nothing of that upload is visible yet.
    const restarted = new Mirror({ ...(mirror as unknown as { d: ConstructorParameters<typeof Mirror>[0] }).d });
    expect((await restarted.fullPass()).ok).toBe(true);
    expect(Object.keys(state.m.intents)).toHaveLength(1);
    // The service commits the first upload 15 s after the client gave up.
    await clock.advance(14_000);
    const late = api.add({ name: sentAs, metadata: {}, size: 10 }).id;
    await clock.advance(1000);
    await restarted.fullPass();
    expect(api.docs.has(late)).toBe(false);
    expect(api.list()).toHaveLength(1);
    // A window after this process first saw it (and the request's timeout and a window after
    // it began), a clean full pass closes it.
    await clock.advance(INTENT_SETTLE_MS);
    await restarted.fullPass();
    expect(state.m.intents).toEqual({});
  });

  it("an earlier process's intent older than INTENT_STALE_MS is settled at once: a one-shot run does not leave it open for ever, and its lost upload is reported", async () => {
    const { clock, api, state, local, mirror } = setup();
    local.put('a.txt', 'h1');
    api.failBefore = (op) => (op === 'uploadDocuments' ? apiError('E_TIMEOUT', undefined, { ambiguous: true }) : undefined);
    await mirror.fullPass({ maxRounds: 1 });
    const sentAs = openUpload(state).files[0]!.uploadName!;
    api.failBefore = () => undefined;
    await clock.advance(INTENT_STALE_MS);
    const restarted = new Mirror({ ...(mirror as unknown as { d: ConstructorParameters<typeof Mirror>[0] }).d });
    const r = await restarted.fullPass();
    expect(r.ok).toBe(true);
    expect(state.m.intents).toEqual({});
    expect(r.unfoundUploads).toEqual([{ path: 'a.txt', uploadName: sentAs }]);
  });

  it('a file skipped in the pass keeps its intent, so its earlier upload is still recognised', async () => {
    const { clock, api, state, local, mirror } = setup();
    local.put('a.txt', 'h1');
    api.failAfter = (op) => (op === 'uploadDocuments' ? apiError('E_TIMEOUT', undefined, { ambiguous: true }) : undefined);
    await mirror.fullPass({ maxRounds: 1 });
    api.failAfter = () => undefined;
    local.unreadable.add('a.txt');
    await clock.advance(2 * INTENT_SETTLE_MS);
    await mirror.fullPass();
    expect(Object.keys(state.m.intents)).toHaveLength(1);
    local.unreadable.clear();
    await clock.advance(1000);
    await mirror.fullPass();
    expect(api.count('uploadDocuments')).toBe(1);
    expect(api.list()).toHaveLength(1);
    expect(api.list()[0]!.metadata['dssync_path']).toBe('a.txt');
  });
});

describe('a lost answer of a delete or a rename (the chaos run, dropped connections)', () => {
  it('an incremental pass whose delete lost its answer asks for a full pass, which settles it; a full pass lists again at once', async () => {
    const { api, local, mirror } = setup();
    local.put('keep.txt', 'hk');
    local.put('a.txt', 'h1');
    local.put('b.txt', 'h2');
    await mirror.fullPass();
    // a.txt is deleted; the connection drops before the service sees the DELETE.
    local.files.delete('a.txt');
    api.failBefore = (op) => (op === 'deleteDocument' ? apiError('E_CONNECTION', undefined, { ambiguous: true }) : undefined);
    const changed = await mirror.changedPass({ files: ['a.txt'], dirs: [] });
    expect(changed.needsFullPass).toBe(true);
    api.failBefore = () => undefined;
    await mirror.fullPass();
    expect(api.list().map((d) => d.metadata['dssync_path']).sort()).toEqual(['b.txt', 'keep.txt']);
    // In a full pass, the same loss is settled by its next round's listing, in the same pass.
    local.files.delete('b.txt');
    let drops = 1;
    api.failBefore = (op) => (op === 'deleteDocument' && drops-- > 0 ? apiError('E_CONNECTION', undefined, { ambiguous: true }) : undefined);
    const full = await mirror.fullPass();
    expect(full.needsFullPass).toBeFalsy();
    expect(api.list().map((d) => d.metadata['dssync_path'])).toEqual(['keep.txt']);
  });

  it("an uploaded document whose metadata update lost its answer is settled by a listing: an incremental pass asks for a full pass, a full pass lists again at once (the simulation, seed 3002)", async () => {
    const { api, local, mirror } = setup();
    const paths = (): unknown[] => api.list().map((d) => d.metadata['dssync_path']).sort();
    local.put('keep.txt', 'hk');
    await mirror.fullPass();
    // a.txt is uploaded; the connection drops before the service sees its metadata update.
    local.put('a.txt', 'h1');
    let drops = 1;
    api.failBefore = (op) => (op === 'updateDocument' && drops-- > 0 ? apiError('E_CONNECTION', undefined, { ambiguous: true }) : undefined);
    const changed = await mirror.changedPass({ files: ['a.txt'], dirs: [] });
    expect(changed.needsFullPass).toBe(true);
    await mirror.fullPass();
    expect(paths()).toEqual(['a.txt', 'keep.txt']);
    // In a full pass, the same loss is settled by its next round's listing, in the same pass.
    local.put('b.txt', 'h2');
    drops = 1;
    const full = await mirror.fullPass();
    expect(full.needsFullPass).toBeFalsy();
    expect(paths()).toEqual(['a.txt', 'b.txt', 'keep.txt']);
    expect(api.list()).toHaveLength(3);
  });
});

describe('an open intent of a file that becomes excluded (the simulation, seed 7)', () => {
  it('the late-landing upload of a file now larger than maxFileBytes is deleted, and the intent closes', async () => {
    const { clock, api, state, local, mirror } = setup();
    local.put('keep.txt', 'hk');
    local.put('a.txt', 'h1', 1);
    // The upload's answer is lost; the service commits it only later.
    api.failBefore = (op, arg) => (op === 'uploadDocuments' && JSON.stringify(arg).includes('a.txt') ? apiError('E_TIMEOUT', undefined, { ambiguous: true }) : undefined);
    await mirror.fullPass({ maxRounds: 1 });
    api.failBefore = () => undefined;
    const sentAs = openUpload(state).files.find((f) => f.path === 'a.txt')!.uploadName!;
    // The file grows past maxFileBytes (excluded), then the lost upload lands.
    local.put('a.txt', 'h2', 16);
    local.tooLarge.add('a.txt');
    await clock.advance(1000);
    await mirror.fullPass();
    const late = api.add({ name: sentAs, metadata: {}, size: 1 });
    await clock.advance(1000);
    const planned = await mirror.fullPass({ dryRun: true });
    expect(planned.ops).toContainEqual({ kind: 'delete', path: 'a.txt', documentId: late.id, reason: 'excluded', unmarked: true });
    expect((await mirror.fullPass()).counts.deleted).toBe(1);
    expect(api.docs.has(late.id)).toBe(false);
    await clock.advance(INTENT_SETTLE_MS);
    await mirror.fullPass();
    expect(state.m.intents).toEqual({});
    expect(api.list().map((d) => d.name)).toEqual(['keep.txt']);
  });

  it("an excluded file's upload named by its answer but never marked is deleted; its marked old version stays (docs/config.md)", async () => {
    const { clock, api, state, local, mirror } = setup();
    // (Another file keeps the folder non-empty: an empty one is refused as an outage.)
    local.put('keep.txt', 'hk');
    local.put('a.txt', 'h1', 1);
    await mirror.fullPass();
    const old = api.list().find((d) => d.name === 'a.txt')!;
    // A new version is uploaded and answered, but its metadata update fails.
    local.put('a.txt', 'h2', 2);
    api.failBefore = (op) => (op === 'updateDocument' ? apiError('E_SERVER', 503, { retryable: true }) : undefined);
    await mirror.fullPass({ maxRounds: 1 });
    api.failBefore = () => undefined;
    const named = api.list().find((d) => d.id !== old.id && d.name !== undefined && unmarkedName(d.name) === 'a.txt' && d.name !== 'a.txt')!;
    expect(openUpload(state).files[0]!.documentId).toBe(named.id);
    // Then the file grows past maxFileBytes.
    local.put('a.txt', 'h3', 16);
    local.tooLarge.add('a.txt');
    await clock.advance(INTENT_SETTLE_MS);
    await mirror.fullPass();
    expect(api.docs.has(named.id)).toBe(false);
    expect(api.list().filter((d) => d.name === 'a.txt').map((d) => d.id)).toEqual([old.id]);
    expect(state.m.intents).toEqual({});
    expect(state.m.files.get('a.txt')?.documentId).toBe(old.id);
  });

  it('an unreadable file (not excluded) still keeps its intent and its upload', async () => {
    const { clock, api, state, local, mirror } = setup();
    local.put('a.txt', 'h1', 1);
    api.failAfter = (op) => (op === 'uploadDocuments' ? apiError('E_TIMEOUT', undefined, { ambiguous: true }) : undefined);
    await mirror.fullPass({ maxRounds: 1 });
    api.failAfter = () => undefined;
    local.unreadable.add('a.txt');
    await clock.advance(2 * INTENT_SETTLE_MS);
    await mirror.fullPass();
    expect(api.list()).toHaveLength(1);
    expect(Object.keys(state.m.intents)).toHaveLength(1);
  });
});

describe('the mass-delete window across passes of one Mirror (issue 9)', () => {
  it('stops a folder-by-folder deletion, and lets it go on once the window has passed', async () => {
    const { clock, api, local, mirror } = setup();
    for (let d = 0; d < 10; d++) for (let f = 0; f < 10; f++) local.put(`d${d}/f${f}.txt`, `h${d}-${f}`);
    await mirror.fullPass();
    expect(api.list()).toHaveLength(100);
    const blocked: number[] = [];
    for (let d = 0; d < 10; d++) {
      for (let f = 0; f < 10; f++) local.files.delete(`d${d}/f${f}.txt`);
      await clock.advance(30_000);
      const r = await mirror.fullPass();
      if (r.blocked) {
        blocked.push(d);
        break;
      }
    }
    expect(blocked).toEqual([5]);
    expect(api.list()).toHaveLength(50);
    await clock.advance(11 * 60_000);
    expect((await mirror.fullPass()).blocked).toBeUndefined();
  });
});

describe('a service that ignores the new name of an update (issue 23, defect 5)', () => {
  it('is detected at the first upload: later uploads are sent under their real names, documents left under a marked name are sent again, and the report says so', async () => {
    const { api, local, mirror } = setup();
    api.ignoreRename = true;
    local.put('a.txt', 'h1');
    local.put('sub/b.txt', 'h2');
    const first = await mirror.fullPass();
    expect(first.ok).toBe(true);
    expect(first.renameIgnored).toBe(true);
    expect(first.skipped).toEqual([expect.objectContaining({ path: '', excluded: true, reason: expect.stringMatching(/ignores a document's new name/) })]);
    // Every document of the folder under its file's name, with metadata; no marked one left.
    expect(api.list().map((d) => [d.name, d.metadata['dssync_path']]).sort()).toEqual([
      ['a.txt', 'a.txt'],
      ['sub/b.txt', 'sub/b.txt'],
    ]);
    // Later uploads go unmarked; nothing is updated again pass after pass.
    local.put('c.txt', 'h3');
    api.calls = [];
    const second = await mirror.fullPass();
    // Said once, by the pass that learned it.
    expect(second.renameIgnored).toBeUndefined();
    expect(api.count('updateDocument')).toBe(1);
    expect(api.list().map((d) => d.name).sort()).toEqual(['a.txt', 'c.txt', 'sub/b.txt']);
    api.calls = [];
    await mirror.fullPass();
    expect(api.count('uploadDocuments') + api.count('updateDocument') + api.count('deleteDocument')).toBe(0);
  });

  it("an upload sent under its real name journals the documents of its name that existed before it; after a lost answer a person's one is left alone (issue 27.7)", async () => {
    const { clock, api, state, local, mirror } = setup();
    api.ignoreRename = true;
    local.put('a.txt', 'h1');
    expect((await mirror.fullPass()).renameIgnored).toBe(true);
    const theirs = { ...api.add({ name: 'c.txt', metadata: {}, size: 10 }) };
    local.put('c.txt', 'h3');
    api.failAfter = (op) => (op === 'uploadDocuments' ? apiError('E_TIMEOUT', undefined, { ambiguous: true }) : undefined);
    await mirror.fullPass({ maxRounds: 1 });
    api.failAfter = () => undefined;
    const intent = openUpload(state);
    expect(intent.files.map((f) => [f.path, f.uploadName])).toEqual([['c.txt', undefined]]);
    expect(intent.preexisting).toEqual([theirs.id]);
    expect(intent.preexistingFresh).toBe(true);
    for (let i = 0; i < 3; i++) {
      await clock.advance(INTENT_SETTLE_MS);
      await mirror.fullPass();
    }
    expect(api.docs.get(theirs.id)).toEqual(theirs);
    expect(api.list().filter((d) => d.metadata['dssync_path'] === 'c.txt')).toHaveLength(1);
    expect(api.count('uploadDocuments')).toBe(3);
    expect(state.m.intents).toEqual({});
  });

  it("a round that waited for the lease's claim after its listing does not tell a lost unmarked upload by name and size: a person's document uploaded in that wait is left alone (the simulation, seed 9803)", async () => {
    let person: ((name: string) => void) | undefined;
    // The claim settles after the listing; meanwhile a person uploads a document of the file's name and size.
    const waitForClaim = async (): Promise<boolean> => {
      person?.('c.txt');
      person = undefined;
      return true;
    };
    const { clock, api, state, local, mirror } = setup({}, { leaseSettled: waitForClaim });
    api.ignoreRename = true;
    local.put('a.txt', 'h1');
    expect((await mirror.fullPass()).renameIgnored).toBe(true);
    let theirs: ReturnType<FakeApi['add']> | undefined;
    person = (name) => (theirs = { ...api.add({ name, metadata: {}, size: 10 }) });
    local.put('c.txt', 'h3');
    // Sent unmarked; the connection drops before the service sees it (nothing committed).
    api.failBefore = (op) => (op === 'uploadDocuments' ? apiError('E_TIMEOUT', undefined, { ambiguous: true }) : undefined);
    await mirror.fullPass({ maxRounds: 1 });
    api.failBefore = () => undefined;
    expect(openUpload(state).preexistingFresh).toBeUndefined();
    for (let i = 0; i < 3; i++) {
      await clock.advance(INTENT_SETTLE_MS);
      await mirror.fullPass();
    }
    // Without the rule, the person's document was taken for the lost answer and given our metadata.
    expect(api.docs.get(theirs!.id)).toEqual(theirs);
    expect(api.list().filter((d) => d.metadata['dssync_path'] === 'c.txt')).toHaveLength(1);
    expect(state.m.intents).toEqual({});
  });

  it("a pass whose listing was begun ahead (a start's, beside the watcher's set-up) does not tell a lost unmarked upload by name and size: a person's document uploaded since is left alone", async () => {
    const { clock, api, state, local, mirror } = setup();
    api.ignoreRename = true;
    local.put('a.txt', 'h1');
    expect((await mirror.fullPass()).renameIgnored).toBe(true);
    const ahead = mirror.listAhead();
    await ahead.listing;
    // After that listing, before the pass: a person uploads a document of the file's name and size.
    const theirs = { ...api.add({ name: 'c.txt', metadata: {}, size: 10 }) };
    local.put('c.txt', 'h3');
    api.failBefore = (op) => (op === 'uploadDocuments' ? apiError('E_TIMEOUT', undefined, { ambiguous: true }) : undefined);
    await mirror.fullPass({ maxRounds: 1, ahead });
    api.failBefore = () => undefined;
    expect(openUpload(state).preexistingFresh).toBeUndefined();
    for (let i = 0; i < 3; i++) {
      await clock.advance(INTENT_SETTLE_MS);
      await mirror.fullPass();
    }
    expect(api.docs.get(theirs.id)).toEqual(theirs);
    expect(api.list().filter((d) => d.metadata['dssync_path'] === 'c.txt')).toHaveLength(1);
    expect(state.m.intents).toEqual({});
  });

  it('a service that renames is checked once, and nothing changes', async () => {
    const { api, local, mirror } = setup();
    local.put('a.txt', 'h1');
    const r = await mirror.fullPass();
    expect(r.renameIgnored).toBeUndefined();
    expect(r.skipped).toEqual([]);
    expect(api.list().map((d) => d.name)).toEqual(['a.txt']);
  });
});

describe('a service that ignores a new url in an update', () => {
  it('is learned from the first answer and kept: urls are no longer compared, so no pass updates a document for its url again', async () => {
    const { api, state, local, mirror } = setup();
    api.ignoreUrl = true;
    local.put('a.txt', 'h1');
    local.put('b.txt', 'h2');
    expect((await mirror.fullPass()).ok).toBe(true);
    expect(state.m.lastPass?.serviceNames).toEqual({ urlsIgnored: true });
    for (let i = 0; i < 2; i++) {
      api.calls = [];
      const again = await mirror.fullPass();
      expect(again.ok).toBe(true);
      expect(api.count('uploadDocuments') + api.count('updateDocument') + api.count('deleteDocument')).toBe(0);
    }
  });

  it('without it, a document whose url differs is updated (the url is compared)', async () => {
    const { api, local, mirror } = setup();
    local.put('a.txt', 'h1');
    await mirror.fullPass();
    const doc = api.list()[0]!;
    api.docs.get(doc.id)!.url = 'https://elsewhere.invalid/a';
    api.calls = [];
    await mirror.fullPass();
    expect(api.count('updateDocument')).toBe(1);
    expect(api.list()[0]!.url).not.toBe('https://elsewhere.invalid/a');
  });
});

const DEEP = `${'folder-with-a-long-name/'.repeat(6)}Report.txt`;

describe('a service that rewrites or cuts names (issue 34, cases 6 and 7)', () => {
  it.each([
    ['lower-cases', { lower: true as const }],
    ['drops the extension', { noExtension: true as const }],
    ['appends " (1)"', { suffix: ' (1)' }],
    ['does all three', { lower: true as const, noExtension: true as const, suffix: ' (1)' }],
    ['cuts at 100 bytes', { maxBytes: 100 }],
  ])('%s: learned at the first upload, kept in the state, and no later pass or process updates a document', async (_what, rule) => {
    const { api, state, local, another: mirror } = setup();
    const writes = (): number => api.count('uploadDocuments') + api.count('updateDocument') + api.count('deleteDocument');
    api.storeName = (name) => storedName(name, rule);
    local.put('Sub/Report.txt', 'h1');
    local.put('notes.md', 'h2');
    local.put(DEEP, 'h3');
    const first = mirror();
    expect((await first.fullPass()).counts).toMatchObject({ uploaded: 3, updated: 0 });
    expect(state.m.lastPass?.serviceNames?.rule).toEqual(expect.objectContaining(rule));
    expect(api.list()).toHaveLength(3);
    const before = writes();
    expect((await first.fullPass()).counts).toMatchObject({ updated: 0, unchanged: 3 });
    // A new process on the same state knows it without an upload.
    expect((await mirror().fullPass()).counts).toMatchObject({ updated: 0, unchanged: 3 });
    expect(writes()).toBe(before);
  });

  it('a name cut inside the nonce of an upload whose answer was lost is never deleted as a late commit of ours', async () => {
    const { api, state, local, another: mirror } = setup({ installationId: 'inst-A' });
    // Cut inside the nonce (after the installation's tag) of the mark at the start.
    api.storeName = (name) => name.slice(0, '.dssync-upload-'.length + 12);
    api.failAfter = (op) => (op === 'uploadDocuments' ? apiError('E_TIMEOUT', undefined, { ambiguous: true }) : undefined);
    local.put('a.txt', 'h1');
    const m = mirror();
    await m.fullPass({ maxRounds: 1 });
    const [cut] = api.list();
    expect(Object.keys(state.m.intents)).toHaveLength(1);
    api.failAfter = () => undefined;
    await m.fullPass();
    expect(api.docs.has(cut!.id)).toBe(true);
    expect(api.calls.filter((c) => c.op === 'deleteDocument')).toEqual([]);
  });
});

describe('a service that ignores a new name (issue 34, case 8)', () => {
  it('is kept in the state: a later process that uploads nothing renames once, the App keeps the old name, and nothing is retried', async () => {
    const { api, state, local, another: mirror } = setup();
    const writes = (): number => api.count('uploadDocuments') + api.count('updateDocument') + api.count('deleteDocument');
    api.ignoreRename = true;
    local.put('a.txt', 'h1');
    local.put('b.txt', 'h2');
    const first = await mirror().fullPass();
    expect(first.renameIgnored).toBe(true);
    expect(state.m.lastPass?.serviceNames?.renamesIgnored).toBe(true);
    expect(api.list().map((d) => d.name).sort()).toEqual(['a.txt', 'b.txt']);
    // A later process: a rename, nothing to upload.
    local.files.set('renamed.txt', { ...local.files.get('a.txt')!, path: 'renamed.txt', diskPath: '/srv/share/renamed.txt' });
    local.files.delete('a.txt');
    const later = mirror();
    const renamed = await later.fullPass();
    expect(renamed.counts).toMatchObject({ renamed: 1, uploaded: 0, deleted: 0 });
    expect(renamed.renameIgnored).toBeUndefined();
    const before = writes();
    expect((await later.fullPass()).counts).toMatchObject({ updated: 0, renamed: 0, unchanged: 2 });
    expect((await mirror().fullPass()).counts).toMatchObject({ updated: 0, renamed: 0, unchanged: 2 });
    expect(writes()).toBe(before);
    expect(api.list().map((d) => [d.name, d.metadata['dssync_path']]).sort()).toEqual([
      ['a.txt', 'renamed.txt'],
      ['b.txt', 'b.txt'],
    ]);
  });

  it('learned by an incremental pass, is kept in the state for the next process', async () => {
    const { api, state, local, mirror } = setup();
    local.put('a.txt', 'h1');
    await mirror.fullPass();
    api.ignoreRename = true;
    local.put('b.txt', 'h2');
    expect((await mirror.changedPass({ files: ['b.txt'], dirs: [] })).renameIgnored).toBe(true);
    expect(state.m.lastPass?.serviceNames?.renamesIgnored).toBe(true);
  });

  it("is learned from a metadata update that leaves a person's name as it was (a state that never learned it): no update at every start", async () => {
    const { api, state, local, another: mirror } = setup();
    local.put('a.txt', 'h1');
    await mirror().fullPass();
    // A person renamed the document in the App; the service now ignores a new name in an
    // update, and the state comes from a backup that never learned it.
    const [doc] = api.list();
    api.docs.get(doc!.id)!.name = 'notes from bob';
    api.ignoreRename = true;
    state.m.lastPass = { ...state.m.lastPass!, serviceNames: undefined };
    const first = await mirror().fullPass();
    expect(first.renameIgnored).toBe(true);
    expect(state.m.lastPass?.serviceNames?.renamesIgnored).toBe(true);
    const updates = api.count('updateDocument');
    expect((await mirror().fullPass()).counts).toMatchObject({ updated: 0, uploaded: 0, unchanged: 1 });
    expect(api.count('updateDocument')).toBe(updates);
    expect(api.list().map((d) => d.name)).toEqual(['notes from bob']);
  });

  it('is learned from a metadata update that leaves a document under its marked name (a state that never learned it), and the document is sent again once', async () => {
    const { api, state, local, another: mirror } = setup();
    const writes = (): number => api.count('uploadDocuments') + api.count('updateDocument') + api.count('deleteDocument');
    api.ignoreRename = true;
    local.put('a.txt', 'h1');
    await mirror().fullPass({ maxRounds: 1 });
    expect(api.list().map((d) => d.name)).toEqual([expect.stringMatching(/^\.dssync-upload-/)]);
    // Another process learned it (a replica, a copied state): this state did not.
    state.m.lastPass = { ...state.m.lastPass!, serviceNames: undefined };
    await mirror().fullPass();
    expect(state.m.lastPass?.serviceNames?.renamesIgnored).toBe(true);
    expect(api.list().map((d) => d.name)).toEqual(['a.txt']);
    const before = writes();
    expect((await mirror().fullPass()).counts).toMatchObject({ updated: 0, uploaded: 0, unchanged: 1 });
    expect(writes()).toBe(before);
  });
});

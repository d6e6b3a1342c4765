/**
 * Issue 34, cases 6 to 8, on the fake service: a service that rewrites or cuts the names it
 * stores, or ignores a new name, is learned from its answers once, kept in the state's pass
 * record, and planned around by this process and the next: no update per document per pass.
 */
import { describe, expect, it } from 'vitest';
import { Mirror, type LocalSide, type MirrorState, type ScanResult } from '../../../src/engine/mirror.js';
import type { LocalFileInfo } from '../../../src/engine/plan.js';
import { storedName } from '../../../src/engine/service-names.js';
import type { Intent, MappingState, PassRecord } from '../../../src/state/schema.js';
import { FakeApi, apiError } from '../../helpers/fake-api.js';
import { FakeClock } from '../../helpers/fake-clock.js';
import { MemoryState } from '../../helpers/memory-state.js';

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
  files = new Map<string, LocalFileInfo>();
  put(path: string, sha256: string): void {
    this.files.set(path, { path, diskPath: `/srv/share/${path}`, size: 10, mtimeMs: 1000, sha256 });
  }
  async scan(): Promise<ScanResult> {
    return { rootStatus: 'ok', files: new Map([...this.files].map(([p, f]) => [p, { ...f, sha256: undefined }])), skipped: [], unreadableDirs: [] };
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

function setup(extra: { installationId?: string } = {}) {
  const clock = new FakeClock(Date.parse('2026-11-23T00:00:00Z'));
  const api = new FakeApi();
  const state = new State(clock);
  const local = new Local();
  const mirror = (): Mirror =>
    new Mirror({
      spec: { mappingId: 'm1', root: '/srv/share', dataSourceId: 'ds1', prune: 'ours', maxDeletePercent: 50, massDeleteMinimum: 10, batchFiles: 10, batchBytes: 1e9, concurrency: 2, ...extra },
      api,
      state,
      local,
      logger: silent,
      now: () => clock.now(),
      monotonic: () => clock.monotonic(),
    });
  const writes = (): number => api.count('uploadDocuments') + api.count('updateDocument') + api.count('deleteDocument');
  return { clock, api, state, local, mirror, writes };
}

const DEEP = `${'folder-with-a-long-name/'.repeat(6)}Report.txt`;

describe('a service that rewrites or cuts names (issue 34, cases 6 and 7)', () => {
  it.each([
    ['lower-cases', { lower: true as const }],
    ['drops the extension', { noExtension: true as const }],
    ['appends " (1)"', { suffix: ' (1)' }],
    ['does all three', { lower: true as const, noExtension: true as const, suffix: ' (1)' }],
    ['cuts at 100 bytes', { maxBytes: 100 }],
  ])('%s: learned at the first upload, kept in the state, and no later pass or process updates a document', async (_what, rule) => {
    const { api, state, local, mirror, writes } = setup();
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
    const { api, state, local, mirror } = setup({ installationId: 'inst-A' });
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
    const { api, state, local, mirror, writes } = setup();
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
});

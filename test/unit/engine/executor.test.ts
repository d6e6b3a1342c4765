import { describe, expect, it } from 'vitest';
import { executePlan, makeBatches, type ExecutorOptions } from '../../../src/engine/executor.js';
import { planMirror, type LocalFileInfo, type Op } from '../../../src/engine/plan.js';
import { LocalFileVanishedError } from '../../../src/engine/local-side.js';
import { documentFields, unmarkedName } from '../../../src/engine/document-fields.js';
import { readMeta } from '../../../src/engine/metadata.js';
import { createLogger, silentLogger } from '../../../src/log.js';
import { FakeApi, apiError } from '../../helpers/fake-api.js';
import { MemoryState } from '../../helpers/memory-state.js';
import { neverOpened } from '../../helpers/upload-file.js';

const spec = { mappingId: 'm1', root: '/srv/share' };
const desired = (f: Parameters<typeof documentFields>[1]) => documentFields(spec, f);

function files(n: number, prefix = 'f', size = 10): LocalFileInfo[] {
  return Array.from({ length: n }, (_, i) => ({ path: `${prefix}${i}.txt`, diskPath: `/srv/share/${prefix}${i}.txt`, size, mtimeMs: 1000, sha256: `h${prefix}${i}` }));
}

function opts(api: FakeApi, state: MemoryState, over: Partial<ExecutorOptions> = {}): ExecutorOptions {
  return { api, state, mappingId: 'm1', dataSourceId: 'ds1', desired, batchFiles: 20, batchBytes: 1 << 20, concurrency: 4, now: () => 0, logger: silentLogger, open: neverOpened, ...over };
}

/** One full pass of the engine: list, plan, execute. */
async function pass(api: FakeApi, state: MemoryState, local: LocalFileInfo[], over: Partial<ExecutorOptions> = {}) {
  const remote = await api.listDocuments('ds1');
  const plan = planMirror({ mappingId: 'm1', local: new Map(local.map((f) => [f.path, f])), state: state.m, remote, desired, prune: 'ours' });
  // As the mirror does: the unmarked documents of this listing existed before its uploads.
  const preexisting = (path: string): string[] => remote.filter((d) => d.name === path && readMeta(d) === undefined).map((d) => d.id);
  // The executor takes the operations over (and empties the plan's list): kept here to be read.
  const planned = [...plan.ops];
  const result = await executePlan(plan.ops, opts(api, state, { preexisting, preexistingFresh: true, ...over }));
  if (result.failures.length === 0 && !result.ambiguous) for (const id of plan.resolvedIntentIds) state.endIntent('m1', id);
  return { plan, planned, result };
}

/** The data source holds exactly the files: one marked document per path, right content. */
function expectConverged(api: FakeApi, local: LocalFileInfo[]): void {
  const byPath = new Map<string, string[]>();
  for (const d of api.list()) {
    const meta = readMeta({ id: d.id, metadata: d.metadata, raw: {} });
    expect(meta, `document ${d.id} (${d.name}) carries dssync metadata`).toBeDefined();
    byPath.set(meta!.path, [...(byPath.get(meta!.path) ?? []), meta!.sha256]);
  }
  expect([...byPath.keys()].sort()).toEqual(local.map((f) => f.path).sort());
  for (const f of local) expect(byPath.get(f.path)).toEqual([f.sha256]);
}

describe('makeBatches', () => {
  it('bounds batches by count and by bytes; a large file goes alone', () => {
    const items = [10, 10, 10, 10, 10].map((size) => ({ file: { size } }));
    expect([...makeBatches(items, 2, 1000)].map((b) => b.length)).toEqual([2, 2, 1]);
    expect([...makeBatches(items, 10, 25)].map((b) => b.length)).toEqual([2, 2, 1]);
    expect([...makeBatches([{ file: { size: 5000 } }, { file: { size: 1 } }], 10, 100)].map((b) => b.length)).toEqual([1, 1]);
  });
});

describe('executePlan: files planned unhashed (plan.ts newFilesNeedNoContent)', () => {
  const unhashed = (n: number): Op[] => files(n).map(({ sha256: _, ...file }) => ({ kind: 'upload', path: file.path, file }));

  it('hashes each before its batch is sent: the intent, the metadata and the state carry that hash', async () => {
    const api = new FakeApi();
    const state = new MemoryState();
    const recorded = new Set<string>();
    const upload = api.uploadDocuments.bind(api);
    api.uploadDocuments = async (ds, sent) => {
      for (const i of Object.values(state.m.intents)) if (i.kind === 'upload') for (const f of i.files) recorded.add(`${f.path}=${f.sha256}`);
      return upload(ds, sent);
    };
    const hash: ExecutorOptions['hash'] = async (file) => ({ file: { ...file, sha256: `sent-${file.path}`, hashedAt: 5 } });
    const result = await executePlan(unhashed(25), opts(api, state, { hash }));
    expect(result.failures).toEqual([]);
    expect([...recorded].sort()).toEqual(files(25).map((f) => `${f.path}=sent-${f.path}`).sort());
    expect(state.m.files.get('f3.txt')).toMatchObject({ sha256: 'sent-f3.txt', hashedAt: 5 });
    expect(api.list().map((d) => readMeta({ id: d.id, metadata: d.metadata, raw: {} })?.sha256).sort()).toEqual(files(25).map((f) => `sent-${f.path}`).sort());
  });

  it('a file gone or changed since the walk is left to the next look; nothing is sent for it, and its batch goes on', async () => {
    const api = new FakeApi();
    const state = new MemoryState();
    const hash: ExecutorOptions['hash'] = async (file) => {
      if (file.path === 'f1.txt') throw new LocalFileVanishedError('gone');
      return { file: { ...file, sha256: 'h', size: file.path === 'f2.txt' ? 11 : file.size } };
    };
    const result = await executePlan(unhashed(4), opts(api, state, { hash }));
    expect(result.changed.sort()).toEqual(['f1.txt', 'f2.txt']);
    expect(result.failures).toEqual([]);
    expect([...state.m.files.keys()].sort()).toEqual(['f0.txt', 'f3.txt']);
    expect(Object.values(state.m.intents)).toEqual([]);
  });

  it('a file that cannot be read when sent is skipped for now, by its path and why, as a planning hash skips it', async () => {
    const api = new FakeApi();
    const state = new MemoryState();
    const hash: ExecutorOptions['hash'] = async (file) => {
      if (file.path === 'f0.txt') throw new Error('f0.txt: permission denied');
      return { file: { ...file, sha256: 'h' } };
    };
    const result = await executePlan(unhashed(2), opts(api, state, { hash }));
    expect(result.skipped).toEqual([{ path: 'f0.txt', reason: 'f0.txt: permission denied' }]);
    expect(result.failures).toEqual([]);
    expect([...state.m.files.keys()]).toEqual(['f1.txt']);
  });

  it('without a way to hash them, each fails by its path: nothing is sent unhashed', async () => {
    const api = new FakeApi();
    const result = await executePlan(unhashed(2), opts(api, new MemoryState()));
    expect(result.failures.map((f) => f.path)).toEqual(['f0.txt', 'f1.txt']);
    expect(api.count('uploadDocuments')).toBe(0);
  });
});

describe('executePlan', () => {
  it('a first mirror uses one upload per batch and one update per document', async () => {
    const api = new FakeApi();
    const state = new MemoryState();
    const local = files(45);
    const { result } = await pass(api, state, local);
    expect(result.failures).toEqual([]);
    expect(api.count('uploadDocuments')).toBe(3);
    expect(api.count('updateDocument')).toBe(45);
    expect([...state.m.files.keys()]).toHaveLength(45);
    expect(state.m.intents).toEqual({});
    expectConverged(api, local);
  });

  it('a second pass over the same files makes no remote write', async () => {
    const api = new FakeApi();
    const state = new MemoryState();
    const local = files(5);
    await pass(api, state, local);
    api.calls = [];
    const { plan } = await pass(api, state, local.map((f) => ({ ...f, sha256: undefined })));
    expect(plan.ops).toEqual([]);
    expect(api.calls.map((c) => c.op)).toEqual(['listDocuments']);
  });

  it('a replace uploads the new version before deleting the old one', async () => {
    const api = new FakeApi();
    const state = new MemoryState();
    await pass(api, state, files(1));
    const oldId = state.m.files.get('f0.txt')!.documentId;
    api.calls = [];
    const edited = [{ ...files(1)[0]!, sha256: 'new', size: 11, mtimeMs: 2000 }];
    await pass(api, state, edited);
    expect(api.calls.map((c) => c.op)).toEqual(['listDocuments', 'uploadDocuments', 'updateDocument', 'deleteDocument']);
    expect(api.docs.has(oldId)).toBe(false);
    expectConverged(api, edited);
  });

  it('a lost upload answer is settled by listing and adopting: no duplicate, no second upload', async () => {
    const api = new FakeApi();
    const state = new MemoryState();
    const local = files(3);
    api.failAfter = (op) => (op === 'uploadDocuments' ? apiError('E_CONNECTION', undefined, { ambiguous: true, retryable: true }) : undefined);
    const first = await pass(api, state, local);
    expect(first.result.ambiguous).toBe(true);
    expect(Object.keys(state.m.intents)).toHaveLength(1);
    expect(api.list()).toHaveLength(3); // created, but unmarked

    api.failAfter = () => undefined;
    const second = await pass(api, state, local);
    expect(second.planned.map((o) => o.kind)).toEqual(['update-meta', 'update-meta', 'update-meta']);
    expect(api.count('uploadDocuments')).toBe(1);
    expect(state.m.intents).toEqual({});
    expectConverged(api, local);
  });

  it('a lost upload answer on a service that keeps only base names: recognised by its nonce, never by the base name (defect 1; issue 23, defect 5)', async () => {
    const api = new FakeApi();
    api.baseNamesOnly = true;
    const state = new MemoryState();
    const local = files(2, 'dir/sub/');
    // A person's document of a file's base name and size: never claimed.
    const theirs = { ...api.add({ name: 'f0.txt', metadata: {}, size: 10 }) };
    api.failAfter = (op) => (op === 'uploadDocuments' ? apiError('E_TIMEOUT', undefined, { ambiguous: true }) : undefined);
    await pass(api, state, local);
    expect(api.list().filter((d) => d.id !== theirs.id).every((d) => /^[^/]+\.dssync-upload-[0-9a-f]+\.txt$/.test(d.name ?? ''))).toBe(true);
    api.failAfter = () => undefined;
    await pass(api, state, local);
    // The landed uploads, their folder cut off, still carry the nonce the intent recorded.
    expect(api.count('uploadDocuments')).toBe(1);
    expect(api.docs.get(theirs.id)).toEqual(theirs);
    expect(api.list().filter((d) => d.metadata['dssync_path'] !== undefined)).toHaveLength(2);
  });

  it('a crash between upload and metadata (intent open) converges on the next pass', async () => {
    const api = new FakeApi();
    const state = new MemoryState();
    const local = files(4);
    api.failBefore = (op) => (op === 'updateDocument' ? apiError('E_SERVER', 503, { retryable: true }) : undefined);
    const first = await pass(api, state, local);
    expect(first.result.failures).toHaveLength(4);
    expect(Object.keys(state.m.intents)).toHaveLength(1);
    api.failBefore = () => undefined;
    await pass(api, state, local);
    expect(api.count('uploadDocuments')).toBe(1);
    expectConverged(api, local);
  });

  it('a file refused by the service (415) is found by splitting the batch, recorded, and the rest goes in', async () => {
    const api = new FakeApi();
    const state = new MemoryState();
    const local = files(4);
    api.failBefore = (op, arg) =>
      op === 'uploadDocuments' && (arg as { name: string }[]).some((f) => unmarkedName(f.name) === 'f2.txt') ? apiError('E_UNSUPPORTED_TYPE', 415) : undefined;
    const { result } = await pass(api, state, local);
    expect(result.rejected.map((f) => f.path)).toEqual(['f2.txt']);
    expect(state.m.rejected['f2.txt']).toMatchObject({ status: 415, size: 10, mtimeMs: 1000 });
    expect([...state.m.files.keys()].sort()).toEqual(['f0.txt', 'f1.txt', 'f3.txt']);
    // Unchanged, it is not sent again.
    api.calls = [];
    const again = await pass(api, state, local);
    expect(again.plan.skippedRejected).toEqual(['f2.txt']);
    expect(api.count('uploadDocuments')).toBe(0);
  });

  it('a file that changed while being sent is left for the next plan', async () => {
    const api = new FakeApi();
    const state = new MemoryState();
    api.failBefore = (op) => (op === 'uploadDocuments' ? apiError('E_FILE_CHANGED', undefined) : undefined);
    const { result } = await pass(api, state, files(1));
    expect(result.changed).toEqual(['f0.txt']);
    expect(result.failures).toEqual([]);
    expect(state.m.intents).toEqual({});
  });

  it('a rename is one update and moves the state entry', async () => {
    const api = new FakeApi();
    const state = new MemoryState();
    await pass(api, state, files(1));
    const id = state.m.files.get('f0.txt')!.documentId;
    api.calls = [];
    const moved = [{ ...files(1)[0]!, path: 'moved/f0.txt', diskPath: '/srv/share/moved/f0.txt' }];
    await pass(api, state, moved);
    expect(api.calls.map((c) => c.op)).toEqual(['listDocuments', 'updateDocument']);
    expect(state.m.files.get('moved/f0.txt')?.documentId).toBe(id);
    expect(state.m.files.get('f0.txt')).toBeUndefined();
    expect(api.docs.get(id)?.name).toBe('moved/f0.txt');
  });

  it('a document deleted remotely during a rename is uploaded again on the next pass', async () => {
    const api = new FakeApi();
    const state = new MemoryState();
    await pass(api, state, files(1));
    const moved = [{ ...files(1)[0]!, path: 'b.txt', diskPath: '/srv/share/b.txt' }];
    api.failBefore = (op) => (op === 'updateDocument' ? apiError('E_NOT_FOUND', 404) : undefined);
    await pass(api, state, moved);
    api.failBefore = () => undefined;
    api.docs.clear();
    await pass(api, state, moved);
    expectConverged(api, moved);
  });
});

describe('executePlan on shutdown', () => {
  it('keeps the intent of an upload aborted mid-request, so the next pass adopts what landed', async () => {
    const api = new FakeApi();
    const state = new MemoryState();
    const local = files(2);
    // The service received the upload, then the daemon aborted while waiting for the answer.
    api.failAfter = (op) => (op === 'uploadDocuments' ? apiError('E_ABORTED', undefined) : undefined);
    const first = await pass(api, state, local);
    expect(first.result.failures.map((f) => f.code)).toEqual(['E_ABORTED', 'E_ABORTED']);
    expect(Object.keys(state.m.intents)).toHaveLength(1);
    api.failAfter = () => undefined;
    await pass(api, state, local);
    expect(api.count('uploadDocuments')).toBe(1);
    expectConverged(api, local);
  });

  it('stops starting work once stopped: no intent, request or per-file failure for what had not started', async () => {
    const api = new FakeApi();
    const state = new MemoryState();
    const local = files(100); // 5 batches of 20, one at a time
    const stop = new AbortController();
    // Stopped while the first batch is being sent (as the pacer answers every later request).
    api.failBefore = (op) => {
      if (op !== 'uploadDocuments') return undefined;
      const wasStopped = stop.signal.aborted;
      stop.abort();
      return wasStopped ? apiError('E_ABORTED', undefined) : undefined;
    };
    const first = await pass(api, state, local, { concurrency: 1, signal: stop.signal });
    // Only the first batch was sent: the other four began no intent, sent nothing, and are
    // one line of the result instead of 80 failed files (a million at a first mirror's Ctrl-C).
    expect(api.count('uploadDocuments')).toBe(1);
    expect(Object.keys(state.m.intents)).toHaveLength(0);
    expect([...state.m.files.keys()]).toHaveLength(20);
    expect(first.result.counts.upload).toBe(20);
    expect(first.result.failures).toEqual([{ path: '', op: 'upload', code: 'E_ABORTED', message: expect.stringContaining('80 upload') as unknown }]);
    api.failBefore = () => undefined;
    await pass(api, state, local);
    expectConverged(api, local);
  });
  it('a stop mid-pass logs one summary line of what was abandoned, not an error per interrupted operation', async () => {
    const api = new FakeApi();
    const state = new MemoryState();
    const local = files(100); // 5 batches of 20
    const stop = new AbortController();
    // Stopped while the batches are being sent: every request in flight rejects with E_ABORTED.
    api.failBefore = (op) => {
      if (op !== 'uploadDocuments') return undefined;
      stop.abort();
      return apiError('E_ABORTED', undefined);
    };
    const raw: string[] = [];
    const logger = createLogger({ level: 'debug', destination: { write: (s: string) => void raw.push(s) } });
    const { result } = await pass(api, state, local, { concurrency: 2, signal: stop.signal, logger });
    const lines = raw.map((l) => JSON.parse(l) as { level: number; msg: string; abandoned?: Record<string, { inFlight: number; notStarted: number }> });
    expect(lines.filter((l) => l.level >= 50)).toEqual([]);
    const summary = lines.filter((l) => l.abandoned !== undefined);
    expect(summary).toHaveLength(1);
    const upload = summary[0]!.abandoned!.upload!;
    expect(upload.inFlight).toBeGreaterThan(0);
    expect(upload.inFlight + upload.notStarted).toBe(100);
    expect(summary[0]!.msg).toContain('100 operation(s) abandoned');
    expect(summary[0]!.msg).toContain('next start');
    expect(result.interrupted.upload).toBe(upload.inFlight);
  });
});

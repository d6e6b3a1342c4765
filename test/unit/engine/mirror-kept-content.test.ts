/**
 * A small file is read once for its hash and its upload (issue 39.1). A first mirror into a
 * data source of its own plans its new files unhashed and hashes each as its batch is sent,
 * its bytes kept for its upload (plan.ts newFilesNeedNoContent). A round whose new files'
 * content may matter (a document already in the data source) hashes them before its plan
 * and keeps their bytes up to mirror.ts KEEP_CONTENT_BYTES: beyond it, the upload reads the
 * file again. A local side that records what the mirror asks of it; the FakeApi's upload
 * opens every file as the real client does.
 */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { KEEP_CONTENT_BYTES, Mirror } from '../../../src/engine/mirror.js';
import type { HashedContent, LocalSide, ScanResult } from '../../../src/engine/local-side.js';
import type { HashedFile, LocalFileInfo } from '../../../src/engine/plan.js';
import type { OpenedFile } from '../../../src/api/records.js';
import { FakeApi } from '../../helpers/fake-api.js';
import { MirrorMemoryState as State } from '../../helpers/memory-state.js';
import { FakeClock } from '../../helpers/fake-clock.js';

const T0 = Date.parse('2026-12-02T10:00:00Z');
const MiB = 1024 * 1024;

/**
 * Files of the given sizes, an hour old; records each hash (with the upload requests made
 * before it), each hash's `keep` and each open's `content`. `growAtHash`: a file longer at
 * its first hash than the walk saw it (written to in between).
 */
class RecordingSide implements LocalSide {
  readonly kept = new Map<string, Uint8Array>();
  readonly asked: string[] = [];
  readonly hashed: { path: string; uploadsBefore: number }[] = [];
  readonly opened: { path: string; content: Uint8Array | undefined }[] = [];
  uploads = 0;
  constructor(
    private readonly sizes: ReadonlyMap<string, number>,
    private growAtHash?: string,
  ) {}
  async scan(): Promise<ScanResult> {
    const files = new Map<string, LocalFileInfo>();
    let ino = 1;
    for (const [path, size] of this.sizes) files.set(path, { path, diskPath: undefined, size, mtimeMs: T0 - 3_600_000, ctimeMs: T0 - 3_600_000, dev: 1, ino: ino++ });
    return { rootStatus: 'ok', files, skipped: [], unreadableDirs: [] };
  }
  scanScope(): Promise<ScanResult> {
    return this.scan();
  }
  async hash(file: LocalFileInfo, keep?: boolean): Promise<HashedContent> {
    this.hashed.push({ path: file.path, uploadsBefore: this.uploads });
    const grown = file.path === this.growAtHash;
    if (grown) this.growAtHash = undefined;
    const bytes = Buffer.alloc(file.size + (grown ? 1 : 0), file.path);
    if (keep) {
      this.asked.push(file.path);
      this.kept.set(file.path, bytes);
    }
    return { sha256: sha(bytes), size: bytes.length, mtimeMs: file.mtimeMs, ctimeMs: file.ctimeMs, dev: file.dev, ino: file.ino, content: keep ? bytes : undefined };
  }
  async open(file: HashedFile, content?: Uint8Array): Promise<OpenedFile> {
    this.opened.push({ path: file.path, content });
    return { path: file.path, handle: { read: async () => ({ bytesRead: 0 }), stat: async () => ({ size: file.size, mtimeMs: file.mtimeMs }), close: async () => undefined }, stat: { size: file.size, mtimeMs: file.mtimeMs } };
  }
}

const silent = { info() {}, warn() {}, error() {}, debug() {}, child() { return silent; } } as never;
const sha = (bytes: Uint8Array): string => createHash('sha256').update(bytes).digest('hex');

interface Mirrored {
  local: RecordingSide;
  state: State;
  /** Each upload request's files, with the hash their open intent recorded before it was sent. */
  sent: { path: string; intentSha256: string | undefined }[];
}

async function firstMirror(sizes: Map<string, number>, opts: { person?: boolean; growAtHash?: string } = {}): Promise<Mirrored> {
  const clock = new FakeClock(T0);
  const api = new FakeApi();
  // A person's document: what a new file's content could be matched with.
  if (opts.person) api.add({ name: 'notes.txt', metadata: {}, size: 10, dataSourceId: 'ds1' });
  const local = new RecordingSide(sizes, opts.growAtHash);
  const state = new State();
  const sent: Mirrored['sent'] = [];
  // As the real client: each file of an upload is opened before the request.
  const upload = api.uploadDocuments.bind(api);
  api.uploadDocuments = async (ds, files) => {
    local.uploads++;
    const recorded = Object.values(state.m.intents).flatMap((i) => (i.kind === 'upload' ? i.files : []));
    for (const f of files) sent.push({ path: f.path, intentSha256: recorded.find((r) => r.path === f.path)?.sha256 });
    for (const f of files) await (await f.open()).handle.close();
    return upload(ds, files);
  };
  const mirror = new Mirror({
    spec: { mappingId: 'm1', root: '/srv/share', dataSourceId: 'ds1', prune: 'ours', maxDeletePercent: 50, massDeleteMinimum: 10, batchFiles: 10, batchBytes: 1e9, concurrency: 2 },
    api,
    state,
    local,
    logger: silent,
    now: () => clock.now(),
    monotonic: () => clock.monotonic(),
  });
  const report = await mirror.fullPass();
  expect(report.counts.uploaded).toBe(sizes.size);
  expect(api.list().filter((d) => d.name !== 'notes.txt')).toHaveLength(sizes.size);
  return { local, state, sent };
}

describe('a small file is read once for its hash and its upload', () => {
  it('a first mirror into a data source of its own hashes each file as it is sent: its intent records that hash, its upload sends those bytes', async () => {
    const { local, state, sent } = await firstMirror(new Map(Array.from({ length: 30 }, (_, i) => [`f${i}.txt`, 100 + i])));
    // Each file hashed once, after the first upload request for some (not all before the plan).
    expect(local.hashed.map((h) => h.path).sort()).toEqual([...local.kept.keys()].sort());
    expect(local.hashed).toHaveLength(30);
    expect(local.hashed.some((h) => h.uploadsBefore > 0)).toBe(true);
    expect(local.opened).toHaveLength(30);
    for (const o of local.opened) expect(o.content).toBe(local.kept.get(o.path));
    // The intent made durable before each request names each file's hash, as the state does after.
    expect(sent).toHaveLength(30);
    for (const s of sent) {
      expect(s.intentSha256).toBe(sha(local.kept.get(s.path)!));
      expect(state.m.files.get(s.path)?.sha256).toBe(s.intentSha256);
    }
  });

  it('a file written to between the walk and its send is left to the next round, which sends it as it is then', async () => {
    const { local, state } = await firstMirror(new Map(Array.from({ length: 12 }, (_, i) => [`f${i}.txt`, 100 + i])), { growAtHash: 'f3.txt' });
    expect(local.hashed.filter((h) => h.path === 'f3.txt')).toHaveLength(2);
    expect(state.m.files.get('f3.txt')?.size).toBe(103);
  });

  it("a round whose new files' content may matter hashes them before its plan, keeping their bytes for their upload", async () => {
    const { local } = await firstMirror(new Map(Array.from({ length: 30 }, (_, i) => [`f${i}.txt`, 100 + i])), { person: true });
    expect(local.hashed.every((h) => h.uploadsBefore === 0)).toBe(true);
    expect(local.asked).toHaveLength(30);
    expect(local.opened).toHaveLength(30);
    for (const o of local.opened) expect(o.content).toBe(local.kept.get(o.path));
  });

  it('keeps at most KEEP_CONTENT_BYTES a round: the files beyond it are read again when sent', async () => {
    const count = KEEP_CONTENT_BYTES / MiB + 4;
    const { local } = await firstMirror(new Map(Array.from({ length: count }, (_, i) => [`f${i}.bin`, MiB])), { person: true });
    expect(local.asked).toHaveLength(KEEP_CONTENT_BYTES / MiB);
    const handed = local.opened.filter((o) => o.content !== undefined);
    expect(handed.map((o) => o.path).sort()).toEqual([...local.asked].sort());
    for (const o of handed) expect(o.content).toBe(local.kept.get(o.path));
    expect(local.opened.filter((o) => o.content === undefined)).toHaveLength(4);
  });
});

/**
 * A round's hashes keep the bytes of small files for their upload (mirror.ts
 * KEEP_CONTENT_BYTES, issue 39.1): each such file is then opened and read once, not twice.
 * The budget bounds what a round holds, whatever the tree: beyond it, the upload reads the
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

/** Files of the given sizes, an hour old; records each hash's `keep` and each open's `content`. */
class RecordingSide implements LocalSide {
  readonly kept = new Map<string, Uint8Array>();
  readonly asked: string[] = [];
  readonly opened: { path: string; content: Uint8Array | undefined }[] = [];
  constructor(private readonly sizes: ReadonlyMap<string, number>) {}
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
    const bytes = Buffer.alloc(file.size, file.path);
    if (keep) {
      this.asked.push(file.path);
      this.kept.set(file.path, bytes);
    }
    return { sha256: createHash('sha256').update(bytes).digest('hex'), size: file.size, mtimeMs: file.mtimeMs, ctimeMs: file.ctimeMs, dev: file.dev, ino: file.ino, content: keep ? bytes : undefined };
  }
  async open(file: HashedFile, content?: Uint8Array): Promise<OpenedFile> {
    this.opened.push({ path: file.path, content });
    return { path: file.path, handle: { read: async () => ({ bytesRead: 0 }), stat: async () => ({ size: file.size, mtimeMs: file.mtimeMs }), close: async () => undefined }, stat: { size: file.size, mtimeMs: file.mtimeMs } };
  }
}

const silent = { info() {}, warn() {}, error() {}, debug() {}, child() { return silent; } } as never;

async function firstMirror(sizes: Map<string, number>): Promise<RecordingSide> {
  const clock = new FakeClock(T0);
  const api = new FakeApi();
  const local = new RecordingSide(sizes);
  // As the real client: each file of an upload is opened before the request.
  const upload = api.uploadDocuments.bind(api);
  api.uploadDocuments = async (ds, files) => {
    for (const f of files) await (await f.open()).handle.close();
    return upload(ds, files);
  };
  const mirror = new Mirror({
    spec: { mappingId: 'm1', root: '/srv/share', dataSourceId: 'ds1', prune: 'ours', maxDeletePercent: 50, massDeleteMinimum: 10, batchFiles: 10, batchBytes: 1e9, concurrency: 2 },
    api,
    state: new State(),
    local,
    logger: silent,
    now: () => clock.now(),
    monotonic: () => clock.monotonic(),
  });
  const report = await mirror.fullPass();
  expect(report.counts.uploaded).toBe(sizes.size);
  return local;
}

describe("a round's hashes keep small files' bytes for their upload", () => {
  it('each upload is handed the very bytes its hash kept: nothing is read twice', async () => {
    const local = await firstMirror(new Map(Array.from({ length: 30 }, (_, i) => [`f${i}.txt`, 100 + i])));
    expect(local.asked).toHaveLength(30);
    expect(local.opened).toHaveLength(30);
    for (const o of local.opened) expect(o.content).toBe(local.kept.get(o.path));
  });

  it('keeps at most KEEP_CONTENT_BYTES a round: the files beyond it are read again when sent', async () => {
    const count = KEEP_CONTENT_BYTES / MiB + 4;
    const local = await firstMirror(new Map(Array.from({ length: count }, (_, i) => [`f${i}.bin`, MiB])));
    expect(local.asked).toHaveLength(KEEP_CONTENT_BYTES / MiB);
    const handed = local.opened.filter((o) => o.content !== undefined);
    expect(handed.map((o) => o.path).sort()).toEqual([...local.asked].sort());
    for (const o of handed) expect(o.content).toBe(local.kept.get(o.path));
    expect(local.opened.filter((o) => o.content === undefined)).toHaveLength(4);
  });
});

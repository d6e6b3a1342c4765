/**
 * Issue 9, defect 4 at the mirror's level: incremental and full passes hash again what the
 * state cannot vouch for (racy.ts), upload what changed, and only refresh the entry of what
 * did not. A fake folder with 1-second timestamps (as ext4 with small inodes, or FAT's 2 s)
 * and a fake clock.
 */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { Mirror } from '../../../src/engine/mirror.js';
import type { ChangeScope, HashedContent, LocalSide, ScanResult } from '../../../src/engine/local-side.js';
import type { LocalFileInfo } from '../../../src/engine/plan.js';
import { FakeApi } from '../../helpers/fake-api.js';
import { MirrorMemoryState as State } from '../../helpers/memory-state.js';
import { FakeClock } from '../../helpers/fake-clock.js';
import { neverOpened } from '../../helpers/upload-file.js';

const T0 = Date.parse('2026-11-23T10:00:00.250Z');

interface FakeFile {
  content: string;
  mtimeMs: number;
  ctimeMs: number;
  ino: number;
}

/** A folder whose timestamps have 1-second granularity, like ext4 with 128-byte inodes. */
class CoarseFolder implements LocalSide {
  /** The FakeApi reads no file. */
  open = neverOpened;
  files = new Map<string, FakeFile>();
  hashes = 0;
  private nextIno = 100;
  constructor(private readonly clock: FakeClock) {}
  private tick(): number {
    return Math.floor(this.clock.now() / 1000) * 1000;
  }
  /** A write in place (same inode): mtime and ctime move to the current tick. */
  write(path: string, content: string): void {
    const old = this.files.get(path);
    this.files.set(path, { content, mtimeMs: this.tick(), ctimeMs: this.tick(), ino: old?.ino ?? this.nextIno++ });
  }
  /** `touch -r`: mtime set; ctime moves to now, as the kernel does. */
  setMtime(path: string, mtimeMs: number): void {
    const f = this.files.get(path)!;
    this.files.set(path, { ...f, mtimeMs, ctimeMs: this.tick() });
  }
  private info(path: string, f: FakeFile): LocalFileInfo {
    return { path, diskPath: `/srv/share/${path}`, size: Buffer.byteLength(f.content), mtimeMs: f.mtimeMs, ctimeMs: f.ctimeMs, dev: 1, ino: f.ino };
  }
  async scan(): Promise<ScanResult> {
    return { rootStatus: 'ok', files: new Map([...this.files].map(([p, f]) => [p, this.info(p, f)])), skipped: [], unreadableDirs: [] };
  }
  async scanScope(scope: ChangeScope): Promise<ScanResult> {
    const files = new Map<string, LocalFileInfo>();
    for (const p of scope.files) {
      const f = this.files.get(p);
      if (f) files.set(p, this.info(p, f));
    }
    return { rootStatus: 'ok', files, skipped: [], unreadableDirs: [] };
  }
  async hash(file: LocalFileInfo): Promise<HashedContent> {
    this.hashes++;
    const f = this.files.get(file.path)!;
    const { size, mtimeMs, ctimeMs, dev, ino } = this.info(file.path, f);
    return { sha256: createHash('sha256').update(f.content).digest('hex'), size, mtimeMs, ctimeMs, dev, ino };
  }
}

const silent = { info() {}, warn() {}, error() {}, debug() {}, child() { return silent; } } as never;

function setup() {
  const clock = new FakeClock(T0);
  const api = new FakeApi();
  const state = new State();
  const local = new CoarseFolder(clock);
  const mirror = new Mirror({
    spec: { mappingId: 'm1', root: '/srv/share', dataSourceId: 'ds1', prune: 'ours', maxDeletePercent: 50, massDeleteMinimum: 10, batchFiles: 10, batchBytes: 1e9, concurrency: 2 },
    api,
    state,
    local,
    logger: silent,
    now: () => clock.now(),
    monotonic: () => clock.monotonic(),
  });
  /** The content hash the service's document for `path` was uploaded with (its metadata). */
  const remoteSha = (path: string): unknown => api.list().find((d) => d.metadata['dssync_path'] === path)?.metadata['dssync_sha256'];
  const sha = (s: string): string => createHash('sha256').update(s).digest('hex');
  return { clock, api, state, local, mirror, remoteSha, sha };
}

describe('the quick check in passes (issue 9, defect 4)', () => {
  for (const kind of ['incremental', 'full'] as const) {
    const pass = (m: Mirror, path: string) => (kind === 'full' ? m.fullPass() : m.changedPass({ files: [path], dirs: [] }));

    it(`${kind}: a second same-size write within the timestamp's second is uploaded (racy entry)`, async () => {
      const { clock, api, local, mirror, remoteSha, sha } = setup();
      local.write('a.txt', 'one');
      clock.tick(300); // the debounce: hashed in the same second as the write
      await mirror.fullPass();
      expect(remoteSha('a.txt')).toBe(sha('one'));
      clock.tick(200);
      local.write('a.txt', 'two'); // same size, same second: every stat field as recorded
      clock.tick(300);
      await pass(mirror, 'a.txt');
      expect(remoteSha('a.txt')).toBe(sha('two'));
      expect(api.list()).toHaveLength(1);
    });

    it(`${kind}: a same-size rewrite whose mtime is put back is uploaded (ctime)`, async () => {
      const { clock, local, mirror, remoteSha, sha } = setup();
      local.write('a.txt', 'one');
      const mtime = local.files.get('a.txt')!.mtimeMs;
      clock.tick(60_000);
      await mirror.fullPass();
      clock.tick(60_000);
      local.write('a.txt', 'two');
      local.setMtime('a.txt', mtime);
      clock.tick(60_000);
      await pass(mirror, 'a.txt');
      expect(remoteSha('a.txt')).toBe(sha('two'));
    });
  }

  it('a racy file hashed again and found the same: no upload; its entry refreshed, then trusted', async () => {
    const { clock, api, state, local, mirror } = setup();
    local.write('a.txt', 'one');
    clock.tick(300);
    await mirror.fullPass();
    const racyAt = state.m.files.get('a.txt')!.hashedAt;
    expect(racyAt).toBe(T0 + 300);
    expect(local.hashes).toBe(1);
    clock.tick(60_000);
    const again = await mirror.fullPass();
    expect(local.hashes).toBe(2);
    expect(again.counts).toMatchObject({ unchanged: 1, adopted: 0, uploaded: 0, replaced: 0 });
    expect(api.count('uploadDocuments')).toBe(1);
    expect(api.count('updateDocument')).toBe(1);
    expect(state.m.files.get('a.txt')!.hashedAt).toBe(T0 + 60_300);
    // Proven now: the next passes take the hash from the state.
    clock.tick(60_000);
    await mirror.fullPass();
    await mirror.changedPass({ files: ['a.txt'], dirs: [] });
    expect(local.hashes).toBe(2);
  });
});

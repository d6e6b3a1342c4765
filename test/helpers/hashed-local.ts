/**
 * A mapped folder for the mirror's unit tests (the engine's LocalSide, no disk): each file
 * carries its content's hash as it is now and the time of its last write.
 */
import type { LocalSide, ScanResult } from '../../src/engine/local-side.js';
import type { LocalFileInfo } from '../../src/engine/plan.js';
import { neverOpened } from './upload-file.js';

export class HashedLocal implements LocalSide {
  /** The FakeApi reads no file. */
  open = neverOpened;
  files = new Map<string, LocalFileInfo>();
  private inodes = 0;
  /** Writes `content` at `path` at wall time `at` (the same inode when the file exists). */
  write(path: string, content: string, at: number): void {
    const ino = this.files.get(path)?.ino ?? ++this.inodes;
    this.files.set(path, { path, diskPath: `/srv/share/${path}`, size: content.length, mtimeMs: at, ctimeMs: at, ino, dev: 1, sha256: `sha-${content}` });
  }
  /** Files the walk reports as skipped: cannot be read (chmod 000). */
  unreadable = new Set<string>();
  async scan(): Promise<ScanResult> {
    const files = new Map([...this.files].filter(([p]) => !this.unreadable.has(p)).map(([p, f]) => [p, { ...f, sha256: undefined }]));
    const skipped = [...this.unreadable].filter((p) => this.files.has(p)).map((path) => ({ path, reason: 'permission denied (EACCES)' }));
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

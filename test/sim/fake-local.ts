/**
 * The simulation's folder: an in-memory map path -> content with the identity a walk sees
 * (size, mtime, dev, ino, ctime), behind the engine's LocalSide. Hashes are real SHA-256.
 * Chosen over real files for speed (thousands of histories per run) and determinism.
 */
import { createHash } from 'node:crypto';
import type { LocalSide, ScanResult } from '../../src/engine/mirror.js';
import { LocalFileVanishedError } from '../../src/engine/mirror.js';
import type { LocalFileInfo } from '../../src/engine/plan.js';

export const ROOT = '/sim/share';

export interface FakeFile {
  content: string;
  mtimeMs: number;
  ctimeMs: number;
  size: number;
  dev: number;
  ino: number;
}

export function sha256(content: string): string {
  return createHash('sha256').update(content).digest('hex');
}

export class FakeLocal implements LocalSide {
  readonly files = new Map<string, FakeFile>();
  private nextIno = 1;

  constructor(private readonly now: () => number) {}

  write(path: string, content: string): void {
    const t = this.now();
    const old = this.files.get(path);
    this.files.set(path, { content, mtimeMs: t, ctimeMs: t, size: Buffer.byteLength(content), dev: 1, ino: old?.ino ?? this.nextIno++ });
  }
  rename(from: string, to: string): void {
    const f = this.files.get(from);
    if (!f) return;
    this.files.delete(from);
    this.files.set(to, { ...f, ctimeMs: this.now() });
  }
  delete(path: string): void {
    this.files.delete(path);
  }
  /** The content behind a disk path, as an upload would stream it. */
  read(diskPath: string): string | undefined {
    const f = this.files.get(diskPath.slice(ROOT.length + 1));
    return f && sha256(f.content);
  }

  async scan(): Promise<ScanResult> {
    const files = new Map<string, LocalFileInfo>();
    for (const [path, f] of this.files) {
      files.set(path, { path, diskPath: `${ROOT}/${path}`, size: f.size, mtimeMs: f.mtimeMs, dev: f.dev, ino: f.ino, ctimeMs: f.ctimeMs });
    }
    return { rootStatus: 'ok', files, skipped: [], unreadableDirs: [] };
  }
  scanScope(): Promise<ScanResult> {
    return this.scan();
  }
  async hash(file: LocalFileInfo): Promise<{ sha256: string; size: number; mtimeMs: number }> {
    const f = this.files.get(file.path);
    if (!f) throw new LocalFileVanishedError(file.path);
    return { sha256: sha256(f.content), size: f.size, mtimeMs: f.mtimeMs };
  }
}

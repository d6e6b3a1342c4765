/**
 * The simulation's folder: an in-memory tree behind the local layer's own seam (`LocalFs`,
 * src/local/fs.ts), so that the REAL local side runs over it — walk, filters, the ignore
 * file, maxFileBytes, the hash with its before/after checks, the upload's identity checks.
 * Chosen over real files for speed (thousands of histories a run) and exact replay; what a
 * real disk adds (inotify, kernel paths of descriptors) is left to the integration tests.
 *
 * Files carry what a walk sees: size, mtime (settable back, like `touch -r`), ctime (moves on
 * every change and cannot be set back), dev and inode (kept by in-place writes and renames).
 */
import { createHash } from 'node:crypto';
import { readSmallFile, type FolderListing, type FolderWatcher, type FsDirent, type FsFileHandle, type FsStats, type LocalFs } from '../../src/local/fs.js';
import { listFolderOf } from './list-folder.js';

export const ROOT = '/sim/share';

interface FileNode {
  kind: 'file';
  data: Buffer;
  mtimeMs: number;
  ctimeMs: number;
  ino: number;
  unreadable: boolean;
}
interface DirNode {
  kind: 'dir';
  ino: number;
  ctimeMs: number;
}
type Node = FileNode | DirNode;

export function sha256(content: string | Buffer): string {
  return createHash('sha256').update(content).digest('hex');
}

function fsError(code: string, path: string): NodeJS.ErrnoException {
  const e = new Error(`${code}: ${path}`) as NodeJS.ErrnoException;
  e.code = code;
  return e;
}

function parentOf(p: string): string {
  const i = p.lastIndexOf('/');
  return i <= 0 ? '/' : p.slice(0, i);
}

export class FakeLocal implements LocalFs {
  /** Absolute path -> node. */
  private readonly nodes = new Map<string, Node>();
  private nextIno = 1;

  constructor(private readonly now: () => number) {
    this.nodes.set('/', { kind: 'dir', ino: this.nextIno++, ctimeMs: 0 });
    this.nodes.set('/sim', { kind: 'dir', ino: this.nextIno++, ctimeMs: 0 });
    this.nodes.set(ROOT, { kind: 'dir', ino: this.nextIno++, ctimeMs: 0 });
  }

  // ---- what the history does (relative paths) -------------------------------------

  abs(rel: string): string {
    return rel === '' ? ROOT : `${ROOT}/${rel}`;
  }

  file(rel: string): FileNode | undefined {
    const n = this.nodes.get(this.abs(rel));
    return n?.kind === 'file' ? n : undefined;
  }

  isDir(rel: string): boolean {
    return this.nodes.get(this.abs(rel))?.kind === 'dir';
  }

  /** Every file below the root: relative path -> node. */
  files(): Map<string, FileNode> {
    const out = new Map<string, FileNode>();
    for (const [p, n] of this.nodes) if (n.kind === 'file' && p.startsWith(`${ROOT}/`)) out.set(p.slice(ROOT.length + 1), n);
    return out;
  }

  /** Writes a file in place (same inode when it exists), creating its folders. False when a folder is in the way. */
  write(rel: string, content: string | Buffer, mtimeMs?: number): boolean {
    const abs = this.abs(rel);
    if (!this.mkdirs(parentOf(abs))) return false;
    const old = this.nodes.get(abs);
    if (old?.kind === 'dir') return false;
    const t = this.now();
    const data = typeof content === 'string' ? Buffer.from(content) : content;
    if (old) {
      old.data = data;
      old.mtimeMs = mtimeMs ?? t;
      old.ctimeMs = t;
    } else {
      this.nodes.set(abs, { kind: 'file', data, mtimeMs: mtimeMs ?? t, ctimeMs: t, ino: this.nextIno++, unreadable: false });
      this.touchDir(parentOf(abs));
    }
    return true;
  }

  /** `touch -d` / `touch -r`: mtime set to any value; ctime moves on. */
  setMtime(rel: string, mtimeMs: number): void {
    const f = this.file(rel);
    if (!f) return;
    f.mtimeMs = mtimeMs;
    f.ctimeMs = this.now();
  }

  setUnreadable(rel: string, unreadable: boolean): void {
    const f = this.file(rel);
    if (!f) return;
    f.unreadable = unreadable;
    f.ctimeMs = this.now();
  }

  /** rename(2) of a file or a folder (with everything below it); replaces a file at `to`. */
  rename(from: string, to: string): boolean {
    const a = this.abs(from);
    const b = this.abs(to);
    const n = this.nodes.get(a);
    if (!n || a === b || b.startsWith(`${a}/`)) return false;
    const target = this.nodes.get(b);
    if (target && (target.kind === 'dir' || n.kind === 'dir')) {
      // rename(2) replaces an empty folder with a folder; anything else fails.
      if (!(target.kind === 'dir' && n.kind === 'dir' && this.children(b).length === 0)) return false;
    }
    if (!this.mkdirs(parentOf(b))) return false;
    const t = this.now();
    const moved = [...this.nodes].filter(([p]) => p === a || p.startsWith(`${a}/`));
    for (const [p] of moved) this.nodes.delete(p);
    for (const [p, node] of moved) {
      this.nodes.set(b + p.slice(a.length), node);
    }
    n.ctimeMs = t;
    this.touchDir(parentOf(a));
    this.touchDir(parentOf(b));
    return true;
  }

  /** rm -f / rm -rf. */
  remove(rel: string): void {
    const a = this.abs(rel);
    if (a === ROOT) return;
    for (const p of [...this.nodes.keys()]) if (p === a || p.startsWith(`${a}/`)) this.nodes.delete(p);
    this.touchDir(parentOf(a));
  }

  mkdir(rel: string): boolean {
    return this.mkdirs(this.abs(rel));
  }

  private mkdirs(abs: string): boolean {
    const n = this.nodes.get(abs);
    if (n) return n.kind === 'dir';
    if (!this.mkdirs(parentOf(abs))) return false;
    this.nodes.set(abs, { kind: 'dir', ino: this.nextIno++, ctimeMs: this.now() });
    return true;
  }

  private touchDir(abs: string): void {
    const d = this.nodes.get(abs);
    if (d?.kind === 'dir') d.ctimeMs = this.now();
  }

  private children(abs: string): string[] {
    const prefix = abs === '/' ? '/' : `${abs}/`;
    const out: string[] = [];
    for (const p of this.nodes.keys()) {
      if (p !== abs && p.startsWith(prefix) && !p.slice(prefix.length).includes('/')) out.push(p.slice(prefix.length));
    }
    return out.sort();
  }

  // ---- LocalFs ------------------------------------------------------------------------

  private lookup(path: string): Node {
    const n = this.nodes.get(path);
    if (n) return n;
    // A file on the way is ENOTDIR, as on a real disk.
    for (let p = parentOf(path); p !== '/'; p = parentOf(p)) {
      const up = this.nodes.get(p);
      if (up) throw fsError(up.kind === 'file' ? 'ENOTDIR' : 'ENOENT', path);
    }
    throw fsError('ENOENT', path);
  }

  private stats(n: Node): FsStats {
    return {
      isFile: () => n.kind === 'file',
      isDirectory: () => n.kind === 'dir',
      isSymbolicLink: () => false,
      size: n.kind === 'file' ? n.data.length : 4096,
      mtimeMs: n.kind === 'file' ? n.mtimeMs : n.ctimeMs,
      ctimeMs: n.ctimeMs,
      dev: 1,
      ino: n.ino,
    };
  }

  stat = async (path: string): Promise<FsStats> => this.stats(this.lookup(path));
  lstat = async (path: string): Promise<FsStats> => this.stats(this.lookup(path));
  realpath = async (path: string): Promise<string> => {
    this.lookup(path);
    return path;
  };

  /**
   * No folder watch: the simulation hands the runner its watcher events itself (world.ts),
   * so nothing here ever watches; a call would be a test bug, and says so.
   */
  watch(path: string): FolderWatcher {
    throw fsError('ENOSYS', path);
  }

  /** As the production lister answers (test/helpers/list-folder.ts): readdir, then lstat of each file. */
  listFolder(path: string, opts?: { signal?: AbortSignal | undefined }): Promise<FolderListing> {
    return listFolderOf(this, path, opts?.signal);
  }

  readdir = async (path: string): Promise<FsDirent[]> => {
    const n = this.lookup(path);
    if (n.kind !== 'dir') throw fsError('ENOTDIR', path);
    return this.children(path).map((name) => {
      const c = this.nodes.get(`${path}/${name}`)!;
      return { name, isFile: () => c.kind === 'file', isDirectory: () => c.kind === 'dir', isSymbolicLink: () => false };
    });
  };

  readFile = (path: string, opts?: Parameters<LocalFs['readFile']>[1]): Promise<string> => readSmallFile(path, { ...opts, fs: this });

  open = async (path: string): Promise<FsFileHandle> => {
    const n = this.lookup(path);
    if (n.kind === 'file' && n.unreadable) throw fsError('EACCES', path);
    let pos = 0;
    // A descriptor reads its inode, whatever happens to the path meanwhile.
    return {
      read: async (buffer, offset, length, position) => {
        if (n.kind !== 'file') throw fsError('EISDIR', path);
        const at = position ?? pos;
        const bytesRead = Math.max(0, Math.min(length, n.data.length - at));
        n.data.copy(buffer, offset, at, at + bytesRead);
        if (position === null) pos += bytesRead;
        return { bytesRead };
      },
      stat: async () => this.stats(n),
      close: async () => undefined,
    };
  };
}

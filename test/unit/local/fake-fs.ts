/**
 * An in-memory LocalFs for failure cases a real disk cannot produce on demand (tests run
 * as root, so permissions do not block; EIO and stale handles cannot be provoked).
 */
import type { FolderListing, FolderWatcher, ListingProgress, FsDirent, FsFileHandle, FsStats, LocalFs } from '../../../src/local/fs.js';
import { listFolderOf } from '../../helpers/list-folder.js';

type Node = { kind: 'dir' } | { kind: 'file'; content: Buffer; mtimeMs: number } | { kind: 'link'; target: string };

export function fsError(code: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`${code}: fake`), { code });
}

export class FakeFs implements LocalFs {
  readonly nodes = new Map<string, Node>();
  /** path -> errno code thrown by the named call. */
  readonly failures = new Map<string, { op: keyof LocalFs | 'read'; code: string }>();
  private ino = 1;
  private readonly inos = new Map<string, number>();

  dir(path: string): this {
    this.nodes.set(path, { kind: 'dir' });
    return this;
  }
  file(path: string, content: string | Buffer, mtimeMs = 1000): this {
    this.nodes.set(path, { kind: 'file', content: Buffer.from(content), mtimeMs });
    return this;
  }
  fail(path: string, op: keyof LocalFs | 'read', code: string): this {
    this.failures.set(path, { op, code });
    return this;
  }

  private check(path: string, op: keyof LocalFs | 'read'): void {
    const f = this.failures.get(path);
    if (f && f.op === op) throw fsError(f.code);
  }
  private statOf(path: string, node: Node): FsStats {
    let ino = this.inos.get(path);
    if (ino === undefined) this.inos.set(path, (ino = this.ino++));
    return {
      isFile: () => node.kind === 'file',
      isDirectory: () => node.kind === 'dir',
      isSymbolicLink: () => node.kind === 'link',
      size: node.kind === 'file' ? node.content.length : 0,
      mtimeMs: node.kind === 'file' ? node.mtimeMs : 0,
      dev: 1,
      ino,
    };
  }

  async stat(path: string): Promise<FsStats> {
    this.check(path, 'stat');
    const node = this.nodes.get(path);
    if (!node) throw fsError('ENOENT');
    return this.statOf(path, node);
  }
  async lstat(path: string): Promise<FsStats> {
    this.check(path, 'lstat');
    const node = this.nodes.get(path);
    if (!node) throw fsError('ENOENT');
    return this.statOf(path, node);
  }
  /** Folder watches set up (path -> listener): a test fires an event by calling one. */
  readonly watchers = new Map<string, (type: string, name: string | null) => void>();
  watch(path: string, listener: (type: string, filename: string | Buffer | null) => void): FolderWatcher {
    this.watchers.set(path, listener);
    return { close: () => void this.watchers.delete(path), on: () => undefined };
  }
  /** As the production lister answers (test/helpers/list-folder.ts): readdir, then lstat of each file. */
  listFolder(path: string, opts?: { signal?: AbortSignal | undefined; progress?: ListingProgress | undefined }): Promise<FolderListing> {
    return listFolderOf(this, path, opts?.signal, opts?.progress);
  }
  async readdir(path: string): Promise<FsDirent[]> {
    this.check(path, 'readdir');
    const node = this.nodes.get(path);
    if (!node) throw fsError('ENOENT');
    if (node.kind !== 'dir') throw fsError('ENOTDIR');
    const prefix = path.endsWith('/') ? path : `${path}/`;
    const out: FsDirent[] = [];
    for (const [p, n] of this.nodes) {
      if (!p.startsWith(prefix) || p.slice(prefix.length).includes('/') || p === prefix) continue;
      out.push({
        name: p.slice(prefix.length),
        isFile: () => n.kind === 'file',
        isDirectory: () => n.kind === 'dir',
        isSymbolicLink: () => n.kind === 'link',
      });
    }
    return out;
  }
  async realpath(path: string): Promise<string> {
    this.check(path, 'realpath');
    return path;
  }
  async readFile(path: string): Promise<string> {
    this.check(path, 'readFile');
    const node = this.nodes.get(path);
    if (!node || node.kind !== 'file') throw fsError('ENOENT');
    return node.content.toString('utf8');
  }
  async open(path: string): Promise<FsFileHandle> {
    this.check(path, 'open');
    const node = this.nodes.get(path);
    if (!node) throw fsError('ENOENT');
    if (node.kind !== 'file') throw fsError('EISDIR');
    let pos = 0;
    return {
      read: async (buffer, offset, length) => {
        this.check(path, 'read');
        const n = node.content.copy(buffer, offset, pos, Math.min(pos + length, node.content.length));
        pos += n;
        return { bytesRead: n };
      },
      stat: async () => this.statOf(path, node),
      close: async () => undefined,
    };
  }
}

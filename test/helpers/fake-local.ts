/**
 * The one in-memory `LocalFs` (src/local/fs.ts) of the tests (issue 27.4): the simulation's
 * folder and the unit tests' disk. The REAL local side runs over it — walk, filters, the
 * ignore file, maxFileBytes, the hash with its before/after checks, the upload's identity
 * checks. Chosen over real files for speed (thousands of histories a run), exact replay, and
 * the failures a real disk cannot produce on demand (tests run as root, so permissions do
 * not block; EIO and stale handles cannot be provoked): `fail(path, call, errno)`; a hung
 * network mount, as calls that do not settle until the test lets them go: `hang(path, call)`,
 * `held()`, `release(path, call)` (one call held at a time is a listing slow but moving; one
 * never let go, a listing that stopped); shares mounted inside the tree, with a device of their
 * own, taken away and brought back: `mount(path, dev)`, `unmount(path)`. Every call is counted
 * (`calls`, `onCall`): a test's CPU or a slow mount's waiting charged per call. What a real
 * disk adds (inotify, kernel paths of descriptors) is left to the integration tests.
 *
 * Files carry what a walk sees: size, mtime (settable back, like `touch -r`), ctime (moves on
 * every change and cannot be set back), dev and inode (kept by in-place writes and renames).
 * Symbolic links are followed by `stat`, `realpath`, `readdir` and `open` (not with
 * `noFollow`), on the way as at the end, and not by `lstat`.
 *
 * Paths: absolute ones as they are; relative ones (what a history says) below `root`.
 */
import { createHash } from 'node:crypto';
import { posix } from 'node:path';
import { listFolderWith, readSmallFile, type FolderStart, type FolderWatcher, type LocalFs } from '../../src/local/fs.js';
import { startFolderBySteps } from '../../src/local/watch/inotify.js';
import type { FolderListing, ListingProgress } from '../../src/local/folder-listing.js';
import type { FsDirent, FsStats } from '../../src/local/sys-calls.js';

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
interface LinkNode {
  kind: 'link';
  target: string;
  ino: number;
  ctimeMs: number;
}
type Node = FileNode | DirNode | LinkNode;

/** A call of the fake that `fail` can make fail: a `LocalFs` method (an open file's `read` by its path). */
export type FakeCall = keyof LocalFs;

export interface FakeLocalOptions {
  /** The folder relative paths are below; it and its parents exist from the start. Default `/`. */
  root?: string | undefined;
  /** The wall clock of mtimes and ctimes. Default: stopped at 1,000 ms. */
  now?: (() => number) | undefined;
  /**
   * Answer `watch()` with fake folder watches (`watchers`: a test fires an event by calling
   * one). Off by default: the simulation hands the runner its watcher events itself
   * (test/sim/world.ts), so a watch there would be a test bug, and fails with ENOSYS.
   */
  watch?: boolean | undefined;
}

/** How many links one lookup follows before ELOOP, as Linux. */
const MAX_LINKS = 40;
/** The device of everything outside the mounts made by `mount`. */
const ROOT_DEV = 1;

export function sha256(content: string | Buffer): string {
  return createHash('sha256').update(content).digest('hex');
}

/** An errno error as node's fs throws it (the fakes of the local folder and of the state's disk). */
export function fsError(code: string, path: string): NodeJS.ErrnoException {
  const e = new Error(`${code}: ${path}`) as NodeJS.ErrnoException;
  e.code = code;
  return e;
}

export function parentOf(p: string): string {
  const i = p.lastIndexOf('/');
  return i <= 0 ? '/' : p.slice(0, i);
}

export class FakeLocal implements LocalFs {
  /** Absolute path -> node. */
  private readonly nodes = new Map<string, Node>();
  private nextIno = 1;
  private readonly root: string;
  private readonly now: () => number;
  private readonly watchable: boolean;
  /** `${call} ${path}` -> the errno that call of that path throws (`fail`). */
  private readonly failures = new Map<string, string>();
  /** `${call} ${path}` -> the calls of it waiting, held by `hang` until `release`. */
  private readonly hangs = new Map<string, (() => void)[]>();
  /** Mount point (absolute) -> its device; the deepest one holding a path decides. */
  private readonly mounts = new Map<string, number>();
  /** Mount point -> what `unmount` took away from below it, brought back by `mount`. */
  private readonly unmounted = new Map<string, [string, Node][]>();
  /** Folder watches set up (path -> listener), when the fake was made with `watch: true`. */
  readonly watchers = new Map<string, (type: string, filename: string | null) => void>();
  /** Their 'error' listeners (path -> listener): a test fails a watch by calling one. */
  readonly watchErrors = new Map<string, (err: Error) => void>();
  /** Calls made so far (every `LocalFs` method and every read; held ones included). */
  calls = 0;
  /** Called at every call as it is made (a test charges its cost: CPU, a slow mount's wait). */
  onCall: (() => void) | undefined;

  constructor(opts: FakeLocalOptions = {}) {
    this.root = opts.root ?? '/';
    this.now = opts.now ?? (() => 1000);
    this.watchable = opts.watch === true;
    // '/', then the root's folders down to it: there from the start (ctime 0).
    const parts = this.root.split('/').filter((part) => part !== '');
    for (let i = 0; i <= parts.length; i++) this.nodes.set(`/${parts.slice(0, i).join('/')}`, { kind: 'dir', ino: this.nextIno++, ctimeMs: 0 });
  }

  // ---- set-up, chained (a unit test's tree); each throws when the tree is in the way ----

  dir(path: string): this {
    if (!this.mkdir(path)) throw new Error(`FakeLocal: cannot make the folder ${path}`);
    return this;
  }

  file(path: string, content: string | Buffer, mtimeMs?: number): this {
    if (!this.write(path, content, mtimeMs)) throw new Error(`FakeLocal: cannot write the file ${path}`);
    return this;
  }

  /** A symbolic link to `target` (relative to the link's folder, or absolute); it need not exist. */
  link(path: string, target: string): this {
    const abs = this.abs(path);
    if (this.nodes.has(abs) || !this.mkdirs(parentOf(abs))) throw new Error(`FakeLocal: cannot make the link ${path}`);
    this.nodes.set(abs, { kind: 'link', target, ino: this.nextIno++, ctimeMs: this.now() });
    this.touchDir(parentOf(abs));
    return this;
  }

  /** From now on, `call` of exactly `path` (as the caller names it) throws errno `code`. */
  fail(path: string, call: FakeCall, code: string): this {
    this.failures.set(`${call} ${this.abs(path)}`, code);
    return this;
  }

  /** `fail` undone: `call` of `path` answers again. */
  heal(path: string, call: FakeCall): this {
    this.failures.delete(`${call} ${this.abs(path)}`);
    return this;
  }

  /** From now on, `call` of exactly `path` does not settle until `release(path, call)`. */
  hang(path: string, call: FakeCall): this {
    const key = `${call} ${this.abs(path)}`;
    if (!this.hangs.has(key)) this.hangs.set(key, []);
    return this;
  }

  /** The calls waiting on a `hang` now, oldest first. */
  held(): { path: string; call: FakeCall }[] {
    const out: { path: string; call: FakeCall }[] = [];
    for (const [key, waiting] of this.hangs) {
      const at = key.indexOf(' ');
      for (let i = 0; i < waiting.length; i++) out.push({ call: key.slice(0, at) as FakeCall, path: key.slice(at + 1) });
    }
    return out;
  }

  /** Ends a `hang`: the calls it held go on now (against the tree as it is now), later ones at once. */
  release(path: string, call: FakeCall): void {
    const key = `${call} ${this.abs(path)}`;
    const waiting = this.hangs.get(key) ?? [];
    this.hangs.delete(key);
    for (const go of waiting) go();
  }

  /**
   * The folder at `path` becomes the root of a filesystem of device `dev` (itself and all below
   * it, down to a deeper mount). After an `unmount` of it, what was there comes back as it was
   * (same inodes); the mount point must then be empty.
   */
  mount(path: string, dev: number): this {
    const abs = this.abs(path);
    if (!this.isDir(abs)) throw new Error(`FakeLocal: cannot mount on ${path}: not a folder`);
    const away = this.unmounted.get(abs);
    if (away) {
      if (this.children(abs).length > 0) throw new Error(`FakeLocal: cannot mount on ${path}: the mount point is not empty`);
      for (const [p, n] of away) this.nodes.set(p, n);
      this.unmounted.delete(abs);
    }
    this.mounts.set(abs, dev);
    return this;
  }

  /**
   * The share at `path` goes away (a network mount dropped): what is left is an empty folder
   * of the filesystem around it (its device, an inode of its own); `mount` brings it back.
   */
  unmount(path: string): this {
    const abs = this.abs(path);
    if (!this.mounts.delete(abs)) throw new Error(`FakeLocal: ${path} is not mounted`);
    this.unmounted.set(abs, [...this.nodes].filter(([p]) => p === abs || p.startsWith(`${abs}/`)));
    for (const [p] of this.unmounted.get(abs)!) this.nodes.delete(p);
    this.nodes.set(abs, { kind: 'dir', ino: this.nextIno++, ctimeMs: this.now() });
    return this;
  }

  // ---- what a history does ----------------------------------------------------------------

  abs(path: string): string {
    if (path.startsWith('/')) return path;
    if (path === '') return this.root;
    return this.root === '/' ? `/${path}` : `${this.root}/${path}`;
  }

  fileAt(path: string): FileNode | undefined {
    const n = this.nodes.get(this.abs(path));
    return n?.kind === 'file' ? n : undefined;
  }

  isDir(path: string): boolean {
    return this.nodes.get(this.abs(path))?.kind === 'dir';
  }

  /** Every file below the root: relative path -> node. */
  files(): Map<string, FileNode> {
    const prefix = this.root === '/' ? '/' : `${this.root}/`;
    const out = new Map<string, FileNode>();
    for (const [p, n] of this.nodes) if (n.kind === 'file' && p.startsWith(prefix)) out.set(p.slice(prefix.length), n);
    return out;
  }

  /** Writes a file in place (same inode when it exists), creating its folders. False when a folder or a link is in the way. */
  write(path: string, content: string | Buffer, mtimeMs?: number): boolean {
    const abs = this.abs(path);
    if (!this.mkdirs(parentOf(abs))) return false;
    const old = this.nodes.get(abs);
    if (old && old.kind !== 'file') return false;
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
  setMtime(path: string, mtimeMs: number): void {
    const f = this.fileAt(path);
    if (!f) return;
    f.mtimeMs = mtimeMs;
    f.ctimeMs = this.now();
  }

  setUnreadable(path: string, unreadable: boolean): void {
    const f = this.fileAt(path);
    if (!f) return;
    f.unreadable = unreadable;
    f.ctimeMs = this.now();
  }

  /** rename(2) of a file, a link or a folder (with everything below it); replaces a file at `to`. */
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

  /** rm -f / rm -rf (never the root itself). */
  remove(path: string): void {
    const a = this.abs(path);
    if (a === this.root) return;
    for (const p of [...this.nodes.keys()]) if (p === a || p.startsWith(`${a}/`)) this.nodes.delete(p);
    this.touchDir(parentOf(a));
  }

  mkdir(path: string): boolean {
    return this.mkdirs(this.abs(path));
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

  /** Counts a call as it is made; a promise when a `hang` holds it. */
  private enter(path: string, call: FakeCall): Promise<void> | undefined {
    this.calls++;
    this.onCall?.();
    const waiting = this.hangs.get(`${call} ${path}`);
    return waiting && new Promise<void>((go) => waiting.push(go));
  }

  private check(path: string, call: FakeCall): void {
    const code = this.failures.get(`${call} ${path}`);
    if (code !== undefined) throw fsError(code, path);
  }

  /** Where `path` really is: the links on its way followed, and the last one too with `follow`. */
  private resolve(path: string, follow: boolean, links = 0): string {
    if (links > MAX_LINKS) throw fsError('ELOOP', path);
    const n = this.nodes.get(path);
    if (n) return follow && n.kind === 'link' ? this.resolve(posix.resolve(parentOf(path), n.target), true, links + 1) : path;
    // A file on the way is ENOTDIR, as on a real disk; a link on the way is followed.
    for (let p = parentOf(path); p !== '/'; p = parentOf(p)) {
      const up = this.nodes.get(p);
      if (up?.kind === 'link') return this.resolve(posix.join(this.resolve(p, true, links + 1), path.slice(p.length)), follow, links + 1);
      if (up) throw fsError(up.kind === 'file' ? 'ENOTDIR' : 'ENOENT', path);
    }
    throw fsError('ENOENT', path);
  }

  /** The device of a resolved path: the deepest mount holding it. */
  private devAt(real: string): number {
    let dev = ROOT_DEV;
    let depth = -1;
    for (const [m, d] of this.mounts) if ((real === m || real.startsWith(`${m}/`)) && m.length > depth) [dev, depth] = [d, m.length];
    return dev;
  }

  private stats(n: Node, dev: number): FsStats {
    return {
      isFile: () => n.kind === 'file',
      isDirectory: () => n.kind === 'dir',
      isSymbolicLink: () => n.kind === 'link',
      size: n.kind === 'file' ? n.data.length : n.kind === 'link' ? Buffer.byteLength(n.target) : 4096,
      mtimeMs: n.kind === 'file' ? n.mtimeMs : n.ctimeMs,
      ctimeMs: n.ctimeMs,
      dev,
      ino: n.ino,
    };
  }

  stat = async (path: string): Promise<FsStats> => {
    const held = this.enter(path, 'stat');
    if (held) await held;
    this.check(path, 'stat');
    const real = this.resolve(path, true);
    return this.stats(this.nodes.get(real)!, this.devAt(real));
  };
  lstat = async (path: string): Promise<FsStats> => {
    const held = this.enter(path, 'lstat');
    if (held) await held;
    this.check(path, 'lstat');
    const real = this.resolve(path, false);
    return this.stats(this.nodes.get(real)!, this.devAt(real));
  };
  realpath = async (path: string): Promise<string> => {
    const held = this.enter(path, 'realpath');
    if (held) await held;
    this.check(path, 'realpath');
    return this.resolve(path, true);
  };

  watchFolder(path: string, listener: (this: FolderWatcher, type: string, filename: string | Buffer | null) => void): Promise<FolderStart | undefined> {
    return startFolderBySteps(this, path, listener);
  }

  watch(path: string, listener: (this: FolderWatcher, type: string, filename: string | Buffer | null) => void): FolderWatcher {
    if (!this.watchable) throw fsError('ENOSYS', path);
    if (this.enter(path, 'watch')) throw new Error('FakeLocal: watch() is synchronous and cannot hang');
    this.check(path, 'watch');
    const watch: FolderWatcher = {
      close: () => {
        this.watchers.delete(path);
        this.watchErrors.delete(path);
      },
      on: (_event, onError) => this.watchErrors.set(path, (err) => onError.call(watch, err)),
    };
    // Called with the watch as `this`, as Node's fs.watch calls its listeners.
    this.watchers.set(path, (type, filename) => listener.call(watch, type, filename));
    return watch;
  }

  /** By the production lister's steps (src/local/list-steps.ts), made with this fake's calls. */
  listFolder(path: string, opts?: { noFollow?: boolean; signal?: AbortSignal | undefined; progress?: ListingProgress | undefined }): Promise<FolderListing> {
    const held = this.enter(path, 'listFolder');
    return held ? held.then(() => this.listNow(path, opts)) : this.listNow(path, opts);
  }

  private listNow(path: string, opts?: { noFollow?: boolean; signal?: AbortSignal | undefined; progress?: ListingProgress | undefined }): Promise<FolderListing> {
    try {
      this.check(path, 'listFolder');
    } catch (e) {
      return Promise.reject(e);
    }
    return listFolderWith(this, path, opts);
  }

  readdir = async (path: string): Promise<FsDirent[]> => {
    const held = this.enter(path, 'readdir');
    if (held) await held;
    this.check(path, 'readdir');
    const real = this.resolve(path, true);
    if (this.nodes.get(real)!.kind !== 'dir') throw fsError('ENOTDIR', path);
    return this.children(real).map((name) => {
      const c = this.nodes.get(real === '/' ? `/${name}` : `${real}/${name}`)!;
      return { name, isFile: () => c.kind === 'file', isDirectory: () => c.kind === 'dir', isSymbolicLink: () => c.kind === 'link' };
    });
  };

  readFile = (path: string, opts?: Parameters<LocalFs['readFile']>[1]): Promise<string> => {
    const held = this.enter(path, 'readFile');
    return held ? held.then(() => this.readNow(path, opts)) : this.readNow(path, opts);
  };

  private readNow(path: string, opts?: Parameters<LocalFs['readFile']>[1]): Promise<string> {
    try {
      this.check(path, 'readFile');
    } catch (e) {
      return Promise.reject(e);
    }
    return readSmallFile(path, { ...opts, fs: this });
  }

  /** Open descriptors: a descriptor reads its inode, whatever happens to the path meanwhile. */
  private readonly fds = new Map<number, { path: string; n: Node; dev: number; pos: number }>();
  private lastFd = 2;

  open = async (path: string, opts: { noFollow: boolean; folder: boolean }): Promise<number> => {
    const held = this.enter(path, 'open');
    if (held) await held;
    this.check(path, 'open');
    const real = this.resolve(path, !opts.noFollow);
    const n = this.nodes.get(real)!;
    if (n.kind === 'link') throw fsError('ELOOP', path);
    if (opts.folder && n.kind !== 'dir') throw fsError('ENOTDIR', path);
    if (n.kind === 'file' && n.unreadable) throw fsError('EACCES', path);
    this.fds.set(++this.lastFd, { path, n, dev: this.devAt(real), pos: 0 });
    return this.lastFd;
  };

  read = async (fd: number, buffer: Buffer, offset: number, length: number, position: number | null): Promise<number> => {
    const f = this.fd(fd);
    const held = this.enter(f.path, 'read');
    if (held) await held;
    this.check(f.path, 'read');
    if (f.n.kind !== 'file') throw fsError('EISDIR', f.path);
    const at = position ?? f.pos;
    const bytesRead = Math.max(0, Math.min(length, f.n.data.length - at));
    f.n.data.copy(buffer, offset, at, at + bytesRead);
    if (position === null) f.pos += bytesRead;
    return bytesRead;
  };

  fstat = async (fd: number): Promise<FsStats> => {
    const f = this.fd(fd);
    return this.stats(f.n, f.dev);
  };

  close = async (fd: number): Promise<void> => void this.fds.delete(fd);

  /** No /proc here: the kernel's path of a descriptor is not told. */
  fdPath = async (): Promise<undefined> => undefined;

  private fd(fd: number): { path: string; n: Node; dev: number; pos: number } {
    const f = this.fds.get(fd);
    if (f === undefined) throw fsError('EBADF', `descriptor ${fd}`);
    return f;
  }
}

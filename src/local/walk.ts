/**
 * Walks a mapped folder into a snapshot: relative path -> (disk path, size, mtime). Reads
 * no file content. Runs a bounded number of filesystem calls at once (a 100,000-file tree
 * must not start 100,000 stats), visits folders depth-first so pending work stays small,
 * and never lets one unreadable folder stop the rest.
 *
 * The root's own condition is reported separately (`rootStatus`): a missing, unmounted or
 * unreadable mapped folder is an outage for the engine, never "everything was deleted".
 *
 * Folders are listed through a descriptor (LocalFs.listFolder): opened without
 * following a link when links are not followed, and the kernel's path of the folder opened
 * must be the one expected below the root's real path. A folder swapped for a link to
 * somewhere else while the walk runs is therefore never listed (docs/security.md).
 */
import { isAbsolute, join, relative } from 'node:path';
import PQueue from 'p-queue';
import { errorCode, errorMessage, nodeFs, type LocalFs } from './fs.js';
import { ENTRY_DIR, ENTRY_FILE, ENTRY_LINK, STAT_CTIME, STAT_DEV, STAT_FAILED, STAT_FIELDS, STAT_GONE, STAT_INO, STAT_MTIME, STAT_SIZE, type FolderListing } from './folder-listing.js';
import type { FsStats } from './sys-calls.js';
import type { PathFilter } from './filters.js';
import { LifoQueue } from './lifo-queue.js';
import { diskPathOf, isInside } from './paths.js';
import { nfc } from '../unicode.js';
import type { MutablePathSet } from '../engine/plan.js';

export type RootStatus = 'ok' | 'missing' | 'not-a-directory' | 'unreadable';

export interface LocalFile {
  /** Relative POSIX path, NFC: the file's identity within the mapping. */
  path: string;
  /**
   * Absolute path as on disk (original normalisation), only when it is not join(root, path):
   * a name on the way is stored in another Unicode form (paths.ts diskPathOf).
   */
  diskPath?: string | undefined;
  size: number;
  mtimeMs: number;
  /** Identity of the file the walk saw: the hash and the upload must read this very file. */
  dev?: number | undefined;
  ino?: number | undefined;
  ctimeMs?: number | undefined;
}

export type SkipReason =
  /** Larger than the mapping's maxFileBytes. */
  | 'too-large'
  /** A symbolic link, and followSymlinks is off. */
  | 'symlink'
  /** A symbolic link whose target lies outside the mapped folder (never followed). */
  | 'symlink-outside-root'
  /** A symbolic link leading back into a folder it is inside of. */
  | 'symlink-loop'
  /** A symbolic link whose target does not exist. */
  | 'symlink-broken'
  /** A FIFO, socket or device: reading it could block or never end. */
  | 'not-a-regular-file'
  /** Another entry has the same name once both are NFC-normalised; the other one is kept. */
  | 'name-collision'
  /** The name is not valid UTF-8: Node decodes it lossily, so the file cannot be opened by it. */
  | 'name-not-utf8';

export interface SkippedEntry {
  /** Relative path (for a name collision: the path both entries normalise to). */
  path: string;
  reason: SkipReason;
  size?: number;
  /** For a name collision: the entry left out, as on disk. */
  diskPath?: string;
}

export interface WalkError {
  /** Relative path ('' = the root). */
  path: string;
  /** 'dir': the folder could not be listed, so nothing is known about what lies below it. */
  kind: 'dir' | 'file';
  code: string;
  message: string;
}

export interface WalkResult {
  rootStatus: RootStatus;
  /** Why the root is not 'ok'. */
  rootError?: { code: string; message: string } | undefined;
  files: Map<string, LocalFile>;
  errors: WalkError[];
  skipped: SkippedEntry[];
  /** Folders listed below the root. */
  dirCount: number;
  /**
   * Files the caller's `vouch` answered true for: left out of `files` (their stat is the
   * caller's already), each at the disk path `join(root, path)`.
   */
  vouched: MutablePathSet;
}

/**
 * Listings asked of the folder lister at once. Enough to keep its workers busy (a folder's
 * answer comes back while others wait in the worker's queue): 4 and 8 walk 300,000 files as
 * fast as 32, 2 does not. Not more: the answers that come back together are handled in one
 * turn of the event loop, and a restart's listing of the service waits behind that turn for
 * each page (measured at a million files: 32 in flight, 29 ms a page while the walk ran;
 * 8, 25.5 ms; docs/performance.md, "Session 25").
 */
export const WALK_CONCURRENCY = 8;

export interface WalkOptions {
  /** Files larger than this are skipped ('too-large'). Default: no limit. */
  maxFileBytes?: number | undefined;
  /** Follow symbolic links whose target lies inside the root. Default false. */
  followSymlinks?: boolean | undefined;
  /**
   * Folders (and links) looked at at once: the listings asked of the folder lister at once.
   * Default WALK_CONCURRENCY.
   */
  concurrency?: number | undefined;
  fs?: LocalFs | undefined;
  signal?: AbortSignal | undefined;
  /**
   * Walk only these folders (relative NFC paths, with everything below them) instead of
   * the whole tree: an incremental look after watcher events. Paths stay relative to the
   * root; a folder that does not exist (any more) contributes nothing.
   */
  subtrees?: readonly string[] | undefined;
  /**
   * Asked of each file whose disk path is `join(root, path)` (its names already NFC): true
   * when the caller already knows this very stat (the state's entry, the quick check
   * passing). The walk then keeps the path in `vouched` instead of a record: a restart over a
   * million unchanged files holds the state's marks (a byte an entry) instead of a million
   * records. Not asked in a walk of `subtrees`.
   */
  vouch?: ((path: string, stat: WalkStat) => boolean) | undefined;
  /** Where the vouched paths are kept (WalkResult.vouched): every one `vouch` answered true for. Default a new Set. */
  vouched?: MutablePathSet | undefined;
}

/**
 * The numbers of a file's `lstat` that `vouch` is given. The walk hands the same object to
 * every call, filled anew (no allocation per file): read it during the call, keep none of it.
 */
export interface WalkStat {
  readonly size: number;
  readonly mtimeMs: number;
  readonly ctimeMs: number | undefined;
  readonly dev: number;
  readonly ino: number;
}

/** A folder to list, with the real paths of the folders above it when links are followed. */
interface DirTask {
  rel: string;
  disk: string;
  /** Real path this folder must have (below the root's real path). */
  real?: string;
  /** Real paths of the folders on the way here, for loop detection. */
  chain?: Chain;
  /** `disk` is `join(root, rel)`: every name on the way is NFC already. */
  exact?: boolean;
}
interface Chain {
  real: string;
  up?: Chain | undefined;
}

export async function walkTree(root: string, filter: PathFilter, opts: WalkOptions = {}): Promise<WalkResult> {
  const fs = opts.fs ?? nodeFs;
  const result: WalkResult = { rootStatus: 'ok', files: new Map(), errors: [], skipped: [], dirCount: 0, vouched: opts.vouched ?? new Set() };
  const rootCheck = await checkRoot(fs, root);
  if (rootCheck.status !== 'ok') return { ...result, rootStatus: rootCheck.status, rootError: rootCheck.error };
  let rootReal: string;
  try {
    rootReal = await fs.realpath(root);
  } catch (e) {
    return { ...result, rootStatus: 'unreadable', rootError: { code: errorCode(e), message: errorMessage(e) } };
  }
  const walk = new Walk(root, rootReal, filter, fs, opts, result);
  await walk.run();
  if (walk.rootReadError) {
    const status: RootStatus = walk.rootReadError.code === 'ENOENT' ? 'missing' : 'unreadable';
    return { ...result, files: new Map(), vouched: new Set(), rootStatus: status, rootError: walk.rootReadError };
  }
  // The drive may have gone while we walked (an unmount turns folders into ENOENT): then
  // the snapshot is incomplete and must not be taken for the truth.
  const after = await checkRoot(fs, root);
  if (after.status !== 'ok') return { ...result, files: new Map(), vouched: new Set(), rootStatus: after.status, rootError: after.error };
  const byPath = (a: { path: string }, b: { path: string }): number => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0);
  result.skipped.sort(byPath);
  result.errors.sort(byPath);
  return result;
}

/** One walk's steps: the folders listed (a queue of tasks), their entries sorted into the result. */
class Walk {
  private readonly maxFileBytes: number;
  private readonly follow: boolean;
  private readonly vouch: WalkOptions['vouch'];
  /** Last in, first out: the walk goes deep before wide and the tasks waiting stay few. */
  private readonly queue: PQueue;
  /** The first task that threw (or the abort): the walk stops and rejects with it. */
  private failure: { error: unknown } | undefined;
  /** What `vouch` is given, filled anew for each file (WalkStat). */
  private readonly vstat = { size: 0, mtimeMs: 0, ctimeMs: undefined as number | undefined, dev: 0, ino: 0 };
  /** The root could not be listed. */
  rootReadError: { code: string; message: string } | undefined;

  constructor(
    private readonly root: string,
    private readonly rootReal: string,
    private readonly filter: PathFilter,
    private readonly fs: LocalFs,
    private readonly opts: WalkOptions,
    private readonly result: WalkResult,
  ) {
    this.maxFileBytes = opts.maxFileBytes ?? Infinity;
    this.follow = opts.followSymlinks === true;
    this.vouch = opts.subtrees === undefined ? opts.vouch : undefined;
    this.queue = new PQueue({ concurrency: Math.max(1, opts.concurrency ?? WALK_CONCURRENCY), queueClass: LifoQueue });
  }

  /** The whole tree, or the subtrees asked for; rejects with the first task's failure. */
  async run(): Promise<void> {
    if (this.opts.subtrees === undefined) this.spawn(() => this.listDir(this.rootTask()));
    else for (const rel of this.opts.subtrees) this.spawn(() => this.walkSubtree(rel));
    await this.queue.onIdle();
    if (this.failure) throw this.failure.error;
  }

  private spawn(task: () => Promise<void>): void {
    if (this.failure) return;
    this.queue
      .add(async () => {
        if (this.failure) return;
        this.opts.signal?.throwIfAborted();
        await task();
      })
      .catch((error: unknown) => {
        if (this.failure) return;
        this.failure = { error };
        this.queue.clear();
      });
  }

  private rootTask(): DirTask {
    return { rel: '', disk: this.root, real: this.rootReal, chain: this.follow ? { real: this.rootReal } : undefined, exact: true };
  }

  private async walkSubtree(rel: string): Promise<void> {
    if (rel === '') return this.listDir(this.rootTask());
    if (!this.filter.includes(rel, true)) return;
    const disk = await resolveDiskPath(this.fs, this.root, rel);
    if (disk === undefined) return;
    if (this.follow) {
      let real: string;
      try {
        real = await this.fs.realpath(disk);
      } catch {
        return;
      }
      if (!isInside(this.rootReal, real)) return;
      return this.listDir({ rel, disk, real, chain: { real } });
    }
    // Without links followed, a subtree reached through a link is not ours to walk
    // (listFolder checks it again on the descriptor).
    try {
      if (!(await this.fs.lstat(disk)).isDirectory()) return;
    } catch {
      return;
    }
    const below = relative(this.root, disk);
    return this.listDir({ rel, disk, real: below.startsWith('..') || isAbsolute(below) ? undefined : join(this.rootReal, below) });
  }

  // Name collisions are settled by disk path so the winner does not depend on timing. A
  // vouched file is the NFC-named one, at join(root, path); its size is not kept.
  private addFile(file: LocalFile, vouched: boolean): void {
    const { result } = this;
    const existing: Pick<LocalFile, 'path' | 'diskPath'> & { size?: number } | undefined =
      result.files.get(file.path) ?? (result.vouched.has(file.path) ? { path: file.path } : undefined);
    if (!existing) {
      if (vouched) result.vouched.add(file.path);
      else result.files.set(file.path, file);
      return;
    }
    const existingDisk = diskPathOf(this.root, existing);
    const disk = diskPathOf(this.root, file);
    if (existingDisk <= disk) {
      result.skipped.push({ path: file.path, reason: 'name-collision', size: file.size, diskPath: disk });
      return;
    }
    result.vouched.delete(file.path);
    result.files.set(file.path, file);
    result.skipped.push({ path: existing.path, reason: 'name-collision', size: existing.size, diskPath: existingDisk });
  }

  /** A regular file named `name` in the folder whose disk path and a "/" are `diskPrefix` (its path `rel`, NFC), with its lstat's numbers. */
  private considerFile(rel: string, diskPrefix: string, name: string, exact: boolean, size: number, mtimeMs: number, ctimeMs: number | undefined, dev: number, ino: number): void {
    const { result, vouch, vstat } = this;
    if (size > this.maxFileBytes) {
      result.skipped.push({ path: rel, reason: 'too-large', size });
      return;
    }
    let vouched = false;
    if (exact && vouch !== undefined) {
      vstat.size = size;
      vstat.mtimeMs = mtimeMs;
      vstat.ctimeMs = ctimeMs;
      vstat.dev = dev;
      vstat.ino = ino;
      vouched = vouch(rel, vstat);
      // The usual case, a million times at a restart: only the path is kept, no record made.
      // An empty map is not asked: V8 internalizes a string a Map is asked for (a look in its string table).
      if (vouched && (result.files.size === 0 || !result.files.has(rel))) {
        const before = result.vouched.size;
        // One lookup, not two: a path vouched for already (another name of the same NFC form) is kept as a file.
        result.vouched.add(rel);
        if (result.vouched.size > before) return;
      }
    }
    // An exact file lies at join(root, rel): its disk path is not kept (paths.ts diskPathOf).
    this.addFile({ path: rel, diskPath: exact ? undefined : diskPrefix + name, size, mtimeMs, dev, ino, ctimeMs }, vouched);
  }

  private async listDir(dir: DirTask): Promise<void> {
    let listing: FolderListing;
    try {
      listing = await this.listFolder(dir);
    } catch (e) {
      this.listFailed(dir, e);
      return;
    }
    if (dir.rel !== '') this.result.dirCount++;
    const { names, types } = listing;
    const { filter, result } = this;
    const prefix = dir.rel === '' ? '' : `${dir.rel}/`;
    // The disk path is join(root, rel) while every name on the way is NFC already.
    const exactDir = dir.exact === true;
    // The files to keep: their entries' indexes (~index when the name is not NFC) and paths.
    const kept: number[] = [];
    const keptRels: string[] = [];
    for (let i = 0; i < names.length; i++) {
      const name = names[i]!;
      const nfcName = nfc(name);
      const rel = prefix + nfcName;
      const type = types[i];
      if (type === ENTRY_FILE) {
        if (filter.includesEntry(rel, false)) {
          kept.push(nfcName === name ? i : ~i);
          keptRels.push(rel);
        }
        continue;
      }
      const exact = exactDir && nfcName === name;
      if (type === ENTRY_DIR) {
        if (filter.includesEntry(rel, true)) {
          const disk = join(dir.disk, name);
          this.spawn(() => this.listDir(this.subdir(dir, rel, disk, name, exact)));
        }
      } else if (type === ENTRY_LINK) {
        if (this.follow) this.spawn(() => this.followLink(dir, rel, name, exact));
        else if (filter.includesEntry(rel, false) || filter.includesEntry(rel, true)) result.skipped.push({ path: rel, reason: 'symlink' });
      } else if (filter.includesEntry(rel, false)) {
        result.skipped.push({ path: rel, reason: 'not-a-regular-file' });
      }
    }
    this.keepFiles(dir, listing, kept, keptRels);
  }

  private listFailed(dir: DirTask, e: unknown): void {
    const code = errorCode(e);
    // Gone, or replaced by a file or (ELOOP) a link since its parent was listed: nothing
    // is there now.
    if (code === 'ENOENT' || code === 'ENOTDIR' || (code === 'ELOOP' && !this.follow)) return this.notUtf8(dir.rel);
    if (code === 'EMOVED') {
      this.result.errors.push({ path: dir.rel, kind: 'dir', code, message: 'the folder was moved or replaced while it was listed; it is looked at again at the next pass' });
      return;
    }
    if (dir.rel === '') {
      this.rootReadError = { code, message: errorMessage(e) };
      return;
    }
    this.result.errors.push({ path: dir.rel, kind: 'dir', code, message: `cannot list the folder: ${errorMessage(e)}` });
  }

  /** The files kept of a listing (`kept`: entry indexes, ~index when the name is not NFC), by their lstat's numbers. */
  private keepFiles(dir: DirTask, listing: FolderListing, kept: readonly number[], keptRels: readonly string[]): void {
    const { names, stats } = listing;
    const exactDir = dir.exact === true;
    // join(dir.disk, name) for each name (one of the folder's entries: no "/", not "." or
    // ".."), without path.join's normalising, which leaves a chain of a string per segment
    // in each file's disk path (~250 bytes a file, held until the pass ends).
    const diskPrefix = join(dir.disk, '/');
    for (let k = 0; k < kept.length; k++) {
      const ki = kept[k]!;
      const i = ki < 0 ? ~ki : ki;
      const rel = keptRels[k]!;
      const o = i * STAT_FIELDS;
      const size = stats[o + STAT_SIZE]!;
      if (size >= 0) {
        const ctime = stats[o + STAT_CTIME]!;
        this.considerFile(rel, diskPrefix, names[i]!, exactDir && ki >= 0, size, stats[o + STAT_MTIME]!, Number.isNaN(ctime) ? undefined : ctime, stats[o + STAT_DEV]!, stats[o + STAT_INO]!);
      } else if (size === STAT_GONE) {
        this.notUtf8(rel); // deleted since listed
      } else if (size === STAT_FAILED) {
        const failure = listing.statErrors?.find((f) => f.index === i);
        const code = failure?.code ?? 'EUNKNOWN';
        const e = Object.assign(new Error(failure?.message ?? 'unknown error'), { code });
        this.result.errors.push({ path: rel, kind: 'file', code, message: `cannot read its size and time: ${errorMessage(e)}` });
      }
      // STAT_OTHER_TYPE: replaced by something else between the listing and the stat: looked
      // at again next pass.
    }
  }

  private subdir(parent: DirTask, rel: string, disk: string, name: string, exact: boolean): DirTask {
    if (parent.real === undefined) return { rel, disk, exact };
    const real = join(parent.real, name);
    return this.follow ? { rel, disk, real, chain: { real, up: parent.chain }, exact } : { rel, disk, real, exact };
  }

  /**
   * The entries of the folder the task names and its files' lstats, listed through its
   * descriptor; the folder opened must really be where the task expects it (EMOVED
   * otherwise: a folder on the way was swapped or moved while the walk ran).
   */
  private async listFolder(dir: DirTask): Promise<FolderListing> {
    // The root may be a link the operator configured; below it, links are not folders.
    const noFollow = !this.follow && dir.rel !== '';
    const listing = await this.fs.listFolder(dir.disk, { noFollow, signal: this.opts.signal });
    if (listing.realPath !== undefined && dir.real !== undefined && listing.realPath !== dir.real) {
      throw Object.assign(new Error(`${dir.disk} is no longer where it was`), { code: 'EMOVED' });
    }
    return listing;
  }

  // A name that is not valid UTF-8 reaches us with U+FFFD in it, and the path built from it
  // does not exist: say so, or the file would silently never be mirrored.
  private notUtf8(rel: string): void {
    if (rel.includes('\uFFFD')) this.result.skipped.push({ path: rel, reason: 'name-not-utf8' });
  }

  private async followLink(dir: DirTask, rel: string, name: string, exact: boolean): Promise<void> {
    const { filter, result } = this;
    const disk = join(dir.disk, name);
    let real: string;
    let st: FsStats;
    try {
      real = await this.fs.realpath(disk);
      st = await this.fs.stat(real);
    } catch (e) {
      const code = errorCode(e);
      if (code === 'ENOENT' || code === 'ENOTDIR') {
        if (filter.includesEntry(rel, false) || filter.includesEntry(rel, true)) result.skipped.push({ path: rel, reason: 'symlink-broken' });
      } else if (code === 'ELOOP') {
        result.skipped.push({ path: rel, reason: 'symlink-loop' });
      } else {
        result.errors.push({ path: rel, kind: 'file', code, message: `cannot follow the link: ${errorMessage(e)}` });
      }
      return;
    }
    const isDir = st.isDirectory();
    if (!filter.includesEntry(rel, isDir)) return;
    if (!isInside(this.rootReal, real)) {
      result.skipped.push({ path: rel, reason: 'symlink-outside-root' });
      return;
    }
    if (isDir) {
      // A loop: the target is a folder we are inside of (really, or along the links taken).
      const here = dir.real ?? this.rootReal;
      let looping = real === here || isInside(real, here);
      for (let c = dir.chain; c && !looping; c = c.up) looping = c.real === real;
      if (looping) {
        result.skipped.push({ path: rel, reason: 'symlink-loop' });
        return;
      }
      this.spawn(() => this.listDir({ rel, disk, real, chain: { real, up: dir.chain }, exact }));
    } else if (st.isFile()) {
      this.considerFile(rel, join(dir.disk, '/'), name, exact, st.size, st.mtimeMs, st.ctimeMs, st.dev, st.ino);
    } else {
      result.skipped.push({ path: rel, reason: 'not-a-regular-file' });
    }
  }
}

/**
 * The on-disk path of a relative NFC path. Names stored in another Unicode form (NFD from
 * macOS clients) are found by listing the parent folder. Undefined when nothing is there.
 */
export async function resolveDiskPath(fs: LocalFs, root: string, rel: string): Promise<string | undefined> {
  const direct = join(root, ...rel.split('/'));
  try {
    await fs.lstat(direct);
    return direct;
  } catch (e) {
    if (errorCode(e) !== 'ENOENT') return undefined;
  }
  let disk = root;
  for (const segment of rel.split('/')) {
    let entries;
    try {
      entries = await fs.readdir(disk);
    } catch {
      return undefined;
    }
    const hit = entries.find((e) => nfc(e.name) === segment);
    if (!hit) return undefined;
    disk = join(disk, hit.name);
  }
  return disk;
}

async function checkRoot(fs: LocalFs, root: string): Promise<{ status: RootStatus; error?: { code: string; message: string } }> {
  try {
    const st = await fs.stat(root);
    if (!st.isDirectory()) return { status: 'not-a-directory', error: { code: 'ENOTDIR', message: `${root} is not a folder` } };
    return { status: 'ok' };
  } catch (e) {
    const code = errorCode(e);
    const error = { code, message: `${root}: ${errorMessage(e)}` };
    if (code === 'ENOENT' || code === 'ENOTDIR') return { status: 'missing', error };
    return { status: 'unreadable', error };
  }
}

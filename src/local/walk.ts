/**
 * Walks a mapped folder into a snapshot: relative path -> (disk path, size, mtime). Reads
 * no file content. Runs a bounded number of filesystem calls at once (a 100,000-file tree
 * must not start 100,000 stats), visits folders depth-first so pending work stays small,
 * and never lets one unreadable folder stop the rest.
 *
 * The root's own condition is reported separately (`rootStatus`): a missing, unmounted or
 * unreadable mapped folder is an outage for the engine, never "everything was deleted".
 *
 * Folders are listed through a descriptor (fs.ts listDir): opened without following a link
 * when links are not followed, and the kernel's path of the folder opened must be the one
 * expected below the root's real path. A folder swapped for a link to somewhere else while
 * the walk runs is therefore never listed (docs/security.md).
 */
import { isAbsolute, join, relative } from 'node:path';
import PQueue from 'p-queue';
import { errorCode, errorMessage, nodeFs, type FsDirent, type FsStats, type LocalFs } from './fs.js';
import type { PathFilter } from './filters.js';
import { LifoQueue } from './lifo-queue.js';
import { isInside, joinRel, nfc } from './paths.js';

export type RootStatus = 'ok' | 'missing' | 'not-a-directory' | 'unreadable';

export interface LocalFile {
  /** Relative POSIX path, NFC: the file's identity within the mapping. */
  path: string;
  /** Absolute path as on disk (original normalisation), for reading. */
  diskPath: string;
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
  vouched: Set<string>;
}

export interface WalkOptions {
  /** Files larger than this are skipped ('too-large'). Default: no limit. */
  maxFileBytes?: number | undefined;
  /** Follow symbolic links whose target lies inside the root. Default false. */
  followSymlinks?: boolean | undefined;
  /**
   * Folders (and links) looked at at once. Default 32. Each stats its files
   * FILE_STATS_PER_FOLDER at a time: at most that many times this in filesystem calls in
   * flight (libuv runs 4 at once; the rest wait in its queue).
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
   * when the caller already knows this very stat (the state's entry, the quick check passing),
   * so that the walk keeps only its path. A restart over a million unchanged files then
   * holds a set of paths instead of a million records. Not asked in a walk of `subtrees`.
   */
  vouch?: ((path: string, stat: FsStats) => boolean) | undefined;
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

/** Files of one folder stat-ed at once by its task. */
export const FILE_STATS_PER_FOLDER = 8;

export async function walkTree(root: string, filter: PathFilter, opts: WalkOptions = {}): Promise<WalkResult> {
  const fs = opts.fs ?? nodeFs;
  const maxFileBytes = opts.maxFileBytes ?? Infinity;
  const follow = opts.followSymlinks === true;
  const result: WalkResult = { rootStatus: 'ok', files: new Map(), errors: [], skipped: [], dirCount: 0, vouched: new Set() };
  const vouch = opts.subtrees === undefined ? opts.vouch : undefined;

  const rootCheck = await checkRoot(fs, root);
  if (rootCheck.status !== 'ok') return { ...result, rootStatus: rootCheck.status, rootError: rootCheck.error };
  let rootReal: string | undefined;
  try {
    rootReal = await fs.realpath(root);
  } catch (e) {
    return { ...result, rootStatus: 'unreadable', rootError: { code: errorCode(e), message: errorMessage(e) } };
  }

  // Last in, first out: the walk goes deep before wide and the tasks waiting stay few.
  const queue = new PQueue({ concurrency: Math.max(1, opts.concurrency ?? 32), queueClass: LifoQueue });
  /** The first task that threw (or the abort): the walk stops and rejects with it. */
  let failure: { error: unknown } | undefined;
  const spawn = (task: () => Promise<void>): void => {
    if (failure) return;
    queue
      .add(async () => {
        if (failure) return;
        opts.signal?.throwIfAborted();
        await task();
      })
      .catch((error: unknown) => {
        if (failure) return;
        failure = { error };
        queue.clear();
      });
  };
  // Name collisions are settled by disk path so the winner does not depend on timing. A
  // vouched file is the NFC-named one, at join(root, path); its size is not kept.
  const addFile = (file: LocalFile, vouched: boolean): void => {
    const existing: Pick<LocalFile, 'path' | 'diskPath'> & { size?: number } | undefined =
      result.files.get(file.path) ?? (result.vouched.has(file.path) ? { path: file.path, diskPath: join(root, file.path) } : undefined);
    if (!existing) {
      if (vouched) result.vouched.add(file.path);
      else result.files.set(file.path, file);
      return;
    }
    if (existing.diskPath <= file.diskPath) {
      result.skipped.push({ path: file.path, reason: 'name-collision', size: file.size, diskPath: file.diskPath });
      return;
    }
    result.vouched.delete(file.path);
    result.files.set(file.path, file);
    result.skipped.push({ path: existing.path, reason: 'name-collision', size: existing.size, diskPath: existing.diskPath });
  };

  const considerFile = (rel: string, disk: string, st: FsStats, exact: boolean): void => {
    if (st.size > maxFileBytes) result.skipped.push({ path: rel, reason: 'too-large', size: st.size });
    else addFile({ path: rel, diskPath: disk, size: st.size, mtimeMs: st.mtimeMs, dev: st.dev, ino: st.ino, ctimeMs: st.ctimeMs }, exact && vouch !== undefined && vouch(rel, st));
  };

  const listDir = async (dir: DirTask): Promise<void> => {
    let entries;
    try {
      entries = await listFolder(dir);
    } catch (e) {
      const code = errorCode(e);
      // Gone, or replaced by a file or (ELOOP) a link since its parent was listed: nothing
      // is there now.
      if (code === 'ENOENT' || code === 'ENOTDIR' || (code === 'ELOOP' && !follow)) return notUtf8(dir.rel);
      if (code === 'EMOVED') {
        result.errors.push({ path: dir.rel, kind: 'dir', code, message: 'the folder was moved or replaced while it was listed; it is looked at again at the next pass' });
        return;
      }
      if (dir.rel === '') {
        rootReadError = { code, message: errorMessage(e) };
        return;
      }
      result.errors.push({ path: dir.rel, kind: 'dir', code, message: `cannot list the folder: ${errorMessage(e)}` });
      return;
    }
    if (dir.rel !== '') result.dirCount++;
    const files: { rel: string; disk: string; exact: boolean }[] = [];
    for (const entry of entries) {
      const rel = joinRel(dir.rel, entry.name);
      const disk = join(dir.disk, entry.name);
      // The disk path is join(root, rel) while every name on the way is NFC already.
      const exact = dir.exact === true && nfc(entry.name) === entry.name;
      if (entry.isDirectory()) {
        if (filter.includesEntry(rel, true)) {
          spawn(() => listDir(subdir(dir, rel, disk, entry.name, exact)));
        }
      } else if (entry.isFile()) {
        if (filter.includesEntry(rel, false)) files.push({ rel, disk, exact });
      } else if (entry.isSymbolicLink()) {
        if (!follow) {
          if (filter.includesEntry(rel, false) || filter.includesEntry(rel, true)) {
            result.skipped.push({ path: rel, reason: 'symlink' });
          }
        } else {
          spawn(() => followLink(dir, rel, disk, exact));
        }
      } else if (filter.includesEntry(rel, false)) {
        result.skipped.push({ path: rel, reason: 'not-a-regular-file' });
      }
    }
    // The folder's files are stat-ed by its own task, FILE_STATS_PER_FOLDER at a time: a
    // queue task per file cost ~3x the lstat itself (a million files: ~25 s of CPU).
    let next = 0;
    const statNext = async (): Promise<void> => {
      while (next < files.length) {
        opts.signal?.throwIfAborted();
        const f = files[next++]!;
        await statFile(f.rel, f.disk, f.exact);
      }
    };
    await Promise.all(Array.from({ length: Math.min(FILE_STATS_PER_FOLDER, files.length) }, statNext));
  };

  const subdir = (parent: DirTask, rel: string, disk: string, name: string, exact: boolean): DirTask => {
    if (parent.real === undefined) return { rel, disk, exact };
    const real = join(parent.real, name);
    return follow ? { rel, disk, real, chain: { real, up: parent.chain }, exact } : { rel, disk, real, exact };
  };

  /**
   * The entries of the folder the task names, listed through its descriptor; the folder
   * opened must really be where the task expects it (EMOVED otherwise: a folder on the way
   * was swapped or moved while the walk ran).
   */
  const listFolder = async (dir: DirTask): Promise<FsDirent[]> => {
    if (!fs.listDir) return fs.readdir(dir.disk);
    // The root may be a link the operator configured; below it, links are not folders.
    const listing = await fs.listDir(dir.disk, { noFollow: !follow && dir.rel !== '' });
    if (listing.realPath !== undefined && dir.real !== undefined && listing.realPath !== dir.real) {
      throw Object.assign(new Error(`${dir.disk} is no longer where it was`), { code: 'EMOVED' });
    }
    return listing.entries;
  };

  // A name that is not valid UTF-8 reaches us with U+FFFD in it, and the path built from it
  // does not exist: say so, or the file would silently never be mirrored.
  const notUtf8 = (rel: string): void => {
    if (rel.includes('\uFFFD')) result.skipped.push({ path: rel, reason: 'name-not-utf8' });
  };

  const statFile = async (rel: string, disk: string, exact: boolean): Promise<void> => {
    let st: FsStats;
    try {
      st = await fs.lstat(disk);
    } catch (e) {
      const code = errorCode(e);
      if (code === 'ENOENT' || code === 'ENOTDIR') return notUtf8(rel); // deleted since listed
      result.errors.push({ path: rel, kind: 'file', code, message: `cannot read its size and time: ${errorMessage(e)}` });
      return;
    }
    // Replaced by something else between the listing and the stat: look again next pass.
    if (st.isFile()) considerFile(rel, disk, st, exact);
  };

  const followLink = async (dir: DirTask, rel: string, disk: string, exact: boolean): Promise<void> => {
    let real: string;
    let st: FsStats;
    try {
      real = await fs.realpath(disk);
      st = await fs.stat(real);
    } catch (e) {
      const code = errorCode(e);
      if (code === 'ENOENT' || code === 'ENOTDIR') {
        if (filter.includesEntry(rel, false) || filter.includesEntry(rel, true)) {
          result.skipped.push({ path: rel, reason: 'symlink-broken' });
        }
      } else if (code === 'ELOOP') {
        result.skipped.push({ path: rel, reason: 'symlink-loop' });
      } else {
        result.errors.push({ path: rel, kind: 'file', code, message: `cannot follow the link: ${errorMessage(e)}` });
      }
      return;
    }
    const isDir = st.isDirectory();
    if (!filter.includesEntry(rel, isDir)) return;
    if (rootReal === undefined || !isInside(rootReal, real)) {
      result.skipped.push({ path: rel, reason: 'symlink-outside-root' });
      return;
    }
    if (isDir) {
      // A loop: the target is a folder we are inside of (really, or along the links taken).
      const here = dir.real ?? rootReal;
      let looping = real === here || isInside(real, here);
      for (let c = dir.chain; c && !looping; c = c.up) looping = c.real === real;
      if (looping) {
        result.skipped.push({ path: rel, reason: 'symlink-loop' });
        return;
      }
      spawn(() => listDir({ rel, disk, real, chain: { real, up: dir.chain }, exact }));
    } else if (st.isFile()) {
      considerFile(rel, disk, st, exact);
    } else {
      result.skipped.push({ path: rel, reason: 'not-a-regular-file' });
    }
  };

  const rootTask = (): DirTask => ({ rel: '', disk: root, real: rootReal, chain: follow && rootReal ? { real: rootReal } : undefined, exact: true });
  let rootReadError: { code: string; message: string } | undefined;
  if (opts.subtrees === undefined) {
    spawn(() => listDir(rootTask()));
  } else {
    for (const rel of opts.subtrees) {
      spawn(async () => {
        if (rel === '') {
          await listDir(rootTask());
          return;
        }
        if (!filter.includes(rel, true)) return;
        const disk = await resolveDiskPath(fs, root, rel);
        if (disk === undefined) return;
        let real: string | undefined;
        if (follow) {
          try {
            real = await fs.realpath(disk);
          } catch {
            return;
          }
          if (rootReal === undefined || !isInside(rootReal, real)) return;
          await listDir({ rel, disk, real, chain: { real } });
        } else {
          // Without links followed, a subtree reached through a link is not ours to walk
          // (listFolder checks it again on the descriptor).
          try {
            if (!(await fs.lstat(disk)).isDirectory()) return;
          } catch {
            return;
          }
          const below = relative(root, disk);
          await listDir({ rel, disk, real: below.startsWith('..') || isAbsolute(below) ? undefined : join(rootReal as string, below) });
        }
      });
    }
  }
  await queue.onIdle();
  if (failure) throw failure.error;

  if (rootReadError) {
    const status: RootStatus = rootReadError.code === 'ENOENT' ? 'missing' : 'unreadable';
    return { ...result, files: new Map(), vouched: new Set(), rootStatus: status, rootError: rootReadError };
  }
  // The drive may have gone while we walked (an unmount turns folders into ENOENT): then
  // the snapshot is incomplete and must not be taken for the truth.
  const after = await checkRoot(fs, root);
  if (after.status !== 'ok') return { ...result, files: new Map(), vouched: new Set(), rootStatus: after.status, rootError: after.error };
  result.skipped.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  result.errors.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return result;
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

async function checkRoot(
  fs: LocalFs,
  root: string,
): Promise<{ status: RootStatus; error?: { code: string; message: string } }> {
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

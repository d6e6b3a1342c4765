/**
 * The only place that opens files of a mapped folder (and the small files dssync reads:
 * ignore files, tokens). Everything else goes through `openRegularFile`, `readSmallFile`
 * or `LocalFs.listFolder`, which hold the rules of docs/security.md:
 *
 * - every open is non-blocking (`O_NONBLOCK`): a FIFO opens at once instead of waiting
 *   for a writer, so neither a libuv thread nor the main thread can be held by one;
 * - the descriptor is `fstat`ed and anything but a regular file (FIFO, socket, device,
 *   folder) is refused (NotRegularFileError) before a byte is read;
 * - a symbolic link as the last component is refused (`O_NOFOLLOW`) unless the mapping
 *   follows links, and the file actually opened must lie beneath the mapped folder: the
 *   kernel's own path of the descriptor (/proc/self/fd/N) is compared with the folder's
 *   real path, so a parent folder swapped for a link is caught whatever the timing;
 * - the file opened must be the one the walk saw (device and inode), when it is known;
 * - small files are read with a size cap (FileTooLargeError names the file).
 *
 * Behind the LocalFs interface so that tests can inject failures (EACCES as root, EIO, a
 * file vanishing between two calls) that a real disk cannot produce on demand.
 */
import { close, constants, fstat, lstat, open, read, readdir, readlink, realpath, stat } from 'node:fs';
import { promisify } from 'node:util';
import { FileChangedError, FileTooLargeError, NotRegularFileError, OutsideFolderError, type SpecialFileKind } from './errors.js';
import { sharedFolderLister } from './folder-lister.js';
import type { FolderListing, ListingProgress } from './folder-listing.js';
import { openCheckedSteps, readSteps, type OpenRequest, type RawRead, type RawStats, type Refusal } from './hash-steps.js';
import { listFolderSteps } from './list-steps.js';
import { joinUnder, relativeUnder } from './paths.js';
import { startFolder, watchFolder, type FolderStart, type FolderWatcher, type WatchListener } from './watch/inotify.js';
import type { OpenedFile as UploadOpenedFile } from '../api/records.js';
import { call, errorCode, runAsync, type AsyncSysCalls, type Steps } from './sys-calls.js';

export { errorCode };

export type { FolderStart, FolderWatcher };

/**
 * The system calls the listing and hashing steps make (sys-calls.ts: `stat` follows links,
 * `lstat` does not, `open` reads without blocking, a file's calls by its descriptor), and:
 */
export interface LocalFs extends AsyncSysCalls {
  /**
   * Opens the folder (`O_DIRECTORY`, and `O_NOFOLLOW` with `noFollow`: a folder swapped
   * for a link fails with ELOOP or ENOTDIR), lists that very folder whatever happens to its
   * path meanwhile, and `lstat`s every file listed, in one call (folder-lister.ts: a worker
   * thread, so that a million files cost the main thread no filesystem call and no Stats
   * object). Opens nothing but the folder. `signal`: the promise rejects with its reason
   * when it aborts, whatever the filesystem does. The fakes answer it with the worker's
   * steps (`listFolderWith`). `progress`: followed while the listing runs, for a deadline
   * on progress rather than on the whole listing (the poller's).
   */
  listFolder(path: string, opts?: { noFollow?: boolean; signal?: AbortSignal | undefined; progress?: ListingProgress | undefined }): Promise<FolderListing>;
  /**
   * A folder's watch (watch/inotify.ts: dssync's own inotify instance, or fs.watch): each
   * event names the entry of the folder it is about, or the folder itself (null, or, from
   * fs.watch, the folder's own name). The listener is called with the watch as `this` (one
   * listener can serve every folder).
   */
  watch(path: string, listener: WatchListener): FolderWatcher;
  /**
   * A folder's start for the watcher's set-up: its identity (lstat; undefined when it is no
   * folder), then its watch (throws the watch's error: ENOSPC at the inotify limit), then its
   * subfolders' names (none when it cannot be listed), in that order. On the native watch,
   * one call with no Dirent made (watch/inotify.ts startFolder); else these steps
   * (startFolderBySteps).
   */
  watchFolder(path: string, listener: WatchListener): Promise<FolderStart | undefined>;
  /** A small text file (the ignore file), with the checks of readSmallFile. */
  readFile(path: string, opts?: SmallFileOptions): Promise<string>;
}

// The callback API, promisified: cheaper per call than fs.promises (a walk makes many).
const lstatP = promisify(lstat);
const statP = promisify(stat);
const readdirP = promisify(readdir);
const realpathP = promisify(realpath);
const readlinkP = promisify(readlink);
const openP = promisify(open);
const fstatP = promisify(fstat);
const closeP = promisify(close);
/** fs.read's callback has two results (bytesRead, buffer): wrapped by hand, not promisified. */
function readP(fd: number, buffer: Buffer, offset: number, length: number, position: number | null): Promise<number> {
  return new Promise((resolve, reject) => {
    read(fd, buffer, offset, length, position, (err, bytesRead) => (err ? reject(err) : resolve(bytesRead)));
  });
}

const { O_RDONLY, O_DIRECTORY, O_NOFOLLOW, O_NONBLOCK, O_NOCTTY } = constants;

/** The kernel's path of an open descriptor, or undefined when /proc does not say. */
async function procPath(fd: number): Promise<string | undefined> {
  try {
    return await readlinkP(`/proc/self/fd/${fd}`);
  } catch {
    return undefined;
  }
}

export const nodeFs: LocalFs = {
  stat: (path) => statP(path),
  lstat: (path) => lstatP(path),
  readdir: (path) => readdirP(path, { withFileTypes: true }),
  listFolder: (path, opts) => sharedFolderLister().list(path, opts),
  watch: watchFolder,
  watchFolder: (path, listener) => startFolder(path, listener, nodeFs),
  realpath: (path) => realpathP(path),
  readFile: (path, opts) => readSmallFile(path, { ...opts, fs: nodeFs }),
  // A bare descriptor and the callback API: cheaper per call than fs.promises' FileHandle.
  open: (path, o) => openP(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | (o.folder ? O_DIRECTORY : 0) | (o.noFollow ? O_NOFOLLOW : 0)),
  fstat: (fd) => fstatP(fd),
  read: readP,
  close: (fd) => closeP(fd),
  fdPath: procPath,
};

/**
 * An open file handed to its caller (the upload), read through `fs` by its descriptor. It is
 * closed once, by close(); a second close is a no-op (never a close of a number the kernel
 * may have handed to another open since), and a call after it is EBADF.
 */
function handleOf(fs: LocalFs, fd: number): OpenedFile['handle'] {
  let open = true;
  return {
    read: async (buffer, offset, length, position) => (open ? { bytesRead: await fs.read(fd, buffer, offset, length, position) } : closedCall('read')),
    stat: () => (open ? fs.fstat(fd) : closedCall('fstat')),
    close: () => {
      if (!open) return Promise.resolve();
      open = false;
      return fs.close(fd);
    },
  };
}

/**
 * A file read whole as it was opened (hash-steps.ts `readSteps`), handed to its caller as an
 * open file: its reads give the bytes the descriptor gave, its stat the descriptor's stats
 * after them, a failed read or stat fails here, so the caller judges them as it would the
 * descriptor's. A call after close() is EBADF.
 */
function readHandle(raw: RawRead): OpenedFile['handle'] {
  const bytes = raw.bytes === undefined ? Buffer.alloc(0) : Buffer.from(raw.bytes.buffer, raw.bytes.byteOffset, raw.bytes.byteLength);
  const failed = (step: 'read' | 'after', syscall: string): Promise<never> | undefined =>
    raw.failed?.step === step ? Promise.reject(Object.assign(new Error(raw.failed.message), { code: raw.failed.code, syscall })) : undefined;
  let open = true;
  let at = 0;
  return {
    read: (buffer, offset, length, position) => {
      if (!open) return closedCall('read');
      const refused = failed('read', 'read');
      if (refused) return refused;
      const from = position ?? at;
      const n = from < bytes.length ? bytes.copy(buffer, offset, from, Math.min(bytes.length, from + length)) : 0;
      at = from + n;
      return Promise.resolve({ bytesRead: n });
    },
    stat: () => (open ? (failed('after', 'fstat') ?? Promise.resolve(raw.afterHandle as RawStats)) : closedCall('fstat')),
    close: () => {
      open = false;
      return Promise.resolve();
    },
  };
}

function closedCall(syscall: string): Promise<never> {
  return Promise.reject(Object.assign(new Error(`${syscall} on a closed file (EBADF)`), { code: 'EBADF', syscall }));
}

/** Where a file must lie: beneath a mapped folder. */
export interface Confinement {
  /** The mapped folder as configured. */
  root: string;
  /** Its real path (links resolved), taken when the pass began. */
  rootReal: string;
  /**
   * Links are not followed: the file must be exactly at rootReal + its path below root (no
   * link anywhere on the way). Otherwise it must only lie somewhere beneath rootReal.
   */
  exact: boolean;
}

/** The confinement of a mapped folder now (its real path resolved once). */
export async function confinementOf(root: string, opts: { followSymlinks: boolean; fs?: LocalFs | undefined }): Promise<Confinement> {
  const fs = opts.fs ?? nodeFs;
  return { root, rootReal: await fs.realpath(root), exact: !opts.followSymlinks };
}

export interface OpenFileOptions {
  fs?: LocalFs | undefined;
  /** Refuse a symbolic link as the last component. */
  noFollow?: boolean | undefined;
  /** Device and inode the walk saw: another file at the path now is a change. */
  expect?: { dev: number; ino: number } | undefined;
  /** The file must lie beneath this folder. */
  within?: Confinement | undefined;
  /**
   * The size the walk or the hash saw: which files the folder lister's worker hashes or reads
   * (byWorker), and which an open reads whole at once (openRegularFile).
   */
  size?: number | undefined;
}

/** Up to this size, a file's steps run in the folder lister's worker: the gain is the calls, not the reading. */
export const WORKER_MAX_BYTES = 1024 * 1024;

/**
 * Up to this size, a file opened with its size is read whole at once: one read of the upload
 * (api/upload.ts reads 256 KiB at a time), so a batch of such files holds no more memory than
 * the whole body the upload builds of them.
 */
export const READ_AT_OPEN_MAX_BYTES = 256 * 1024;

/**
 * Whether a file of `size` is opened, hashed or read by the folder lister's worker, in one
 * message each way: a small file of the real disk on Linux (its /proc). Anything else takes
 * the filesystem's own asynchronous calls, so that one long file does not hold the worker
 * (and the folder listings behind it).
 */
export function byWorker(fs: LocalFs, size: number | undefined): boolean {
  return fs === nodeFs && process.platform === 'linux' && size !== undefined && size <= WORKER_MAX_BYTES;
}

/** An opened, checked file (the upload's port, api/records.ts), with the facts of its open. */
export interface OpenedFile extends UploadOpenedFile {
  stat: RawStats;
}

/**
 * Opens a regular file for reading, with every check of the module comment (hash-steps.ts
 * `openCheckedSteps`, the steps the hash runs). Throws the errno error of the open itself
 * (ENOENT, EACCES, ELOOP...), NotRegularFileError, OutsideFolderError, or FileChangedError
 * (another file than the one expected). A file of at most READ_AT_OPEN_MAX_BYTES (`o.size`)
 * is read whole at once (`readSteps`: the same calls, one message to the worker on the real
 * disk), the others read from their descriptor as the caller asks.
 */
export async function openRegularFile(path: string, o: OpenFileOptions = {}): Promise<OpenedFile> {
  const fs = o.fs ?? nodeFs;
  const req = openRequest(path, o);
  if (o.size !== undefined && o.size <= READ_AT_OPEN_MAX_BYTES) {
    const raw = byWorker(fs, o.size) ? await sharedFolderLister().read(req) : await runAsync(readSteps(req), fs);
    if (raw.refused !== undefined) throw refusedError(path, raw.refused, raw.before, o.within);
    return { path, handle: readHandle(raw), stat: raw.before };
  }
  const opened = await runAsync(openCheckedSteps(req), fs);
  if (opened.refused !== undefined) throw refusedError(path, opened.refused, opened.before, o.within);
  return { path, handle: handleOf(fs, opened.fd), stat: opened.before };
}

/**
 * A file whose hash kept its bytes (hash-steps.ts HashRequest.keep), handed to the upload as
 * an open file without opening it again: its reads give those bytes, its stat the stats the
 * hash proved unchanged while it read them (`file`, the record of that hash).
 */
export function keptFile(path: string, file: { size: number; mtimeMs: number; ctimeMs?: number | undefined; dev?: number | undefined; ino?: number | undefined }, bytes: Uint8Array): OpenedFile {
  const stat: RawStats = { size: file.size, mtimeMs: file.mtimeMs, ctimeMs: file.ctimeMs, dev: file.dev ?? 0, ino: file.ino ?? 0, kind: 'file' };
  return { path, handle: readHandle({ before: stat, bytes, afterHandle: stat }), stat };
}

/** What the steps need of a file's open (hash-steps.ts). */
export function openRequest(path: string, o: OpenFileOptions): OpenRequest {
  const c = o.within;
  return {
    path,
    noFollow: o.noFollow === true,
    expect: o.expect,
    within: c === undefined ? undefined : { exact: c.exact, expected: c.exact ? expectedRealPath(c, path) : undefined, rootReal: c.rootReal },
  };
}

/** The typed error of a file the steps would not read. */
export function refusedError(path: string, refused: Refusal, before: RawStats, within: Confinement | undefined): Error {
  switch (refused) {
    case 'special':
      return new NotRegularFileError(path, before.kind as SpecialFileKind);
    case 'replaced':
      return new FileChangedError(path, 'it was replaced by another file');
    case 'outside':
      return outsideFolder(path, within as Confinement);
    case 'grew':
      return new FileChangedError(path, `it grew beyond ${before.size} bytes while read`);
  }
}

/**
 * `LocalFs.listFolder` made with a LocalFs's own calls, by the worker's steps (list-steps.ts):
 * how the fakes list. `progress` moves after each call.
 */
export async function listFolderWith(fs: LocalFs, path: string, opts?: { noFollow?: boolean; signal?: AbortSignal | undefined; progress?: ListingProgress | undefined }): Promise<FolderListing> {
  opts?.signal?.throwIfAborted();
  let moved = 0;
  opts?.progress?.follow(() => moved);
  return runAsync(listFolderSteps(path, opts?.noFollow === true), fs, { after: () => void moved++ });
}

/** The refusal of a file whose kernel path is not where the confinement says. */
export function outsideFolder(path: string, c: Confinement): OutsideFolderError {
  return new OutsideFolderError(path, c.root, c.exact ? 'a folder on its way is not where the walk saw it' : 'it resolves to a place outside the folder');
}

/** rootReal + the path of `path` below root; undefined when `path` is not below root. */
export function expectedRealPath(c: Confinement, path: string): string | undefined {
  const rel = relativeUnder(c.root, path);
  return rel === undefined ? undefined : joinUnder(c.rootReal, rel);
}

export interface SmallFileOptions {
  /** Default 1 MiB. */
  maxBytes?: number | undefined;
  /** What the file is, for the message ("the ignore file"). Default "the file". */
  what?: string | undefined;
  noFollow?: boolean | undefined;
  within?: Confinement | undefined;
  fs?: LocalFs | undefined;
}

export const DEFAULT_SMALL_FILE_BYTES = 1024 * 1024;

/**
 * Reads a small UTF-8 file (ignore file, token, password) without blocking and within a
 * size cap: a FIFO, device or folder is NotRegularFileError, a file over the cap (or one
 * that grows past it while read) FileTooLargeError naming it.
 */
export function readSmallFile(path: string, o: SmallFileOptions = {}): Promise<string> {
  return runAsync(readSmallSteps(path, o), o.fs ?? nodeFs);
}

function* readSmallSteps(path: string, o: SmallFileOptions): Steps<string> {
  const max = o.maxBytes ?? DEFAULT_SMALL_FILE_BYTES;
  const what = o.what ?? 'the file';
  const opened = yield* openCheckedSteps(openRequest(path, o));
  if (opened.refused !== undefined) throw refusedError(path, opened.refused, opened.before, o.within);
  try {
    if (opened.before.size > max) throw new FileTooLargeError(path, opened.before.size, max, what);
    const buffer = Buffer.allocUnsafe(max + 1);
    let total = 0;
    for (;;) {
      const n = yield* call('read', opened.fd, buffer, total, buffer.length - total, null);
      if (n === 0) break;
      total += n;
      if (total > max) throw new FileTooLargeError(path, total, max, what);
    }
    return buffer.toString('utf8', 0, total);
  } finally {
    yield* call('close', opened.fd);
  }
}

/** A short message for an fs error without the stack: "permission denied (EACCES)". */
export function errorMessage(e: unknown): string {
  // Our own typed errors carry a complete sentence.
  if (e instanceof Error && (e.name === 'NotRegularFileError' || e.name === 'FileTooLargeError' || e.name === 'OutsideFolderError')) return e.message;
  const code = errorCode(e);
  const known: Record<string, string> = {
    EACCES: 'permission denied',
    EPERM: 'operation not permitted',
    ENOENT: 'no such file or folder',
    ENOTDIR: 'not a folder',
    EIO: 'input/output error',
    ELOOP: 'too many levels of symbolic links',
    ESTALE: 'stale network file handle',
    ETIMEDOUT: 'timed out',
    EMFILE: 'too many open files',
  };
  const text = known[code] ?? (e instanceof Error ? e.message : String(e));
  return `${text} (${code})`;
}

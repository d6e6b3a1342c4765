/**
 * Content hashing: SHA-256 of a file, read in fixed-size chunks (memory stays flat whatever
 * the file's size) from one descriptor opened by fs.ts (non-blocking, regular files only,
 * confined to the mapped folder, the very file the walk saw), with proof that the bytes
 * hashed are one version of the file — the descriptor is stat'ed before and after, and the
 * path after; any difference in size, mtime, ctime or identity means it changed while read.
 */
import { byWorker, errorCode, errorMessage, nodeFs, openRequest, refusedError, type OpenFileOptions } from './fs.js';
import { FileAccessError, FileChangedError, FileReadError, FileVanishedError } from './errors.js';
import { sharedFolderLister } from './folder-lister.js';
import { hashSteps, type HashRequest, type RawHash, type RawStats } from './hash-steps.js';
import { runAsync } from './sys-calls.js';

export interface FileHash {
  /** Lowercase hex. */
  sha256: string;
  size: number;
  mtimeMs: number;
  /** Identity of the file hashed (from its descriptor): an upload must send this very file. */
  dev?: number | undefined;
  ino?: number | undefined;
  ctimeMs?: number | undefined;
  /** The bytes hashed, when `keep` asked for them and the file fit one read. */
  content?: Uint8Array | undefined;
}

/** How the file is opened (fs.ts OpenFileOptions), and read. */
export interface HashOptions extends OpenFileOptions {
  signal?: AbortSignal | undefined;
  /** Read size; default 1 MiB. */
  chunkBytes?: number | undefined;
  /** Hand back the bytes hashed (FileHash.content) when the file fits one read (hash-steps.ts HashRequest.keep). */
  keep?: boolean | undefined;
}

let bytesReadTotal = 0;

/**
 * Content bytes read from local files by this process so far (hashing, and whoever else
 * reports through addContentBytesRead). A restart over an unchanged tree must read 0.
 */
export function contentBytesRead(): number {
  return bytesReadTotal;
}

/** For other readers of file content (e.g. uploads) to count what they read. */
export function addContentBytesRead(n: number): void {
  bytesReadTotal += n;
}

/** Tests and benchmarks measure a phase from zero. */
export function resetContentBytesRead(): void {
  bytesReadTotal = 0;
}

/**
 * The file hashed by the steps every filesystem runs (hash-steps.ts): a small file of the
 * real disk by a worker thread (folder-lister.ts: one message instead of seven asynchronous
 * calls, and a hung filesystem blocks the worker, not the main thread), anything else with
 * the filesystem's own asynchronous calls. The abort of `signal` rejects at once.
 */
export async function hashFile(diskPath: string, opts: HashOptions = {}): Promise<FileHash> {
  const fs = opts.fs ?? nodeFs;
  const signal = opts.signal;
  signal?.throwIfAborted();
  // Read size: sized to the file by the caller; default 1 MiB, at least 4 KiB.
  const req: HashRequest = { ...openRequest(diskPath, opts), chunkBytes: Math.max(4096, opts.chunkBytes ?? 1024 * 1024), keep: opts.keep };
  let raw: RawHash;
  try {
    raw =
      byWorker(fs, opts.size)
        ? await sharedFolderLister().hash(req, signal)
        : await runAsync(hashSteps(req), fs, { before: (c) => c.name !== 'close' && signal?.throwIfAborted() });
  } catch (e) {
    if (signal?.aborted) throw signal.reason;
    throw (e as { step?: unknown }).step === 'read' ? readError(diskPath, e) : openError(diskPath, e);
  }
  bytesReadTotal += raw.total ?? 0;
  if (raw.refused !== undefined) throw refusedError(diskPath, raw.refused, raw.before, opts.within);
  return judged(diskPath, raw);
}

type StatFacts = Pick<RawStats, 'size' | 'mtimeMs' | 'ctimeMs' | 'dev' | 'ino'>;

/** The hash, if the stats before, of the descriptor after and of the path after say one version was read. */
function judged(diskPath: string, raw: RawHash): FileHash {
  const { before, total = 0 } = raw;
  const afterHandle = raw.afterHandle as StatFacts;
  const afterPath = raw.afterPath as StatFacts;
  const change =
    (afterPath.ino !== before.ino || afterPath.dev !== before.dev ? 'it was replaced by another file' : undefined) ??
    describeChange(before, afterHandle, total) ??
    describeChange(before, afterPath, total);
  if (change) throw new FileChangedError(diskPath, change);
  return { sha256: raw.sha256 as string, size: before.size, mtimeMs: before.mtimeMs, dev: before.dev, ino: before.ino, ctimeMs: before.ctimeMs, content: raw.bytes };
}

function describeChange(before: StatFacts, after: StatFacts, bytesRead: number): string | undefined {
  if (after.size !== before.size) return `size ${before.size} -> ${after.size} bytes`;
  if (bytesRead !== before.size) return `read ${bytesRead} of ${before.size} bytes`;
  if (after.mtimeMs !== before.mtimeMs) return 'modified while read';
  if (after.ctimeMs !== before.ctimeMs) return 'its inode changed while read';
  return undefined;
}

function openError(path: string, e: unknown): Error {
  const code = errorCode(e);
  if (code === 'ENOENT' || code === 'ENOTDIR') return new FileVanishedError(path, code);
  if (code === 'EACCES' || code === 'EPERM') return new FileAccessError(path, code);
  // O_NOFOLLOW met a symbolic link where a regular file was walked.
  if (code === 'ELOOP') return new FileChangedError(path, 'it was replaced by a symbolic link');
  if (code === 'EISDIR') return new FileChangedError(path, 'it is now a folder');
  return readError(path, e);
}

function readError(path: string, e: unknown): Error {
  return new FileReadError(path, errorCode(e), `${path} cannot be read: ${errorMessage(e)}`);
}

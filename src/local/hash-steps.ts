/**
 * What opening a file of a mapped folder and hashing it are, as steps over the system-call
 * interface (sys-calls.ts), the same on every filesystem: the open of docs/security.md
 * (non-blocking, a regular file only, the identity the walk saw, lying where the
 * confinement says: the kernel's path of the descriptor, or without /proc the path
 * resolved and still naming the opened file), then SHA-256 in chunks with the facts that
 * prove one version was read (the descriptor's stats before and after, the path's after),
 * or the file read whole for the upload with the descriptor's stats after (`readSteps`).
 * The steps find facts; hash.ts and fs.ts turn a refusal into its typed error.
 */
import { createHash } from 'node:crypto';
import { call, errorCode, type FsStats, type Steps } from './sys-calls.js';
import type { SpecialFileKind } from './errors.js';
import { isInside } from './paths.js';

/** What a file is, in NotRegularFileError's words ('file' for a regular file). */
export type FileKind = 'file' | SpecialFileKind;

export function kindOf(st: FsStats): FileKind {
  if (st.isFile()) return 'file';
  if (st.isDirectory()) return 'a folder';
  if (st.isFIFO?.()) return 'a FIFO (named pipe)';
  if (st.isSocket?.()) return 'a socket';
  if (st.isCharacterDevice?.()) return 'a character device';
  if (st.isBlockDevice?.()) return 'a block device';
  return 'not a regular file';
}

/** A file's stats as plain numbers (they cross to the main thread). */
export interface RawStats {
  size: number;
  mtimeMs: number;
  ctimeMs: number | undefined;
  dev: number;
  ino: number;
  kind: FileKind;
}

function facts(st: FsStats): RawStats {
  return { size: st.size, mtimeMs: st.mtimeMs, ctimeMs: st.ctimeMs, dev: st.dev, ino: st.ino, kind: kindOf(st) };
}

/** Why a file was not read: 'special' not a regular file; 'replaced' another inode than expected; 'outside' not where the confinement says; 'grew' more bytes than its size at open. */
export type Refusal = 'special' | 'replaced' | 'outside' | 'grew';

export interface OpenRequest {
  path: string;
  noFollow: boolean;
  /** Device and inode the walk saw. */
  expect: { dev: number; ino: number } | undefined;
  /** exact: the kernel's path must be `expected`; else it must lie beneath `rootReal`. */
  within: { exact: boolean; expected: string | undefined; rootReal: string } | undefined;
}

export interface HashRequest extends OpenRequest {
  chunkBytes: number;
  /**
   * The bytes read are kept and handed back (RawHash.bytes) when the file fits one read of
   * `chunkBytes`: the upload then sends the very bytes hashed, with no second open or read.
   */
  keep?: boolean | undefined;
}

export type Opened = { fd: number; before: RawStats; refused?: undefined } | { before: RawStats; refused: Refusal };

/** A failed call, with the step it failed in ('open': open or stat; 'read': read). */
function failed(step: 'open' | 'read', err: unknown): unknown {
  if (err !== null && typeof err === 'object') Object.assign(err, { step });
  return err;
}

/** `steps`, whose error is `failed(step, …)`. */
function* tagged<R>(step: 'open' | 'read', steps: Steps<R>): Steps<R> {
  try {
    return yield* steps;
  } catch (err) {
    throw failed(step, err);
  }
}

/** Opens and checks a file; a refusal closes it. Errors of the calls carry `step: 'open'`. */
export function* openCheckedSteps(req: OpenRequest): Steps<Opened> {
  const fd = yield* tagged('open', call('open', req.path, { folder: false, noFollow: req.noFollow }));
  let before: RawStats;
  let refused: Refusal | undefined;
  try {
    before = facts(yield* call('fstat', fd));
    refused = yield* refusal(req, fd, before);
  } catch (err) {
    yield* call('close', fd);
    throw failed('open', err);
  }
  if (refused === undefined) return { fd, before };
  yield* call('close', fd);
  return { before, refused };
}

function* refusal(req: OpenRequest, fd: number, before: RawStats): Steps<Refusal | undefined> {
  if (before.kind !== 'file') return 'special';
  if (req.expect && (before.dev !== req.expect.dev || before.ino !== req.expect.ino)) return 'replaced';
  const c = req.within;
  if (c === undefined) return undefined;
  let where = yield* call('fdPath', fd);
  if (where === undefined) {
    // No /proc: the path resolved, and it must still name the opened file.
    let now: FsStats;
    try {
      where = yield* call('realpath', req.path);
      now = yield* call('stat', where);
    } catch {
      return 'replaced';
    }
    if (now.dev !== before.dev || now.ino !== before.ino) return 'replaced';
  }
  return (c.exact ? where === c.expected : isInside(c.rootReal, where)) ? undefined : 'outside';
}

/** One file's hash, or why not: the facts for hash.ts to judge. */
export interface RawHash {
  before: RawStats;
  refused?: Refusal | undefined;
  total?: number;
  sha256?: string;
  afterHandle?: RawStats;
  afterPath?: RawStats;
  /** The file's bytes, hashed: asked for by `keep` (its own memory, handed over without a copy). */
  bytes?: Uint8Array | undefined;
}

export function* hashSteps(req: HashRequest): Steps<RawHash> {
  const opened = yield* openCheckedSteps(req);
  if (opened.refused !== undefined) return opened;
  const { fd, before } = opened;
  try {
    const h = createHash('sha256');
    // Sized to the file: most files are small (a 1 MiB buffer per small file is garbage).
    // A file kept takes memory of its own, not Node's shared pool, to be handed over.
    const size = Math.min(req.chunkBytes, before.size + 1);
    const keep = req.keep === true && size > before.size;
    const buffer = keep ? Buffer.allocUnsafeSlow(size) : Buffer.allocUnsafe(size);
    const total = yield* readToEnd(fd, before.size, buffer, (chunk) => h.update(chunk));
    if (total > before.size) return { before, total, refused: 'grew' };
    const afterHandle = facts(yield* tagged('read', call('fstat', fd)));
    const afterPath = facts(yield* tagged('open', call('stat', req.path)));
    return { before, total, sha256: h.digest('hex'), afterHandle, afterPath, bytes: keep ? buffer.subarray(0, total) : undefined };
  } finally {
    yield* call('close', fd);
  }
}

/** A read or a stat that failed, as plain data (it crosses to the main thread). */
export interface FailedCall {
  code: string;
  message: string;
}

/** A file read whole as it was opened, or why not: the facts for its reader (the upload) to judge. */
export interface RawRead {
  before: RawStats;
  refused?: Refusal | undefined;
  /** What the reads gave: at most one byte more than `before.size` (a file that grew). */
  bytes?: Uint8Array | undefined;
  /** The descriptor's stats after the read. */
  afterHandle?: RawStats | undefined;
  /** The read failed, or the descriptor's stat after it: met by the reader where it reads, or checks. */
  failed?: (FailedCall & { step: 'read' | 'after' }) | undefined;
}

/**
 * The open of `openCheckedSteps`, then the file read whole and the descriptor's stats after:
 * the system calls the upload makes on an open file (api/upload.ts), made at once. Nothing is
 * judged here but the open: a file that grew, shrank or changed is the reader's to find.
 */
export function* readSteps(req: OpenRequest): Steps<RawRead> {
  const opened = yield* openCheckedSteps(req);
  if (opened.refused !== undefined) return opened;
  const { fd, before } = opened;
  try {
    // Memory of its own, not Node's shared pool: the worker hands it over without a copy.
    const buffer = Buffer.allocUnsafeSlow(before.size + 1);
    let bytes: Buffer;
    try {
      bytes = buffer.subarray(0, yield* readToEnd(fd, before.size, buffer));
    } catch (err) {
      return { before, failed: { step: 'read', ...failedCall(err) } };
    }
    try {
      return { before, bytes, afterHandle: facts(yield* call('fstat', fd)) };
    } catch (err) {
      return { before, bytes, failed: { step: 'after', ...failedCall(err) } };
    }
  } finally {
    yield* call('close', fd);
  }
}

function failedCall(err: unknown): FailedCall {
  return { code: errorCode(err), message: err instanceof Error ? err.message : String(err) };
}

/**
 * Reads the descriptor to its end, or to one byte more than `size` (it grew: the rest need
 * not be read), handing each read's bytes to `take`; returns how many were read. A `buffer`
 * longer than `size` is filled (it holds the whole file), a shorter one reused by each read.
 * A short read that completes `size` is the end of the file: the read that would return 0 is
 * skipped (growth after it shows in the stats after).
 */
function* readToEnd(fd: number, size: number, buffer: Buffer, take?: (chunk: Buffer) => void): Steps<number> {
  const whole = buffer.length > size;
  let total = 0;
  for (;;) {
    const at = whole ? total : 0;
    const n = yield* tagged('read', call('read', fd, buffer, at, buffer.length - at, null));
    if (n === 0) return total;
    take?.(buffer.subarray(at, at + n));
    total += n;
    if (total > size || (total === size && n < buffer.length - at)) return total;
  }
}

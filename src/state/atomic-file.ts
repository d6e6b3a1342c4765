/**
 * Durable, atomic replacement of a file: write a temp file in the same directory, fsync it,
 * rename it over the target, fsync the directory. A crash, a kill -9 or a full disk at any
 * point leaves either the old file or the new one, never a truncated mix (a rename without
 * the fsyncs can land before the data after a power cut).
 *
 * The file system is injected (StateFs) so tests can make any step fail.
 */
import { randomBytes } from 'node:crypto';
import { constants as fsConstants } from 'node:fs';
import * as fsp from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { errnoOf } from '../errors/errno.js';

/** Owner-only: the state names every file of the mapped folders. */
export const FILE_MODE = 0o600;
export const DIR_MODE = 0o700;

export interface StateFileHandle {
  /** Reads up to `length` bytes at `position` (the snapshot is read in chunks, snapshot.ts). */
  read(buffer: Buffer, offset: number, length: number, position: number): Promise<{ bytesRead: number }>;
  writev(buffers: Buffer[]): Promise<{ bytesWritten: number }>;
  sync(): Promise<void>;
  /** Cuts the file to `len` bytes (the journal drops a partly written record). */
  truncate(len: number): Promise<void>;
  close(): Promise<void>;
}

/**
 * The few file-system calls the state store makes (node:fs/promises fits). This is the one
 * seam through which the state reaches the disk — the snapshot (writeFileAtomic) and the
 * journal (journal.ts) alike: a test or the simulation swaps it to decide what reached the
 * disk before a crash.
 */
export interface StateFs {
  readFile(path: string, encoding: 'utf8'): Promise<string>;
  open(path: string, flags: string, mode?: number): Promise<StateFileHandle>;
  rename(from: string, to: string): Promise<void>;
  unlink(path: string): Promise<void>;
  mkdir(path: string, options: { recursive: true; mode: number }): Promise<string | undefined>;
  stat(path: string): Promise<{ mode: number }>;
  chmod(path: string, mode: number): Promise<void>;
  readdir(path: string): Promise<string[]>;
}

const { O_APPEND, O_CREAT, O_EXCL, O_NOFOLLOW, O_NONBLOCK, O_RDONLY, O_RDWR, O_TRUNC, O_WRONLY } = fsConstants;

/**
 * Every write opens without following a link at the file's name (O_NOFOLLOW): a link planted
 * at `state.json.journal` fails with ELOOP instead of receiving the journal. Reads ('r', the
 * snapshot and the folder's fsync) may follow.
 */
const WRITE_FLAGS: Record<string, number> = {
  a: O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW,
  'r+': O_RDWR | O_NOFOLLOW,
  w: O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW,
  wx: O_WRONLY | O_CREAT | O_EXCL | O_TRUNC | O_NOFOLLOW,
};

/** ELOOP on an O_NOFOLLOW open: a link where a state file belongs, named with the fix. */
function linkRefused(e: unknown, path: string): unknown {
  if (errnoOf(e) !== 'ELOOP') return e;
  return Object.assign(new Error(`${path} is a symbolic link: the state's files are never opened through one; remove it (and see who could put it there)`, { cause: e }), { code: 'ELOOP' });
}

export const nodeStateFs: StateFs = {
  readFile: (p, enc) => fsp.readFile(p, enc),
  open: (p, flags, mode) => fsp.open(p, WRITE_FLAGS[flags] ?? flags, mode).catch((e: unknown) => Promise.reject(linkRefused(e, p))),
  rename: (a, b) => fsp.rename(a, b),
  unlink: (p) => fsp.unlink(p),
  mkdir: (p, o) => fsp.mkdir(p, o),
  stat: (p) => fsp.stat(p),
  // Through a descriptor opened without following a link: a link's target keeps its mode.
  chmod: async (p, m) => {
    const fh = await fsp.open(p, O_RDONLY | O_NOFOLLOW | O_NONBLOCK).catch((e: unknown) => Promise.reject(linkRefused(e, p)));
    try {
      await fh.chmod(m);
    } finally {
      await fh.close();
    }
  },
  readdir: (p) => fsp.readdir(p),
};

/** Prefix of the temp files of `path` (also used to clean up after a crash). */
export function tempPrefix(path: string): string {
  return `${basename(path)}.tmp-`;
}

/** Hands a producer's chunks to the file as they come (the snapshot streams itself). */
export type ChunkSink = (chunks: readonly Buffer[]) => Promise<void>;

/**
 * Writes `content` to `path` atomically and durably, mode 0600: a list of chunks, or a
 * producer that writes its chunks through the sink as it encodes them (so a large file is
 * never whole in memory).
 */
export async function writeFileAtomic(fs: StateFs, path: string, content: readonly Buffer[] | ((write: ChunkSink) => Promise<void>)): Promise<void> {
  const tmp = join(dirname(path), `${tempPrefix(path)}${process.pid}-${randomBytes(4).toString('hex')}`);
  // 'wx': never follow or reuse an existing name; the mode applies to the temp file too.
  let fh: StateFileHandle;
  try {
    fh = await fs.open(tmp, 'wx', FILE_MODE);
  } catch (err) {
    if (errnoOf(err) !== 'ENOENT') throw err;
    // The directory vanished while we ran (cleaned by hand?): recreate it once.
    await ensureDir(fs, dirname(path));
    fh = await fs.open(tmp, 'wx', FILE_MODE);
  }
  try {
    try {
      if (typeof content === 'function') await content(syncingSink(fh));
      else await writeAll(fh, content);
      await fh.sync();
    } finally {
      await fh.close();
    }
    await fs.rename(tmp, path);
  } catch (err) {
    await fs.unlink(tmp).catch(() => undefined);
    throw err;
  }
  await syncDir(fs, dirname(path));
}

/**
 * A streamed file is fsynced every SYNC_EVERY_BYTES as it is written, not only once at the
 * end. On ext4 (data=ordered) an fsync of the journal commits the file system's journal,
 * which first writes out the dirty data of every file in the transaction: a journal append
 * made beside a snapshot being written waits for whatever of the snapshot the kernel has not
 * written yet. Synced as it goes, the snapshot never has more than this much unwritten (a
 * few ms of a disk's writing), and the final fsync has little left to do.
 */
export const SYNC_EVERY_BYTES = 1024 * 1024;

function syncingSink(fh: StateFileHandle): ChunkSink {
  let unsynced = 0;
  return async (chunks) => {
    await writeAll(fh, chunks);
    for (const c of chunks) unsynced += c.length;
    if (unsynced >= SYNC_EVERY_BYTES) {
      unsynced = 0;
      await fh.sync();
    }
  };
}

/** writev in groups (IOV_MAX is 1024 on Linux), completing short writes. */
export async function writeAll(fh: StateFileHandle, chunks: readonly Buffer[]): Promise<void> {
  const GROUP = 512;
  for (let i = 0; i < chunks.length; i += GROUP) {
    let group = chunks.slice(i, i + GROUP).filter((c) => c.length > 0);
    while (group.length > 0) {
      const want = group.reduce((n, c) => n + c.length, 0);
      const { bytesWritten } = await fh.writev(group);
      if (bytesWritten >= want) break;
      if (bytesWritten <= 0) throw new Error(`short write (${bytesWritten} of ${want} bytes)`);
      group = dropBytes(group, bytesWritten);
    }
  }
}

function dropBytes(chunks: Buffer[], n: number): Buffer[] {
  const rest: Buffer[] = [];
  let skip = n;
  for (const c of chunks) {
    if (skip >= c.length) {
      skip -= c.length;
      continue;
    }
    rest.push(skip > 0 ? c.subarray(skip) : c);
    skip = 0;
  }
  return rest;
}

/**
 * fsync of the directory makes the rename itself durable (ext4/xfs). Best effort: some
 * file systems refuse to open or sync a directory, and the data is already safe by then.
 */
export async function syncDir(fs: StateFs, dir: string): Promise<void> {
  let fh: StateFileHandle | undefined;
  try {
    fh = await fs.open(dir, 'r');
    await fh.sync();
  } catch {
    // see above
  } finally {
    await fh?.close().catch(() => undefined);
  }
}

/** What `call` resolves to, or undefined when it fails because the file does not exist. */
export async function unlessMissing<T>(call: Promise<T>): Promise<T | undefined> {
  try {
    return await call;
  } catch (err) {
    if (errnoOf(err) === 'ENOENT') return undefined;
    throw err;
  }
}

/** Reads the file, or undefined when it does not exist. */
export function readIfExists(fs: StateFs, path: string): Promise<string | undefined> {
  return unlessMissing(fs.readFile(path, 'utf8'));
}

/** The file opened for reading, or undefined when it does not exist. */
export function openIfExists(fs: StateFs, path: string): Promise<StateFileHandle | undefined> {
  return unlessMissing(fs.open(path, 'r'));
}

/** Reads the file's bytes as they are on disk (no decoding), or undefined when it does not exist. */
export async function readBytesIfExists(fs: StateFs, path: string): Promise<Buffer | undefined> {
  const fh = await openIfExists(fs, path);
  if (fh === undefined) return undefined;
  try {
    const chunks: Buffer[] = [];
    for (let at = 0; ; ) {
      const buf = Buffer.allocUnsafe(1 << 20);
      const { bytesRead } = await fh.read(buf, 0, buf.length, at);
      if (bytesRead === 0) return Buffer.concat(chunks);
      chunks.push(buf.subarray(0, bytesRead));
      at += bytesRead;
    }
  } finally {
    await fh.close().catch(() => undefined);
  }
}

/** Creates the state directory (0700) when missing; an existing one is left as it is. */
export async function ensureDir(fs: StateFs, dir: string): Promise<void> {
  await fs.mkdir(dir, { recursive: true, mode: DIR_MODE });
}

/** Restricts an existing file to its owner. Returns the old mode when it had to change it. */
export async function restrictMode(fs: StateFs, path: string): Promise<number | undefined> {
  const st = await unlessMissing(fs.stat(path));
  const mode = st === undefined ? 0 : st.mode & 0o777;
  if ((mode & 0o077) === 0) return undefined;
  await fs.chmod(path, FILE_MODE);
  return mode;
}

/** Removes temp files a crashed writer left next to `path`. Only call while holding the lock. */
export async function removeStaleTemps(fs: StateFs, path: string): Promise<string[]> {
  const prefix = tempPrefix(path);
  let names: string[];
  try {
    names = await fs.readdir(dirname(path));
  } catch {
    return [];
  }
  const removed: string[] = [];
  for (const name of names) {
    if (!name.startsWith(prefix)) continue;
    const p = join(dirname(path), name);
    try {
      await fs.unlink(p);
      removed.push(p);
    } catch {
      // gone already, or not ours to remove: harmless
    }
  }
  return removed;
}

/**
 * The local side as the engine sees it (the port that local/side.ts implements on disk):
 * what a scan finds, what watcher events name, a file's hash, and the errors a read meets.
 */
import type { RootStatus } from './guards.js';
import type { StatNow } from './racy.js';
import type { OpenedFile } from '../api/records.js';
import type { HashedFile, LocalFileInfo, MutablePathSet, PathSet } from './plan.js';

/** What a scan of the mapped folder found. */
export interface ScanResult {
  rootStatus: RootStatus;
  files: Map<string, LocalFileInfo>;
  /** Files present but not to be looked at now (too large, unreadable): their documents stay. */
  skipped: SkippedFile[];
  /** Folders that could not be read: everything under them stays as it is. */
  unreadableDirs: string[];
  /** Files the scan's `vouch` answered true for: not in `files` (plan.ts PlanInput.vouched). */
  vouched?: PathSet | undefined;
  /**
   * Why the folder is an outage when the folder itself is fine but a file it needs is not
   * (the ignore file is a FIFO, a folder, too large): named by the guard instead of the folder.
   */
  outageCause?: { path: string; reason: string } | undefined;
}

export interface ScanOptions {
  /**
   * True when the caller already knows this very stat of the file (its state entry, the
   * quick check passing): the scan then keeps the path only, in `vouched`.
   */
  vouch?: ((path: string, stat: StatNow) => boolean) | undefined;
  /** Where those paths are kept (ScanResult.vouched): the state's marks (EntryMarks). Default a new Set. */
  vouched?: MutablePathSet | undefined;
}

/**
 * A file not mirrored. `excluded`: left out by a setting, as a filter would (larger than
 * maxFileBytes, a link leading outside the folder, a FIFO or socket) — reported, yet the
 * folder counts as in sync; otherwise the pass is incomplete until the cause is fixed.
 */
export interface SkippedFile {
  path: string;
  reason: string;
  excluded?: true | undefined;
}

export class LocalFileChangedError extends Error {
  override readonly name = 'LocalFileChangedError';
  readonly code = 'E_LOCAL_FILE_CHANGED';
}
export class LocalFileVanishedError extends Error {
  override readonly name = 'LocalFileVanishedError';
  readonly code = 'E_LOCAL_FILE_VANISHED';
}

/** The local filesystem as the mirror sees it (local/side.ts implements it on disk). */
export interface LocalSide {
  /** The whole folder. The result is the caller's: the mirror fills in hashes in its map. */
  scan(opts?: ScanOptions): Promise<ScanResult>;
  /**
   * A look at part of the tree after watcher events: these files, and these folders with
   * everything below them ('' = the whole tree). Paths relative to the mapped folder.
   */
  scanScope(scope: ChangeScope): Promise<ScanResult>;
  /**
   * Streams the file's content through SHA-256. Throws LocalFileChangedError when the file
   * changed while read, LocalFileVanishedError when it is gone. `keep`: a small file's bytes
   * come back too (HashedContent.content), for its upload to send.
   */
  hash(file: LocalFileInfo, keep?: boolean): Promise<HashedContent>;
  /**
   * Opens a file to upload with the hash's checks (a regular file, beneath the mapped
   * folder, the very file hashed): what the client sends is read from it. With `content`,
   * the bytes its hash read and kept, nothing is opened: those bytes are the version hashed.
   */
  open(file: HashedFile, content?: Uint8Array): Promise<OpenedFile>;
}

/** A file's content hash, with the stat of the very file read (taken before the read), and its bytes when kept. */
export type HashedContent = StatNow & { sha256: string; content?: Uint8Array | undefined };

/** What watcher events say to look at. */
export interface ChangeScope {
  files: readonly string[];
  dirs: readonly string[];
}

/**
 * What `LocalFs.listFolder` answers: a folder's entries and its files' `lstat` numbers in
 * flat arrays (no object per entry), so that a worker thread can hand them over in one
 * message (folder-lister.ts). Entry `i` is `names[i]`, of type `types[i]` (ENTRY_*: what
 * the listing said), and for a file its numbers are `stats[i * STAT_FIELDS + STAT_*]`.
 */
export interface FolderListing {
  /** The kernel's path of the folder listed; undefined when the system does not tell. */
  realPath: string | undefined;
  names: string[];
  types: Uint8Array;
  /**
   * The `lstat` of each entry listed as a file: size, mtimeMs, ctimeMs (NaN: unknown), dev,
   * ino. In place of the size: STAT_OTHER_TYPE (no longer a regular file: replaced by a
   * folder, a link...), STAT_GONE (ENOENT or ENOTDIR: gone since listed), STAT_FAILED (the
   * error is in `statErrors`), NaN (not stat-ed: not a file).
   */
  stats: Float64Array;
  /** The `lstat`s that failed otherwise, by entry. */
  statErrors?: { index: number; code: string; message: string }[] | undefined;
}

export const ENTRY_OTHER = 0;
export const ENTRY_FILE = 1;
export const ENTRY_DIR = 2;
export const ENTRY_LINK = 3;
export const STAT_FIELDS = 5;
export const STAT_SIZE = 0;
export const STAT_MTIME = 1;
export const STAT_CTIME = 2;
export const STAT_DEV = 3;
export const STAT_INO = 4;
export const STAT_OTHER_TYPE = -1;
export const STAT_GONE = -2;
export const STAT_FAILED = -3;

/**
 * How far a listing has got, for a caller whose deadline measures progress rather than the
 * whole listing (the poller: a large folder on a slow share is slow, not hung). `read()`
 * changes whenever the listing moves on (its folder read, a file `lstat`ed) and stays the
 * same while it is blocked. The lister ties it to the worker that holds the request
 * (folder-lister.ts): while the request waits behind another on that worker, the other's
 * progress counts (the queue moves); the fakes tie it to their own count.
 */
export class ListingProgress {
  private source: (() => number) | undefined;

  /** Called by whoever answers the listing, once it is handed over. */
  follow(source: () => number): void {
    this.source = source;
  }

  /** 0 until the listing is handed over. */
  read(): number {
    return this.source?.() ?? 0;
  }
}

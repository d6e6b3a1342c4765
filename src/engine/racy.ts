/**
 * When a file's content must be hashed again, or may be taken from the state (DESIGN §4,
 * the quick check). Pure.
 *
 * Size and mtime alone miss real changes: a same-size rewrite whose mtime is put back
 * (`touch -r`, `rsync --times`, an archive extracted), two same-size files swapped by
 * renames with equal mtimes, two writes within the filesystem's timestamp granularity
 * (1 s on ext4 with small inodes, 2 s on FAT, a clock tick elsewhere). So, as git does for
 * its index (Documentation/technical/racy-git.txt), the entry keeps the file's device,
 * inode, size, mtime and ctime as they were when it was hashed, and the moment of the hash:
 *
 * - any of them differing, or unknown (sameStat), means the file was written, replaced or
 *   renamed over: hash it. ctime cannot be set back by a user, so `touch -r` and `utimes`
 *   are seen through it;
 * - a file whose mtime OR ctime is not safely older than the hash is "racy": a write after
 *   the hash, in the same timestamp tick, would leave every stat field as recorded. ctime
 *   counts as much as mtime: a rename or a write whose mtime was put back moves only the
 *   ctime, and a second such write in the ctime's tick is invisible. Such an entry is
 *   hashed again at every look until a hash happens a margin after its mtime, which then
 *   proves it (git compares with the index file's mtime; dssync records the clock's time
 *   before the read, and takes a margin of the coarsest granularity it expects).
 *
 * A hash that finds the same content only refreshes the entry (no upload).
 */
import type { EntryStat } from '../state/schema.js';

/**
 * How much older than the hash an mtime must be to prove the content: FAT's 2 s granularity
 * (and clock ticks, coarse kernel timestamps and sub-second skew are far below it).
 */
export const RACY_MARGIN_MS = 2_000;

/** What a stat of the file says now (fields the filesystem does not give are undefined). */
export interface StatNow {
  size: number;
  mtimeMs: number;
  ctimeMs?: number | undefined;
  dev?: number | undefined;
  ino?: number | undefined;
}

/**
 * The one rule of "unchanged" between two stats of a file (the quick check, the stability
 * window): size and mtime equal, and ctime, device and inode each known on both sides and
 * equal. An unknown field never vouches for "unchanged" (an older version's entry is hashed again).
 */
export function sameStat(recorded: StatNow, now: StatNow): boolean {
  return recorded.size === now.size && recorded.mtimeMs === now.mtimeMs && known(recorded.ctimeMs, now.ctimeMs) && known(recorded.dev, now.dev) && known(recorded.ino, now.ino);
}

/** True when the state's entry cannot vouch for the file's content: hash it. */
export function needsHash(entry: EntryStat | undefined, stat: StatNow, now: number): boolean {
  if (entry === undefined || !sameStat(entry, stat)) return true;
  // Written by an older version: nothing says when it was hashed; hashed once more.
  if (entry.hashedAt === undefined) return true;
  // The clock has been set back since the hash: its order with mtimes no longer proves anything.
  if (entry.hashedAt > now + RACY_MARGIN_MS) return true;
  // Racy: a write after the hash, within the tick of the newest timestamp (its mtime put
  // back, its ctime then the newest), would look exactly like this.
  return Math.max(entry.mtimeMs, entry.ctimeMs ?? -Infinity) >= entry.hashedAt - RACY_MARGIN_MS;
}

function known(a: number | undefined, b: number | undefined): boolean {
  return a !== undefined && a === b;
}

/**
 * `LocalFs.listFolder` for the fake (`FakeLocal`), answered as the production lister's worker answers it
 * (src/local/folder-lister.ts): the folder's entries, then the `lstat` of every entry listed
 * as a file, into the same flat arrays and the same STAT_* markers. So the walk runs one
 * code path, the production one, over the fake as over the disk (issue 27.4). The fake has
 * no descriptors: `realPath` is undefined (the walk's swap check is the disk's business,
 * proven in test/integration/local/fs-safety.test.ts). `progress` moves as the worker's count
 * does: after the readdir and after each file's lstat.
 */
import { join } from 'node:path';
import type { FolderListing, FsDirent, FsStats, ListingProgress } from '../../src/local/fs.js';
import { ENTRY_DIR, ENTRY_FILE, ENTRY_LINK, ENTRY_OTHER, STAT_CTIME, STAT_DEV, STAT_FAILED, STAT_FIELDS, STAT_GONE, STAT_INO, STAT_MTIME, STAT_OTHER_TYPE, STAT_SIZE } from '../../src/local/fs.js';
import { errnoOf } from '../../src/errors/errno.js';

export async function listFolderOf(fs: { readdir(path: string): Promise<FsDirent[]>; lstat(path: string): Promise<FsStats> }, path: string, signal?: AbortSignal, progress?: ListingProgress): Promise<FolderListing> {
  signal?.throwIfAborted();
  let moved = 0;
  progress?.follow(() => moved);
  const entries = await fs.readdir(path);
  moved++;
  const n = entries.length;
  const names = new Array<string>(n);
  const types = new Uint8Array(n);
  const stats = new Float64Array(n * STAT_FIELDS).fill(NaN);
  let statErrors: FolderListing['statErrors'];
  for (let i = 0; i < n; i++) {
    const e = entries[i]!;
    names[i] = e.name;
    const type = e.isFile() ? ENTRY_FILE : e.isDirectory() ? ENTRY_DIR : e.isSymbolicLink() ? ENTRY_LINK : ENTRY_OTHER;
    types[i] = type;
    if (type !== ENTRY_FILE) continue;
    const o = i * STAT_FIELDS;
    let st: FsStats;
    try {
      st = await fs.lstat(join(path, e.name));
    } catch (err) {
      moved++;
      const code = errnoOf(err);
      if (code === 'ENOENT' || code === 'ENOTDIR') {
        stats[o + STAT_SIZE] = STAT_GONE;
      } else {
        stats[o + STAT_SIZE] = STAT_FAILED;
        (statErrors ??= []).push({ index: i, code: code ?? 'EUNKNOWN', message: err instanceof Error ? err.message : String(err) });
      }
      continue;
    }
    moved++;
    if (!st.isFile()) {
      stats[o + STAT_SIZE] = STAT_OTHER_TYPE;
      continue;
    }
    stats[o + STAT_SIZE] = st.size;
    stats[o + STAT_MTIME] = st.mtimeMs;
    stats[o + STAT_CTIME] = st.ctimeMs ?? NaN;
    stats[o + STAT_DEV] = st.dev;
    stats[o + STAT_INO] = st.ino;
  }
  return { realPath: undefined, names, types, stats, statErrors };
}

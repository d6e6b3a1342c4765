/**
 * What listing a folder is (LocalFs.listFolder), as steps over the system-call interface
 * (sys-calls.ts): the folder opened `O_DIRECTORY` (and `O_NOFOLLOW` when asked), listed
 * through its descriptor (/proc/self/fd/N, whose kernel path is the answer's `realPath`:
 * the folder's path can no longer be swapped), then one `lstat` per file. Nothing but the
 * folder is ever opened: a FIFO, a device or a link swapped in cannot block or lead
 * elsewhere. The answer is packed in flat arrays (folder-listing.ts).
 */
import { ENTRY_DIR, ENTRY_FILE, ENTRY_LINK, ENTRY_OTHER, STAT_CTIME, STAT_DEV, STAT_FAILED, STAT_FIELDS, STAT_GONE, STAT_INO, STAT_MTIME, STAT_OTHER_TYPE, STAT_SIZE, type FolderListing } from './folder-listing.js';
import { join } from 'node:path';
import { call, errorCode, type FsDirent, type FsStats, type Steps } from './sys-calls.js';

export function* listFolderSteps(path: string, noFollow: boolean): Steps<FolderListing> {
  const fd = yield* call('open', path, { folder: true, noFollow });
  let realPath: string | undefined;
  let entries: FsDirent[];
  try {
    realPath = yield* call('fdPath', fd);
    entries = yield* call('readdir', realPath === undefined ? path : `/proc/self/fd/${fd}`);
  } finally {
    yield* call('close', fd);
  }
  const n = entries.length;
  const names = new Array<string>(n);
  const types = new Uint8Array(n);
  const stats = new Float64Array(n * STAT_FIELDS).fill(NaN);
  let statErrors: FolderListing['statErrors'];
  for (let i = 0; i < n; i++) {
    const e = entries[i] as FsDirent;
    names[i] = e.name;
    const type = e.isFile() ? ENTRY_FILE : e.isDirectory() ? ENTRY_DIR : e.isSymbolicLink() ? ENTRY_LINK : ENTRY_OTHER;
    types[i] = type;
    if (type !== ENTRY_FILE) continue;
    const o = i * STAT_FIELDS;
    let st: FsStats;
    try {
      st = yield* call('lstat', join(path, e.name));
    } catch (err) {
      const code = errorCode(err);
      if (code === 'ENOENT' || code === 'ENOTDIR') {
        stats[o + STAT_SIZE] = STAT_GONE;
      } else {
        stats[o + STAT_SIZE] = STAT_FAILED;
        (statErrors ??= []).push({ index: i, code, message: err instanceof Error ? err.message : String(err) });
      }
      continue;
    }
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
  return { realPath, names, types, stats, statErrors };
}

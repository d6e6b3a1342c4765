/**
 * The engine's LocalSide on the real disk: one mapping's folder, scanned with its filter
 * and hashed on demand. Turns the walk's findings into what the engine acts on: files to
 * mirror, paths whose documents must stay untouched for now (skipped, unreadable), and the
 * root's condition (an outage, never a mass deletion).
 */
import { join } from 'node:path';
import { LocalFileChangedError, LocalFileVanishedError, type ChangeScope, type LocalSide, type ScanOptions, type ScanResult } from '../engine/local-side.js';
import type { StatNow } from '../engine/racy.js';
import { FileChangedError, FileVanishedError, NotRegularFileError, OutsideFolderError } from './errors.js';
import { IgnoreFileError, loadFilter, type FilterSpec, type PathFilter } from './filters.js';
import { confinementOf, errorCode, errorMessage, keptFile, nodeFs, openRegularFile, READ_AT_OPEN_MAX_BYTES, type Confinement, type LocalFs } from './fs.js';
import { addContentBytesRead, hashFile, type HashOptions } from './hash.js';
import { diskPathOf } from './paths.js';
import type { OpenedFile } from '../api/records.js';
import { resolveDiskPath, walkTree, type SkippedEntry, type WalkResult } from './walk.js';
import type { LocalFileInfo } from '../engine/plan.js';
import { testPause } from '../test-hooks.js';
import type { ObservedStats } from './observed-stats.js';

export interface LocalSideMapping extends FilterSpec {
  path: string;
  maxFileBytes: number;
  followSymlinks: boolean;
}

export interface LocalSideOptions {
  fs?: LocalFs | undefined;
  /** Folders looked at at once during a scan (default walk.ts WALK_CONCURRENCY). */
  concurrency?: number | undefined;
  signal?: AbortSignal | undefined;
  /** The watcher's stats of changed files, taken instead of a stat of one's own. */
  observed?: ObservedStats | undefined;
}

export function createLocalSide(mapping: LocalSideMapping, opts: LocalSideOptions = {}): LocalSide {
  const fs = opts.fs ?? nodeFs;
  /**
   * Where the files read must lie: the mapped folder's real path, taken at each scan (a
   * remount may move it) and used by the hashes of that pass.
   */
  let confinement: Promise<Confinement> | undefined;
  /** That promise's value once it has one: what each open takes without a promise of its own. */
  let confined: Confinement | undefined;
  const refreshConfinement = (): void => {
    const taking = confinementOf(mapping.path, { followSymlinks: mapping.followSymlinks, fs });
    confinement = taking;
    confined = undefined;
    taking.then(
      (c) => {
        if (confinement === taking) confined = c;
      },
      () => undefined,
    );
  };
  /**
   * A scan begins: the confinement taken again, the filter read. Without its ignore file the
   * folder cannot be mirrored safely: an outage, reported with the reason (a FIFO, a folder,
   * an oversized or unreadable ignore file).
   */
  const filterOrOutage = async (): Promise<PathFilter | ScanResult> => {
    refreshConfinement();
    try {
      return await loadFilter(mapping, fs);
    } catch (e) {
      if (e instanceof IgnoreFileError) return outage({ path: mapping.ignoreFile ?? e.path, reason: `${e.message}; nothing is mirrored until it can be read` });
      throw e;
    }
  };
  /** How a file of the folder is opened, by the hash and the upload alike (fs.ts). */
  const openChecks = async (disk: string, file: LocalFileInfo): Promise<HashOptions & { fs: LocalFs; size: number }> => {
    if (!confinement) refreshConfinement();
    const within =
      confined ??
      (await (confinement as Promise<Confinement>).catch(() => {
        throw new FileVanishedError(disk, 'ENOENT');
      }));
    const expect = file.dev !== undefined && file.ino !== undefined ? { dev: file.dev, ino: file.ino } : undefined;
    return { fs, noFollow: !mapping.followSymlinks, within, expect, size: file.size };
  };
  /** The whole tree, or only `subtrees` (an incremental look). */
  const walkWith = (filter: PathFilter, subtrees?: readonly string[], scanOpts: ScanOptions = {}): Promise<WalkResult> =>
    walkTree(mapping.path, filter, { vouch: scanOpts.vouch, vouched: scanOpts.vouched, fs, maxFileBytes: mapping.maxFileBytes, followSymlinks: mapping.followSymlinks, concurrency: opts.concurrency, signal: opts.signal, subtrees });
  /**
   * A regular file's stat now, and its disk path when that is not join(root, path);
   * undefined when it is not (any more) a file.
   */
  const statNow = async (path: string, walk: WalkResult): Promise<{ disk: string | undefined; st: StatNow } | undefined> => {
    const disk = await resolveDiskPath(fs, mapping.path, path);
    if (disk === undefined) return undefined;
    try {
      const st = mapping.followSymlinks ? await fs.stat(disk) : await fs.lstat(disk);
      return st.isFile() ? { disk: disk === join(mapping.path, path) ? undefined : disk, st } : undefined;
    } catch (e) {
      const code = errorCode(e);
      if (code !== 'ENOENT' && code !== 'ENOTDIR') walk.errors.push({ path, kind: 'file', code, message: errorMessage(e) });
      return undefined;
    }
  };
  return {
    async scan(scanOpts: ScanOptions = {}): Promise<ScanResult> {
      opts.observed?.clear();
      const filter = await filterOrOutage();
      if (isScanResult(filter)) return filter;
      const walk = await walkWith(filter, undefined, scanOpts);
      const result = toScanResult(walk, mapping.maxFileBytes);
      return walk.vouched.size === 0 ? result : { ...result, vouched: walk.vouched };
    },

    async scanScope(scope: ChangeScope): Promise<ScanResult> {
      const filter = await filterOrOutage();
      if (isScanResult(filter)) return filter;
      const dirs = outermost(scope.dirs);
      const walk = await walkWith(filter, dirs);
      if (walk.rootStatus !== 'ok') return toScanResult(walk, mapping.maxFileBytes);
      // Single files outside those folders: looked at one by one, by the watcher's stat
      // when it kept one (taken after the file's last event), else by a stat now.
      const under = (p: string): boolean => dirs.some((d) => d === '' || p.startsWith(`${d}/`));
      for (const path of new Set(scope.files)) {
        if (under(path) || walk.files.has(path) || !filter.includes(path, false)) continue;
        const seen = opts.observed?.take(path);
        const found = seen ? { disk: undefined, st: seen } : await statNow(path, walk);
        if (found === undefined) continue;
        const { disk, st } = found;
        if (st.size > mapping.maxFileBytes) walk.skipped.push({ path, reason: 'too-large', size: st.size });
        else walk.files.set(path, { path, diskPath: disk, size: st.size, mtimeMs: st.mtimeMs, dev: st.dev, ino: st.ino, ctimeMs: st.ctimeMs });
      }
      return toScanResult(walk, mapping.maxFileBytes);
    },

    async hash(file: LocalFileInfo, keep?: boolean) {
      try {
        const disk = diskPathOf(mapping.path, file);
        const checks = await openChecks(disk, file);
        await testPause('before-hash', file.path);
        checks.signal = opts.signal;
        // Kept: a file the upload would read whole at once (fs.ts READ_AT_OPEN_MAX_BYTES).
        checks.keep = keep === true && file.size <= READ_AT_OPEN_MAX_BYTES;
        return await hashFile(disk, checks);
      } catch (e) {
        if (e instanceof FileVanishedError) throw new LocalFileVanishedError(e.message);
        // Swapped for a link, a FIFO or another file since the walk: look again next pass
        // (the walk then sees what is there now, and skips it if it is not a file).
        if (e instanceof FileChangedError || e instanceof NotRegularFileError || e instanceof OutsideFolderError) throw new LocalFileChangedError(e.message);
        throw e;
      }
    },
    async open(file, content) {
      const disk = diskPathOf(mapping.path, file);
      if (content !== undefined) return keptFile(disk, file, content);
      // Its size: a small file is read whole as it is opened, in the worker (fs.ts).
      return countingReads(await openRegularFile(disk, await openChecks(disk, file)));
    },
  };
}

/** The upload's reads of a folder's file count as content read (hash.ts `contentBytesRead`). */
function countingReads(opened: OpenedFile): OpenedFile {
  const { handle } = opened;
  const read: typeof handle.read = async (...args) => {
    const r = await handle.read(...args);
    addContentBytesRead(r.bytesRead);
    return r;
  };
  return { ...opened, handle: { read, stat: () => handle.stat(), close: () => handle.close() } };
}

function outage(why: { path: string; reason: string }): ScanResult {
  return { rootStatus: 'unreadable', files: new Map(), skipped: [why], unreadableDirs: [], outageCause: why };
}

function isScanResult(v: PathFilter | ScanResult): v is ScanResult {
  return 'rootStatus' in v;
}

/** The folders of a list that are not inside another one of the list ('' is the root). */
function outermost(dirs: readonly string[]): string[] {
  const out: string[] = [];
  for (const d of [...new Set(dirs)].sort()) if (!out.some((o) => o === '' || d === o || d.startsWith(`${o}/`))) out.push(d);
  return out;
}

/**
 * What the engine must know. Files left out by a setting (over maxFileBytes, links leading
 * outside the folder, FIFOs and sockets) are reported as excluded: named, so that the
 * operator hears of them, yet the pass is complete. Links left alone by configuration
 * (followSymlinks off) are not reported: that is what the setting asks for.
 */
export function toScanResult(walk: WalkResult, maxFileBytes: number): ScanResult {
  const skipped: ScanResult['skipped'] = [];
  for (const s of walk.skipped) {
    const reason = skipReasonText(s, maxFileBytes);
    if (reason) skipped.push({ path: s.path, reason, ...(EXCLUDED.has(s.reason) ? { excluded: true as const } : {}) });
  }
  // An unreadable folder is reported too (as "path/"): otherwise nothing tells the operator
  // that the files below it are not mirrored. Its documents stay (see unreadableDirs).
  for (const e of walk.errors) {
    skipped.push(e.kind === 'file' ? { path: e.path, reason: e.message } : { path: `${e.path}/`, reason: `${e.message}; the documents of its files are kept as they are` });
  }
  return { rootStatus: walk.rootStatus, files: walk.files, skipped, unreadableDirs: walk.errors.filter((e) => e.kind === 'dir').map((e) => e.path) };
}

/** How the reason of a file over maxFileBytes begins (the daemon lists it as a problem). */
export const TOO_LARGE_REASON = 'excluded: larger than maxFileBytes';

/** Skip reasons that are exclusions by setting, not problems to fix. */
const EXCLUDED = new Set<SkippedEntry['reason']>(['too-large', 'symlink-outside-root', 'not-a-regular-file']);

function skipReasonText(s: SkippedEntry, maxFileBytes: number): string | undefined {
  switch (s.reason) {
    case 'too-large':
      return `${TOO_LARGE_REASON} (${s.size ?? '?'} > ${maxFileBytes} bytes); raise maxFileBytes to mirror it`;
    case 'symlink-outside-root':
      return 'excluded: a symbolic link leading outside the mapped folder (never followed)';
    case 'not-a-regular-file':
      return 'excluded: not a regular file (a FIFO, socket or device is never read)';
    case 'name-not-utf8':
      return 'the file name is not valid UTF-8, so it cannot be mirrored; rename it';
    case 'name-collision':
      return `another file has the same name in a different Unicode form (${s.diskPath ?? '?'}); rename one of them`;
    default:
      return undefined;
  }
}

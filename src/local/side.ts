/**
 * The engine's LocalSide on the real disk: one mapping's folder, scanned with its filter
 * and hashed on demand. Turns the walk's findings into what the engine acts on: files to
 * mirror, paths whose documents must stay untouched for now (skipped, unreadable), and the
 * root's condition (an outage, never a mass deletion).
 */
import { LocalFileChangedError, LocalFileVanishedError, type LocalSide, type ScanResult } from '../engine/mirror.js';
import { FileChangedError, FileVanishedError } from './errors.js';
import { IgnoreFileError, loadFilter, type FilterSpec } from './filters.js';
import { nodeFs, type LocalFs } from './fs.js';
import { hashFile } from './hash.js';
import { walkTree, type SkippedEntry, type WalkResult } from './walk.js';
import type { LocalFileInfo } from '../engine/plan.js';

export interface LocalSideMapping extends FilterSpec {
  path: string;
  maxFileBytes: number;
  followSymlinks: boolean;
}

export interface LocalSideOptions {
  fs?: LocalFs | undefined;
  /** Filesystem calls in flight during a scan (default 32). */
  concurrency?: number | undefined;
  signal?: AbortSignal | undefined;
  /** Receives the whole walk result (for status and logs: errors, every skipped entry). */
  onScan?: ((walk: WalkResult) => void) | undefined;
}

export function createLocalSide(mapping: LocalSideMapping, opts: LocalSideOptions = {}): LocalSide {
  const fs = opts.fs ?? nodeFs;
  return {
    async scan(): Promise<ScanResult> {
      let filter;
      try {
        filter = await loadFilter(mapping, fs);
      } catch (e) {
        // Without its ignore file the folder cannot be mirrored safely: treat it as an outage.
        if (e instanceof IgnoreFileError) return { rootStatus: 'unreadable', files: new Map(), skipped: [], unreadableDirs: [] };
        throw e;
      }
      const walk = await walkTree(mapping.path, filter, {
        fs,
        maxFileBytes: mapping.maxFileBytes,
        followSymlinks: mapping.followSymlinks,
        concurrency: opts.concurrency,
        signal: opts.signal,
      });
      opts.onScan?.(walk);
      return toScanResult(walk, mapping.maxFileBytes);
    },

    async hash(file: LocalFileInfo) {
      try {
        return await hashFile(file.diskPath, { fs, signal: opts.signal, noFollow: !mapping.followSymlinks });
      } catch (e) {
        if (e instanceof FileVanishedError) throw new LocalFileVanishedError(e.message);
        if (e instanceof FileChangedError) throw new LocalFileChangedError(e.message);
        throw e;
      }
    },
  };
}

/**
 * What the engine must know. Symbolic links left alone by configuration and special files
 * are not reported as skipped: they are not documents, and a pass is not incomplete for them.
 */
export function toScanResult(walk: WalkResult, maxFileBytes: number): ScanResult {
  const skipped: ScanResult['skipped'] = [];
  for (const s of walk.skipped) {
    const reason = skipReasonText(s, maxFileBytes);
    if (reason) skipped.push({ path: s.path, reason });
  }
  for (const e of walk.errors) if (e.kind === 'file') skipped.push({ path: e.path, reason: e.message });
  return {
    rootStatus: walk.rootStatus,
    files: walk.files,
    skipped,
    unreadableDirs: walk.errors.filter((e) => e.kind === 'dir').map((e) => e.path),
  };
}

function skipReasonText(s: SkippedEntry, maxFileBytes: number): string | undefined {
  switch (s.reason) {
    case 'too-large':
      return `larger than maxFileBytes (${s.size ?? '?'} > ${maxFileBytes} bytes)`;
    case 'name-collision':
      return `another file has the same name in a different Unicode form (${s.diskPath ?? '?'}); rename one of them`;
    default:
      return undefined;
  }
}

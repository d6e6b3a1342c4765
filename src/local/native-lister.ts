/**
 * The folder listing's native module (native/list-folder.c), for the lister's worker: one call
 * that answers what list-steps.ts's steps answer. Undefined where it is not built or cannot
 * load (DSSYNC_NATIVE=0 too): the worker then runs the steps with node:fs's calls.
 */
import { loadNativeModule } from '../native.js';
import type { FolderListing } from './folder-listing.js';

export interface NativeLister {
  /** Lists `path` (O_NOFOLLOW when `noFollow`); stops with ESTOPPED once flags[stop] is set; bumps flags[progress] as it moves. */
  listFolder(path: string, noFollow: boolean, flags: Int32Array, stop: number, progress: number): FolderListing;
}

export function nativeLister(env: NodeJS.ProcessEnv = process.env): NativeLister | undefined {
  const loaded = loadNativeModule<NativeLister>('list-folder', env);
  return 'module' in loaded ? loaded.module : undefined;
}

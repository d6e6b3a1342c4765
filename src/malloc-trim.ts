/**
 * Gives malloc's free pages back to the system (glibc's malloc_trim(0), native/malloc-trim.c).
 * glibc returns a freed block only from the top of its heap; after a restart's peak the free
 * runs below blocks still in use stay resident (~13 MB at rest over 300,000 files:
 * docs/performance.md, "Session 29"). Called once a full pass's memory is released
 * (daemon/reclaim.ts). It takes milliseconds (6 ms over 140 MB of blocks, one in eight kept);
 * nothing in use is touched.
 */
import { loadNativeModule } from './native.js';

let trim: (() => boolean) | null | undefined;

/** Trims now: true when pages were given back, false when none were, undefined without the module (or glibc). */
export function trimMalloc(): boolean | undefined {
  if (trim === undefined) {
    const loaded = loadNativeModule<{ trim(): boolean }>('malloc-trim');
    trim = 'module' in loaded ? () => loaded.module.trim() : null;
  }
  return trim === null ? undefined : trim();
}

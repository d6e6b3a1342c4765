/**
 * Where the compile cache lives (src/cli/compile-cache.ts): dssync's own switch first, then
 * systemd's cache folder, then the XDG cache, then ~/.cache; off when none is an absolute path.
 */
import { describe, expect, it } from 'vitest';
import { compileCacheFolder } from '../../../src/cli/compile-cache.js';

describe('compile cache folder', () => {
  it('is ~/.cache/dssync by default, and only ~/.cache may be created besides it', () => {
    expect(compileCacheFolder({ HOME: '/home/ann' })).toEqual({ dir: '/home/ann/.cache/dssync', parent: '/home/ann/.cache' });
  });

  it('follows XDG_CACHE_HOME, then systemd CACHE_DIRECTORY (its first folder), then DSSYNC_COMPILE_CACHE', () => {
    const home = { HOME: '/home/ann' };
    expect(compileCacheFolder({ ...home, XDG_CACHE_HOME: '/var/tmp/ann' })).toEqual({ dir: '/var/tmp/ann/dssync' });
    expect(compileCacheFolder({ ...home, XDG_CACHE_HOME: '/var/tmp/ann', CACHE_DIRECTORY: '/var/cache/dssync:/var/cache/other' })).toEqual({ dir: '/var/cache/dssync' });
    expect(compileCacheFolder({ ...home, CACHE_DIRECTORY: '/var/cache/dssync', DSSYNC_COMPILE_CACHE: '/srv/cache' })).toEqual({ dir: '/srv/cache' });
  });

  it('is off with DSSYNC_COMPILE_CACHE=0, and where no folder is an absolute path', () => {
    expect(compileCacheFolder({ HOME: '/home/ann', DSSYNC_COMPILE_CACHE: '0' })).toBeUndefined();
    expect(compileCacheFolder({ HOME: '/home/ann', DSSYNC_COMPILE_CACHE: 'relative/dir' })).toBeUndefined();
    expect(compileCacheFolder({})).toBeUndefined();
    expect(compileCacheFolder({ HOME: 'relative', XDG_CACHE_HOME: 'also-relative' })).toBeUndefined();
  });
});

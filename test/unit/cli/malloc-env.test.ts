import { describe, expect, it } from 'vitest';
import { MALLOC_ENV, wantsMallocEnv, withMallocEnv } from '../../../src/cli/malloc-env.js';

describe('withMallocEnv: the daemon\'s malloc settings', () => {
  it('adds both settings to an environment without them, and keeps everything else', () => {
    const env = withMallocEnv({ PATH: '/usr/bin', DSSYNC_CONFIG: '/etc/dssync/config.json' });
    expect(env).toEqual({ PATH: '/usr/bin', DSSYNC_CONFIG: '/etc/dssync/config.json', MALLOC_ARENA_MAX: '2', MALLOC_MMAP_THRESHOLD_: '131072' });
  });

  it('keeps an operator\'s own value of either, even an empty one, and adds only the other', () => {
    expect(withMallocEnv({ MALLOC_ARENA_MAX: '8' })).toEqual({ MALLOC_ARENA_MAX: '8', MALLOC_MMAP_THRESHOLD_: '131072' });
    expect(withMallocEnv({ MALLOC_MMAP_THRESHOLD_: '' })).toEqual({ MALLOC_MMAP_THRESHOLD_: '', MALLOC_ARENA_MAX: '2' });
  });

  it('answers undefined when nothing is missing (the units, the image, or the process already started again): no second start', () => {
    expect(withMallocEnv({ ...MALLOC_ENV })).toBeUndefined();
    expect(withMallocEnv({ MALLOC_ARENA_MAX: '4', MALLOC_MMAP_THRESHOLD_: '65536' })).toBeUndefined();
  });

  it('does not change the environment it is given', () => {
    const given = { PATH: '/bin' };
    withMallocEnv(given);
    expect(given).toEqual({ PATH: '/bin' });
  });
});

describe('wantsMallocEnv: which commands set them', () => {
  it('the daemon and the one-pass mirror do; a command that holds no files does not', () => {
    expect(wantsMallocEnv('run')).toBe(true);
    expect(wantsMallocEnv('sync')).toBe(true);
    for (const c of ['status', 'datasources', 'documents', 'probe', 'config', 'emulator', 'pause', undefined]) expect(wantsMallocEnv(c), String(c)).toBe(false);
  });
});

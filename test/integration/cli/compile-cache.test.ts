/**
 * Node's compile cache as the built `dssync` uses it (src/cli/compile-cache.ts): the first
 * run creates ~/.cache/dssync owner-only (0700, whatever the umask), the next run reads
 * its compiled code from there, and with the cache off, or with no folder of its own to
 * use, dssync writes nothing and says nothing.
 */
import { chmod, mkdir, mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { requireBuiltBinary, runCli } from './run-cli.js';

let dir: string;
let home: string;
beforeAll(() => requireBuiltBinary());
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'dssync-compile-cache-'));
  home = join(dir, 'home');
  await mkdir(home);
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const modeOf = async (p: string): Promise<string> => ((await stat(p)).mode & 0o777).toString(8);
/** Node's own report of each module's cache (NODE_DEBUG_NATIVE), on stderr. */
const DEBUG = { NODE_DEBUG_NATIVE: 'COMPILE_CACHE' };

describe('compile cache', () => {
  it('is created owner-only in ~/.cache/dssync, and a second run uses what the first compiled', { timeout: 60_000 }, async () => {
    const old = process.umask(0);
    let first;
    try {
      first = await runCli(['--version'], { HOME: home });
    } finally {
      process.umask(old);
    }
    expect(first.code, first.stderr).toBe(0);
    expect(first.stderr).toBe('');
    const cache = join(home, '.cache', 'dssync');
    expect(await modeOf(join(home, '.cache'))).toBe('700');
    expect(await modeOf(cache)).toBe('700');
    const [versionDir, ...others] = await readdir(cache);
    expect(others).toEqual([]);
    expect((await readdir(join(cache, versionDir!))).length).toBeGreaterThan(10);

    const second = await runCli(['--version'], { HOME: home, ...DEBUG });
    expect(second.code, second.stderr).toBe(0);
    expect(second.stdout).toBe(first.stdout);
    expect(second.stderr).toContain(`reading cache from ${join(cache, versionDir!)}`);
    expect(second.stderr).toMatch(/V8 code cache for ESM file:\/\/\S+\/dist\/src\/cli\/app\.js was accepted/);
  });

  it('writes nothing when turned off with DSSYNC_COMPILE_CACHE=0', { timeout: 60_000 }, async () => {
    const r = await runCli(['--version'], { HOME: home, DSSYNC_COMPILE_CACHE: '0', ...DEBUG });
    expect(r.code, r.stderr).toBe(0);
    expect(await readdir(home)).toEqual([]);
    expect(r.stderr).not.toContain('reading cache');
  });

  it('leaves a folder open to others alone, and creates no home, silently', { timeout: 60_000 }, async () => {
    // A folder that another user could write to (here: every user) is never used.
    const open = join(dir, 'xdg', 'dssync');
    await mkdir(open, { recursive: true });
    await chmod(open, 0o777);
    const planted = await runCli(['--version'], { HOME: home, XDG_CACHE_HOME: join(dir, 'xdg') });
    expect(planted.code, planted.stderr).toBe(0);
    expect(planted.stderr).toBe('');
    expect(await readdir(open)).toEqual([]);
    expect(await modeOf(open)).toBe('777');

    const gone = join(dir, 'no-such-home');
    const homeless = await runCli(['--version'], { HOME: gone });
    expect(homeless.code, homeless.stderr).toBe(0);
    expect(homeless.stderr).toBe('');
    await expect(stat(gone)).rejects.toThrow(/ENOENT/);
  });
});

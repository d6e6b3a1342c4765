/**
 * The pure checks of `dssync config check`: the inotify budget (limits read through a fake
 * /proc), the status address, and how check lines and the verdict are printed.
 */
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { formatCheck, formatVerdict } from '../../../src/cli/commands/config-check.js';
import { listenCheck } from '../../../src/daemon/listen-check.js';
import { inotifyCheck, readInotifyLimits, suggestedWatchLimit, watchesNeeded } from '../../../src/local/watch/inotify-budget.js';
import { nativeWatchCheck } from '../../../src/local/watch/inotify.js';

const proc = (files: Record<string, string>) => async (path: string): Promise<string> => {
  const v = files[path];
  if (v === undefined) throw Object.assign(new Error(`ENOENT: ${path}`), { code: 'ENOENT' });
  return v;
};

describe('inotify budget', () => {
  it('reads both limits from /proc', async () => {
    const limits = await readInotifyLimits(
      proc({ '/proc/sys/fs/inotify/max_user_watches': '8192\n', '/proc/sys/fs/inotify/max_user_instances': '128\n' }),
    );
    expect(limits).toEqual({ maxUserWatches: 8192, maxUserInstances: 128 });
  });

  it('says so when /proc cannot be read, and warns without failing', async () => {
    const limits = await readInotifyLimits(proc({}));
    expect(limits.error).toContain('cannot read /proc/sys/fs/inotify');
    const r = inotifyCheck(40, 0, limits);
    expect(r.level).toBe('warn');
    expect(r.message).toContain('cannot check the watch budget for 40 folders');
  });

  it("says which watch a daemon started here would use: dssync's module, fs.watch by choice, or fs.watch with why, what it costs and the fix", () => {
    const native = { open: () => 0, add: () => 1, remove: () => undefined, close: () => undefined };
    expect(nativeWatchCheck(15_000, { native })).toEqual({ check: 'inotify', level: 'ok', message: "folders are watched on one inotify instance of dssync's own (its native module loads)" });
    expect(nativeWatchCheck(15_000, { why: 'DSSYNC_NATIVE=0' })).toEqual({ check: 'inotify', level: 'ok', message: "events through Node's fs.watch (DSSYNC_NATIVE=0)" });
    const missing = nativeWatchCheck(15_000, { why: '/opt/dssync/dist/src/native/inotify.node is not built (npm run build needs a C compiler: cc)' });
    expect(missing.level).toBe('warn');
    expect(missing.message).toBe(
      "dssync's inotify module cannot be used (/opt/dssync/dist/src/native/inotify.node is not built (npm run build needs a C compiler: cc)): events would come through Node's fs.watch, about 1.2 KB more memory a watched folder (~17 MB for 15000 folders), and a queue overflow only inferred",
    );
    expect(missing.fix).toContain('apt-get install gcc libc6-dev');
  });

  it('passes when the folders (with a margin) stay under 80% of max_user_watches', () => {
    const r = inotifyCheck(5000, 0, { maxUserWatches: 65_536, maxUserInstances: 128 });
    expect(r.level).toBe('ok');
    expect(r.message).toBe(`5000 folders to watch, ${watchesNeeded(5000)} with a margin: 9% of max_user_watches 65536, max_user_instances 128`);
  });

  it('warns above 80% and prints the sysctl command and the sysctl.d line', () => {
    const r = inotifyCheck(7000, 0, { maxUserWatches: 8192, maxUserInstances: 128 });
    expect(r.level).toBe('warn');
    expect(r.message).toContain('too tight');
    const n = suggestedWatchLimit(7000);
    expect(n).toBeGreaterThanOrEqual(2 * watchesNeeded(7000));
    expect(r.fix).toContain(`sudo sysctl -w fs.inotify.max_user_watches=${n}`);
    expect(r.fix).toContain(`fs.inotify.max_user_watches=${n}' | sudo tee /etc/sysctl.d/90-dssync.conf`);
  });

  it('suggests the usual 524288 at least, more for very large trees, in round steps', () => {
    expect(suggestedWatchLimit(10)).toBe(524_288);
    const big = suggestedWatchLimit(400_000);
    expect(big % 65_536).toBe(0);
    expect(big).toBeGreaterThanOrEqual(2 * watchesNeeded(400_000));
  });

  it('says which mappings were not counted', () => {
    expect(inotifyCheck(10, 2, { maxUserWatches: 100_000 }).message).toContain('(2 mappings not counted: folder unavailable)');
  });
});

describe('status address', () => {
  it('accepts loopback and off; warns for an address other machines reach', () => {
    expect(listenCheck({ host: '127.0.0.1', port: 8787 }).level).toBe('ok');
    expect(listenCheck({ host: '::1', port: 8787 }).level).toBe('ok');
    expect(listenCheck(false)).toMatchObject({ level: 'ok', message: expect.stringContaining('reads the state file') });
    const open = listenCheck({ host: '0.0.0.0', port: 8787 });
    expect(open.level).toBe('warn');
    expect(open.message).toContain('no status.tokenFile is set');
    expect(open.fix).toBe('set "status": { "listen": "127.0.0.1:8787" }, or add "tokenFile" to "status" to read the page from other machines');
  });

  it('with status.tokenFile: ok when the file holds a token, a failure naming the file otherwise', () => {
    const dir = mkdtempSync(join(tmpdir(), 'dssync-listen-'));
    try {
      writeFileSync(join(dir, 'token'), 's3cret\n', { mode: 0o600 });
      const ok = listenCheck({ host: '0.0.0.0', port: 8787 }, { tokenFile: join(dir, 'token') });
      expect(ok).toMatchObject({ level: 'ok', message: expect.stringContaining('need the token of status.tokenFile') });
      expect(JSON.stringify(ok)).not.toContain('s3cret');
      // Readable by every local user: any of them could sign in (issue 24.11).
      writeFileSync(join(dir, 'open-token'), 's3cret\n', { mode: 0o644 });
      chmodSync(join(dir, 'open-token'), 0o644);
      const open = listenCheck({ host: '127.0.0.1', port: 8787 }, { tokenFile: join(dir, 'open-token') });
      expect(open).toMatchObject({ level: 'warn', message: expect.stringContaining('readable by every local user'), fix: `chmod 600 ${join(dir, 'open-token')}` });
      // Readable by its group: every member could sign in (issue 36.5).
      chmodSync(join(dir, 'open-token'), 0o640);
      const group = listenCheck({ host: '127.0.0.1', port: 8787 }, { tokenFile: join(dir, 'open-token') });
      expect(group).toMatchObject({ level: 'warn', message: expect.stringContaining('readable by its group (mode g+r)'), fix: `chmod 600 ${join(dir, 'open-token')}` });
      const missing = listenCheck({ host: '0.0.0.0', port: 8787 }, { tokenFile: join(dir, 'nope') });
      expect(missing).toMatchObject({ level: 'fail', message: expect.stringContaining(`status.tokenFile ${join(dir, 'nope')} does not exist`) });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('output', () => {
  it('prints one line per check with its symbol and mapping, the fix indented below', () => {
    expect(formatCheck({ check: 'folder', level: 'ok', mapping: 'docs', message: '/srv/docs: 3 folders, 9 files included' })).toBe(
      '✓ mapping docs: /srv/docs: 3 folders, 9 files included\n',
    );
    expect(formatCheck({ check: 'state', level: 'warn', message: 'readable by every user', fix: 'chmod 600 /x' })).toBe(
      '! readable by every user\n    chmod 600 /x\n',
    );
    expect(formatCheck({ check: 'service', level: 'fail', message: 'credentials refused' })).toBe('✗ credentials refused\n');
  });

  it('ends with a verdict counting failures and warnings', () => {
    const ok = { check: 'x', level: 'ok' as const, message: '' };
    const warn = { ...ok, level: 'warn' as const };
    const fail = { ...ok, level: 'fail' as const };
    expect(formatVerdict([ok])).toBe('\nAll checks passed.\n');
    expect(formatVerdict([ok, warn])).toBe('\nNo check failed; 1 warning.\n');
    expect(formatVerdict([fail, warn, warn])).toBe('\n1 check failed, 2 warnings.\n');
  });
});

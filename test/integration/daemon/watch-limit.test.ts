/**
 * Issue 12, inotify exhaustion, with the built daemon: the reproduction (a limit of
 * 60 watches over 100 folders) mirrored 59 of 100 edits, said "ok" and never retried. Now
 * the folders past the limit are polled: every edit is mirrored (by events or polling, no
 * rescan), and `dssync status`, /healthz, /metrics, the log and `config check` all say so,
 * with the command that raises fs.inotify.max_user_watches.
 *
 * It used to fail now and then (3 of the 100 edits never mirrored): the poller's first cycle
 * had started with the first folder past the limit and learned the other 40 only at its next
 * cycle, after the start's full pass; the folders learned last had their edit absorbed into
 * the walk that learned them. Now the watcher is ready once the first cycle has learned every
 * polled folder, and a folder learned later is looked at whole (poller.ts).
 *
 * The limit is this process's alone: a preload (test/fixtures/watch/inotify-limit.mjs) makes
 * a watch fail with ENOSPC past 60 (dssync's own inotify watch; fs.watch under
 * DSSYNC_NATIVE=0, which the watcher's own test covers, test/integration/local). Lowering the system's max_user_watches would
 * starve every other process on the machine (and `unshare -Ur` does not isolate it here).
 */
import { appendFile, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Workspace } from '../../helpers/mirror-check.js';
import { requireBuiltBinary, runCli } from '../cli/run-cli.js';
import { daemonWorkspace, freePort, startDaemon, waitConverged, type DaemonProcess } from './daemon-process.js';

const PRELOAD = fileURLToPath(new URL('../../fixtures/watch/inotify-limit.mjs', import.meta.url));
const FOLDERS = 100;
const LIMIT = 60;

let ws: Workspace | undefined;
let daemon: DaemonProcess | undefined;
beforeAll(() => requireBuiltBinary());
afterEach(async () => {
  await daemon?.kill();
  daemon = undefined;
  await ws?.close();
  ws = undefined;
});


describe('dssync run past the inotify watch limit', () => {
  it('polls the folders it cannot watch: every edit mirrored, and status, /healthz, /metrics, the log and config check say so with the fix', { timeout: 180_000 }, async () => {
    const port = await freePort();
    ws = await daemonWorkspace({ config: { rescanIntervalSeconds: 3600, status: { listen: `127.0.0.1:${port}` }, watch: { pollIntervalSeconds: 1 } } });
    const w = ws;
    for (let i = 0; i < FOLDERS; i++) {
      await mkdir(join(w.share, `d${i}`));
      await writeFile(join(w.share, `d${i}`, 'f.txt'), `file ${i}`);
    }
    daemon = await startDaemon(w, { env: { NODE_OPTIONS: `--import=${PRELOAD}`, DSSYNC_TEST_INOTIFY_LIMIT: String(LIMIT) } });
    const d = daemon;
    await waitConverged(w, 'the startup full pass');

    const m = (await d.status()).mappings[0]!;
    // The mapped folder and 59 others are watched; the other 41 are polled.
    expect(m.watchedDirs).toBe(LIMIT);
    expect(m.watch!.overLimit).toHaveLength(FOLDERS + 1 - LIMIT);
    expect(m.watch!.limitFix).toMatch(/^sysctl fs\.inotify\.max_user_watches=\d+/);
    expect(m.degraded.join('\n')).toMatch(/inotify watch limit is reached: 41 folder\(s\) .* polled instead of watched; raise it: sysctl fs\.inotify\.max_user_watches=/);
    expect((await d.healthz()).body.status).toBe('degraded');
    // The watcher was ready only once its first poll cycle had learned all 41 folders (the
    // start's full pass came after it): an edit from now on is seen by the next cycle.
    expect(m.watch!.poll!.cycles).toBeGreaterThanOrEqual(1);
    expect(Object.keys(m.watch!.poll!.bySubtree ?? {})).toHaveLength(FOLDERS + 1 - LIMIT);

    // Every folder's file edited: those watched by events, those polled.
    for (let i = 0; i < FOLDERS; i++) await appendFile(join(w.share, `d${i}`, 'f.txt'), ', edited');
    await waitConverged(w, `all ${FOLDERS} edits`, 60_000);
    expect(d.logs().filter((l) => l.msg === 'full pass done')).toHaveLength(1); // no rescan needed

    const id = m.id.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
    const metrics = await d.metrics();
    expect(metrics).toMatch(new RegExp(`^dssync_mapping_degraded\\{mapping="${id}"\\} 1$`, 'm'));
    expect(metrics).toMatch(new RegExp(`^dssync_watch_folders_over_limit\\{mapping="${id}"\\} ${FOLDERS + 1 - LIMIT}$`, 'm'));
    expect(metrics).toMatch(new RegExp(`^dssync_watched_folders\\{mapping="${id}"\\} ${LIMIT}$`, 'm'));

    expect(d.logs().filter((l) => l.level === 40 && l.code === 'E_WATCH_LIMIT').map((l) => l.msg)).toEqual([
      expect.stringMatching(/inotify watch limit is reached: .* raise it: sysctl fs\.inotify\.max_user_watches=/),
    ]);

    const status = await runCli(['status', '--config', w.configPath], w.env);
    expect(status.code).toBe(1); // degraded: needs attention
    expect(status.stdout).toMatch(/41 folders past the inotify watch limit, polled every \d+(\.\d)? s instead \(d\d+, d\d+, d\d+, … 38 more; 41 files\); raise the limit: sysctl fs\.inotify\.max_user_watches=524288/);

    const check = await runCli(['config', 'check', '--config', w.configPath], w.env);
    expect(check.stdout).toMatch(/^✓ status endpoint 127\.0\.0\.1:\d+: the daemon running this config \(pid \d+\) answers there$/m);
    expect(check.stdout).toMatch(/^! mapping .+?: the running daemon:\n(.*\n)*? +41 folders past the inotify watch limit, .*raise the limit: sysctl fs\.inotify\.max_user_watches=/m);
  });
});

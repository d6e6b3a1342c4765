/**
 * Issue 12, inotify exhaustion: when adding a folder's watch fails with ENOSPC, that folder
 * and its subtree are polled instead of going silent, and the watcher says so with the
 * command that raises the limit. Real folders and real inotify; only `fs.watch` is wrapped
 * to fail with ENOSPC for the folders under "deep" (lowering the system-wide limit would
 * disturb every other process on the machine), so the watch here is fs.watch
 * (DSSYNC_NATIVE=0); the daemon's test (test/integration/daemon/watch-limit.test.ts)
 * runs the same limit on dssync's own inotify watch.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { RawEvent } from '../../../src/local/watch/aggregator.js';
import { startWatcher, type Watcher, type WatchError } from '../../../src/local/watch/watcher.js';
import { realClock } from '../../../src/time/clock.js';
import { waitFor } from '../../helpers/wait-for.js';

vi.mock('node:fs', async (importOriginal) => {
  const real = await importOriginal<typeof import('node:fs')>();
  const watch = ((path: string, ...rest: unknown[]) => {
    if (String(path).includes('/deep')) throw Object.assign(new Error(`ENOSPC: System limit for number of file watchers reached, watch '${path}'`), { code: 'ENOSPC' });
    return (real.watch as (...a: unknown[]) => unknown)(path, ...rest);
  }) as typeof real.watch;
  return { ...real, default: { ...real, watch }, watch };
});

// Read at the module's first watch (src/local/watch/inotify.ts; a test file has its own modules).
vi.stubEnv('DSSYNC_NATIVE', '0');
afterAll(() => void vi.unstubAllEnvs());

let root: string;
let watcher: Watcher | undefined;
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'dssync-limit-'));
});
afterEach(async () => {
  await watcher?.close();
  watcher = undefined;
  await rm(root, { recursive: true, force: true });
});

/** waitFor with what was seen in the timeout message. */
function waitSeen(what: string, cond: () => boolean, seen: () => unknown, timeoutMs = 15_000): Promise<void> {
  return waitFor(cond, { what, timeout: timeoutMs, interval: 20, describe: () => JSON.stringify(seen()) });
}

describe('startWatcher past the inotify watch limit', () => {
  it('polls the folders it could not watch, reports the limit with the fix, and still watches the rest', { timeout: 30_000 }, async () => {
    await mkdir(join(root, 'deep', 'sub'), { recursive: true });
    await writeFile(join(root, 'top.txt'), 'top');
    await writeFile(join(root, 'deep', 'sub', 'y.txt'), 'y');
    const events: RawEvent[] = [];
    const errors: WatchError[] = [];
    watcher = await startWatcher({
      root,
      filter: () => true,
      onEvent: (e) => events.push(e),
      onError: (e) => errors.push(e),
      clock: realClock,
      watchMode: 'events',
      pollTargetMs: 50,
      pollBudgetPercent: 5,
      readMountInfo: async () => `1 0 8:1 / / rw - ext4 /dev/sda1 rw`,
    });
    const w = watcher;
    const st = w.status!();
    expect(st.mounts).toEqual([expect.objectContaining({ fsType: 'ext4', kind: 'events' })]);
    expect(st.overLimit).toEqual(['deep']);
    expect(st.limitFix).toMatch(/sysctl fs\.inotify\.max_user_watches=/);
    expect(st.problems[0]).toMatch(/watch limit is reached: 1 folder.*max_user_watches/);
    expect(errors.map((e) => e.code)).toEqual(['E_WATCH_LIMIT']);

    // Ready only once the first poll cycle has learned the folder it polls instead.
    expect(st.poll).toMatchObject({ subtrees: ['deep'], bySubtree: { deep: { files: 1 } } });
    expect(st.poll!.cycles).toBeGreaterThanOrEqual(1);
    await writeFile(join(root, 'deep', 'sub', 'y.txt'), 'y, changed: seen by polling');
    await waitSeen('the change under deep (polled)', () => events.some((e) => e.path === 'deep/sub/y.txt' && e.kind === 'change'), () => events);
    await writeFile(join(root, 'top.txt'), 'top, changed: seen by events');
    await waitSeen('the change at the top (events)', () => events.some((e) => e.path === 'top.txt'), () => events);
  });
});

/**
 * Issue 12, inotify queue overflow, with the built daemon and the real kernel queue: the
 * daemon is stopped (SIGSTOP) so that nothing reads its inotify queue, more events than the
 * queue holds (fs.inotify.max_queued_events) are made, then changes whose events the kernel
 * must drop (a new folder with files, an edit, a deletion); then it runs again (SIGCONT).
 * Without the overflow seen, those changes would wait for the periodic full pass (an hour
 * here). dssync's own inotify watch reads the kernel's IN_Q_OVERFLOW record; under fs.watch
 * (DSSYNC_NATIVE=0) libuv drops it, and the burst read in one turn is taken as a
 * possible overflow. Either way it is logged once with the cause and the fix, counted in
 * /status, `dssync status` and /metrics, and a full pass mirrors every change.
 *
 * The system's max_queued_events is not lowered (it would apply to every other process
 * starting meanwhile): the events are writes alternating between two files, ~17,000 of
 * them at the default 16,384, made in well under a second (the kernel merges an event only
 * with an identical one right before it, so alternating names are all queued).
 */
import { closeSync, openSync, readFileSync, writeSync } from 'node:fs';
import { appendFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Workspace } from '../../helpers/mirror-check.js';
import { requireBuiltBinary, runCli } from '../cli/run-cli.js';
import { daemonWorkspace, freePort, startDaemon, waitConverged, waitFor, waitIdle, type DaemonProcess } from './daemon-process.js';

let ws: Workspace | undefined;
let daemon: DaemonProcess | undefined;
beforeAll(() => requireBuiltBinary());
afterEach(async () => {
  if (daemon) process.kill(daemon.pid, 'SIGCONT');
  await daemon?.kill();
  daemon = undefined;
  await ws?.close();
  ws = undefined;
});

/** The process's state letter in /proc (T: stopped). */
function procState(pid: number): string {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0]!;
}

const QUEUE_PATH = '/proc/sys/fs/inotify/max_queued_events';
const queueSize = ((): number | undefined => {
  try {
    return Number(readFileSync(QUEUE_PATH, 'utf8').trim());
  } catch {
    return undefined;
  }
})();

const BACKENDS = [
  { backend: 'inotify', reported: true, env: {} },
  { backend: 'fs.watch', reported: false, env: { DSSYNC_NATIVE: '0' } },
] as const;

describe.each(BACKENDS)('dssync run ($backend) when the inotify queue overflows', ({ backend, reported, env }) => {
  it.skipIf(queueSize === undefined)(`looks at everything again: every change whose event the kernel dropped is mirrored, and the log, status and /metrics say so${queueSize === undefined ? ` (SKIPPED: ${QUEUE_PATH} cannot be read: not Linux)` : ''}`, { timeout: 120_000 }, async () => {
    const size = queueSize!;
    ws = await daemonWorkspace({ config: { rescanIntervalSeconds: 3600, status: { listen: `127.0.0.1:${await freePort()}` }, watch: { mode: 'events' } } });
    const w = ws;
    await w.write('churn/a.txt', '');
    await w.write('churn/b.txt', '');
    await w.write('keep.txt', 'kept');
    await w.write('gone.txt', 'to be deleted');
    daemon = await startDaemon(w, { env });
    const d = daemon;
    await waitConverged(w, 'the startup full pass');
    await waitIdle(d);
    const before = (await d.status()).mappings[0]!;
    expect(before.watch!.queue).toEqual({ reported, queueSize: size, overflows: 0 });
    expect(before.watch!.backend?.name).toBe(backend);

    process.kill(d.pid, 'SIGSTOP');
    await waitFor(() => procState(d.pid) === 'T', { timeout: 10_000, what: 'the daemon to be stopped' });
    // More events than the queue holds: the kernel queues `size`, then drops the rest.
    const fa = openSync(join(w.share, 'churn/a.txt'), 'a');
    const fb = openSync(join(w.share, 'churn/b.txt'), 'a');
    try {
      for (let i = 0; i < size + 500; i++) writeSync(i % 2 === 0 ? fa : fb, 'x');
    } finally {
      closeSync(fa);
      closeSync(fb);
    }
    // Their events are dropped: only a look at everything finds them.
    for (let i = 0; i < 20; i++) await w.write(`lost/n${i}.txt`, `new file ${i}`);
    await appendFile(join(w.share, 'keep.txt'), ', edited');
    await rm(join(w.share, 'gone.txt'));
    await writeFile(join(w.share, 'churn/c.txt'), 'new beside the churn');
    process.kill(d.pid, 'SIGCONT');

    await waitConverged(w, 'the changes made while the inotify queue overflowed', 45_000);
    // Converged while its pass still runs: its closing line comes once it has finished.
    await waitFor(() => d.logs().filter((l) => l.msg === 'full pass done').length >= 2, { timeout: 30_000, what: 'the rescan to finish' });
    const m = (await d.status()).mappings[0]!;
    expect(m.watch!.queue).toMatchObject({ queueSize: size, overflows: 1, lastOverflowAt: expect.any(String) });
    if (reported) {
      // The kernel said so: no count of events is needed, and none is shown.
      expect(m.watch!.queue!.lastBurst).toBeUndefined();
    } else {
      // libuv read the whole queue in one turn: at least 90 % of it (the detection's threshold).
      expect(m.watch!.queue!.lastBurst).toBeGreaterThanOrEqual(Math.ceil(size * 0.9));
      expect(m.watch!.queue!.lastBurst).toBeLessThanOrEqual(size + 500);
    }
    // Not a lasting problem: the pass repaired it.
    expect(m.degraded).toEqual([]);

    const warnings = d.logs().filter((l) => l.code === 'E_WATCH_QUEUE_OVERFLOW');
    expect(warnings.map((l) => [l.level, l.msg])).toEqual([
      [
        40,
        expect.stringMatching(
          reported
            ? new RegExp(`^the inotify event queue overflowed \\(the kernel reported it; it holds ${size} events, fs\\.inotify\\.max_queued_events\\) and events were dropped.*full pass.*raise it: sysctl fs\\.inotify\\.max_queued_events=65536`)
            : new RegExp(`^the inotify event queue may have overflowed: \\d+ events arrived at once and it holds ${size} \\(fs\\.inotify\\.max_queued_events\\);.*full pass.*raise it: sysctl fs\\.inotify\\.max_queued_events=65536`),
        ),
      ],
    ]);
    expect(d.logs().filter((l) => l.msg === 'watcher lost events: full rescan').map((l) => l.reasons)).toEqual([['E_WATCH_QUEUE_OVERFLOW']]);
    expect(d.logs().filter((l) => l.msg === 'full pass done')).toHaveLength(2);

    expect(await d.metrics()).toMatch(/^dssync_inotify_queue_overflows_total 1$/m);
    const status = await runCli(['status', '--config', w.configPath], w.env);
    const burst = reported ? '' : ' \\([\\d,]+ events at once\\)';
    expect(status.stdout).toMatch(new RegExp(`the inotify queue \\(${size.toLocaleString('en-US')} events\\) ${reported ? 'overflowed' : 'may have overflowed'} once, last at \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d UTC${burst}: everything was looked at again; if it repeats, raise it: sysctl fs\\.inotify\\.max_queued_events=65536`));
    // fs.watch is named with why (here the operator's choice); dssync's own watch goes unsaid.
    if (reported) expect(status.stdout).not.toContain('fs.watch');
    else expect(status.stdout).toContain("events through Node's fs.watch, not dssync's inotify watch (DSSYNC_NATIVE=0)");
    expect(status.code).toBe(0); // not degraded
  });
});

/**
 * A daemon started while the disk that holds its state is full (the chaos suite's disk-full
 * case, which found this): the status token beside the state cannot be written. That is no
 * configuration problem and it passes, so the endpoint runs with the token kept in memory
 * (/healthz answers: a liveness probe must not restart the daemon over a full disk), the
 * daemon says why and keeps syncing, and the token file is written once there is space. Needs root for the small tmpfs; skipped, saying so, without it.
 */
import { execFileSync } from 'node:child_process';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Workspace } from '../../helpers/mirror-check.js';
import { authHeader, daemonWorkspace, docAt, startDaemon, waitFor, type DaemonProcess } from './daemon-process.js';

let ws: Workspace | undefined;
let daemon: DaemonProcess | undefined;
let mounted: string | undefined;

afterEach(async () => {
  await daemon?.kill();
  if (mounted) execFileSync('umount', [mounted]);
  await ws?.close();
  daemon = ws = mounted = undefined;
});

/** Fills the filesystem of `dir` to the last byte (ENOSPC ends it). */
async function fill(dir: string): Promise<string> {
  const file = join(dir, 'filler');
  try {
    execFileSync('dd', ['if=/dev/zero', `of=${file}`, 'bs=4k'], { stdio: 'ignore' });
  } catch {
    // dd exits 1 at ENOSPC: the disk is full, as wanted.
  }
  return file;
}

describe('a full disk at start', () => {
  it.skipIf(process.getuid?.() !== 0)('the endpoint runs with the token in memory (/healthz answers), the daemon says why and syncs, and the token file is written once there is space', { timeout: 120_000 }, async () => {
    ws = await daemonWorkspace({ config: { status: { listen: '127.0.0.1:0' } } });
    const stateDir = dirname(ws.statePath);
    await mkdir(stateDir, { recursive: true });
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=2m,mode=0700', 'tmpfs', stateDir]);
    mounted = stateDir;
    // A first run makes the state (and its token), then the disk fills up.
    await ws.write('a.txt', 'alpha');
    daemon = await startDaemon(ws);
    await waitFor(() => docAt(ws!, 'a.txt').length === 1, { timeout: 60_000, what: 'a.txt mirrored' });
    // Killed (a crash, an OOM kill): its lock file stays, and is taken over in place.
    await daemon.kill();
    // No token left from that run (a first start on a full disk): nothing to keep. (With one
    // there, it is kept and `dssync status` signs in with it: the chaos suite's case.)
    await rm(`${ws.statePath}.status-token`);
    const filler = await fill(stateDir);

    await ws.write('b.txt', 'bravo');
    daemon = await startDaemon(ws, { waitReady: false });
    const w = ws;
    const d = daemon;
    await waitFor(() => d.logs().some((l) => String(l.msg).startsWith('cannot write the status token file')), { timeout: 30_000, what: 'the token error line', describe: () => d.stdout() + d.stderr() });
    const line = d.logs().find((l) => String(l.msg).startsWith('cannot write the status token file'))!;
    expect(line.msg).toMatch(/\(ENOSPC\): the status endpoint runs with a token kept in memory .* trying again every 30 s\. Fix: free space/);
    // The endpoint runs: a liveness probe gets its answer on a full disk.
    await waitFor(() => d.logs().some((l) => l.msg === 'status endpoint listening'), { timeout: 30_000, what: 'the endpoint' });
    const url = String(d.logs().find((l) => l.msg === 'status endpoint listening')!['url']);
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    await waitFor(() => docAt(w, 'b.txt').length === 1, { timeout: 60_000, what: 'b.txt mirrored on a full state disk' });
    expect(d.child.exitCode).toBeNull();

    // Space again: the token file is written (at the next try, every 30 s) and signs in.
    await rm(filler);
    await writeFile(join(stateDir, 'marker'), 'space is back');
    await waitFor(() => d.logs().some((l) => String(l.msg).startsWith('status token file written')), { timeout: 60_000, what: 'the token file written' });
    expect((await fetch(`${url}/status`, { headers: authHeader(w) })).status).toBe(200);
    expect(d.child.exitCode).toBeNull();
  });
});

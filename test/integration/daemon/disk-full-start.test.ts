/**
 * A daemon started while the disk that holds its state is full (the chaos suite's disk-full
 * case, which found this): the status token beside the state cannot be written. That is no
 * configuration problem and it passes, so the daemon runs without its status endpoint, says
 * why, keeps syncing, and starts the endpoint once there is space again — as for a port in
 * use. Needs root for the small tmpfs; skipped, saying so, without it.
 */
import { execFileSync } from 'node:child_process';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Workspace } from '../../helpers/mirror-check.js';
import { daemonWorkspace, docAt, startDaemon, waitFor, type DaemonProcess } from './daemon-process.js';

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
  it.skipIf(process.getuid?.() !== 0)('the daemon runs without its status endpoint, says why, syncs, and starts the endpoint once there is space', { timeout: 120_000 }, async () => {
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
    const filler = await fill(stateDir);

    await ws.write('b.txt', 'bravo');
    daemon = await startDaemon(ws, { waitReady: false });
    const w = ws;
    await waitFor(() => daemon!.logs().some((l) => String(l.msg).startsWith('cannot write the status token file')), { timeout: 30_000, what: 'the token error line', describe: () => daemon!.stdout() + daemon!.stderr() });
    const line = daemon.logs().find((l) => String(l.msg).startsWith('cannot write the status token file'))!;
    expect(line.msg).toMatch(/\(ENOSPC\): running without the status endpoint .* trying again every 30 s\. Fix: free space/);
    await waitFor(() => docAt(w, 'b.txt').length === 1, { timeout: 60_000, what: 'b.txt mirrored without the endpoint' });
    expect(daemon.child.exitCode).toBeNull();

    // Space again: the endpoint starts at its next try (every 30 s).
    await rm(filler);
    await writeFile(join(stateDir, 'marker'), 'space is back');
    await waitFor(() => daemon!.logs().some((l) => l.msg === 'status endpoint listening'), { timeout: 60_000, what: 'the endpoint after space came back' });
    expect(daemon.child.exitCode).toBeNull();
  });
});

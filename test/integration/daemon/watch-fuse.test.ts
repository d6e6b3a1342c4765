/**
 * Issue 12 on a REAL FUSE mount: bindfs over a backing folder, the mapped folder being the
 * mount. Changes made in the backing folder (as a file server would: no inotify event on the
 * mount) must reach the service by polling; writes made through the mount by this host are
 * seen by events. Where FUSE is not available (no bindfs, no /dev/fuse, mount refused) the
 * tests are skipped and say why: they never pass without having run.
 */
import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Workspace } from '../../helpers/mirror-check.js';
import { requireBuiltBinary } from '../cli/run-cli.js';
import { daemonWorkspace, docAt, startDaemon, waitConverged, waitFor, waitIdle, type DaemonProcess } from './daemon-process.js';

/** Why FUSE cannot be used here (undefined: it can). */
function fuseUnavailable(): string | undefined {
  try {
    execFileSync('bindfs', ['--version'], { stdio: 'ignore' });
  } catch {
    return 'bindfs is not installed (apt-get install bindfs)';
  }
  const dir = mkdtempSync(join(tmpdir(), 'dssync-fuse-probe-'));
  try {
    mkdirSync(join(dir, 'b'));
    mkdirSync(join(dir, 'm'));
    execFileSync('bindfs', [join(dir, 'b'), join(dir, 'm')], { stdio: 'pipe' });
    execFileSync('fusermount', ['-u', join(dir, 'm')], { stdio: 'pipe' });
    return undefined;
  } catch (e) {
    return `a bindfs mount failed here (${(e as Error).message.split('\n')[0]}): no FUSE (/dev/fuse, privileges)`;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const why = fuseUnavailable();
if (why) console.warn(`SKIPPED: FUSE integration tests (issue 12): ${why}`);

let ws: Workspace | undefined;
let daemon: DaemonProcess | undefined;
let mounted: string | undefined;
let backDir: string | undefined;
beforeAll(() => requireBuiltBinary());
afterEach(async () => {
  await daemon?.kill();
  daemon = undefined;
  if (mounted) execFileSync('fusermount', ['-u', mounted]);
  mounted = undefined;
  await ws?.close();
  ws = undefined;
  if (backDir) await rm(backDir, { recursive: true, force: true });
  backDir = undefined;
});

/** A workspace whose mapped folder is a bindfs mount of a fresh backing folder. */
async function fuseWorkspace(watch: Record<string, unknown>): Promise<{ w: Workspace; back: string }> {
  ws = await daemonWorkspace({ config: { rescanIntervalSeconds: 3600, watch } });
  backDir = await mkdtemp(join(tmpdir(), 'dssync-fuse-back-'));
  execFileSync('bindfs', [backDir, ws.share]);
  mounted = ws.share;
  return { w: ws, back: backDir };
}

describe.skipIf(why !== undefined)('dssync run on a FUSE mount (bindfs)', () => {
  it('polls the mount: new files, edits, renames, deletes and new folders made in the backing folder reach the service', { timeout: 180_000 }, async () => {
    const { w, back } = await fuseWorkspace({ pollIntervalSeconds: 1 });
    await writeFile(join(back, 'start.txt'), 'there at start');
    daemon = await startDaemon(w);
    const d = daemon;
    await waitConverged(w, 'the startup full pass');

    // auto classified the mount as FUSE: polled, and says so.
    await waitFor(async () => ((await d.status()).mappings[0]?.watch?.poll?.cycles ?? 0) >= 1, { timeout: 30_000, what: 'a first poll cycle' });
    const st = (await d.status()).mappings[0]!;
    expect(st.watch!.mounts[0]).toMatchObject({ fsType: expect.stringMatching(/^fuse/), kind: 'poll' });

    await writeFile(join(back, 'new.txt'), 'created on the server side');
    await waitConverged(w, 'a file created in the backing folder');
    const id = docAt(w, 'new.txt')[0]!.document_id;

    await writeFile(join(back, 'start.txt'), 'edited on the server side, longer');
    await waitConverged(w, 'a file edited in the backing folder');

    await rename(join(back, 'new.txt'), join(back, 'renamed.txt'));
    await waitConverged(w, 'a file renamed in the backing folder');
    expect(docAt(w, 'renamed.txt')[0]?.document_id).toBe(id); // paired by content: a rename

    await mkdir(join(back, 'folder', 'sub'), { recursive: true });
    await writeFile(join(back, 'folder', 'sub', 'deep.md'), '# a new folder');
    await waitConverged(w, 'a new folder in the backing folder');

    await rm(join(back, 'start.txt'));
    await waitConverged(w, 'a file deleted in the backing folder');
    await waitIdle(d);
    const full = d.logs().filter((l) => l.msg === 'full pass done').length;
    expect(full).toBe(1); // the poller found them, not a rescan
    const s = (await d.status()).mappings[0]!;
    expect(s.watch!.poll).toMatchObject({ lastFiles: expect.any(Number), lastCycleMs: expect.any(Number) });
    expect(s.degraded).toEqual([]);
  });

  it('sees writes made through the mount by events (polling an hour apart)', { timeout: 120_000 }, async () => {
    const { w } = await fuseWorkspace({ pollIntervalSeconds: 3600 });
    daemon = await startDaemon(w);
    await waitIdle(daemon);
    await w.write('through-the-mount.txt', 'written by this host');
    await waitConverged(w, 'a file written through the mount');
    await w.write('sub/also.md', 'in a new folder, through the mount');
    await waitConverged(w, 'a new folder written through the mount');
  });
});

/**
 * Issue 24.2: idle connections to the status port must not use up the daemon's file
 * descriptors. The built daemon runs under `prlimit --nofile=256:256`; the test opens more
 * idle sockets to its status port than that limit and sends nothing on them. The daemon must
 * keep only a few (it closes the rest), still mirror a new file, answer /healthz, and live.
 */
import { existsSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { Workspace } from '../../helpers/mirror-check.js';
import { daemonWorkspace, startDaemon, waitConverged, waitFor, type DaemonProcess } from '../daemon/daemon-process.js';

const PRLIMIT = '/usr/bin/prlimit';
const LIMIT = 256;
const IDLE_SOCKETS = 400;

let ws: Workspace | undefined;
let daemon: DaemonProcess | undefined;
const sockets: Socket[] = [];

afterEach(async () => {
  for (const s of sockets.splice(0)) s.destroy();
  await daemon?.kill();
  await ws?.close();
  daemon = ws = undefined;
});

describe.skipIf(!existsSync(PRLIMIT))('security: idle connections to the status port (needs /usr/bin/prlimit)', () => {
  it(`${IDLE_SOCKETS} idle sockets against a daemon limited to ${LIMIT} descriptors: it closes them, mirrors, answers /healthz and lives`, { timeout: 120_000 }, async () => {
    ws = await daemonWorkspace();
    await ws.write('a.txt', 'alpha');
    daemon = await startDaemon(ws, { prefix: [PRLIMIT, `--nofile=${LIMIT}:${LIMIT}`, '--'] });
    await waitConverged(ws, 'the startup pass');
    const { port } = new URL(daemon.url);
    let closedByDaemon = 0;
    await Promise.all(
      Array.from({ length: IDLE_SOCKETS }, () => new Promise<void>((resolve) => {
        const s = connect({ host: '127.0.0.1', port: Number(port) }, () => resolve());
        s.on('error', () => resolve());
        // Read (and drop) whatever the daemon sends (a 408): unread data would hold back 'close'.
        s.resume();
        s.on('close', () => {
          closedByDaemon++;
          resolve();
        });
        sockets.push(s);
      })),
    );
    // The daemon keeps a small number (a sixteenth of its limit) and closes the others.
    await waitFor(() => closedByDaemon >= IDLE_SOCKETS - LIMIT / 16, { timeout: 30_000, what: 'the daemon to close the surplus idle sockets', describe: () => `${closedByDaemon} closed` });
    // The sync goes on: a new file is mirrored, state writes succeed.
    await ws.write('b.txt', 'beta');
    await waitConverged(ws, 'b.txt written while idle sockets are open');
    // The endpoint answers, and the process is alive.
    expect((await daemon.healthz()).httpStatus).toBe(200);
    expect(daemon.child.exitCode).toBeNull();
    expect(daemon.stdout() + daemon.stderr()).not.toMatch(/EMFILE/);
    // The few it kept are closed too once idle (20 s without a request).
    await waitFor(() => closedByDaemon === IDLE_SOCKETS, { timeout: 60_000, what: 'the idle deadline to close the rest', describe: () => `${closedByDaemon} closed` });
  });
});

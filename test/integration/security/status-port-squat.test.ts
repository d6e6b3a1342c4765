/**
 * Issue 10.6: a local user (or another dssync with another config) holding the status port
 * does not stop the daemon: it syncs without the endpoint, says so naming status.listen,
 * and keeps trying to bind.
 */
import { createServer, type Server } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { Workspace } from '../../helpers/mirror-check.js';
import { daemonWorkspace, startDaemon, waitConverged, waitFor, type DaemonProcess } from '../daemon/daemon-process.js';

let ws: Workspace | undefined;
let daemon: DaemonProcess | undefined;
let squatter: Server | undefined;

afterEach(async () => {
  await daemon?.kill();
  await ws?.close();
  await new Promise<void>((r) => (squatter ? squatter.close(() => r()) : r()));
  daemon = ws = squatter = undefined;
});

describe('security: a squatted status port', () => {
  it('the daemon starts without the endpoint, names status.listen, and still syncs', { timeout: 60_000 }, async () => {
    squatter = createServer((s) => s.end('HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\r\n{"status":"ok"}'));
    await new Promise<void>((r) => squatter!.listen(0, '127.0.0.1', () => r()));
    const port = (squatter.address() as { port: number }).port;
    ws = await daemonWorkspace({ config: { status: { listen: `127.0.0.1:${port}` } } });
    await ws.write('a.txt', 'alpha');
    daemon = await startDaemon(ws, { waitReady: false });
    await waitFor(() => daemon!.logs().some((l) => String(l.msg).includes('status.listen')), { timeout: 30_000, what: 'the status.listen error line' });
    const line = daemon.logs().find((l) => String(l.msg).includes('status.listen'))!;
    expect(line.msg).toContain(`status.listen 127.0.0.1:${port} is in use by another program`);
    expect(line.msg).toMatch(/trying again every 30 s\. Fix: /);
    await waitConverged(ws, 'a.txt mirrored without the endpoint');
    expect(daemon.child.exitCode).toBeNull();
  });
});

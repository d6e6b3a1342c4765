/**
 * Issue 36.1: another local user listening on the status port (uid 65534 through setpriv)
 * while the daemon is down, restarting or kept off its port, never receives the status token
 * from `dssync status`, `pause`, `resume`, `confirm-delete` or `status --url`: the CLI talks
 * to the daemon through its 0600 socket beside the state, and over TCP only to a listener of
 * the daemon's user. With the daemon up, the same commands work.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Workspace } from '../../helpers/mirror-check.js';
import { AS_NOBODY } from '../../helpers/as-nobody.js';
import { requireBuiltBinary, runCli, type CliResult } from '../cli/run-cli.js';
import { daemonWorkspace, freePort, startDaemon, waitConverged, waitFor, type DaemonProcess } from '../daemon/daemon-process.js';

let ws: Workspace | undefined;
let daemon: DaemonProcess | undefined;
let squatter: { child: ChildProcess; received(): string; stop(): Promise<void> } | undefined;
beforeAll(() => requireBuiltBinary());
afterEach(async () => {
  await squatter?.stop();
  await daemon?.kill();
  await ws?.close();
  squatter = daemon = ws = undefined;
});

/**
 * A squatter as nobody on 127.0.0.1:port that answers every request as a dssync daemon would
 * (200, JSON) and prints every byte it receives: what a thief would keep.
 */
async function squat(port: number): Promise<NonNullable<typeof squatter>> {
  const script = `
    const s = require('net').createServer((c) => {
      c.on('data', (d) => { process.stdout.write(d); c.end('HTTP/1.1 200 OK\\r\\ncontent-type: application/json\\r\\nconnection: close\\r\\n\\r\\n{"status":"ok","csrf":"x","code":"aaaaaaaaaaaaaaaaaaaa"}'); });
      c.on('error', () => {});
    });
    s.listen(${port}, '127.0.0.1', () => process.stderr.write('listening\\n'));`;
  const child = spawn(AS_NOBODY[0], [...AS_NOBODY.slice(1), process.execPath, '-e', script], { stdio: ['ignore', 'pipe', 'pipe'], cwd: '/' });
  let out = '';
  let err = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d));
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (err += d));
  await waitFor(() => err.includes('listening') || child.exitCode !== null, { timeout: 10_000, what: 'the squatter listening' });
  if (child.exitCode !== null) throw new Error(`the squatter could not listen: ${err}`);
  return {
    child,
    received: () => out,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGKILL');
      }),
  };
}

const nobodyRunsNode = spawnSync(AS_NOBODY[0], [...AS_NOBODY.slice(1), process.execPath, '-e', '0'], { stdio: 'ignore', cwd: '/' }).status === 0;

describe('security: the status token goes only to the daemon (issue 36.1)', () => {
  it.skipIf(!nobodyRunsNode)('a squatter on the port gets no token from status, pause, resume, confirm-delete or --url; the daemon, up, answers them', { timeout: 180_000 }, async () => {
    const port = await freePort();
    ws = await daemonWorkspace({ config: { status: { listen: `127.0.0.1:${port}` } } });
    const w = ws;
    await w.write('a.txt', 'alpha');
    daemon = await startDaemon(w);
    await waitConverged(w, 'a.txt mirrored');
    const id = (await daemon.status()).mappings[0]!.id;
    const token = readFileSync(`${w.statePath}.status-token`, 'utf8').trim();
    await daemon.stop();
    daemon = undefined;

    // The daemon is down; nobody takes the port; the operator asks.
    squatter = await squat(port);
    const runs: Record<string, CliResult> = {
      status: await runCli(['status', '--config', w.configPath], w.env),
      statusJson: await runCli(['status', '--config', w.configPath, '--json'], w.env),
      history: await runCli(['status', '--config', w.configPath, '--history'], w.env),
      pause: await runCli(['pause', '--config', w.configPath, '--mapping', id], w.env),
      resume: await runCli(['resume', '--config', w.configPath, '--mapping', id], w.env),
      confirm: await runCli(['confirm-delete', '--config', w.configPath, '--mapping', id], w.env),
      pending: await runCli(['status', '--config', w.configPath, '--pending-deletes'], w.env),
      url: await runCli(['status', '--config', w.configPath, '--url'], w.env),
    };
    expect(squatter.received()).not.toContain(token);
    expect(squatter.received()).toBe('');
    for (const [what, r] of Object.entries(runs)) expect(`${r.stdout}${r.stderr}`, what).not.toContain(token);
    expect(runs.status!.stdout).toMatch(/uid 65534 listens at http:\/\/127\.0\.0\.1:\d+, not the daemon's user: nothing was sent to it/);
    for (const what of ['pause', 'resume', 'confirm', 'url']) expect(runs[what]!.code, what).not.toBe(0);
    expect(runs.pause!.stderr).toContain("not the daemon's user");

    // The daemon starts while the port is still taken: the CLI reaches it through its socket.
    daemon = await startDaemon(w, { waitReady: false });
    await waitFor(() => daemon!.logs().some((l) => String(l.msg).includes('status socket listening')), { timeout: 30_000, what: 'the status socket' });
    const paused = await runCli(['pause', '--config', w.configPath, '--mapping', id], w.env);
    expect(paused.code, paused.stderr).toBe(0);
    expect(paused.stdout).toContain('paused');
    const st = await runCli(['status', '--config', w.configPath], w.env);
    expect(st.stdout).toMatch(/mapping \S+: paused/);
    // No login link while the page's address is another program's: the browser would go there.
    const link = await runCli(['status', '--config', w.configPath, '--url'], w.env);
    expect(link.code).not.toBe(0);
    expect(link.stderr).toContain('is not bound yet');
    expect(squatter.received()).toBe('');

    // The squatter lets go; the daemon takes its port (it retries every 30 s; restarted here
    // so the test does not wait), and every command works over the socket and the page's link.
    await squatter.stop();
    squatter = undefined;
    await daemon.stop();
    daemon = await startDaemon(w);
    const resumed = await runCli(['resume', '--config', w.configPath, '--mapping', id], w.env);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stdout).toContain('resumed');
    const url = await runCli(['status', '--config', w.configPath, '--url'], w.env);
    expect(url.code, url.stderr).toBe(0);
    expect(url.stdout).toMatch(new RegExp(`^http://127\\.0\\.0\\.1:${port}/login\\?code=[\\w-]{16,}`));
    const confirm = await runCli(['confirm-delete', '--config', w.configPath, '--mapping', id], w.env);
    expect(confirm.stderr).toContain('has no deletions waiting');
  });
});

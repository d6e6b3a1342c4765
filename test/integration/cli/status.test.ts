/**
 * `dssync status` as an operator runs it: the built binary, real folders, the emulator,
 * and a real `dssync run` daemon answering on loopback. Status never gets the token: it
 * must work without it. Every wait polls for a condition with a generous deadline.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createWorkspace, TOKEN, type Workspace } from '../../helpers/mirror-check.js';
import { BIN, jsonOf, requireBuiltBinary, runCli, type CliResult } from './run-cli.js';
import { authHeader } from '../daemon/daemon-process.js';
import { corruptStateText } from '../../helpers/state-fixture.js';

interface StateJson {
  source: string;
  stateFile: string;
  daemon: { url: string | null; reason: string };
  installation?: { id: string; origin: string; formerIds: number };
  mappings: { id: string; inConfig: boolean; synced: boolean; filesTracked: number; unfinishedWrites: number; lastPass: { ok: boolean } | null }[];
}
interface DaemonJson {
  source: string;
  url: string;
  pid: number;
  installation?: { id: string; origin: string; formerIds: number };
  mappings: { id: string; phase: string; degraded: string[]; filesTracked: number }[];
}

let ws: Workspace | undefined;
let daemon: ChildProcess | undefined;
let server: Server | undefined;

beforeAll(() => requireBuiltBinary());
afterEach(async () => {
  if (daemon && daemon.exitCode === null && daemon.signalCode === null) {
    daemon.kill('SIGKILL');
    await exitOf(daemon);
  }
  daemon = undefined;
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = undefined;
  await ws?.close();
  ws = undefined;
});

/** A port nothing listens on (listen on 0, then close). */
async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  const { port } = s.address() as AddressInfo;
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}

/** Writes the workspace's config with these mappings and status address. */
async function writeConfig(w: Workspace, listen: string | false, mappings?: Record<string, unknown>[]): Promise<void> {
  const config = {
    baseUrl: w.emu.url,
    organizationId: 'org-test',
    statePath: w.statePath,
    queue: { requestsPerSecond: 200, concurrency: 4, maxAttempts: 6 },
    status: { listen },
    ingestionCheck: { enabled: false },
    mappings: mappings ?? [{ id: 'share', path: w.share, dataSource: { name: 'Share', llmConnectorIds: ['conn-1'] } }],
  };
  await writeFile(w.configPath, JSON.stringify(config, null, 2), { mode: 0o600 });
}

/** `dssync status` without the token in its environment: an operator may not have it. */
const status = (w: Workspace, ...extra: string[]): Promise<CliResult> =>
  runCli(['status', '--config', w.configPath, ...extra], { DSSYNC_LOG_LEVEL: 'warn' });

function expectNoToken(r: CliResult): void {
  expect(r.stdout + r.stderr).not.toContain(TOKEN);
}

function exitOf(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve) => child.once('exit', (code) => resolve(code)));
}

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Starts `dssync run` on the workspace's config; its output is kept for failure messages. */
function startDaemon(w: Workspace): { child: ChildProcess; output: () => string } {
  const child = spawn(process.execPath, [BIN, 'run', '--config', w.configPath], {
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/tmp', DSSYNC_TOKEN: TOKEN, DSSYNC_LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.setEncoding('utf8').on('data', (d: string) => (output += d));
  child.stderr?.setEncoding('utf8').on('data', (d: string) => (output += d));
  daemon = child;
  return { child, output: () => output };
}

/** The endpoint's JSON, or undefined while it does not answer yet. */
async function getJson<T>(url: string): Promise<T | undefined> {
  try {
    // /status needs the daemon's token (issue 24.1): the test runs as the daemon's user.
    const res = await fetch(url, { headers: url.endsWith('/healthz') || !ws ? {} : authHeader(ws) });
    return res.ok ? ((await res.json()) as T) : undefined;
  } catch {
    return undefined;
  }
}

describe('dssync status without a daemon', () => {
  it('says there is no state yet, and names the address that did not answer (exit 0)', { timeout: 30_000 }, async () => {
    ws = await createWorkspace();
    const port = await freePort();
    await writeConfig(ws, `127.0.0.1:${port}`);

    const human = await status(ws);
    expect(human.code, human.stderr).toBe(0);
    expect(human.stdout).toContain(`daemon not running (no answer at http://127.0.0.1:${port}`);
    expect(human.stdout).toContain('no state yet: dssync has not synced with this config');
    expect(human.stdout).toContain(ws.statePath);

    const json = jsonOf<StateJson>(await status(ws, '--json'));
    expect(json).toMatchObject({ source: 'state-file', stateFile: 'missing', daemon: { url: `http://127.0.0.1:${port}` } });
  });

  it('does not mistake another program on the status port for the daemon', { timeout: 30_000 }, async () => {
    ws = await createWorkspace();
    server = createServer((_req, res) => res.writeHead(404, { 'content-type': 'text/html' }).end('<h1>not here</h1>'));
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    await writeConfig(ws, `127.0.0.1:${port}`);

    const r = await status(ws, '--json');
    expect(r.code, r.stderr).toBe(0);
    const json = jsonOf<StateJson>(r);
    expect(json.source).toBe('state-file');
    expect(json.daemon.reason).toContain(`no dssync daemon at http://127.0.0.1:${port} (GET /status answered HTTP 404)`);
  });

  it('after a sync, reads the state file: files tracked, last pass (no token needed)', { timeout: 60_000 }, async () => {
    ws = await createWorkspace();
    await writeConfig(ws, false);
    await ws.write('a.txt', 'alpha');
    await ws.write('b.md', '# bravo');
    await ws.write('sub/c.txt', 'charlie');
    const sync = await ws.sync();
    expect(sync.code, sync.stderr).toBe(0);

    const human = await status(ws);
    expect(human.code, human.stderr).toBe(0);
    expect(human.stdout).toContain('the status endpoint is off (status.listen is false)');
    expect(human.stdout).toContain(`From the state file ${ws.statePath}`);
    // Which files hold the state, and whether statePath itself is written yet (issue 25.10).
    // The snapshot is on disk from the first write (what every release reads first: docs/upgrading.md).
    expect(existsSync(ws.statePath)).toBe(true);
    expect(human.stdout).toContain(`state files: ${ws.statePath} (the snapshot), ${ws.statePath}.journal (changes since the snapshot), ${ws.statePath}.lock,`);
    expect(human.stdout).toContain(`${ws.statePath}.problems.json, ${ws.statePath}.feed.json, ${ws.statePath}.identity.json`);
    // The installation id, to pin it before moving to containers (issue 23).
    expect(human.stdout).toMatch(/^installation [0-9a-f]{16} \(drawn at random\); pin it with "installationId" or DSSYNC_INSTALLATION_ID for containers$/m);
    expect(human.stdout).toMatch(/^mapping share$/m);
    expect(human.stdout).toMatch(/^ {2}files tracked: +3$/m);
    expect(human.stdout).toMatch(/^ {2}unfinished writes: +none$/m);
    expect(human.stdout).toMatch(/^ {2}last pass: +ok, .*3 uploaded$/m);
    expectNoToken(human);

    const json = jsonOf<StateJson>(await status(ws, '--json'));
    expect(json.source).toBe('state-file');
    expect(json.installation).toEqual({ id: expect.stringMatching(/^[0-9a-f]{16}$/), origin: 'drawn', formerIds: 0 });
    expect(json.mappings).toEqual([expect.objectContaining({ id: 'share', inConfig: true, synced: true, filesTracked: 3, unfinishedWrites: 0, lastPass: expect.objectContaining({ ok: true }) })]);
  });

  it('names a corrupt state file and exits 2 (the registry: as every command)', { timeout: 30_000 }, async () => {
    ws = await createWorkspace();
    await writeConfig(ws, false);
    await mkdir(join(ws.statePath, '..'), { recursive: true });
    await writeFile(ws.statePath, corruptStateText());
    const r = await status(ws);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`state file ${ws.statePath} is corrupt`);
  });
});

describe('dssync status with a running daemon', () => {
  it('shows what the daemon reports; a degraded mapping makes it exit 1', { timeout: 90_000 }, async () => {
    ws = await createWorkspace();
    const port = await freePort();
    await ws.write('a.txt', 'alpha');
    await ws.write('docs/b.md', '# bravo');
    // The second mapping's folder is missing: an outage, so that mapping is degraded.
    await writeConfig(ws, `127.0.0.1:${port}`, [
      { id: 'share', path: ws.share, dataSource: { name: 'Share', llmConnectorIds: ['conn-1'] } },
      { id: 'gone', path: join(ws.dir, 'not-mounted'), dataSource: { name: 'Gone', llmConnectorIds: ['conn-1'] } },
    ]);
    const d = startDaemon(ws);
    const base = `http://127.0.0.1:${port}`;
    await until('the daemon\'s /healthz', async () => {
      if (d.child.exitCode !== null) throw new Error(`the daemon exited ${d.child.exitCode}:\n${d.output()}`);
      return getJson(`${base}/healthz`);
    });
    await until('share watching and gone degraded', async () => {
      const s = await getJson<DaemonJson>(`${base}/status`);
      const share = s?.mappings.find((m) => m.id === 'share');
      const gone = s?.mappings.find((m) => m.id === 'gone');
      return share?.phase === 'watching' && share.filesTracked === 2 && gone?.phase === 'degraded' ? s : undefined;
    });

    const r = await status(ws, '--json');
    expect(r.code, r.stderr).toBe(1);
    const json = jsonOf<DaemonJson>(r);
    expect(json.source).toBe('daemon');
    expect(json.url).toBe(base);
    expect(json.pid).toBe(d.child.pid);
    expect(json.installation).toEqual({ id: expect.stringMatching(/^[0-9a-f]{16}$/), origin: 'drawn', formerIds: 0 });
    expect(json.mappings.find((m) => m.id === 'share')).toMatchObject({ phase: 'watching', filesTracked: 2, degraded: [] });
    expect(json.mappings.find((m) => m.id === 'gone')?.degraded.length).toBeGreaterThan(0);
    expectNoToken(r);

    const human = await status(ws);
    expect(human.code).toBe(1);
    expect(human.stdout).toContain(`daemon: running, pid ${d.child.pid}`);
    expect(human.stdout).toMatch(new RegExp(`^ {2}installation: +${json.installation!.id} \\(drawn at random\\); pin it with "installationId" or DSSYNC_INSTALLATION_ID for containers$`, 'm'));
    expect(human.stdout).toMatch(/^mapping share: watching$/m);
    expect(human.stdout).toMatch(/^ {2}files tracked: 2$/m);
    expect(human.stdout).toMatch(/^mapping gone: degraded$/m);
    expect(human.stdout).toMatch(/^ {2}degraded: +\S/m);
    expect(human.stdout.trimEnd().endsWith('Needs attention: gone.')).toBe(true);
    expectNoToken(human);

    d.child.kill('SIGTERM');
    expect(await exitOf(d.child)).toBe(0);
  });

  it('reads the state file while a daemon without a status endpoint holds its lock', { timeout: 90_000 }, async () => {
    ws = await createWorkspace();
    await writeConfig(ws, false);
    await ws.write('a.txt', 'alpha');
    await ws.write('b.txt', 'bravo');
    const d = startDaemon(ws);
    const json = await until('the daemon to record its first pass', async () => {
      if (d.child.exitCode !== null) throw new Error(`the daemon exited ${d.child.exitCode}:\n${d.output()}`);
      const r = await status(ws!, '--json');
      if (r.code !== 0) return undefined;
      const s = jsonOf<StateJson>(r);
      return s.mappings[0]?.filesTracked === 2 && s.mappings[0].lastPass?.ok ? s : undefined;
    }, 60_000);
    expect(json.source).toBe('state-file');
    expect(d.child.exitCode).toBeNull();

    d.child.kill('SIGTERM');
    expect(await exitOf(d.child)).toBe(0);
  });
});

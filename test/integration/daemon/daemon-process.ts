/**
 * A real `dssync run` process for daemon tests: the built binary, a workspace (temp folder +
 * in-process emulator, see mirror-check.ts), the status endpoint on a free loopback port
 * (port 0; the address is read from the daemon's own "status endpoint listening" log line),
 * short debounce and ingestion delay. Stdout (JSON log lines) and stderr are collected.
 *
 * Every wait here polls a condition with a generous deadline; nothing relies on a fixed sleep.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { TOKEN_PATH } from '@dssync/emulator';
import { createServer, type AddressInfo } from 'node:net';
import { isDeepStrictEqual } from 'node:util';
import { BIN } from '../cli/run-cli.js';
import { CONVERGED, checkConvergence, createWorkspace, type Convergence, type Workspace, type WorkspaceOptions, fileDocuments } from '../../helpers/mirror-check.js';
import type { DaemonStatus } from '../../../src/daemon/status/schema.js';
import { StopWaiting, waitFor, type WaitOptions } from '../../helpers/wait-for.js';

/** Settings every daemon test shares; a test's own `config` keys win. */
export const DAEMON_CONFIG = {
  status: { listen: '127.0.0.1:0' },
  debounceMs: 300,
  ingestionCheck: { enabled: true, delaySeconds: 1 },
  queue: { requestsPerSecond: 1000, concurrency: 4, maxAttempts: 6 },
};

export function daemonWorkspace(opts: WorkspaceOptions = {}): Promise<Workspace> {
  return createWorkspace({ ...opts, config: { ...DAEMON_CONFIG, ...opts.config } });
}

/** The emulator's test account's password (packages/emulator: `dev-user`). */
export const DEV_PASSWORD = 'dev-password';

/**
 * A daemon workspace whose config takes its tokens from the emulator's OIDC token endpoint
 * with the password grant (`dev-user`); start the daemon with `PASSWORD_GRANT_ENV`.
 */
export async function passwordGrantWorkspace(oidc: { tokenTtlSeconds: number; refreshTtlSeconds: number }): Promise<Workspace> {
  const w = await daemonWorkspace({ emulator: { oidc } });
  const config = JSON.parse(await readFile(w.configPath, 'utf8')) as Record<string, unknown>;
  config.auth = { type: 'oauth2', tokenUrl: `${w.emu.url}${TOKEN_PATH}`, grantType: 'password', clientId: 'dssync', username: 'dev-user' };
  await writeFile(w.configPath, JSON.stringify(config), { mode: 0o600 });
  return w;
}

/** The daemon's environment for passwordGrantWorkspace: the password, and no static token. */
export const PASSWORD_GRANT_ENV = { DSSYNC_PASSWORD: DEV_PASSWORD, DSSYNC_TOKEN: '' };

export interface LogLine {
  level: number;
  msg: string;
  [key: string]: unknown;
}

export interface Healthz {
  status: 'ok' | 'degraded';
  reasons: string[];
}

export interface DaemonProcess {
  readonly child: ChildProcess;
  readonly pid: number;
  /** The status endpoint, http://127.0.0.1:PORT (set once started). */
  readonly url: string;
  /** Everything written to stdout / stderr so far. */
  stdout(): string;
  stderr(): string;
  /** Stdout's JSON log lines so far (other lines are ignored). */
  logs(): LogLine[];
  /** Resolves when the process has exited. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  healthz(): Promise<{ httpStatus: number; body: Healthz }>;
  status(): Promise<DaemonStatus>;
  metrics(): Promise<string>;
  /** Sends SIGTERM and waits for the exit; returns the code and how long it took. */
  stop(signal?: NodeJS.Signals): Promise<{ code: number | null; ms: number }>;
  /** SIGKILL if still running (cleanup). */
  kill(): Promise<void>;
}

export interface SpawnOptions {
  /** Extra environment (DSSYNC_TOKEN and DSSYNC_LOG_LEVEL=info are set). */
  env?: Record<string, string>;
  configPath?: string;
  /** Wait for /healthz to answer (default true). */
  waitReady?: boolean;
  /**
   * A command the daemon runs under, its arguments then node's follow (e.g. `unshare -Ur sh
   * -c '…; exec "$0" "$@"'` for a lower inotify limit, `setpriv` for fewer privileges).
   */
  prefix?: string[];
}

/** Spawns `dssync run --config <cfg>` and waits for its status endpoint to answer. */
export async function startDaemon(ws: Workspace, opts: SpawnOptions = {}): Promise<DaemonProcess> {
  const argv = [process.execPath, BIN, 'run', '--config', opts.configPath ?? ws.configPath];
  const [cmd, ...args] = [...(opts.prefix ?? []), ...argv] as [string, ...string[]];
  const child = spawn(cmd, args, {
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/tmp', ...ws.env, DSSYNC_LOG_LEVEL: 'info', ...opts.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  const lines: LogLine[] = [];
  let partial = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => {
    out += d;
    partial += d;
    const parts = partial.split('\n');
    partial = parts.pop() ?? '';
    for (const l of parts) {
      try {
        const v = JSON.parse(l) as LogLine;
        if (v && typeof v === 'object') lines.push(v);
      } catch {
        // not a JSON line
      }
    }
  });
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (err += d));
  let exitInfo: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => {
      exitInfo = { code, signal };
      resolve(exitInfo);
    });
  });

  let url = '';
  const configPath = opts.configPath ?? ws.configPath;
  // /status needs the daemon's token on loopback too (issue 24.1); /healthz and /metrics do
  // not, but /healthz gives its reasons only with it: the test asks as the operator.
  const get = async (path: string): Promise<Response> => {
    const headers: Record<string, string> = { authorization: `Bearer ${statusToken(configPath, ws.statePath)}` };
    return fetch(`${url}${path}`, { headers, signal: AbortSignal.timeout(10_000) });
  };
  const d: DaemonProcess = {
    child,
    pid: child.pid ?? -1,
    get url() {
      return url;
    },
    stdout: () => out,
    stderr: () => err,
    logs: () => [...lines],
    exited,
    async healthz() {
      const r = await get('/healthz');
      return { httpStatus: r.status, body: (await r.json()) as Healthz };
    },
    async status() {
      const r = await get('/status');
      if (r.status !== 200) throw new Error(`/status answered ${r.status}`);
      return (await r.json()) as DaemonStatus;
    },
    async metrics() {
      const r = await get('/metrics');
      if (r.status !== 200) throw new Error(`/metrics answered ${r.status}`);
      return r.text();
    },
    async stop(signal = 'SIGTERM') {
      const started = Date.now();
      if (!exitInfo) child.kill(signal);
      const { code } = await exited;
      return { code, ms: Date.now() - started };
    },
    async kill() {
      if (!exitInfo) child.kill('SIGKILL');
      await exited;
    },
  };

  if (opts.waitReady === false) return d;
  const what = () => `dssync run (pid ${d.pid})\nstdout:\n${out.slice(-4000)}\nstderr:\n${err.slice(-4000)}`;
  try {
    await waitFor(
      () => {
        if (exitInfo) throw new StopWaiting(`exited early with code ${exitInfo.code}`);
        const line = lines.find((l) => l.msg === 'status endpoint listening');
        if (typeof line?.url === 'string') url = line.url;
        return url !== '';
      },
      { timeout: 30_000, what: 'the status endpoint address in the log' },
    );
    await waitFor(async () => (await d.healthz()).httpStatus === 200, { timeout: 30_000, what: '/healthz' });
  } catch (e) {
    await d.kill();
    throw new Error(`${(e as Error).message}\n${what()}`, { cause: e });
  }
  return d;
}

export { StopWaiting, waitFor, type WaitOptions };

/** The daemon's status token: status.tokenFile's, or the one it writes beside its state. */
export function statusToken(configPath: string, statePath: string): string {
  return readFileSync(tokenFileOf(configPath, statePath), 'utf8').trim();
}

/**
 * Where the daemon of `configPath` keeps its token. A test may break the config on purpose
 * (a reload of invalid JSON) while the daemon keeps running on the last good one: the file
 * last found for that config is used then.
 */
const lastTokenFile = new Map<string, string>();
function tokenFileOf(configPath: string, statePath: string): string {
  let config: { status?: { tokenFile?: string }; statePath?: string };
  try {
    config = JSON.parse(readFileSync(configPath, 'utf8')) as typeof config;
  } catch {
    return lastTokenFile.get(configPath) ?? `${statePath}.status-token`;
  }
  const file = config.status?.tokenFile ?? `${config.statePath ?? statePath}.status-token`;
  lastTokenFile.set(configPath, file);
  return file;
}

/** `{ authorization: 'Bearer …' }` for a request of a test to the daemon's status endpoint. */
export function authHeader(ws: Pick<Workspace, 'configPath' | 'statePath'>): Record<string, string> {
  return { authorization: `Bearer ${statusToken(ws.configPath, ws.statePath)}` };
}

/**
 * A loopback port nothing listens on, for a fixed status address (`dssync status` and
 * `config check` read the address from the config; port 0 would not tell them).
 */
export async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  const { port } = s.address() as AddressInfo;
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}

/** Waits until the data source holds exactly the folder's files (see checkConvergence). */
export async function waitConverged(ws: Workspace, what: string, timeout = 60_000, check: () => Promise<Convergence> = () => checkConvergence(ws)): Promise<void> {
  let last: Convergence | string = 'not checked yet';
  await waitFor(
    async () => {
      try {
        last = await check();
      } catch (e) {
        last = (e as Error).message;
        return false;
      }
      return isDeepStrictEqual(last, CONVERGED);
    },
    { timeout, interval: 200, what: `convergence after ${what}`, describe: () => JSON.stringify(last).slice(0, 2000) },
  );
}

/**
 * Waits until every mapping of the daemon is watching with nothing pending and no request
 * in flight: after this, counters read from the emulator are final for what was done before.
 * `stableMs`: the idle condition must hold continuously that long (events still travelling
 * from inotify to the aggregator would break it).
 */
export async function waitIdle(d: DaemonProcess, timeout = 60_000, stableMs = 800): Promise<void> {
  let since: number | undefined;
  let last = '';
  await waitFor(
    async () => {
      const s = await d.status();
      const idle =
        s.requests.inFlight === 0 &&
        s.requests.queued === 0 &&
        s.mappings.every((m) => m.phase === 'watching' && m.pending === 0);
      last = JSON.stringify({ requests: s.requests, mappings: s.mappings.map((m) => ({ id: m.id, phase: m.phase, pending: m.pending, degraded: m.degraded })) });
      if (!idle) {
        since = undefined;
        return false;
      }
      since ??= Date.now();
      return Date.now() - since >= stableMs;
    },
    { timeout, interval: 100, what: 'the daemon to be idle', describe: () => last },
  );
}

/** The document holding `path` in the data source (by dssync's metadata), if any. */
export function docAt(ws: Workspace, path: string, dataSourceId = ws.dataSourceId()) {
  return fileDocuments(ws.emu, dataSourceId).filter((d) => d.metadata?.dssync_path === path);
}

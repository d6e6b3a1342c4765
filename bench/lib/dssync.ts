/**
 * dssync as real processes: the built binary (dist/src/cli/main.js) run as `dssync sync`
 * or `dssync run`, with its memory and CPU read from /proc (the child's, not the bench's).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { waitFor } from './util.js';
import { statusAuthHeader } from './status-auth.js';
import { parseTaskStat, ThreadCpu, TICKS_PER_SECOND, type CpuByThread } from './thread-cpu.js';

/** The built CLI, whether this module runs compiled (dist/bench/lib) or from source (bench/lib, in vitest). */
const REPO_ROOT = fileURLToPath(new URL(import.meta.url.includes('/dist/bench/') ? '../../../' : '../../', import.meta.url));
export const BIN = join(REPO_ROOT, 'dist', 'src', 'cli', 'main.js');
export const TOKEN = 'bench-token';
export const ORG = 'bench-org';

export interface ConfigSpec {
  dir: string;
  baseUrl: string;
  share: string;
  /** Extra top-level keys (setups use generous queue settings; measured runs use none). */
  extra?: Record<string, unknown>;
  name?: string;
  /** Extra keys of the mapping (e.g. `formats`). */
  mapping?: Record<string, unknown>;
}

/**
 * Settings for the measured runs from BENCH_CONFIG (a JSON object of config keys), to try
 * other settings than the defaults; the report says when it was set.
 */
export function benchConfigOverride(): Record<string, unknown> | undefined {
  const raw = process.env.BENCH_CONFIG;
  if (!raw) return undefined;
  const v: unknown = JSON.parse(raw);
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new Error('BENCH_CONFIG must be a JSON object of config keys');
  return v as Record<string, unknown>;
}

/** Writes a config with dssync's defaults except what `extra` (or BENCH_CONFIG) says; returns its path. */
export async function writeConfig(spec: ConfigSpec): Promise<string> {
  const path = join(spec.dir, `${spec.name ?? 'config'}.json`);
  const config = {
    baseUrl: spec.baseUrl,
    organizationId: ORG,
    statePath: join(spec.dir, 'state', 'state.json'),
    status: { listen: '127.0.0.1:0' },
    ...(spec.extra ?? benchConfigOverride()),
    mappings: [{ id: 'bench', path: spec.share, dataSource: { name: 'Bench', llmConnectorIds: ['conn-1'] }, ...spec.mapping }],
  };
  await writeFile(path, JSON.stringify(config, null, 2), { mode: 0o600 });
  return path;
}

/** Passed on to the dssync processes when the benchmark is given them (the report says so). */
const PASSED_ENV = ['DSSYNC_WATCHDOG_SECONDS', 'DSSYNC_NATIVE', 'MALLOC_ARENA_MAX', 'MALLOC_MMAP_THRESHOLD_', 'GLIBC_TUNABLES', 'LD_PRELOAD', 'MALLOC_CONF', 'BENCH_SAMPLES'] as const;

/**
 * Only what dssync needs; and PASSED_ENV's: DSSYNC_WATCHDOG_SECONDS (0 lets a run whose event
 * loop blocks for more than 60 s be measured to its end), DSSYNC_NATIVE (0: fs.watch,
 * for an A/B of the watch on one build), MALLOC_ARENA_MAX and
 * MALLOC_MMAP_THRESHOLD_ (as the image and the systemd units run it), GLIBC_TUNABLES (glibc's
 * other settings), LD_PRELOAD and MALLOC_CONF (another allocator, jemalloc, and its
 * settings), BENCH_SAMPLES (where bench/sampler.mjs writes, when preloaded).
 */
function childEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const passed = PASSED_ENV.flatMap((k) => (process.env[k] !== undefined ? [[k, process.env[k]]] : []));
  return {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: process.env.HOME ?? '/tmp',
    DSSYNC_TOKEN: TOKEN,
    DSSYNC_LOG_LEVEL: 'warn',
    ...Object.fromEntries(passed),
    ...extra,
  };
}

/** Node options of the dssync processes from BENCH_NODE_ARGS (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof"). */
function nodeArgs(): string[] {
  return (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);
}

export interface ProcMemory {
  rssMB: number;
  peakRssMB: number;
}

/** VmRSS and VmHWM (peak) of a live process, in MB; undefined once it is gone. */
export function procMemory(pid: number): ProcMemory | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (key: string): number => Number(new RegExp(`^${key}:\\s+(\\d+)`, 'm').exec(text)?.[1] ?? NaN);
    const rss = kb('VmRSS');
    // A zombie (exited, not yet reaped) has no memory lines.
    if (Number.isNaN(rss)) return undefined;
    return { rssMB: rss / 1024, peakRssMB: kb('VmHWM') / 1024 };
  } catch {
    return undefined;
  }
}

/** CPU seconds (user + system) used by a live process so far. */
export function procCpuSeconds(pid: number): number | undefined {
  try {
    const s = parseTaskStat(readFileSync(`/proc/${pid}/stat`, 'utf8'));
    return s === undefined ? undefined : s.ticks / TICKS_PER_SECOND;
  } catch {
    return undefined;
  }
}

export interface SyncRun {
  code: number | null;
  seconds: number;
  peakRssMB: number;
  cpuSeconds: number;
  /** The same CPU by kind of thread (lib/thread-cpu.ts). */
  cpuByThread: CpuByThread;
  stdout: string;
  stderr: string;
}

/**
 * Runs `dssync sync --json` to its end; wall time from spawn to exit. `bin`: another build's
 * main.js (bench/cpu-ab.ts); `extraNodeArgs`: node options after BENCH_NODE_ARGS; `wrap`: a
 * command that runs node (`strace -f -c -o F`): the memory and CPU sampled are then the
 * wrapper's, not dssync's.
 */
export async function runSync(
  configPath: string,
  env: Record<string, string> = {},
  args: string[] = [],
  opts: { bin?: string; extraNodeArgs?: readonly string[]; wrap?: readonly string[] } = {},
): Promise<SyncRun> {
  const t0 = performance.now();
  const argv = [...nodeArgs(), ...(opts.extraNodeArgs ?? []), opts.bin ?? BIN, 'sync', '--config', configPath, '--json', ...args];
  const [command, ...wrapArgs] = [...(opts.wrap ?? []), process.execPath];
  const child = spawn(command!, [...wrapArgs, ...argv], { env: childEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  let peak = 0;
  let cpu = 0;
  const pid = child.pid!;
  const threads = new ThreadCpu(pid);
  const sample = (): void => {
    const m = procMemory(pid);
    if (m) peak = Math.max(peak, m.peakRssMB);
    const c = procCpuSeconds(pid);
    if (c !== undefined) cpu = c;
    threads.sample();
  };
  const timer = setInterval(sample, 100);
  const code = await new Promise<number | null>((resolve, reject) => {
    child.on('error', reject);
    child.on('exit', (c) => resolve(c));
  });
  clearInterval(timer);
  return { code, seconds: (performance.now() - t0) / 1000, peakRssMB: peak, cpuSeconds: cpu, cpuByThread: threads.totals(), stdout, stderr };
}

/** A pino log line of the daemon. */
export interface LogLine {
  level: number;
  /** Wall clock (ms since the epoch) when it was logged. */
  time: number;
  msg: string;
  [key: string]: unknown;
}

export interface DaemonHandle {
  child: ChildProcess;
  pid: number;
  url: string;
  /** performance.now() just before the spawn. */
  startedAt: number;
  /** Date.now() just before the spawn (to compare with log lines' `time`). */
  spawnedAtMs: number;
  /** The first log line (so far or to come) that `match` accepts. */
  waitForLog(what: string, match: (l: LogLine) => boolean, timeoutMs: number): Promise<LogLine>;
  status(): Promise<DaemonStatusView>;
  metric(name: string): Promise<number | undefined>;
  memory(): ProcMemory | undefined;
  cpuSeconds(): number | undefined;
  stop(): Promise<void>;
  output(): string;
}

/** The parts of /status the benchmarks read. */
export interface DaemonStatusView {
  requests: { total: number };
  state?: { writes: number; lastWriteMs: number; lastBytes: number; lastMaxBlockMs: number; loadMs?: number } | undefined;
  memory?: { rssMB: number; heapUsedMB: number; heapTotalMB: number; externalMB: number } | undefined;
  mappings: Array<{
    phase: string;
    pending: number;
    filesTracked: number;
    lastPass?: { ok: boolean; kind: string; finishedAt: string; uploaded: number; replaced: number; unchanged: number } | undefined;
    /** The mapping's lease: its state and its marker document. */
    lease?: { state: string; documentId?: string | undefined } | undefined;
    watchedDirs: number;
  }>;
}

/** Starts `dssync run` and resolves once its status endpoint answers. */
export async function startDaemon(configPath: string, env: Record<string, string> = {}): Promise<DaemonHandle> {
  const startedAt = performance.now();
  const child = spawn(process.execPath, [...nodeArgs(), BIN, 'run', '--config', configPath], {
    // The bench's own DSSYNC_LOG_LEVEL (debug: every pass, with BENCH_DAEMON_LOG) wins over info.
    env: childEnv({ DSSYNC_LOG_LEVEL: process.env.DSSYNC_LOG_LEVEL ?? 'info', ...env }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const spawnedAtMs = Date.now();
  let out = '';
  let partial = '';
  let url: string | undefined;
  const lines: LogLine[] = [];
  // JSON log lines (pino): kept for lookups by message; the raw text only as a tail, for
  // error reports (an initial mirror logs a line per document).
  // BENCH_DAEMON_LOG: the daemon's whole log kept in a file, to read its phases afterwards.
  const logFile = process.env.BENCH_DAEMON_LOG ? createWriteStream(process.env.BENCH_DAEMON_LOG, { flags: 'a', mode: 0o600 }) : undefined;
  child.on('exit', () => logFile?.end());
  child.stdout!.setEncoding('utf8').on('data', (d: string) => {
    logFile?.write(d);
    out = (out + d).slice(-200_000);
    partial += d;
    const parts = partial.split('\n');
    partial = parts.pop() ?? '';
    for (const text of parts) {
      if (!text.startsWith('{')) continue;
      try {
        const line = JSON.parse(text) as LogLine;
        // pino's time is epoch ms, or an ISO string with an ISO timestamp option.
        if (typeof line.time === 'string') line.time = Date.parse(line.time);
        if (line.msg === 'status endpoint listening' && typeof line.url === 'string') url = line.url;
        lines.push(line);
        if (lines.length > 20_000) lines.splice(0, 10_000);
      } catch {
        // not a log line
      }
    }
  });
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (out = (out + d).slice(-200_000)));
  let exited = false;
  child.on('exit', () => (exited = true));
  await waitFor('the daemon status endpoint', () => {
    if (exited) throw new Error(`dssync run exited early:\n${out.slice(-4000)}`);
    return url;
  }, 30_000);
  const base = url!;
  const pid = child.pid!;
  return {
    child,
    pid,
    url: base,
    startedAt,
    spawnedAtMs,
    waitForLog: (what, match, timeoutMs) => waitFor(what, () => lines.find((l) => match(l)), timeoutMs, 20),
    status: async () => (await (await fetch(`${base}/status`, { headers: statusAuthHeader(configPath) })).json()) as DaemonStatusView,
    metric: async (name) => {
      const text = await (await fetch(`${base}/metrics`)).text();
      const m = new RegExp(`^${name}(?:\\{[^}]*\\})? ([0-9.e+-]+)$`, 'm').exec(text);
      return m ? Number(m[1]) : undefined;
    },
    memory: () => procMemory(pid),
    cpuSeconds: () => procCpuSeconds(pid),
    output: () => out,
    stop: async () => {
      if (exited) return;
      const done = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
      await done;
      clearTimeout(timer);
    },
  };
}

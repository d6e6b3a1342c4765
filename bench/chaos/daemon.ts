/**
 * A real `dssync run` process (the built binary), as systemd would run it: JSON log lines
 * on stdout, the status endpoint on a free loopback port (read from the daemon's own
 * "status endpoint listening" line). Every byte it writes is appended to a log file of the
 * scenario, so the secret scan can read every artefact afterwards.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { DaemonStatus } from '../../src/daemon/status/schema.js';
import { statusAuthHeader } from '../lib/status-auth.js';
import { waitFor } from './util.js';

/** dist/bench/chaos/daemon.js -> dist/src/cli/main.js */
export const BIN = fileURLToPath(new URL('../../src/cli/main.js', import.meta.url));

export interface DaemonOptions {
  configPath: string;
  env: Record<string, string>;
  /** stdout and stderr are appended here. */
  logFile: string;
  /**
   * Run without CAP_DAC_OVERRIDE / CAP_DAC_READ_SEARCH (through setpriv), so that file modes
   * apply although the harness runs as root (unreadable files).
   */
  dropFileCaps?: boolean;
}

export interface LogLine {
  level: number;
  msg: string;
  [key: string]: unknown;
}

export class DaemonProcess {
  readonly child: ChildProcess;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private url: string | undefined;
  private partial = '';
  private readonly lines: LogLine[] = [];
  private stderrText = '';

  private constructor(private readonly o: DaemonOptions) {
    const node = [process.execPath, BIN, 'run', '--config', o.configPath];
    const [cmd, ...args] = o.dropFileCaps
      ? ['setpriv', '--inh-caps=-dac_override,-dac_read_search', '--bounding-set=-dac_override,-dac_read_search', ...node]
      : node;
    this.child = spawn(cmd!, args, {
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/tmp', ...o.env, DSSYNC_LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.exited = new Promise((resolve) => this.child.once('exit', (code, signal) => resolve({ code, signal })));
    this.child.stdout!.setEncoding('utf8').on('data', (d: string) => this.onStdout(d));
    this.child.stderr!.setEncoding('utf8').on('data', (d: string) => {
      this.stderrText += d;
      appendFileSync(o.logFile, d);
    });
  }

  /** Starts the daemon and waits until its status endpoint answers (or it exits). */
  static async start(o: DaemonOptions, timeoutMs = 30_000): Promise<DaemonProcess> {
    const d = new DaemonProcess(o);
    let exited = false;
    void d.exited.then(() => (exited = true));
    const ok = await waitFor(async () => (exited ? false : d.url ? (await d.status()) && true : undefined), timeoutMs, 50);
    if (!ok) {
      d.child.kill('SIGKILL');
      throw new Error(`dssync run did not start (exit ${String(exited)}):\n${d.stderrText.slice(-2000)}\n${d.tail(20)}`);
    }
    return d;
  }

  get pid(): number {
    return this.child.pid ?? -1;
  }

  get alive(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  logs(): LogLine[] {
    return this.lines;
  }

  stderr(): string {
    return this.stderrText;
  }

  tail(n: number): string {
    return this.lines
      .slice(-n)
      .map((l) => JSON.stringify(l))
      .join('\n');
  }

  async status(): Promise<DaemonStatus> {
    return (await this.get('/status')).json() as Promise<DaemonStatus>;
  }

  async metrics(): Promise<string> {
    return (await this.get('/metrics')).text();
  }

  async healthz(): Promise<unknown> {
    return (await this.get('/healthz')).json();
  }

  /** kill -9: no chance to flush anything. */
  async kill9(): Promise<void> {
    if (this.alive) this.child.kill('SIGKILL');
    await this.exited;
  }

  /** SIGTERM, the graceful stop; returns the exit code. */
  async stop(): Promise<number | null> {
    if (this.alive) this.child.kill('SIGTERM');
    const r = await this.exited;
    return r.code;
  }

  private async get(path: string): Promise<Response> {
    if (!this.url) throw new Error('status endpoint not known yet');
    const headers = path === '/healthz' || path === '/metrics' ? {} : statusAuthHeader(this.o.configPath);
    const res = await fetch(this.url + path, { headers, signal: AbortSignal.timeout(10_000) });
    if (!res.ok && res.status !== 503) throw new Error(`${path}: HTTP ${res.status}`);
    return res;
  }

  private onStdout(d: string): void {
    appendFileSync(this.o.logFile, d);
    this.partial += d;
    const parts = this.partial.split('\n');
    this.partial = parts.pop() ?? '';
    for (const p of parts) {
      if (!p.startsWith('{')) continue;
      try {
        const line = JSON.parse(p) as LogLine;
        this.lines.push(line);
        if (line.msg === 'status endpoint listening' && typeof line.url === 'string') this.url = line.url;
      } catch {
        // not a log line
      }
    }
  }
}

/** True when the daemon has nothing left to do: watching, nothing pending, last pass clean. */
export function isIdle(s: DaemonStatus): boolean {
  if (s.requests.inFlight > 0 || s.requests.queued > 0) return false;
  return s.mappings.every((m) => m.phase === 'watching' && m.pending === 0 && m.lastPass?.ok === true);
}

/**
 * One scenario's world: a temp folder with the mapped share, the state and the config,
 * an in-process emulator (test/helpers/mirror-check.ts, reused so that the chaos run and
 * the tests judge convergence the same way), real `dssync run` processes, and every
 * artefact they leave (logs, state, status and metrics snapshots) kept for the secret scan.
 */
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { DaemonStatus } from '../../src/daemon/status/schema.js';
import { CONVERGED, TOKEN, checkConvergence, createWorkspace, type Convergence, type Workspace, type WorkspaceOptions } from '../../test/helpers/mirror-check.js';
import { DaemonProcess, isIdle } from './daemon.js';
import { waitFor } from './util.js';

export { TOKEN };

/** Daemon settings of every scenario (a scenario's own keys win). */
export const CHAOS_CONFIG = {
  status: { listen: '127.0.0.1:0' },
  debounceMs: 300,
  ingestionCheck: { enabled: false },
  queue: { requestsPerSecond: 400, concurrency: 8, maxAttempts: 6, uploadBatchFiles: 20 },
};

export interface ConvergeResult {
  converged: boolean;
  ms: number;
  result: Convergence;
  status?: DaemonStatus | undefined;
}

export class ChaosWorkspace {
  private snapshots = 0;

  private constructor(
    readonly ws: Workspace,
    readonly name: string,
  ) {}

  static async create(name: string, opts: WorkspaceOptions = {}): Promise<ChaosWorkspace> {
    const ws = await createWorkspace({
      ...opts,
      emulator: { pageSize: 1000, ...opts.emulator },
      config: { ...CHAOS_CONFIG, ...opts.config, queue: { ...CHAOS_CONFIG.queue, ...(opts.config?.queue as object | undefined) } },
    });
    return new ChaosWorkspace(ws, name);
  }

  get dir(): string {
    return this.ws.dir;
  }

  get share(): string {
    return this.ws.share;
  }

  get logFile(): string {
    return join(this.ws.dir, 'daemon.log');
  }

  /** Rewrites the config file (e.g. to point baseUrl at a proxy). */
  async updateConfig(change: (config: Record<string, unknown>) => void): Promise<void> {
    const config = JSON.parse(await readFile(this.ws.configPath, 'utf8')) as Record<string, unknown>;
    change(config);
    await writeFile(this.ws.configPath, JSON.stringify(config, null, 2), { mode: 0o600 });
  }

  startDaemon(opts: { dropFileCaps?: boolean } = {}): Promise<DaemonProcess> {
    return DaemonProcess.start({ configPath: this.ws.configPath, env: this.ws.env, logFile: this.logFile, ...opts });
  }

  /** The data source's id once the daemon created it (undefined before). */
  dataSourceId(): string | undefined {
    try {
      return this.ws.dataSourceId();
    } catch {
      return undefined;
    }
  }

  async convergence(): Promise<Convergence> {
    if (!this.dataSourceId()) return { lost: ['(no data source yet)'], duplicates: [], orphans: [], stale: [] };
    return checkConvergence(this.ws);
  }

  /**
   * Waits until the daemon is idle and the data source holds exactly the folder's files,
   * twice in a row (a pass may be about to start on a watcher event). Keeps the last
   * status and metrics as artefacts.
   */
  async converge(daemon: DaemonProcess, timeoutMs: number): Promise<ConvergeResult> {
    const t0 = Date.now();
    let last: Convergence = await this.convergence();
    let status: DaemonStatus | undefined;
    let streak = 0;
    const done = await waitFor(
      async () => {
        status = await daemon.status();
        if (!isIdle(status)) {
          streak = 0;
          return undefined;
        }
        last = await this.convergence();
        streak = isConverged(last) ? streak + 1 : 0;
        return streak >= 2 ? true : undefined;
      },
      timeoutMs,
      300,
    );
    await this.snapshot(daemon);
    return { converged: done === true, ms: Date.now() - t0, result: last, status };
  }

  /** Saves /status and /metrics as files (artefacts the secret scan reads). */
  async snapshot(daemon: DaemonProcess): Promise<void> {
    if (!daemon.alive) return;
    const n = this.snapshots++;
    await writeFile(join(this.ws.dir, `status-${n}.json`), JSON.stringify(await daemon.status(), null, 2)).catch(() => undefined);
    await writeFile(join(this.ws.dir, `metrics-${n}.txt`), await daemon.metrics()).catch(() => undefined);
    await writeFile(join(this.ws.dir, `healthz-${n}.json`), JSON.stringify(await daemon.healthz())).catch(() => undefined);
  }

  /** Every file the scenario produced outside the mapped folder (logs, state, snapshots...). */
  async artefacts(): Promise<string[]> {
    const out: string[] = [];
    const walk = async (d: string): Promise<void> => {
      for (const e of await readdir(d, { withFileTypes: true }).catch(() => [])) {
        const abs = join(d, e.name);
        if (abs === this.ws.share) continue;
        if (e.isDirectory()) await walk(abs);
        else if (e.isFile()) out.push(abs);
      }
    };
    await walk(this.ws.dir);
    return out;
  }

  /** Artefacts in which the token appears (must be none). */
  async tokenLeaks(): Promise<string[]> {
    const leaks: string[] = [];
    for (const f of await this.artefacts()) {
      const text = await readFile(f, 'latin1').catch(() => '');
      if (text.includes(TOKEN)) leaks.push(f);
    }
    return leaks;
  }

  close(): Promise<void> {
    // CHAOS_KEEP=1 leaves the folder (logs, state) for a look; the emulator still stops.
    if (process.env.CHAOS_KEEP === '1') {
      process.stdout.write(`[chaos] kept ${this.ws.dir}\n`);
      return this.ws.emu.close();
    }
    return this.ws.close();
  }
}

export function isConverged(c: Convergence): boolean {
  return c.lost.length === 0 && c.duplicates.length === 0 && c.orphans.length === 0 && c.stale.length === 0;
}

export { CONVERGED };
export type { Convergence };

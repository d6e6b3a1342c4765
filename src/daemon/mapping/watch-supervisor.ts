/**
 * The watcher of one mapping: started before the first pass, started again after a
 * reload, a mount change or a re-pointed path, and retried with back-off while the folder
 * cannot be watched. Its events go to the change intake; its health to the mapping's.
 */
import type { MappingConfig } from '../../config/types.js';
import { loadFilter } from '../../local/filters.js';
import type { LocalFs } from '../../local/fs.js';
import { startWatcher, type WatchError, type Watcher, type WatcherOptions, type WatchStatus } from '../../local/watch/watcher.js';
import type { Logger } from '../../log.js';
import type { Clock } from '../../time/clock.js';
import type { ChangeIntake } from './change-intake.js';
import type { ObservedStats } from '../../local/observed-stats.js';
import type { MappingHealth } from './health.js';
import { WATCH_RETRIED } from './next-step.js';

export interface WatchSupervisorDeps {
  mapping: MappingConfig;
  clock: Clock;
  log: Logger;
  /** Starts the watcher (tests may swap it). */
  watch?: ((opts: WatcherOptions) => Promise<Watcher>) | undefined;
  /** Reads the ignore file for the watcher's filter (the simulation's in-memory folder). */
  localFs?: LocalFs | undefined;
  intake: Pick<ChangeIntake, 'push' | 'overflow' | 'scheduleDrain'>;
  observed: ObservedStats;
  health: Pick<MappingHealth, 'setDegraded' | 'clear'>;
  isStopped: () => boolean;
  /** The delay before the n-th retry of a watcher that failed (ms). */
  retryDelay: (failures: number) => number;
  /** Watching again after failures: what changed meanwhile only a full pass finds. */
  onRecovered: () => void;
}

export class WatchSupervisor {
  private watcher: Watcher | undefined;
  /** The last watcher start asked for: starts run one after the other. */
  private starts: Promise<void> = Promise.resolve();
  private failures = 0;
  /** Aborted when the mapping stops: a watcher start waiting for its first poll cycle gives up. */
  private readonly stopping = new AbortController();

  constructor(private readonly d: WatchSupervisorDeps) {}

  /**
   * Starts the watcher unless one runs. Starts are serialized (start, a SIGHUP's restart, a
   * mount change, a retry may overlap): two watchers at once would leave one never closed,
   * whose watches keep the process alive after a stop.
   */
  start(): Promise<void> {
    const next = this.starts.then(() => this.startNow());
    this.starts = next.catch(() => undefined);
    return next;
  }

  /** A new watcher (a reload: the ignore file is read again), once a start in flight ended. */
  async restart(): Promise<void> {
    await this.starts;
    if (this.d.isStopped()) return;
    const old = this.watcher;
    this.watcher = undefined;
    await old?.close().catch(() => undefined);
    await this.start();
  }

  /** The mapping stops: a start waiting for its first poll cycle gives up. */
  abortStart(): void {
    this.stopping.abort();
  }

  /** Closes the watcher (a start in flight closes its own when it sees the mapping stopped). */
  async close(): Promise<void> {
    await this.starts;
    await this.watcher?.close().catch(() => undefined);
    this.watcher = undefined;
  }

  /** A hung or unmounted share, a denied folder, the watch limit: the mapping is degraded. */
  problems(): string[] {
    return this.watcher?.status?.().problems ?? [];
  }

  /** The watcher's modes per mount and polling figures (issue 12), when it reports them. */
  status(): WatchStatus | undefined {
    return this.watcher?.status?.();
  }

  watchedDirs(): number {
    return this.watcher?.watchedDirs() ?? 0;
  }

  private async startNow(): Promise<void> {
    if (this.d.isStopped() || this.watcher) return;
    const { mapping, localFs } = this.d;
    try {
      const filter = await loadFilter(mapping, localFs);
      const watch = this.d.watch ?? startWatcher;
      this.watcher = await watch({
        root: mapping.path,
        filter: (p, isDir) => filter.includes(p, isDir),
        // An edited ignore file applies at once (watches, then a full pass), not at restart.
        ignoreFile: mapping.ignoreFile,
        watchMode: mapping.watch.mode,
        pollTargetMs: mapping.watch.pollIntervalSeconds * 1000,
        pollBudgetPercent: mapping.watch.pollBudgetPercent,
        reloadFilter: async () => {
          const f = await loadFilter(mapping, localFs);
          return (p, isDir) => f.includes(p, isDir);
        },
        // Event times feed the aggregator's quiet and stability windows: the watcher stamps them monotonic.
        clock: this.d.clock,
        signal: this.stopping.signal,
        onEvent: (e) => this.d.intake.push(e),
        observed: this.d.observed,
        onError: (err) => this.onError(err),
      });
      if (this.d.isStopped()) {
        await this.watcher.close();
        return;
      }
      const recovered = this.failures > 0;
      this.failures = 0;
      this.d.health.clear('watch');
      // What changed while nothing was watched only a full pass finds: run it now, not
      // after the pass back-off (the folder coming back is why passes were failing).
      if (recovered) this.d.onRecovered();
    } catch (e) {
      const msg = e instanceof Error ? e.message : String(e);
      this.retryLater(`not watching ${mapping.path}: ${msg}`);
    }
  }

  private retryLater(reason: string): void {
    this.failures++;
    this.d.health.setDegraded('watch', reason, WATCH_RETRIED);
    this.d.clock.setTimeout(() => void this.start(), this.d.retryDelay(this.failures));
  }

  private onError(err: WatchError): void {
    const { intake } = this.d;
    this.d.log.warn({ code: err.code }, err.message);
    // A new watcher's full pass waits for it (below): run before its first poll cycle, a change
    // made between the pass and that cycle would be seen by neither.
    const rewatch = err.code === 'E_WATCH_MOUNTS_CHANGED' || err.code === 'E_WATCH_ROOT_MOVED';
    if (err.lostEvents && !rewatch) intake.overflow(err.code);
    if (err.code === 'E_WATCH_ROOT_GONE') {
      const w = this.watcher;
      this.watcher = undefined;
      void w?.close().catch(() => undefined);
      this.retryLater(`the mapped folder ${this.d.mapping.path} is gone; waiting for it to come back`);
    }
    if (rewatch) {
      // A share mounted or unmounted on or below the folder, or the folder's path re-pointed
      // (a symlink's deploy switch): a new watcher on what the path leads to now.
      const w = this.watcher;
      this.watcher = undefined;
      void (w?.close().catch(() => undefined) ?? Promise.resolve())
        .then(() => this.start())
        .then(() => {
          if (this.d.isStopped()) return;
          intake.overflow(err.code);
          intake.scheduleDrain();
        });
    }
    intake.scheduleDrain();
  }
}

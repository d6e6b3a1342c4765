/**
 * One mapping inside the daemon: a full pass at start, then watching; events go through
 * the aggregator and become incremental passes; a periodic (jittered) full rescan catches
 * what watchers miss; a failing mapping retries with back-off and says why it is degraded,
 * without stopping the others (DESIGN §1.2, issue "daemon").
 *
 * Passes run one at a time per mapping, so two operations never touch one path at once;
 * what changes during a pass waits in the aggregator and is planned with the latest state
 * of the disk afterwards (latest wins).
 *
 * The runner composes the pieces and holds the operator's actions (pause, resume, reload,
 * rescan, retry, confirm deletes): the watch supervisor (watch-supervisor.ts) keeps a
 * watcher running, the change intake (change-intake.ts) turns its events into batches, the
 * pass loop (pass-loop.ts) runs passes as the pure schedule decides, and the mapping's
 * health (mapping/health.ts) is what status shows of them.
 */
import { setMaxListeners } from 'node:events';
import type { LocalFs } from '../../local/fs.js';
import type { Watcher, WatcherOptions } from '../../local/watch/watcher.js';
import type { Logger } from '../../log.js';
import { ChangeIntake } from './change-intake.js';
import { ObservedStats } from '../../local/observed-stats.js';
import { DeleteDecision, type ConfirmResult } from './delete-decision.js';
import { IngestionChecker } from './ingestion.js';
import { MappingHealth } from './health.js';
import { PassHistory } from './pass-history.js';
import { dropStartListing, PassLoop, type PassSettings } from './pass-loop.js';
import { ProblemList, wasSent } from './problem-list.js';
import type { MappingRecords } from '../records-file.js';
import { retryDelayMs } from './schedule.js';
import { WATCH_PROBLEM } from './next-step.js';
import type { MappingStatus } from '../status/schema.js';
import { WatchSupervisor } from './watch-supervisor.js';

export interface MappingRunnerDeps extends PassSettings {
  /** Starts the watcher (tests may swap it). */
  watch?: ((opts: WatcherOptions) => Promise<Watcher>) | undefined;
  /** Reads the ignore file for the watcher's filter (the simulation's in-memory folder). */
  localFs?: LocalFs | undefined;
  /** The problem list and pass history as the records file last had them (records-file.ts). */
  records?: MappingRecords | undefined;
}

export class MappingRunner {
  private readonly log: Logger;
  private readonly health: MappingHealth;
  private readonly intake: ChangeIntake;
  private readonly watcher: WatchSupervisor;
  private readonly passes: PassLoop;
  private readonly controller = new AbortController();
  private stopped = false;
  /** Files not mirrored as they are, across passes and restarts (issue 25.1). */
  private readonly problems: ProblemList;
  /** The last passes (issue 25.7). */
  private readonly passHistory: PassHistory;
  private readonly ingestion: IngestionChecker | undefined;
  /** Paused by the operator since then (wall clock, ISO): no pass, no ingestion check (issue 25.6). */
  private pausedSince: string | undefined;
  /** A pass stopped by the mass-delete guard waiting for the operator's decision (issue 25.5). */
  private readonly deletes = new DeleteDecision();

  constructor(private readonly d: MappingRunnerDeps) {
    this.log = d.logger.child({ mapping: d.mapping.id });
    this.problems = ProblemList.from(d.records?.problems, () => d.clock.now());
    this.passHistory = new PassHistory(d.records?.history);
    setMaxListeners(0, this.controller.signal);
    const isStopped = (): boolean => this.stopped;
    this.health = new MappingHealth(() => d.clock.now());
    this.intake = new ChangeIntake({
      config: d.config,
      mappingId: d.mapping.id,
      state: d.state,
      clock: d.clock,
      log: this.log,
      isStopped,
      onBatch: (rescan) => this.passes.dispatch({ type: 'batchReady', rescan }),
    });
    this.pausedSince = d.records?.paused?.since;
    const observed = new ObservedStats();
    this.passes = new PassLoop({
      ...d,
      observed,
      log: this.log,
      health: this.health,
      intake: this.intake,
      problems: this.problems,
      history: this.passHistory,
      deletes: this.deletes,
      ingestion: () => this.ingestion,
      signal: this.controller.signal,
      isStopped,
      paused: this.pausedSince !== undefined,
    });
    this.watcher = new WatchSupervisor({
      mapping: d.mapping,
      clock: d.clock,
      log: this.log,
      watch: d.watch,
      localFs: d.localFs,
      intake: this.intake,
      observed,
      health: this.health,
      isStopped,
      retryDelay: (failures) => retryDelayMs(failures, d.random, d.retryBaseMs),
      onRecovered: () => this.passes.retryNow(),
    });
    if (d.config.ingestionCheck.enabled) {
      this.ingestion = new IngestionChecker({
        api: d.api,
        dataSourceId: () => this.passes.dataSourceId,
        delayMs: d.config.ingestionCheck.delaySeconds * 1000,
        clock: d.clock,
        logger: this.log,
        signal: this.controller.signal,
        onNotIngested: (n) => {
          const why = n.reason ?? `document ${n.documentId} had no chunks after the ingestion delay (uploaded ${n.uploadedAt})`;
          if (this.problems.notIngested(n.path, `not ingested: ${why}`)) this.d.onRecordsChanged?.();
        },
      });
      if (this.pausedSince !== undefined) this.ingestion.pause();
    }
  }

  get id(): string {
    return this.d.mapping.id;
  }

  start(): void {
    // The watcher runs while paused: it makes no request, and the pending count shows the changes noted.
    if (this.pausedSince !== undefined) this.log.info({ since: this.pausedSince }, 'mapping paused (dssync resume starts it): no request for it until then');
    // Watch first, then the first full pass: a change made while that pass scans is then an
    // event. Started together, a change after the scan passed its folder and before the
    // watcher was ready was seen by neither (until the next rescan). A watcher that fails
    // to start does not hold the pass back (it is retried; its recovery runs a full pass).
    void this.watcher.start().finally(() => this.passes.dispatch({ type: 'started' }));
    if (this.pausedSince === undefined) this.passes.prepare();
    else void this.d.startListing?.then(dropStartListing);
  }

  /**
   * Stops watching and scheduling; the pass in progress may finish within `graceMs`, after
   * which its requests are aborted. State mutations already made are kept by the caller's flush.
   */
  async stop(graceMs: number): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.health.phase = 'stopped';
    this.watcher.abortStart();
    this.ingestion?.stop();
    this.passes.dispatch({ type: 'stop' });
    this.intake.stop();
    this.passes.stopTimers();
    // A start in flight closes its own watcher when it sees `stopped`.
    await this.watcher.close();
    await this.passes.finish(graceMs, () => this.controller.abort());
    this.controller.abort();
    // After the last pass: a standby takes the lease at once instead of waiting for it to expire.
    await this.passes.releaseLease();
  }

  status(): MappingStatus {
    const { health, watcher } = this;
    // Counted by the store: status and metrics are read often, the state may hold 100,000 files.
    const tracked = this.d.state.fileCount(this.d.mapping.id);
    const watchProblems = watcher.problems();
    const watch = watcher.status();
    const rescanAt = this.passes.nextRescanAt;
    const lease = this.passes.leaseStatus();
    return {
      id: this.d.mapping.id,
      path: this.d.mapping.path,
      dataSourceId: this.passes.dataSourceId ?? this.d.mapping.dataSourceId,
      dataSourceNotice: health.dataSourceNotice,
      phase: this.phase(lease, watchProblems.length > 0),
      degraded: [...health.reasons(), ...watchProblems],
      degradedNext: [...health.nexts(), ...watchProblems.map(() => WATCH_PROBLEM)],
      filesTracked: tracked,
      pending: this.intake.pendingCount(),
      lastPass: health.lastPass,
      lastFullPassOkAt: health.lastFullPassOkAt,
      // A monotonic deadline, shown on the wall clock as it reads now.
      nextRescanAt: rescanAt === undefined ? undefined : new Date(this.d.clock.now() + (rescanAt - this.d.clock.monotonic())).toISOString(),
      recentErrors: health.errors(),
      // The persistent lists (issue 25.1); `skipped` keeps its old shape for older readers.
      ...this.problemStatus(),
      notIngested: this.ingestion?.notIngested() ?? [],
      watchedDirs: watcher.watchedDirs(),
      // The watcher's modes per mount and polling figures (issue 12), when it reports them.
      ...(watch ? { watch } : {}),
      ...(this.pausedSince !== undefined ? { paused: { since: this.pausedSince } } : {}),
      ...(this.deletes.isWaiting ? { pendingDeletes: this.deletes.view() } : {}),
      ...(lease !== undefined ? { lease } : {}),
      ...(health.halted ? { halted: true } : {}),
    };
  }

  /** The phase status shows: paused by the operator, a standby (another process holds the lease), or the health's. */
  private phase(lease: MappingStatus['lease'], watchProblems: boolean): MappingStatus['phase'] {
    const idle = !this.passes.isRunning && !this.stopped;
    // A pass that only read beside the lease's claim is dropped by the pause (PassLoop.releaseLease).
    if (this.pausedSince !== undefined && (idle || this.passes.awaitingLease)) return 'paused';
    if (lease?.state === 'standby' && (idle || this.passes.awaitingLease)) return 'standby';
    return this.health.phase === 'watching' && watchProblems ? 'degraded' : this.health.phase;
  }

  private problemStatus(): Pick<MappingStatus, 'skipped' | 'problems' | 'problemsTotal' | 'excluded' | 'excludedTotal' | 'history'> {
    const data = this.problems.data();
    return {
      skipped: [...data.problems.filter((p) => !wasSent(p.kind)), ...data.excluded].map((p) => ({ path: p.path, reason: p.reason })),
      problems: data.problems,
      problemsTotal: this.problems.problemCount(),
      excluded: data.excluded,
      excludedTotal: this.problems.excludedCount(),
      history: this.passHistory.list(),
    };
  }

  /** What the records file keeps of this mapping. */
  records(): MappingRecords {
    return { problems: this.problems.data(), history: this.passHistory.list(), ...(this.pausedSince !== undefined ? { paused: { since: this.pausedSince } } : {}) };
  }

  /**
   * SIGHUP with this mapping's settings unchanged: its ignore file is read again — the
   * watcher restarts with the filter as it is now, so a folder the file no longer excludes
   * is watched — and a full pass applies it at once (schedule.ts `configChanged`), back-off
   * or not. What changes while the watcher restarts, that pass sees.
   */
  async reload(): Promise<void> {
    if (this.stopped) return;
    // A start still in flight (a SIGHUP right after start) ends first: then it is replaced.
    await this.watcher.restart();
    if (this.stopped) return;
    // The data source may have been deleted or renamed in the App: looked up again first.
    this.passes.reloaded(this.pausedSince !== undefined);
  }

  /**
   * "Rescan now" (status page): a full pass as soon as the current work allows, also during
   * a back-off. Idempotent: asked twice before it starts, it is one pass.
   */
  requestRescan(): void {
    this.passes.requestRescan();
  }

  /**
   * "Retry skipped and failed files" (status page): forgets the service's refusals (413/415,
   * normally kept until the file changes) and the back-off, then runs a full pass, which
   * also retries every failed operation. Returns how many refusals were forgotten.
   */
  retryFailed(): number {
    const rejected = Object.keys(this.d.state.mapping(this.d.mapping.id)?.rejected ?? {});
    for (const path of rejected) this.d.state.clearRejected(this.d.mapping.id, path);
    this.passes.retryNow();
    return rejected.length;
  }

  /**
   * `dssync pause` (or the page): no new pass, no ingestion check, no timer; the pass in
   * progress finishes. The watcher keeps noting changes; resume's full pass sends them.
   * Kept in the records file: a restart starts it paused. False when it already was.
   */
  pause(): boolean {
    if (this.pausedSince !== undefined) return false;
    this.pausedSince = new Date(this.d.clock.now()).toISOString();
    this.ingestion?.pause();
    this.passes.dispatch({ type: 'pause' });
    // No request while paused, the lease's included: released, so that a standby may mirror; resume claims it again.
    void this.passes.releaseLease();
    this.log.info('mapping paused: no request for it until dssync resume');
    this.d.onRecordsChanged?.();
    return true;
  }

  /** `dssync resume`: a full pass at once sends what changed while paused. False when it was not paused. */
  resume(): boolean {
    if (this.pausedSince === undefined) return false;
    this.pausedSince = undefined;
    this.ingestion?.resume();
    this.log.info('mapping resumed: full pass');
    this.passes.dispatch({ type: 'resume' });
    this.d.onRecordsChanged?.();
    return true;
  }

  /**
   * `dssync confirm-delete` (or the page): the deletions the guard stopped, named by their
   * digest as shown, may be carried out by the next pass (a full pass now), and no more.
   */
  confirmDeletes(digest?: string | undefined): ConfirmResult {
    const r = this.deletes.confirm(digest);
    if (!r.ok) return r;
    this.log.warn({ deletes: r.total }, 'mass delete confirmed by the operator: the next pass may delete these documents');
    if (this.pausedSince === undefined) this.passes.dispatch({ type: 'deletesConfirmed' });
    return r;
  }
}

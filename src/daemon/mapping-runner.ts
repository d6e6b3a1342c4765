/**
 * One mapping inside the daemon: a full pass at start, then watching; events go through
 * the aggregator and become incremental passes; a periodic (jittered) full rescan catches
 * what watchers miss; a failing mapping retries with back-off and says why it is degraded,
 * without stopping the others (DESIGN §1.2, issue "daemon").
 *
 * Passes run one at a time per mapping, so two operations never touch one path at once;
 * what changes during a pass waits in the aggregator and is planned with the latest state
 * of the disk afterwards (latest wins).
 */
import { scrub } from '../secrets.js';
import { setMaxListeners } from 'node:events';
import type { DatastoreApi } from '../api/api.js';
import { disposition } from '../errors/disposition.js';
import type { Config, MappingConfig } from '../config/types.js';
import type { OpEvent } from '../engine/executor.js';
import type { ChangeScope, Mirror, PassReport } from '../engine/mirror.js';
import type { FileFailure } from '../engine/executor.js';
import { buildMirror, passStabilityMs } from './build-mirror.js';
import { DataSourceMissingError, dataSourceGone } from '../engine/data-source.js';
import { isApiError } from '../api/errors.js';
import { EventAggregator, isEmptyBatch, type Batch } from '../local/aggregator.js';
import { loadFilter } from '../local/filters.js';
import type { LocalFs } from '../local/fs.js';
import { startWatcher, WatchError, type Watcher, type WatcherOptions, type WatchStatus } from '../local/watcher.js';
import type { Logger } from '../log.js';
import type { StateStore } from '../state/store.js';
import { IngestionChecker } from './ingestion.js';
import { PendingScope } from './pending-scope.js';
import { DeleteDecision, type ConfirmResult } from './delete-decision.js';
import { ProblemList } from './problem-list.js';
import { failedRecord, PassHistory, recordOfReport, type PassHistoryKind } from './pass-history.js';
import type { MappingRecords } from './records-file.js';
import type { MappingStatus, RecentError, RunnerPhase } from './status-schema.js';
import { initialSchedule, retryDelayMs, step, type PassKind, type ScheduleAction, type ScheduleEvent, type ScheduleState } from './schedule.js';
import type { Clock } from '../time/clock.js';

// The status shape lives in status-schema.ts (one zod schema shared with `dssync status`
// and the page); re-exported here for the runner's existing importers.
export type { MappingStatus, RecentError, RunnerPhase } from './status-schema.js';

/** What the daemon learns from a runner (metrics, the demo's output). */
export interface RunnerEvents {
  onOp?(mappingId: string, e: OpEvent, lagMs: number | undefined): void;
  onPass?(mappingId: string, kind: 'full' | 'changes', report: PassReport): void;
  /** A pass begins (the status page shows its progress). */
  onPassStart?(mappingId: string, kind: 'full' | 'changes'): void;
}

export interface MappingRunnerDeps {
  config: Config;
  mapping: MappingConfig;
  index: number;
  api: DatastoreApi;
  state: StateStore;
  logger: Logger;
  clock: Clock;
  events?: RunnerEvents | undefined;
  /** Starts the watcher (tests may swap it). */
  watch?: ((opts: WatcherOptions) => Promise<Watcher>) | undefined;
  random?: (() => number) | undefined;
  /** First retry delay after a failure (ms, default 5 s); doubles up to 5 min. */
  retryBaseMs?: number | undefined;
  /** Builds the mapping's Mirror (tests may swap it). */
  buildMirror?: typeof buildMirror | undefined;
  /** Reads the ignore file for the watcher's filter (the simulation's in-memory folder). */
  localFs?: LocalFs | undefined;
  /** The problem list and pass history as the records file last had them (records-file.ts). */
  records?: MappingRecords | undefined;
  /** The problem list or the history changed: the daemon writes the records file. */
  onRecordsChanged?: (() => void) | undefined;
}

const MAX_RECENT_ERRORS = 50;

export class MappingRunner {
  private phase: RunnerPhase = 'starting';
  private degraded = new Map<string, string>();
  private mirror: Mirror | undefined;
  private watcher: Watcher | undefined;
  private readonly aggregator: EventAggregator;
  private readonly controller = new AbortController();
  /** Aborted at the start of stop(): a watcher start waiting for its first poll cycle gives up. */
  private readonly stopping = new AbortController();
  private sched: ScheduleState;
  private readonly pending = new PendingScope();
  private running: Promise<void> | undefined;
  private drainTimer: unknown;
  private drainAt: number | undefined;
  private deadlineTimer: unknown;
  private deadlineAt: number | undefined;
  /** The schedule's next periodic rescan (monotonic ms). */
  private nextRescanAt: number | undefined;
  private watchFailures = 0;
  private stopped = false;
  private lastPass: MappingStatus['lastPass'];
  private lastFullPassOkAt: string | undefined;
  private recentErrors: RecentError[] = [];
  /** Files not mirrored as they are, across passes and restarts (issue 25.1). */
  private readonly problems: ProblemList;
  /** The last passes (issue 25.7). */
  private readonly passHistory: PassHistory;
  /** What the next full pass is, for the history: the first one, a rescan, or another. */
  private nextFullKind: PassHistoryKind = 'start';
  private announced = new Set<string>();
  /** First event time of each path in the pass running now, for the lag metric. */
  private lagStart = new Map<string, number>();
  private readonly log: Logger;
  /** The last watcher start asked for (startWatching): starts run one after the other. */
  private watchStarts: Promise<void> = Promise.resolve();
  private readonly ingestion: IngestionChecker | undefined;
  /** Files a pass set aside as maybe being written, waiting for their follow-up pass. */
  private readonly settling = new Set<string>();
  private settleTimer: unknown;
  /** The data source renamed in the App (followed by id) or deleted: status shows it. */
  private dataSourceNotice: string | undefined;
  /** A reload asked to look the data source up again before the next pass (it may be gone, or renamed). */
  private recheckDataSource = false;
  /** The mapping stopped on a configuration problem (its data source by id is gone) until a reload. */
  private halted = false;
  /** Paused by the operator since then (wall clock, ISO): no pass, no ingestion check (issue 25.6). */
  private pausedSince: string | undefined;
  /** A pass stopped by the mass-delete guard waiting for the operator's decision (issue 25.5). */
  private readonly deletes = new DeleteDecision();

  constructor(private readonly d: MappingRunnerDeps) {
    this.log = d.logger.child({ mapping: d.mapping.id });
    this.problems = ProblemList.from(d.records?.problems, () => d.clock.now());
    this.passHistory = new PassHistory(d.records?.history);
    setMaxListeners(0, this.controller.signal);
    this.aggregator = new EventAggregator({
      quietMs: d.config.debounceMs,
      startedAt: d.clock.monotonic(),
      syncedSize: (p) => d.state.mapping(d.mapping.id)?.files.get(p)?.size,
      tracked: (p) => d.state.mapping(d.mapping.id)?.files.has(p) === true,
    });
    this.pausedSince = d.records?.paused?.since;
    this.sched = initialSchedule({ rescanIntervalMs: d.config.rescanIntervalSeconds * 1000, retryBaseMs: d.retryBaseMs }, { paused: this.pausedSince !== undefined });
    if (d.config.ingestionCheck.enabled) {
      this.ingestion = new IngestionChecker({
        api: d.api,
        dataSourceId: () => this.mirror?.dataSourceId,
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
    void this.startWatching().finally(() => this.dispatch({ type: 'started' }));
  }

  /**
   * Stops watching and scheduling; the pass in progress may finish within `graceMs`, after
   * which its requests are aborted. State mutations already made are kept by the caller's flush.
   */
  async stop(graceMs: number): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.phase = 'stopped';
    this.stopping.abort();
    this.ingestion?.stop();
    this.dispatch({ type: 'stop' });
    for (const t of [this.drainTimer, this.deadlineTimer, this.settleTimer]) if (t !== undefined) this.d.clock.clearTimeout(t);
    // A start in flight closes its own watcher when it sees `stopped`.
    await this.watchStarts;
    await this.watcher?.close().catch(() => undefined);
    this.watcher = undefined;
    if (this.running) {
      const abort = this.d.clock.setTimeout(() => this.controller.abort(), graceMs);
      await this.running.catch(() => undefined);
      this.d.clock.clearTimeout(abort);
    }
    this.controller.abort();
  }

  status(): MappingStatus {
    // Counted by the store: status and metrics are read often, the state may hold 100,000 files.
    const tracked = this.d.state.fileCount(this.d.mapping.id);
    // A hung or unmounted share, a denied folder, the watch limit: the mapping is degraded.
    const watchProblems = this.watcher?.status?.().problems ?? [];
    return {
      id: this.d.mapping.id,
      path: this.d.mapping.path,
      dataSourceId: this.mirror?.dataSourceId ?? this.d.mapping.dataSourceId,
      dataSourceNotice: this.dataSourceNotice,
      phase: this.pausedSince !== undefined && this.running === undefined && !this.stopped ? 'paused' : this.phase === 'watching' && watchProblems.length > 0 ? 'degraded' : this.phase,
      degraded: [...this.degraded.values(), ...watchProblems],
      filesTracked: tracked,
      pending: this.aggregator.pendingCount() + this.pending.size + this.settling.size,
      lastPass: this.lastPass,
      lastFullPassOkAt: this.lastFullPassOkAt,
      // A monotonic deadline, shown on the wall clock as it reads now.
      nextRescanAt: this.nextRescanAt === undefined ? undefined : new Date(this.d.clock.now() + (this.nextRescanAt - this.d.clock.monotonic())).toISOString(),
      recentErrors: [...this.recentErrors],
      // The persistent lists (issue 25.1); `skipped` keeps its old shape for older readers.
      ...this.problemStatus(),
      notIngested: this.ingestion?.notIngested() ?? [],
      watchedDirs: this.watcher?.watchedDirs() ?? 0,
      ...this.watchStatus(),
      ...(this.pausedSince !== undefined ? { paused: { since: this.pausedSince } } : {}),
      ...(this.deletes.isWaiting ? { pendingDeletes: this.deletes.view() } : {}),
    };
  }

  private problemStatus(): Pick<MappingStatus, 'skipped' | 'problems' | 'problemsTotal' | 'excluded' | 'excludedTotal' | 'history'> {
    const data = this.problems.data();
    return {
      skipped: [...data.problems.filter((p) => p.kind !== 'not-ingested'), ...data.excluded].map((p) => ({ path: p.path, reason: p.reason })),
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

  /** The watcher's modes per mount and polling figures (issue 12), when it reports them. */
  private watchStatus(): { watch?: WatchStatus } {
    const w = this.watcher?.status?.();
    return w ? { watch: w } : {};
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
    await this.watchStarts;
    if (this.stopped) return;
    const old = this.watcher;
    this.watcher = undefined;
    await old?.close().catch(() => undefined);
    await this.startWatching();
    if (this.stopped) return;
    // The data source may have been deleted or renamed in the App: looked up again first.
    this.recheckDataSource = true;
    if (this.halted) {
      // Stopped on a configuration problem: the reload is the operator's answer; start again.
      this.halted = false;
      this.degraded.delete('config');
      this.log.info('reloaded: the stopped mapping starts again');
      this.sched = initialSchedule(this.sched.config, { paused: this.pausedSince !== undefined });
      this.dispatch({ type: 'started' });
      return;
    }
    this.log.info('reloaded: ignore file read again; full pass');
    this.dispatch({ type: 'configChanged', config: this.sched.config });
  }

  /** Asks for a full pass as soon as the current work allows (SIGHUP, tests). */
  requestFullPass(): void {
    this.dispatch({ type: 'fullPassRequested' });
  }

  /**
   * "Rescan now" (status page): a full pass as soon as the current work allows, also during
   * a back-off. Idempotent: asked twice before it starts, it is one pass.
   */
  requestRescan(): void {
    if (this.nextFullKind !== 'start') this.nextFullKind = 'rescan';
    this.retryNow();
  }

  /**
   * "Retry skipped and failed files" (status page): forgets the service's refusals (413/415,
   * normally kept until the file changes) and the back-off, then runs a full pass, which
   * also retries every failed operation. Returns how many refusals were forgotten.
   */
  retryFailed(): number {
    const rejected = Object.keys(this.d.state.mapping(this.d.mapping.id)?.rejected ?? {});
    for (const path of rejected) this.d.state.clearRejected(this.d.mapping.id, path);
    this.retryNow();
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
    this.dispatch({ type: 'pause' });
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
    this.dispatch({ type: 'resume' });
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
    if (this.pausedSince === undefined) this.dispatch({ type: 'deletesConfirmed' });
    return r;
  }

  // ---- watching -------------------------------------------------------------------

  /**
   * Starts the watcher unless one runs. Starts are serialized (start, a SIGHUP's restart, a
   * mount change, a retry may overlap): two watchers at once would leave one never closed,
   * whose watches keep the process alive after a stop.
   */
  private startWatching(): Promise<void> {
    const next = this.watchStarts.then(() => this.startWatchingNow());
    this.watchStarts = next.catch(() => undefined);
    return next;
  }

  private async startWatchingNow(): Promise<void> {
    if (this.stopped || this.watcher) return;
    try {
      const filter = await loadFilter(this.d.mapping, this.d.localFs);
      const watch = this.d.watch ?? startWatcher;
      this.watcher = await watch({
        root: this.d.mapping.path,
        filter: (p, isDir) => filter.includes(p, isDir),
        // An edited ignore file applies at once (watches, then a full pass), not at restart.
        ignoreFile: this.d.mapping.ignoreFile,
        watchMode: this.d.mapping.watch?.mode,
        pollTargetMs: this.d.mapping.watch ? this.d.mapping.watch.pollIntervalSeconds * 1000 : undefined,
        pollBudgetPercent: this.d.mapping.watch?.pollBudgetPercent,
        reloadFilter: async () => {
          const f = await loadFilter(this.d.mapping, this.d.localFs);
          return (p, isDir) => f.includes(p, isDir);
        },
        // Event times feed the aggregator's quiet and stability windows: monotonic.
        now: () => this.d.clock.monotonic(),
        signal: this.stopping.signal,
        onEvent: (e) => {
          this.aggregator.push(e);
          this.scheduleDrain();
        },
        onError: (err) => this.onWatchError(err),
      });
      if (this.stopped) {
        await this.watcher.close();
        return;
      }
      const recovered = this.watchFailures > 0;
      this.watchFailures = 0;
      this.degraded.delete('watch');
      // What changed while nothing was watched only a full pass finds: run it now, not
      // after the pass back-off (the folder coming back is why passes were failing).
      if (recovered) this.retryNow();
    } catch (e) {
      this.watchFailures++;
      const msg = e instanceof Error ? e.message : String(e);
      this.setDegraded('watch', `not watching ${this.d.mapping.path}: ${msg}`);
      this.d.clock.setTimeout(() => void this.startWatching(), this.retryDelay(this.watchFailures));
    }
  }

  private onWatchError(err: WatchError): void {
    this.log.warn({ code: err.code }, err.message);
    // A new watcher's full pass waits for it (below): run before its first poll cycle, a change
    // made between the pass and that cycle would be seen by neither.
    const rewatch = err.code === 'mounts-changed' || err.code === 'root-moved';
    if (err.lostEvents && !rewatch) this.aggregator.overflow(err.code, this.d.clock.monotonic());
    if (err.code === 'root-gone') {
      const w = this.watcher;
      this.watcher = undefined;
      void w?.close().catch(() => undefined);
      this.setDegraded('watch', `the mapped folder ${this.d.mapping.path} is gone; waiting for it to come back`);
      this.watchFailures++;
      this.d.clock.setTimeout(() => void this.startWatching(), this.retryDelay(this.watchFailures));
    }
    if (rewatch) {
      // A share mounted or unmounted on or below the folder, or the folder's path re-pointed
      // (a symlink's deploy switch): a new watcher on what the path leads to now.
      const w = this.watcher;
      this.watcher = undefined;
      void (w?.close().catch(() => undefined) ?? Promise.resolve())
        .then(() => this.startWatching())
        .then(() => {
          if (this.stopped) return;
          this.aggregator.overflow(err.code, this.d.clock.monotonic());
          this.scheduleDrain();
        });
    }
    this.scheduleDrain();
  }

  private scheduleDrain(): void {
    if (this.stopped) return;
    const at = this.aggregator.nextDeadline();
    if (at === undefined) return;
    if (this.drainTimer !== undefined && this.drainAt !== undefined && this.drainAt <= at) return;
    if (this.drainTimer !== undefined) this.d.clock.clearTimeout(this.drainTimer);
    this.drainAt = at;
    this.drainTimer = this.d.clock.setTimeout(() => {
      this.drainTimer = undefined;
      this.drainAt = undefined;
      this.takeBatch(this.aggregator.drain(this.d.clock.monotonic()));
      this.scheduleDrain();
    }, Math.max(0, at - this.d.clock.monotonic()));
  }

  private takeBatch(batch: Batch): void {
    if (isEmptyBatch(batch)) return;
    if (batch.rescan) this.log.info({ reasons: batch.reasons }, 'watcher lost events: full rescan');
    this.pending.add(batch);
    this.dispatch({ type: 'batchReady', rescan: batch.rescan });
  }

  // ---- passes: the schedule decides, the runner carries its actions out ----------

  private dispatch(e: ScheduleEvent): void {
    const r = step(this.sched, e, this.d.clock.monotonic(), this.d.random ?? Math.random);
    this.sched = r.state;
    this.nextRescanAt = r.state.rescanAt;
    for (const a of r.actions) this.carryOut(a);
    this.armDeadline(r.nextDeadline);
  }

  private carryOut(a: ScheduleAction): void {
    switch (a.type) {
      case 'runFullPass':
      case 'runChangesPass': {
        const kind = a.type === 'runFullPass' ? 'full' : 'changes';
        const pass = this.work(kind);
        this.running = pass;
        void pass.finally(() => {
          if (this.running === pass) this.running = undefined;
        });
        break;
      }
      case 'enterDegraded':
        this.setDegraded(this.mirror ? 'pass' : 'service', a.reason);
        break;
      case 'leaveDegraded':
        this.degraded.delete('pass');
        this.degraded.delete('service');
        break;
      case 'retryAt':
      case 'scheduleRescan':
        break; // timed through nextDeadline
    }
  }

  /** One timer: the schedule's next deadline (a retry or the periodic rescan). */
  private armDeadline(at: number | undefined): void {
    if (at === this.deadlineAt) return;
    if (this.deadlineTimer !== undefined) this.d.clock.clearTimeout(this.deadlineTimer);
    this.deadlineTimer = undefined;
    this.deadlineAt = at;
    if (at === undefined || this.stopped) return;
    this.deadlineTimer = this.d.clock.setTimeout(() => {
      this.deadlineTimer = undefined;
      this.deadlineAt = undefined;
      if (this.sched.rescanAt !== undefined && this.sched.rescanAt <= this.d.clock.monotonic()) {
        this.log.info('periodic rescan');
        if (this.nextFullKind !== 'start') this.nextFullKind = 'rescan';
      }
      this.dispatch({ type: 'tick' });
    }, Math.max(0, at - this.d.clock.monotonic()));
  }

  private async work(kind: PassKind): Promise<void> {
    let finished: ScheduleEvent;
    /** What the pass may send: everything (a full pass) or its scope; undefined until it starts. */
    let sends: ChangeScope | 'everything' | undefined;
    const startedAt = this.d.clock.now();
    const label: PassHistoryKind = kind === 'full' ? this.nextFullKind : 'incremental';
    if (kind === 'full') this.nextFullKind = 'full';
    try {
      const mirror = await this.ensureMirror();
      this.phase = 'syncing';
      this.d.events?.onPassStart?.(this.id, kind);
      // A full pass looks at everything the pending events named.
      const { scope, firstEventAt } = this.pending.take(kind);
      sends = kind === 'full' ? 'everything' : scope;
      this.aggregator.passStarted(sends === 'everything' ? undefined : sends);
      this.lagStart = firstEventAt;
      const report =
        kind === 'full'
          ? await mirror.fullPass({ signal: this.controller.signal, confirmedDeletes: this.deletes.confirmedDeletes() })
          : await mirror.changedPass(scope, { signal: this.controller.signal });
      this.record(label, report, sends === 'everything' ? undefined : sends);
      const lost = await this.dataSourceLost(kind, report.failures.some((f) => f.code === 'E_NOT_FOUND'));
      const after = this.afterPass(kind, report);
      finished = lost ?? after;
    } catch (e) {
      if (this.stopped) return;
      if (e instanceof DataSourceMissingError) {
        this.halt(e.message);
        return;
      }
      finished = (await this.dataSourceLost(kind, isApiError(e) && e.code === 'E_NOT_FOUND')) ?? this.onFailure(kind, e);
      if (finished.type === 'passFinished' && finished.reason) {
        this.passHistory.add(failedRecord(label, startedAt, this.d.clock.now(), finished.reason));
        this.d.onRecordsChanged?.();
      }
    } finally {
      // Also what was created while it ran, succeeded or not: its walk may have sent it.
      if (sends !== undefined) this.aggregator.passEnded();
    }
    if (this.stopped) return;
    this.dispatch(finished);
  }

  /**
   * The mirror of the mapping's data source: built at the first pass, and looked up again
   * after a reload (replaced when the data source changed: deleted in the App, or another
   * one named by the config). Throws what the resolution throws.
   */
  private async ensureMirror(): Promise<Mirror> {
    if (this.mirror && !this.recheckDataSource) return this.mirror;
    this.recheckDataSource = false;
    if (!this.mirror) this.phase = 'starting';
    // The notice of this resolution, if any, replaces the last one.
    let notice: string | undefined;
    const built = await (this.d.buildMirror ?? buildMirror)(this.d.config, this.d.mapping, this.d.index, {
      api: this.d.api,
      state: this.d.state,
      logger: this.d.logger,
      onOp: (e) => this.onOp(e),
      signal: this.controller.signal,
      now: () => this.d.clock.now(),
      monotonic: () => this.d.clock.monotonic(),
      stabilityMs: passStabilityMs(this.d.config),
      onNotice: (m) => {
        notice = m;
        this.remember({ message: m });
      },
    });
    this.dataSourceNotice = notice;
    // The same data source: the running mirror keeps its windows (mass deletes, intents).
    if (!this.mirror || this.mirror.dataSourceId !== built.dataSourceId) this.mirror = built;
    this.degraded.delete('service');
    return this.mirror;
  }

  /**
   * After a pass that met a 404 (a listing, an upload): is the data source itself gone
   * (deleted in the App)? Then the mirror is dropped, so that the next attempt looks it up
   * again (by name: found or created; by id: the mapping stops), and the failure says so.
   * Undefined when it is not gone (the pass's own outcome stands).
   */
  private async dataSourceLost(kind: PassKind, sawNotFound: boolean): Promise<ScheduleEvent | undefined> {
    const mirror = this.mirror;
    if (!sawNotFound || !mirror || this.stopped) return undefined;
    if (!(await dataSourceGone(this.d.api, mirror.dataSourceId, this.controller.signal))) return undefined;
    this.mirror = undefined;
    const next = this.d.mapping.dataSource
      ? `looked up again by the name ${JSON.stringify(this.d.mapping.dataSource.name)} (and created when absent) at the next attempt; every file is uploaded again`
      : 'the next attempt stops the mapping until the config names another data source';
    const message = `data source ${mirror.dataSourceId} of mapping ${this.d.mapping.id} no longer exists (deleted in the App?): ${next}`;
    this.dataSourceNotice = message;
    this.remember({ message });
    this.log.error({ dataSourceId: mirror.dataSourceId }, message);
    return { type: 'passFinished', kind, ok: false, reason: message };
  }

  /**
   * A configuration problem only the operator can settle (a data source by id that no longer
   * exists): the mapping stops — no retries — and says so; the daemon serves the others. A
   * reload (SIGHUP) starts it again with the config as it is then.
   */
  private halt(message: string): void {
    this.halted = true;
    this.dataSourceNotice = message;
    this.remember({ message });
    this.setDegraded('config', `mapping stopped: ${message}; fix the config, then reload (SIGHUP)`);
    this.log.error({ err: message }, 'mapping stopped: its configuration needs fixing; reload (SIGHUP) once fixed');
    this.sched = step(this.sched, { type: 'stop' }, this.d.clock.monotonic()).state;
    this.armDeadline(undefined);
  }

  /**
   * Each skipped or excluded file is named in the log once (the status lists them all the
   * time): a link leading outside the folder or a FIFO is heard of, without a line per pass.
   */
  private announceSkipped(kind: PassKind, skipped: PassReport['skipped']): void {
    if (skipped.length === 0 && this.announced.size === 0) return;
    // A full pass sees everything: what it no longer skips may be named again later.
    const now = kind === 'full' ? new Set<string>() : this.announced;
    for (const s of skipped) {
      const key = `${s.path}\u0000${s.reason}`;
      now.add(key);
      if (!this.announced.has(key)) this.log.info({ path: s.path, reason: s.reason }, s.excluded ? 'file excluded' : 'file skipped');
    }
    this.announced = now;
  }

  /** What a finished pass means for the schedule; records the report for status. */
  private afterPass(kind: PassKind, report: PassReport): ScheduleEvent {
    this.d.events?.onPass?.(this.id, kind, report);
    this.followUp(report.settling ?? []);
    // One line per full pass (start, periodic rescan, recovery): when the mirror was last
    // known in sync, and what it took. Incremental passes only at debug level.
    this.log[kind === 'full' ? 'info' : 'debug'](
      { kind, ok: report.ok, ...report.counts, ms: Date.parse(report.finishedAt) - Date.parse(report.startedAt) },
      `${kind === 'full' ? 'full' : 'incremental'} pass done`,
    );
    this.lastPass = { ...report.counts, ok: report.ok, finishedAt: report.finishedAt, kind };
    this.announceSkipped(kind, report.skipped);
    for (const f of report.failures) this.remember({ path: f.path || undefined, message: `${f.op}: ${f.message}` });
    if (this.stopped) return { type: 'passFinished', kind, ok: report.ok };
    if (report.blocked?.confirmable) return this.awaitDecision(kind, report.blocked);
    if (report.blocked) return this.onFailure(kind, new Error(report.blocked.message), report.blocked.kind);
    if (this.deletes.passed()) this.log.info('no longer waiting for a mass-delete decision: the pass went ahead');
    // What the files' failures mean is decided in one place (errors.ts): a file the service
    // refused waits until it changes, a lost answer waits for the listing that settles it;
    // anything else is a failure to retry after a back-off.
    const failed = report.failures.filter((f) => {
      const disp = disposition(f, 'file');
      return disp.kind !== 'refusedForFile' && !disp.settledByListing;
    });
    if (report.needsFullPass || failed.length > 0) {
      // Transient failures: a full pass (with a listing) settles them, after a back-off.
      // Operations that failed leave the data source behind the folder: say so (a lost
      // answer alone is not an outage; the next full pass settles it).
      const first = failed[0];
      if (!first) this.phase = this.degraded.size > 0 ? 'degraded' : 'watching';
      return {
        type: 'passFinished',
        kind,
        ok: false,
        reason: first ? `${failed.length} operation(s) failed and will be retried (first: ${first.op} ${first.path}: ${first.message})` : undefined,
      };
    }
    this.degraded.delete('pass');
    this.degraded.delete('service');
    this.phase = this.degraded.size > 0 ? 'degraded' : 'watching';
    if (kind === 'full') this.lastFullPassOkAt = report.finishedAt;
    return { type: 'passFinished', kind, ok: true };
  }

  /**
   * A finished pass into the problem list and the history: it clears only what it looked at
   * (`scope`, or everything for a full pass), and the daemon writes the records file.
   */
  private record(label: PassHistoryKind, report: PassReport, scope: ChangeScope | undefined): void {
    const refused = (f: FileFailure): boolean => disposition(f, 'file').kind === 'refusedForFile';
    this.problems.onPass(report, scope, refused);
    this.passHistory.add(recordOfReport(label, report));
    this.d.onRecordsChanged?.();
  }

  /**
   * The mass-delete guard stopped the pass: the mapping waits for the operator (no retry, no
   * rescan: each would list every document again to be stopped the same way). Told once
   * per set of deletions; a change in the folder or the confirmation runs the next pass.
   */
  private awaitDecision(kind: PassKind, blocked: NonNullable<PassReport['blocked']>): ScheduleEvent {
    const message = scrub(blocked.message);
    const reason = `waiting for your decision: ${message}`;
    if (this.deletes.blocked(blocked.deletedPaths ?? [], message, new Date(this.d.clock.now()).toISOString())) {
      this.remember({ message: reason });
      this.log.error({ kind: blocked.kind, deletes: blocked.deletes }, `mass delete stopped; waiting for the operator (dssync confirm-delete --mapping ${this.id}), no retry meanwhile`);
    }
    this.setDegraded('pass', reason);
    return { type: 'passFinished', kind, ok: false, awaitDecision: true };
  }

  private onFailure(kind: PassKind, e: unknown, blockedKind?: string): ScheduleEvent {
    // Status, history and log: no known secret, whatever the error quoted (issue 24.5).
    const message = scrub(e instanceof Error ? e.message : String(e));
    const disp = disposition(e, 'mapping');
    const reason = disp.exitCode === 3 ? `the service refused the credentials: ${message}` : message;
    this.remember({ message: reason });
    // The daemon retries whatever the disposition (credentials are renewed, a data source may
    // come back); the disposition names what the operator is looking at.
    this.log.error({ err: message, kind: blockedKind, disposition: disp.kind, cause: disp.reason, failures: this.sched.failures + 1 }, 'mapping degraded; will retry');
    return { type: 'passFinished', kind, ok: false, reason };
  }

  /**
   * Files a pass set aside because they changed within the stability window: an incremental
   * pass looks at them again once the window has passed (it sets them aside again while
   * they keep changing). One timer for all of them.
   */
  private followUp(paths: readonly string[]): void {
    if (this.stopped || paths.length === 0) return;
    for (const p of paths) this.settling.add(p);
    if (this.settleTimer !== undefined) return;
    this.settleTimer = this.d.clock.setTimeout(() => {
      this.settleTimer = undefined;
      const at = this.d.clock.monotonic();
      const items = [...this.settling].map((path) => ({ path, isDir: false, gone: false, firstEventAt: at, lastEventAt: at, events: 0 }));
      this.settling.clear();
      this.takeBatch({ items, rescan: false, reasons: [] });
    }, passStabilityMs(this.d.config));
  }

  /** A full pass right away, cancelling the back-off (the cause of the failures is gone). */
  private retryNow(): void {
    this.dispatch({ type: 'fullPassRequested', now: true });
  }

  private retryDelay(failures: number): number {
    return retryDelayMs(failures, this.d.random, this.d.retryBaseMs);
  }

  private onOp(e: OpEvent): void {
    if (e.outcome === 'done' && e.documentId && (e.kind === 'upload' || e.kind === 'replace')) this.ingestion?.track(e.path, e.documentId);
    if (e.outcome === 'done' && e.kind === 'delete') this.ingestion?.forget(e.path);
    // Sent, renamed, adopted or deleted: the file and its document agree again.
    if (e.outcome === 'done' && this.problems.mirrored(e.path)) this.d.onRecordsChanged?.();
    const start = this.lagStart.get(e.path);
    const lag = e.outcome === 'done' && start !== undefined ? this.d.clock.monotonic() - start : undefined;
    if (e.outcome === 'failed' || e.outcome === 'rejected') {
      this.remember({ path: e.path, message: `${e.kind} ${e.outcome}: ${e.error?.message ?? ''}` });
    }
    this.d.events?.onOp?.(this.id, e, lag);
  }

  private setDegraded(key: string, reason: string): void {
    this.degraded.set(key, reason);
    this.phase = 'degraded';
  }

  private remember(e: Omit<RecentError, 'at'>): void {
    this.recentErrors.push({ at: new Date(this.d.clock.now()).toISOString(), ...e });
    if (this.recentErrors.length > MAX_RECENT_ERRORS) this.recentErrors.splice(0, this.recentErrors.length - MAX_RECENT_ERRORS);
  }
}

/**
 * The passes of one mapping: the pure schedule (schedule.ts) decides, the loop carries its
 * actions out — one pass at a time, its outcome told back to the schedule, into the status
 * (health), the problem list, the history and the log. Also the mapping's mirror: built at
 * the first pass, looked up again after a reload or a 404 (the data source deleted).
 */
import { scrub } from '../../secrets.js';
import type { DatastoreApi } from '../../api/api.js';
import { isApiError } from '../../api/errors.js';
import type { Config, MappingConfig } from '../../config/types.js';
import { DataSourceMissingError, type DataSourceBirth } from '../../engine/data-source.js';
import { awaitingDecision, CONFIG_STOPPED, retriedWithBackoff } from './next-step.js';
import type { FileFailure, OpEvent } from '../../engine/executor.js';
import type { ListingAhead, Mirror } from '../../engine/mirror.js';
import type { ChangeScope } from '../../engine/local-side.js';
import type { PassReport } from '../../engine/pass-report.js';
import { disposition } from '../../errors/disposition.js';
import { shownCodeOf } from '../../errors/errno.js';
import type { Logger } from '../../log.js';
import type { StateStore } from '../../state/store.js';
import type { Clock } from '../../time/clock.js';
import { buildMirror, lostDataSource, passStabilityMs } from './build-mirror.js';
import type { ChangeIntake } from './change-intake.js';
import type { ObservedStats } from '../../local/observed-stats.js';
import type { DeleteDecision } from './delete-decision.js';
import type { IngestionChecker } from './ingestion.js';
import type { MappingHealth } from './health.js';
import { failedRecord, recordOfReport, type PassHistory, type PassHistoryKind } from './pass-history.js';
import type { ProblemList } from './problem-list.js';
import { initialSchedule, step, type PassKind, type ScheduleAction, type ScheduleEvent, type ScheduleState } from './schedule.js';
import { SkipAnnouncer } from './skip-announcer.js';
import { TextChecks } from './text-check.js';
import { mappingLease, type LeaseSettings, type MappingLease } from './lease.js';
import { LeaseNotHeldError } from './lease-gate.js';
import type { LeaseStatus } from '../status/schema.js';
import type { EarlyListing } from '../early-listing.js';

/** What the daemon learns from a runner (metrics, the demo's output). */
export interface RunnerEvents {
  onOp?(mappingId: string, e: OpEvent, lagMs: number | undefined): void;
  onPass?(mappingId: string, kind: 'full' | 'changes', report: PassReport): void;
  /** A pass begins (the status page shows its progress). */
  onPassStart?(mappingId: string, kind: 'full' | 'changes'): void;
}

/** What a mapping's passes are made of: the part of MappingRunnerDeps the pass loop uses. */
export interface PassSettings {
  config: Config;
  mapping: MappingConfig;
  index: number;
  api: DatastoreApi;
  state: StateStore;
  logger: Logger;
  clock: Clock;
  events?: RunnerEvents | undefined;
  random?: (() => number) | undefined;
  /** First retry delay after a failure (ms, default 5 s); doubles up to 5 min. */
  retryBaseMs?: number | undefined;
  /** Builds the mapping's Mirror (tests may swap it). */
  buildMirror?: typeof buildMirror | undefined;
  /** The problem list or the history changed: the daemon writes the records file. */
  onRecordsChanged?: (() => void) | undefined;
  /** The mapping's lease (mapping/lease.ts): passes write only while it is held. Absent: no lease (tests). */
  lease?: Omit<LeaseSettings, 'mappingId' | 'root' | 'clock' | 'logger' | 'api' | 'early'> | undefined;
  /** The listing the daemon began while the state loaded (early-listing.ts): the start's, when the lease's claim allows it. */
  startListing?: Promise<EarlyListing | undefined> | undefined;
}

export interface PassLoopDeps extends PassSettings {
  /** The mapping's logger. */
  log: Logger;
  health: MappingHealth;
  intake: ChangeIntake;
  /** The watcher's stats of changed files, for the local side. */
  observed: ObservedStats;
  problems: ProblemList;
  history: PassHistory;
  deletes: DeleteDecision;
  ingestion: () => IngestionChecker | undefined;
  /** Aborts the passes' requests (the mapping stops). */
  signal: AbortSignal;
  isStopped: () => boolean;
  paused: boolean;
}

export class PassLoop {
  private sched: ScheduleState;
  private mirror: Mirror | undefined;
  /** The pass running now. */
  private running: Promise<void> | undefined;
  private deadlineTimer: unknown;
  private deadlineAt: number | undefined;
  /** What the next full pass is, for the history: the first one, a rescan, or another. */
  private nextFullKind: PassHistoryKind = 'start';
  /** First event time of each path in the pass running now, for the lag metric. */
  private lagStart = new Map<string, number>();
  /** A reload asked to look the data source up again before the next pass (it may be gone, or renamed). */
  private recheckDataSource = false;
  /** The mapping stopped on a configuration problem (its data source by id is gone) until a reload. */
  private halted = false;
  private readonly announcer: SkipAnnouncer;
  private readonly textChecks: TextChecks;
  /** The lease of the mirror's data source, kept from the first resolution on. */
  private lease: MappingLease | undefined;
  /** The resolution of the data source in flight: the start's (prepare) and a pass's share it. */
  private resolving: Promise<Mirror> | undefined;
  /** The start's resolution, until the first pass takes its outcome (a failure too: not resolved twice). */
  private early: Promise<Mirror> | undefined;
  /** The start's listing begun ahead (Mirror.listAhead): the first pass's, if it is a full pass; dropped otherwise. */
  private ahead: Promise<ListingAhead | undefined> | undefined;
  /** The pass in flight began while the lease's claim settled: it plans once the claim holds. */
  private awaitingClaim = false;
  /** The listing begun while the state loaded, until the start's listing takes it (or drops it). */
  private startListing: EarlyListing | undefined;

  constructor(private readonly d: PassLoopDeps) {
    this.announcer = new SkipAnnouncer(d.log);
    this.textChecks = new TextChecks({ mapping: d.mapping, problems: d.problems, onChanged: () => d.onRecordsChanged?.(), isStopped: d.isStopped });
    this.sched = initialSchedule({ rescanIntervalMs: d.config.rescanIntervalSeconds * 1000, retryBaseMs: d.retryBaseMs, settleMs: passStabilityMs(d.config) }, { paused: d.paused });
  }

  private get id(): string {
    return this.d.mapping.id;
  }

  /** The data source passes write to (the config's until the mirror is built). */
  get dataSourceId(): string | undefined {
    return this.mirror?.dataSourceId;
  }

  get isRunning(): boolean {
    return this.running !== undefined;
  }

  /** The pass in flight reads beside the lease's claim and writes only once it holds: a standby's status says standby meanwhile. */
  get awaitingLease(): boolean {
    return this.awaitingClaim && this.lease?.holds() === false;
  }

  /** The next periodic rescan (monotonic ms), if one is planned. */
  get nextRescanAt(): number | undefined {
    return this.sched.rescanAt;
  }

  /** The schedule hears of something (see ScheduleEvent); its actions are carried out. */
  dispatch(e: ScheduleEvent): void {
    const r = step(this.sched, e, this.d.clock.monotonic(), this.d.random ?? Math.random);
    this.sched = r.state;
    for (const a of r.actions) this.carryOut(a);
    this.armDeadline(r.nextDeadline);
  }

  /** A full pass right away, cancelling the back-off (the cause of the failures is gone). */
  retryNow(): void {
    this.dispatch({ type: 'fullPassRequested' });
  }

  /** "Rescan now": the next full pass is a rescan in the history (unless it is the first). */
  requestRescan(): void {
    if (this.nextFullKind !== 'start') this.nextFullKind = 'rescan';
    this.retryNow();
  }

  /**
   * A reload with the mapping's settings unchanged: the data source is looked up again
   * before the next pass; a mapping halted on its configuration starts again, any other
   * runs a full pass (schedule.ts `configChanged`).
   */
  reloaded(paused: boolean): void {
    this.recheckDataSource = true;
    this.early = undefined;
    this.ahead = undefined;
    if (this.halted) {
      // Stopped on a configuration problem: the reload is the operator's answer; start again.
      this.halted = false;
      this.d.health.clear('config');
      this.d.log.info('reloaded: the stopped mapping starts again');
      this.sched = initialSchedule(this.sched.config, { paused });
      this.dispatch({ type: 'started' });
      return;
    }
    this.d.log.info('reloaded: ignore file read again; full pass');
    this.dispatch({ type: 'configChanged', config: this.sched.config });
  }

  /** The lease's state, once the data source is resolved. */
  leaseStatus(): LeaseStatus | undefined {
    return this.lease?.status();
  }

  /**
   * Resolves the data source, and so begins the lease's claim, while the watcher is set up:
   * the claim's settle wait (engine/lease.ts) runs beside the set-up instead of after it.
   * Nothing is scanned; a failure is left to the first pass, which resolves again.
   */
  prepare(): void {
    const begun = this.d.startListing;
    this.early = (async () => {
      // The listing begun while the state loaded names the marker its lease reads (leaseFor).
      this.startListing = await begun;
      return this.ensureMirror();
    })();
    this.early.catch(() => undefined);
    // The start's listing too, once the claim has read the marker: the walk waits for the watcher, the listing need not.
    this.ahead = this.early.then((m) => m.listAhead(this.d.signal, this.takeStartListing())).catch(() => {
      dropStartListing(this.takeStartListing());
      return undefined;
    });
  }

  /** The listing begun while the state loaded, once: to the start's listing, which takes its pages or drops them. */
  private takeStartListing(): EarlyListing | undefined {
    const l = this.startListing;
    this.startListing = undefined;
    return l;
  }

  /** Releases the lease (after the last pass: a graceful stop, or a pause); the next pass claims it again. */
  async releaseLease(): Promise<void> {
    // A resolution in flight may still start the lease: it is released after it.
    await this.resolving?.catch(() => undefined);
    const lease = this.lease;
    if (lease === undefined) return;
    // The pass in flight ends first: nothing is written after the release. One that has only
    // read beside the claim (it plans once the claim holds) is dropped instead: the stop's
    // settled() answers false, and it ends as a standby's pass does.
    if (!(this.awaitingClaim && !lease.holds())) await this.running?.catch(() => undefined);
    await lease.stop();
  }

  /** The lease of the data source `dataSourceId` (one per data source: another replaces it). */
  private leaseFor(dataSourceId: string, installationId: string, birth?: DataSourceBirth): MappingLease {
    if (this.lease?.dataSourceId === dataSourceId) return this.lease;
    void this.lease?.stop();
    const begun = this.startListing?.dataSourceId === dataSourceId ? { documentId: this.startListing.documentId } : undefined;
    const settings = { ...this.d.lease!, api: this.d.api, mappingId: this.id, root: this.d.mapping.path, clock: this.d.clock, logger: this.d.log, filesTracked: () => this.d.state.fileCount(this.id), early: begun };
    // Gave way in a creation race (lease.ts nameOnce): the next pass resolves the other data source (resolveMirror).
    const gaveWay = (): void => {
      if (this.lease === lease && !this.d.isStopped()) this.retryNow();
    };
    const lease = mappingLease(
      settings,
      dataSourceId,
      installationId,
      (held) => {
        if (this.lease !== lease || this.d.isStopped()) return;
        // A pass waiting for this claim goes on by itself.
        if (held && !this.awaitingClaim) this.retryNow();
      },
      birth && { ...birth, gaveWay },
    );
    this.lease = lease;
    lease.start();
    return lease;
  }

  /** Stops the deadline timer (the mapping stops). */
  stopTimers(): void {
    if (this.deadlineTimer !== undefined) this.d.clock.clearTimeout(this.deadlineTimer);
  }

  /** Waits for the pass in progress; after `graceMs`, `abort` cuts its requests. */
  async finish(graceMs: number, abort: () => void): Promise<void> {
    if (!this.running) return;
    const timer = this.d.clock.setTimeout(abort, graceMs);
    await this.running.catch(() => undefined);
    this.d.clock.clearTimeout(timer);
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
        this.d.health.setDegraded(this.mirror ? 'pass' : 'service', a.reason, retriedWithBackoff(this.d.retryBaseMs));
        break;
      case 'leaveDegraded':
        this.d.health.clear('pass', 'service');
        break;
      case 'lookAgain':
        this.d.intake.lookAgain();
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
    if (at === undefined || this.d.isStopped()) return;
    this.deadlineTimer = this.d.clock.setTimeout(() => {
      this.deadlineTimer = undefined;
      this.deadlineAt = undefined;
      if (this.sched.rescanAt !== undefined && this.sched.rescanAt <= this.d.clock.monotonic()) {
        this.d.log.info('periodic rescan');
        if (this.nextFullKind !== 'start') this.nextFullKind = 'rescan';
      }
      this.dispatch({ type: 'tick' });
    }, Math.max(0, at - this.d.clock.monotonic()));
  }

  private async work(kind: PassKind): Promise<void> {
    const { health, intake, clock } = this.d;
    let finished: ScheduleEvent;
    /** What the pass may send: everything (a full pass) or its scope; undefined until it starts. */
    let sends: ChangeScope | 'everything' | undefined;
    const startedAt = clock.now();
    let phaseBefore = health.phase;
    const label: PassHistoryKind = kind === 'full' ? this.nextFullKind : 'incremental';
    if (kind === 'full') this.nextFullKind = 'full';
    try {
      const early = this.early;
      this.early = undefined;
      const ahead = kind === 'full' ? this.ahead : undefined;
      this.ahead = undefined;
      const mirror = await (early ?? this.ensureMirror());
      // Released by a pause: claimed again now that passes run.
      if (this.lease?.stopped && !this.d.isStopped()) this.lease.start();
      // A full pass begun while a claim settles walks and lists beside it, and plans once it holds (build-mirror.ts leaseSettled).
      if (this.lease && !this.lease.holds() && !(kind === 'full' && this.lease.claiming())) return this.standby(kind, label);
      this.awaitingClaim = this.lease !== undefined && !this.lease.holds();
      phaseBefore = health.phase;
      health.phase = 'syncing';
      this.d.events?.onPassStart?.(this.id, kind);
      const { scope, firstEventAt } = intake.passStarted(kind);
      sends = kind === 'full' ? 'everything' : scope;
      this.lagStart = firstEventAt;
      const report =
        kind === 'full'
          ? await mirror.fullPass({ signal: this.d.signal, confirmedDeletes: this.d.deletes.confirmedDeletes(), ahead: await ahead })
          : await mirror.changedPass(scope, { signal: this.d.signal });
      this.record(label, report, sends === 'everything' ? undefined : sends);
      const lost = await this.dataSourceLost(kind, report.failures.some((f) => f.code === 'E_NOT_FOUND'));
      const after = this.afterPass(kind, report);
      finished = lost ?? after;
    } catch (e) {
      if (this.d.isStopped()) return;
      // The claim it read beside was lost: its reads are dropped, and taking the lease runs a pass.
      if (e instanceof LeaseNotHeldError && this.lease && !this.lease.holds()) {
        health.phase = phaseBefore;
        return this.standby(kind, label);
      }
      if (e instanceof DataSourceMissingError) {
        this.halt(e.message);
        return;
      }
      finished = (await this.dataSourceLost(kind, isApiError(e) && e.code === 'E_NOT_FOUND')) ?? this.onFailure(kind, e);
      if (finished.type === 'passFinished' && finished.reason) {
        this.d.history.add(failedRecord(label, startedAt, clock.now(), finished.reason));
        this.d.onRecordsChanged?.();
      }
    } finally {
      this.awaitingClaim = false;
      // Also what was created while it ran, succeeded or not: its walk may have sent it.
      if (sends !== undefined) intake.passEnded();
    }
    if (this.d.isStopped()) return;
    this.dispatch(finished);
  }

  /** Another process writes (or the claim did not hold): no pass; taking the lease runs one. */
  private standby(kind: PassKind, label: PassHistoryKind): void {
    if (kind === 'full') this.nextFullKind = label;
    if (!this.d.isStopped()) this.dispatch({ type: 'passFinished', kind, ok: true });
  }

  /**
   * The mirror of the mapping's data source: built at the start (prepare), and looked up again
   * after a reload (replaced when the data source changed: deleted in the App, or another
   * one named by the config). Throws what the resolution throws.
   */
  private ensureMirror(): Promise<Mirror> {
    if (this.mirror && !this.recheckDataSource && this.lease?.gaveWay === undefined) return Promise.resolve(this.mirror);
    this.resolving ??= this.resolveMirror().finally(() => (this.resolving = undefined));
    return this.resolving;
  }

  private async resolveMirror(): Promise<Mirror> {
    const { health } = this.d;
    this.recheckDataSource = false;
    const gaveWayTo = this.lease?.gaveWay;
    // The records of the data source deleted in a creation race: dropped, the other one recorded (found by its name next).
    if (gaveWayTo !== undefined) this.d.state.ensureMapping(this.id, gaveWayTo, this.d.mapping.path);
    if (!this.mirror) health.phase = 'starting';
    // The notice of this resolution, if any, replaces the last one.
    let notice: string | undefined;
    const built = await (this.d.buildMirror ?? buildMirror)(this.d.config, this.d.mapping, this.d.index, {
      api: this.d.api,
      state: this.d.state,
      logger: this.d.logger,
      onOp: (e) => this.onOp(e),
      signal: this.d.signal,
      clock: this.d.clock,
      stabilityMs: passStabilityMs(this.d.config),
      observed: this.d.observed,
      onNotice: (m) => {
        notice = m;
        health.remember({ message: m });
      },
      lease: this.d.lease ? (dataSourceId, installationId, birth) => this.leaseFor(dataSourceId, installationId, birth) : undefined,
    });
    health.dataSourceNotice = notice;
    // The same data source: the running mirror keeps its windows (mass deletes, intents).
    if (!this.mirror || this.mirror.dataSourceId !== built.dataSourceId) this.mirror = built;
    health.clear('service');
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
    // Deleted by this process in a creation race: the next pass resolves the other one (resolveMirror).
    if (!sawNotFound || !mirror || this.d.isStopped() || this.lease?.gaveWay !== undefined) return undefined;
    const lost = await lostDataSource(this.d.api, this.d.mapping, this.d.index, mirror.dataSourceId, this.d.signal);
    if (lost === undefined) return undefined;
    this.mirror = undefined;
    this.d.health.dataSourceNotice = lost.message;
    this.d.health.remember({ message: lost.message });
    this.d.log.error({ dataSourceId: mirror.dataSourceId }, lost.message);
    return { type: 'passFinished', kind, ok: false, reason: lost.message };
  }

  /**
   * A configuration problem only the operator can settle (a data source by id that no longer
   * exists): the mapping stops — no retries — and says so; the daemon serves the others. A
   * reload (SIGHUP) starts it again with the config as it is then.
   */
  private halt(message: string): void {
    const { health } = this.d;
    this.halted = true;
    health.dataSourceNotice = message;
    health.remember({ message });
    health.setDegraded('config', `mapping stopped: ${message}; fix the config, then reload (SIGHUP)`, CONFIG_STOPPED);
    this.d.log.error({ err: message }, 'mapping stopped: its configuration needs fixing; reload (SIGHUP) once fixed');
    this.sched = step(this.sched, { type: 'stop' }, this.d.clock.monotonic()).state;
    this.armDeadline(undefined);
  }

  /** What a finished pass means for the schedule; records the report for status. */
  private afterPass(kind: PassKind, report: PassReport): ScheduleEvent {
    const { health } = this.d;
    this.d.events?.onPass?.(this.id, kind, report);
    if (report.settling?.length && !this.d.isStopped()) {
      this.d.intake.setAside(report.settling);
      this.dispatch({ type: 'setAside' });
    }
    // One line per full pass (start, periodic rescan, recovery): when the mirror was last
    // known in sync, and what it took. Incremental passes only at debug level, with when they
    // started and how many files they set aside (a latency trace).
    const done = { kind, ok: report.ok, ...report.counts, ms: Date.parse(report.finishedAt) - Date.parse(report.startedAt) };
    if (kind === 'full') this.d.log.info(done, 'full pass done');
    else this.d.log.debug({ ...done, settling: report.settling?.length ?? 0, startedAt: report.startedAt }, 'incremental pass done');
    health.lastPass = { ...report.counts, ok: report.ok, finishedAt: report.finishedAt, kind };
    this.announcer.announce(kind, report.skipped);
    for (const f of report.failures) health.remember({ path: f.path || undefined, message: `${f.op}: ${f.message}`, code: f.code });
    if (this.d.isStopped()) return { type: 'passFinished', kind, ok: report.ok };
    if (report.blocked?.confirmable) return this.awaitDecision(kind, report.blocked);
    if (report.blocked) return this.onFailure(kind, new Error(report.blocked.message), report.blocked.kind);
    if (this.d.deletes.passed()) this.d.log.info('no longer waiting for a mass-delete decision: the pass went ahead');
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
      if (!first) health.phase = health.settledPhase();
      return {
        type: 'passFinished',
        kind,
        ok: false,
        reason: first ? `${failed.length} operation(s) failed and will be retried (first: ${first.op} ${first.path}: ${first.message})` : undefined,
      };
    }
    health.clear('pass', 'service');
    health.phase = health.settledPhase();
    if (kind === 'full') health.lastFullPassOkAt = report.finishedAt;
    return { type: 'passFinished', kind, ok: true };
  }

  /**
   * A finished pass into the problem list and the history: it clears only what it looked at
   * (`scope`, or everything for a full pass), and the daemon writes the records file.
   */
  private record(label: PassHistoryKind, report: PassReport, scope: ChangeScope | undefined): void {
    const refused = (f: FileFailure): boolean => disposition(f, 'file').kind === 'refusedForFile';
    this.d.problems.onPass(report, scope, refused);
    this.d.history.add(recordOfReport(label, report));
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
    if (this.d.deletes.blocked(blocked.deletedPaths ?? [], message, new Date(this.d.clock.now()).toISOString())) {
      this.d.health.remember({ message: reason });
      this.d.log.error({ kind: blocked.kind, deletes: blocked.deletes }, `mass delete stopped; waiting for the operator (dssync confirm-delete --mapping ${this.id}), no retry meanwhile`);
    }
    this.d.health.setDegraded('pass', reason, awaitingDecision(this.id));
    return { type: 'passFinished', kind, ok: false, awaitDecision: true };
  }

  private onFailure(kind: PassKind, e: unknown, blockedKind?: string): ScheduleEvent {
    // Status, history and log: no known secret, whatever the error quoted (issue 24.5).
    const message = scrub(e instanceof Error ? e.message : String(e));
    const disp = disposition(e, 'mapping');
    const reason = disp.exitCode === 3 ? `the service refused the credentials: ${message}` : message;
    this.d.health.remember({ message: reason, code: shownCodeOf(e) });
    // The daemon retries whatever the disposition (credentials are renewed, a data source may
    // come back); the disposition names what the operator is looking at.
    this.d.log.error({ err: message, kind: blockedKind, disposition: disp.kind, cause: disp.reason, failures: this.sched.failures + 1 }, 'mapping degraded; will retry');
    return { type: 'passFinished', kind, ok: false, reason };
  }

  private onOp(e: OpEvent): void {
    const ingestion = this.d.ingestion();
    if (e.outcome === 'done' && e.documentId && (e.kind === 'upload' || e.kind === 'replace')) ingestion?.track(e.path, e.documentId);
    if (e.outcome === 'done' && e.kind === 'delete') ingestion?.forget(e.path);
    // Sent, renamed, adopted or deleted: the file and its document agree again.
    if (e.outcome === 'done' && this.d.problems.mirrored(e.path)) this.d.onRecordsChanged?.();
    if (e.outcome === 'done') void this.textChecks.afterOp(e.kind, e.path);
    const start = this.lagStart.get(e.path);
    const lag = e.outcome === 'done' && start !== undefined ? this.d.clock.monotonic() - start : undefined;
    if (e.outcome === 'failed' || e.outcome === 'rejected') {
      this.d.health.remember({ path: e.path, message: `${e.kind} ${e.outcome}: ${e.error?.message ?? ''}`, code: shownCodeOf(e.error) });
    }
    this.d.events?.onOp?.(this.id, e, lag);
  }
}

/** A listing begun while the state loaded that no listing will take: its pages are let go. */
export function dropStartListing(l: EarlyListing | undefined): void {
  if (l !== undefined) void l.pages.drop();
}

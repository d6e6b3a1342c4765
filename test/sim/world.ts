/**
 * One simulated machine and service: the REAL daemon parts of one mapping — MappingRunner
 * (its pure schedule, schedule.ts, and the event aggregator), the Mirror (planner,
 * executor, guards, intents), the local side (walk, filters, ignore file, hashing) and the
 * StateStore (snapshot + journal) — over fakes of their edges: a fake clock and timers, a
 * watcher that reports what the history does, an in-memory folder (fake-local.ts), a disk
 * that loses what was not fsync'd at a crash (fake-disk.ts) and the service (fake-service.ts).
 */
import type { Config, MappingConfig } from '../../src/config/types.js';
import type { BatchItem } from '../../src/local/watch/aggregator.js';
import { createFilter } from '../../src/local/filters.js';
import { createLocalSide } from '../../src/local/side.js';
import type { Watcher, WatcherOptions } from '../../src/local/watch/watcher.js';
import { Mirror, type MirrorDeps, type PassOptions } from '../../src/engine/mirror.js';
import type { ChangeScope } from '../../src/engine/local-side.js';
import type { PassReport } from '../../src/engine/pass-report.js';
import type { LeaseView } from '../../src/engine/lease-view.js';
import { buildMetadata } from '../../src/engine/metadata.js';
import { markUploadName, uploadTag } from '../../src/engine/document-fields.js';
import type { Op } from '../../src/engine/plan.js';
import { countDeletes, DELETE_WINDOW_MS } from '../../src/engine/guards.js';
import { MappingRunner } from '../../src/daemon/mapping/runner.js';
import { readStateFile, StateStore } from '../../src/state/store.js';
import { journalPathOf } from '../../src/state/journal.js';
import { identityPathOf, readIdentityFile } from '../../src/state/identity-file.js';
import { encodeStateToString } from '../../src/state/encoder.js';
import { toFormat3 } from '../helpers/state-v3.js';
import { establishIdentity } from '../../src/engine/installation.js';
import { isLeaseDocument } from '../../src/engine/lease-view.js';
import { LEASE, leaseMarkersOf, pickMarker, type HostProbe } from '../../src/engine/lease.js';
import { mappingLease, type LeaseSettings } from '../../src/daemon/mapping/lease.js';
import { leaseDeps, type MirrorLease } from '../../src/daemon/mapping/build-mirror.js';
import type { DatastoreApi } from '../../src/api/api.js';
import { ApiError } from '../../src/api/errors.js';
import { storedName } from '../../src/engine/service-names.js';
import { FakeDisk } from './fake-disk.js';
import { FakeLocal, sha256 } from '../helpers/fake-local.js';
import { FakeService, SHARE, type ServiceVariant } from './fake-service.js';
import { provisionalName } from '../../src/engine/data-source.js';
import type { Clock } from '../../src/time/clock.js';

/** The mapped folder, in the fake's tree. */
export const ROOT = '/sim/share';
export const STATE_PATH = '/sim/state/state.json';
export const MAPPING_ID = 'm1';
export const INSTALLATION = 'sim-installation-1';
export const IGNORE_FILE = '.dssyncignore';
const DEBOUNCE_MS = 300;
/** The periodic rescan: long, so that the quiet check shows what the daemon does without it. */
export const RESCAN_INTERVAL_S = 3600;

/**
 * The lease's timings in the simulation: the real expiry, renewal and check intervals; a
 * shorter claim (the settle wait must only outlast a rival's read and write, and the
 * simulated service answers at once), so that a start's first pass comes as soon after
 * the start as it did before the lease, where the histories' classes look for it.
 */
export const SIM_LEASE: typeof LEASE = Object.create(LEASE, { settleMs: { value: 100 }, claimLatencyMs: { value: 50 } }) as typeof LEASE;

export interface SimConfig {
  prune: 'ours' | 'all';
  exclude: string[];
  include: string[];
  maxFileBytes: number;
  /** The mass-delete guard: share and minimum. */
  maxDeletePercent: number;
  massDeleteMinimum: number;
}

export const silent = { info() {}, warn() {}, error() {}, debug() {}, fatal() {}, trace() {}, child() { return silent; } } as never;

interface Timer {
  at: number;
  seq: number;
  fn: () => void;
}

/**
 * The Clock of one process, on the world's time: a crash drops its timers with it (which
 * the one FakeClock of test/helpers, shared by everything, cannot do).
 */
export class FakeTimers implements Clock {
  private readonly timers = new Map<number, Timer>();
  private seq = 0;
  dead = false;
  constructor(private readonly clock: { t: number; wallOffset: number }) {}
  /** Wall time: the monotonic time plus the steps the history gave the wall clock (defect 7). */
  now = (): number => this.clock.t + this.clock.wallOffset;
  /** Never steps: timers fire on it, as the kernel's do. */
  monotonic = (): number => this.clock.t;
  setTimeout = (fn: () => void, ms: number): unknown => {
    if (this.dead) return 0;
    const id = ++this.seq;
    this.timers.set(id, { at: this.clock.t + Math.max(0, ms), seq: id, fn });
    return id;
  };
  clearTimeout = (h: unknown): void => {
    this.timers.delete(h as number);
  };
  sleep = (ms: number, signal?: AbortSignal): Promise<void> =>
    new Promise<void>((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const id = this.setTimeout(() => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      }, ms);
      const onAbort = (): void => {
        this.clearTimeout(id);
        reject(signal?.reason);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  next(): number | undefined {
    let best: number | undefined;
    for (const t of this.timers.values()) if (best === undefined || t.at < best) best = t.at;
    return best;
  }
  /** Fires the earliest timer due by the clock; false when none is due. */
  fireDue(): boolean {
    let pick: Timer | undefined;
    for (const t of this.timers.values()) if (t.at <= this.clock.t && (!pick || t.at < pick.at || (t.at === pick.at && t.seq < pick.seq))) pick = t;
    if (!pick) return false;
    this.timers.delete(pick.seq);
    pick.fn();
    return true;
  }
  kill(): void {
    this.dead = true;
    this.timers.clear();
  }
}

/** One run of the daemon (start to crash or stop). */
interface Process {
  timers: FakeTimers;
  store: StateStore;
  runner: MappingRunner;
  watcher: WatcherOptions | undefined;
  inflight: number;
  /** Deletions counted by the guard, per executed round (the delete-window oracle). */
  deletions: { at: number; count: number; base: number }[];
  crashed: boolean;
  /** The identity the process runs under (establishIdentity at its start, as buildMirror does). */
  installationId: string;
  /** Its host (the lease record's), pid (unique in the world) and lease (mapping/lease.ts, made by its pass loop). */
  host: string;
  pid: number;
  lease: MirrorLease | undefined;
  /** The state's disk: the world's, or a second host's (a copied state, a replica's volume). */
  disk: FakeDisk;
}

/** How a second process with our identity comes to be (issue 34 case 2 and 3). */
export type TwinKind = 'copied-state' | 'pinned-replica';

export interface PersonDoc {
  id: string;
  name: string;
  content: string;
  /** Another dssync installation's document (carries metadata): untouched whatever prune says. */
  foreign: boolean;
  /** A daemon with prune "all" ran while it existed: it may be gone. */
  prunable: boolean;
}

export interface Totals {
  histories: number;
  commands: number;
  passes: number;
  crashes: number;
  restarts: number;
  faults: number;
  lateCommits: number;
}

export class World {
  /**
   * `t` is monotonic (timers, the service's own time); `wallOffset` is what wall-clock steps
   * (chrony, an NTP correction; issue 23 defect 7) added to it: the machine's wall time, which
   * files' mtimes and the Clock's now() show.
   */
  readonly clock = { t: Date.parse('2026-11-23T00:00:00Z'), wallOffset: 0 };
  readonly local = new FakeLocal({ root: ROOT, now: () => this.clock.t + this.clock.wallOffset });
  readonly disk = new FakeDisk();
  readonly service: FakeService;
  people: PersonDoc[] = [];
  /** Someone deleted or renamed one of our documents: the daemon learns of it at a full pass begun after. */
  remoteTampered = false;
  /** How many times people tampered with our documents: a full pass repairs what came before it began. */
  private tampers = 0;
  /** A pass was stopped by the mass-delete guard (the operator must say "allow"). */
  blocked = false;
  /** Violations of the delete window seen during the history. */
  guardViolations: string[] = [];
  passes = 0;
  commandsRun = 0;
  crashes = 0;
  restarts = 0;
  proc: Process | undefined;
  tornNext = 0;
  /** SHA-256 of the states a slow writer's file went through before its last write. */
  readonly partials = new Set<string>();

  constructor(
    public config: SimConfig,
    variant: ServiceVariant,
  ) {
    this.service = new FakeService(() => this.clock.t, variant);
    this.service.onCrash = () => this.crashNow(this.tornNext);
    this.service.elapse = (ms) => void (this.clock.t += ms);
  }

  get now(): number {
    return this.clock.t;
  }

  // ---- the process -------------------------------------------------------------------

  async start(): Promise<void> {
    // ServiceVariant.born 'raced': a replica (a StatefulSet's second pod, its config naming the
    // data source by id) starts beside the creator, before its first claim.
    const replica = this.service.variant.born === 'raced' && this.proc === undefined && this.twin === undefined ? this.startTwin('pinned-replica') : undefined;
    this.proc = await this.launch(this.host, this.disk);
    await replica;
    await this.settle();
  }

  /**
   * One daemon process on `host` with its state on `disk`: the real MappingRunner, with the
   * real lease (daemon/mapping/lease.ts over engine/lease.ts) on the world's clock, the
   * marker read and written through the simulated service.
   */
  private async launch(host: string, disk: FakeDisk, twin = false, pinned?: string): Promise<Process> {
    if (this.config.prune === 'all') for (const p of this.people) p.prunable = true;
    const timers = new FakeTimers(this.clock);
    const store = await StateStore.open(STATE_PATH, {
      fs: disk.fs(),
      clock: timers,
      lock: false,
      onCorrupt: 'reset',
      // Small, so that folds (snapshot rewrites) happen within a history too.
      foldMinBytes: 2048,
      logger: silent,
    });
    // A new state "draws" INSTALLATION (after its identity file was lost, another id);
    // afterwards the id comes from the state, whatever the host is called.
    const installationId = establishIdentity(store, { statePath: STATE_PATH, host, pinned, draw: () => this.drawnId }).installationId;
    this.idsUsed.add(installationId);
    // The daemon's first state after the id changed: does a record it kept name a document of the old id?
    const expect = twin ? undefined : this.expectFormer;
    const recorded = store.mapping(MAPPING_ID)?.files;
    if (expect !== undefined && recorded !== undefined && [...recorded.entries()].some(([, e]) => expect.docIds.has(e.documentId))) this.mustKnow.add(expect.id);
    if (!twin) this.expectFormer = undefined;
    const proc: Process = { timers, store, runner: undefined as never, watcher: undefined, inflight: 0, deletions: [], crashed: false, installationId, host, pid: ++this.pids, lease: undefined, disk };
    this.noteKnownIds(proc);
    // The runner's client (its lease's requests, the data source's checks) and the mirror's.
    // The daemon's calls end with it (forProcess); the second process's with its own crash.
    const base = twin ? this.service : this.service.forProcess();
    const api = this.apiFor(proc, base, false);
    const mirrorApi = this.apiFor(proc, base, true);
    const config = {
      debounceMs: DEBOUNCE_MS,
      rescanIntervalSeconds: RESCAN_INTERVAL_S,
      ingestionCheck: { enabled: false, delaySeconds: 60 },
      statePath: STATE_PATH,
      mappings: [],
    } as unknown as Config;
    const mapping = {
      id: MAPPING_ID,
      path: ROOT,
      dataSourceId: this.service.dataSourceId,
      ignoreFile: IGNORE_FILE,
      include: this.config.include,
      exclude: this.config.exclude,
      maxFileBytes: this.config.maxFileBytes,
      followSymlinks: false,
      prune: this.config.prune,
      maxDeletePercent: this.config.maxDeletePercent,
      // The simulation feeds the watcher's events itself (its watch function ignores these).
      watch: { mode: 'events', pollIntervalSeconds: 10, pollBudgetPercent: 5 },
    } as unknown as MappingConfig;
    proc.runner = new MappingRunner({
      config,
      mapping,
      index: 0,
      api,
      state: store,
      logger: silent,
      clock: timers,
      random: () => 0.5,
      localFs: this.local,
      watch: async (opts) => {
        proc.watcher = opts;
        const w: Watcher = { root: ROOT, close: async () => void (proc.watcher = undefined), watchedDirs: () => 1 };
        return w;
      },
      lease: this.leaseSettings(host, disk, proc.pid),
      // The runner's monotonic clock and full passes' stability window reach the mirror as buildMirror passes them.
      buildMirror: async (_c, _m, _i, deps) => {
        proc.lease = deps.lease?.(this.service.dataSourceId, proc.installationId, this.birth(!twin));
        return this.mirror(proc, mirrorApi, deps.onOp, { monotonic: () => deps.clock.monotonic(), stabilityMs: deps.stabilityMs });
      },
    });
    proc.runner.start();
    return proc;
  }

  private pids = 0;

  /** The daemon has built its first mirror (the one that created the data source). */
  private created = false;

  /**
   * A born data source still under its provisional name (ServiceVariant.born): the daemon's
   * first mirror created it (its lease holds from the first claim); any other finds it so
   * (a restart, the second process, the operator's one-shot sync).
   */
  private birth(daemon: boolean): { name: string; fresh: boolean } | undefined {
    const fresh = daemon && !this.created;
    if (daemon) this.created = true;
    return this.service.dataSourceName === provisionalName(SHARE) ? { name: SHARE, fresh } : undefined;
  }

  /**
   * The lease's settings of process `pid` on `host` with its state on `disk` (its marker's
   * body and memo in memory): its record names the simulated pid, so whether a holder on
   * this host lives is answered by the world, not by the test runner's own pid.
   */
  private leaseSettings(host: string, disk: FakeDisk, pid: number): Pick<LeaseSettings, 'statePath' | 'stateFs' | 'probe' | 'timing' | 'files' | 'pid'> {
    const probe: HostProbe = { hostname: host, bootId: 'sim-boot', alive: (p) => this.live().some((q) => q.host === host && q.pid === p), procStart: () => undefined };
    const files = { write: async (path: string, text: string) => void this.service.sideFiles.set(path, text), remove: async (path: string) => void this.service.sideFiles.delete(path) };
    return { statePath: STATE_PATH, stateFs: disk.fs(), probe, timing: SIM_LEASE, files, pid };
  }

  /** The running processes: the daemon and a second one with our identity, when there is one. */
  live(): Process[] {
    return [this.proc, this.twin].filter((p): p is Process => p !== undefined && !p.crashed);
  }

  /**
   * The service as one process reaches it: nothing after its crash, a crash fault crashes
   * it, and every write of its mirror is checked against the lease's marker (checkLeaseWrite).
   */
  private apiFor(proc: Process, api: DatastoreApi, mirror: boolean): DatastoreApi {
    return new Proxy(api, {
      get: (target, key, receiver) => {
        const v: unknown = Reflect.get(target, key, receiver);
        if (typeof v !== 'function') return v;
        return (...args: unknown[]) => {
          if (proc.crashed) return Promise.reject(new ApiError({ code: 'E_ABORTED', message: 'the process crashed' }));
          this.service.onCrash = () => this.crash(proc, this.tornNext);
          if (mirror || key === 'updateDataSource') this.checkLeaseWrite(proc, String(key), args);
          // The history's hooks into a pass's calls (duringCall) see the mirror's, not the lease's.
          this.service.hooksOff = !mirror;
          try {
            return (v as (...a: unknown[]) => unknown).apply(target, args);
          } finally {
            this.service.hooksOff = false;
          }
        };
      },
    });
  }

  /**
   * The lease's promise (DESIGN §7): a write of the mirror (an upload of the folder's
   * content, an update or delete of a document that is not a marker) is sent only by the
   * process the marker's record names, unreleased: so no document of another live writer
   * is ever deleted, and two processes with one identity never both write.
   */
  private checkLeaseWrite(proc: Process, call: string, args: unknown[]): void {
    if (proc.lease === undefined) return;
    let what: string | undefined;
    if (call === 'uploadDocuments' && (args[1] as { path: string }[]).some((f) => !this.service.sideFiles.has(f.path))) what = 'an upload';
    if ((call === 'updateDocument' || call === 'deleteDocument') && !this.isMarker(String(args[1]))) what = `${call === 'deleteDocument' ? 'a delete' : 'an update'} of ${String(args[1])}`;
    if (call === 'updateDataSource') what = 'the naming of the data source';
    if (what === undefined) return;
    if (call !== 'updateDataSource') this.mirrorWrites++;
    const docs = this.service.docs_().map((d) => ({ id: d.id, name: d.name, url: d.url, metadata: d.metadata }));
    const record = pickMarker(leaseMarkersOf(docs as never, MAPPING_ID))?.record;
    if (record?.session !== proc.lease.session || record.released) {
      this.leaseViolations.push(`at ${this.clock.t}: ${what} by ${proc.host} (session ${proc.lease.session}) while the lease's record names ${record ? `${record.host} (session ${record.session}${record.released ? ', released' : ''})` : 'nobody'}`);
    }
  }

  private isMarker(id: string): boolean {
    const d = this.service.store.get(id);
    return d !== undefined && isLeaseDocument(d);
  }

  /** Writes the mirrors sent (uploads, updates and deletes of documents but markers). */
  mirrorWrites = 0;
  /** Writes sent by a process that did not hold the lease (checkLeaseWrite). */
  readonly leaseViolations: string[] = [];

  /** The mapping's Mirror for a process, as buildMirror makes it (the sim's spec and folder). */
  mirror(proc: Process, api: MirrorDeps['api'], onOp?: MirrorDeps['onOp'], windows: Partial<Pick<MirrorDeps, 'monotonic' | 'stabilityMs'>> = {}): Mirror {
    const cfg = this.config;
    const track = (kind: 'full' | 'changes', run: () => Promise<PassReport>): Promise<PassReport> => this.track(proc, kind, run);
    // The mapping's lease (mapping/lease.ts, the pass loop's): what the owner rule knows of
    // it, withheld while a writer that takes no lease has written with our identity
    // (cloneUpload: a version before the lease); a one-shot mirror (operatorAllowsMassDelete) has none.
    const held = proc.lease;
    const lease = (): LeaseView | undefined => (this.clones.size === 0 ? held?.view() : undefined);
    const gated = leaseDeps(held, api, MAPPING_ID);
    // A pass waiting for the claim (its read, its settle) waits on the clock: not busy, or settle() spins until its bound.
    const waiting =
      <T>(wait: () => Promise<T>) =>
      async (): Promise<T> => {
        proc.inflight--;
        try {
          return await wait();
        } finally {
          proc.inflight++;
        }
      };
    const leaseSettled = gated.leaseSettled && waiting(gated.leaseSettled);
    const leaseRead = gated.leaseRead && waiting(gated.leaseRead);
    class SimMirror extends Mirror {
      override async fullPass(opts: PassOptions = {}): Promise<PassReport> {
        return track('full', () => super.fullPass(opts));
      }
      override async changedPass(scope: ChangeScope, opts: PassOptions = {}): Promise<PassReport> {
        return track('changes', () => super.changedPass(scope, opts));
      }
    }
    return new SimMirror({
      spec: {
        mappingId: MAPPING_ID,
        installationId: proc.installationId,
        // As buildMirror: the former ids the state's identity keeps.
        formerInstallationIds: proc.store.identity?.formerIds,
        root: ROOT,
        dataSourceId: this.service.dataSourceId,
        prune: cfg.prune,
        maxDeletePercent: cfg.maxDeletePercent,
        massDeleteMinimum: cfg.massDeleteMinimum,
        batchFiles: 3,
        batchBytes: 1e9,
        concurrency: 2,
      },
      ...gated,
      leaseSettled,
      leaseRead,
      state: proc.store,
      local: createLocalSide({ path: ROOT, include: cfg.include, exclude: cfg.exclude, ignoreFile: IGNORE_FILE, maxFileBytes: cfg.maxFileBytes, followSymlinks: false }, { fs: this.local }),
      logger: silent,
      now: () => proc.timers.now(),
      monotonic: windows.monotonic ?? (() => proc.timers.monotonic()),
      stabilityMs: windows.stabilityMs,
      onOp,
      onPlan: (ops) => this.onPlan(proc, ops),
      lease,
    });
  }

  /**
   * The operator, told by the guard, runs `dssync sync --allow-mass-delete` (the daemon
   * stopped meanwhile), then starts the daemon again.
   */
  async operatorAllowsMassDelete(): Promise<void> {
    await this.restartIfCrashed();
    const p = this.proc!;
    await this.stopRunner(p);
    const api = this.service.forProcess();
    // `dssync sync` writes only once it holds the mapping's lease (cli/commands/sync.ts), as the
    // daemon's passes do: so it recovers what a gone writer with our identity left (owner
    // rule O19). When another process holds it, it writes nothing.
    // `dssync sync` is a process of its own on the daemon's host.
    const lease = mappingLease({ ...this.leaseSettings(p.host, p.disk, ++this.pids), api, mappingId: MAPPING_ID, root: ROOT, clock: p.timers, logger: silent }, this.service.dataSourceId, p.installationId, undefined, this.birth(false));
    if (await this.untilDone(lease.acquire())) {
      lease.start();
      p.lease = lease;
      const run = this.mirror(p, api).fullPass({ allowMassDelete: true });
      await this.settle();
      await run.catch(() => undefined);
    }
    await this.untilDone(lease.stop());
    await p.store.close().catch(() => undefined);
    p.timers.kill();
    this.disk.stopProcess();
    this.service.endProcess();
    this.blocked = false;
    this.restarts++;
    await this.start();
  }

  /** Moves the clock on (a lease's settle time at a time) until `work` is done. */
  private async untilDone<T>(work: Promise<T>): Promise<T> {
    let done = false;
    const watched = work.finally(() => void (done = true));
    for (let i = 0; !done && i < 1_000; i++) await this.advance(SIM_LEASE.settleMs);
    return watched;
  }

  private async track(proc: Process, kind: 'full' | 'changes', run: () => Promise<PassReport>): Promise<PassReport> {
    proc.inflight++;
    this.passes++;
    // Its listing may begin with it (while the lease's claim settles): what people do later, it need not see.
    const tampersBefore = this.tampers;
    if (!proc.crashed) this.service.activity = kind;
    try {
      const r = await run();
      if (r.blocked?.kind === 'mass-delete' && !proc.crashed) this.blocked = true;
      if (r.identityConflict === 'another-writer' && !proc.crashed) this.anotherWriterReported = true;
      if (!proc.crashed) for (const c of r.conflicts ?? []) this.conflictsListed.add(c.documentId);
      this.noteKnownIds(proc);
      if (proc !== this.proc) return r;
      // A full pass repairs what people did to our documents, but not for a file it set aside
      // (stability window; every file after the wall clock stepped back): the follow-up is
      // an incremental pass, which has no listing.
      if (kind === 'full' && r.ok && !r.settling?.length && !proc.crashed && this.tampers === tampersBefore) this.remoteTampered = false;
      return r;
    } finally {
      proc.inflight--;
      if (!proc.crashed) this.service.activity = 'idle';
    }
  }

  /**
   * The delete window's promise (guards.ts, docs/reliability.md): within any 10 minutes of
   * one process, deletions counted by the guard stay below the minimum or within the share
   * of what the data source held. `base` over-counts what the guard knows (every document
   * of the data source), so the check never blames a sound guard.
   */
  private onPlan(proc: Process, ops: readonly Op[]): void {
    if (proc.crashed) return;
    const count = countDeletes(ops);
    const now = this.clock.t;
    const mapping = proc.store.mapping(MAPPING_ID);
    const known = Math.max(this.service.docs_().length, (mapping?.files.size ?? 0));
    proc.deletions = proc.deletions.filter((d) => d.at > now - DELETE_WINDOW_MS);
    if (count === 0) return;
    const recent = proc.deletions.reduce((n, d) => n + d.count, 0);
    const total = recent + count;
    const base = Math.max(known + recent, ...proc.deletions.map((d) => d.base));
    proc.deletions.push({ at: now, count, base });
    const { maxDeletePercent: pct, massDeleteMinimum: min } = this.config;
    if (total >= min && (total / base) * 100 > pct) {
      this.guardViolations.push(`at ${now}: ${total} deletions within ${DELETE_WINDOW_MS / 60_000} min out of at most ${base} documents (max ${pct}%, minimum ${min})`);
    }
  }

  /** The machine stops at this instant: memory gone, unsynced state writes lost. */
  crashNow(torn: number): void {
    if (this.proc) this.crash(this.proc, torn);
  }

  /** A process dies at this instant (the daemon's machine, or the second process killed -9): its lease is not released. */
  private crash(p: Process, torn: number): void {
    if (p.crashed) return;
    p.crashed = true;
    p.timers.kill();
    p.watcher = undefined;
    p.disk.crash(torn);
    this.crashes++;
    if (p !== this.proc) return;
    this.service.endProcess();
    this.service.activity = 'idle';
  }

  /** Restarts after a crash (the process's leftovers run to their end, touching nothing). */
  async restartIfCrashed(): Promise<void> {
    while (this.proc?.crashed) {
      await this.settle();
      this.restarts++;
      await this.start();
    }
  }

  /** The machine's host name (a container recreated, hostnamectl): only the lock and an old derived id knew it. */
  host = 'sim-host-0';

  /** The identity the running process (else the last one) uses: the oracle's "ours". */
  get installationId(): string {
    return this.proc?.installationId ?? INSTALLATION;
  }

  /** The wall clock steps by `ms` (back when negative); monotonic time and timers do not. */
  stepWall(ms: number): void {
    this.clock.wallOffset += ms;
  }

  /** How far the newest mtime of the folder is ahead of the wall clock (ms; 0 when none is). */
  mtimeAhead(): number {
    const wall = this.clock.t + this.clock.wallOffset;
    let ahead = 0;
    for (const [, f] of this.local.files()) ahead = Math.max(ahead, f.mtimeMs - wall);
    return ahead;
  }

  /** The host is renamed and the daemon restarted (issue 23, defect 1). */
  async renameHost(): Promise<void> {
    this.host = `sim-host-${this.restarts + 1}`;
    await this.restart();
  }

  /** A clean restart with a (possibly) new config: stop, flush, start again. */
  async restart(config: SimConfig = this.config): Promise<void> {
    await this.stop();
    // A new config is deployed to the second process too (one mapping, one config).
    const twinKind = config !== this.config && this.twinLive() ? this.twinKind : undefined;
    if (twinKind !== undefined) await this.stopTwin();
    this.config = config;
    this.restarts++;
    await this.start();
    if (twinKind !== undefined) await this.startTwin(twinKind, false);
  }

  async stop(): Promise<void> {
    await this.restartIfCrashed();
    const p = this.proc!;
    await this.stopRunner(p);
    await p.store.close().catch(() => undefined);
    p.timers.kill();
    this.disk.stopProcess();
    this.service.endProcess();
  }

  /** The state's volume as each backup took it (stateBackedUp), oldest first, with the id of the daemon whose state it is. */
  private readonly backups: { files: Map<string, Buffer>; installationId: string }[] = [];

  /** A backup (a volume snapshot) of the state's folder is taken while the daemon runs. */
  takeBackup(): void {
    this.backups.push({ files: this.disk.backup(), installationId: this.installationId });
  }

  /**
   * The daemon is stopped, the state's folder restored from a backup (`pick`: any of those
   * taken, counted from the newest), and the daemon started again (the documented rollback,
   * issue 34 case 4): what was written since the backup is in the data source and not in
   * the state; it must converge with no command. A backup of another id (taken before an
   * upgrade or a lost identity file) is not restored while a second process runs: that
   * process, under the id the backup would replace, takes the lease while the daemon
   * restarts, so the restored daemon is the standby of another installation, writing nothing
   * while it lives, and the holder knows nothing that makes the old id's documents its own
   * (the oracle's "ours" is the daemon's id). A clone's documents are no live writer: such a
   * restore is modelled (owner rules O13, O21).
   */
  async restoreBackup(pick = 0): Promise<void> {
    const backup = this.backups[this.backups.length - 1 - (pick % Math.max(1, this.backups.length))];
    if (backup === undefined || (backup.installationId !== this.installationId && this.twinLive())) return;
    await this.stop();
    this.disk.restore(backup.files);
    // The state as it was then: former ids learned since are not in it (their documents may be another installation's to it).
    this.mustKnow.clear();
    this.restarts++;
    await this.start();
  }

  /**
   * The journal is damaged while the daemon is down (issue 34 case 1): a byte flipped or the
   * file cut at `at` (a fraction of its length), or left empty by a power cut; the identity
   * file beside it is kept, or lost with it (`identityFileLost`). The state's reader
   * (journal.ts) must tell damage from a torn tail and keep every valid record; the mapping
   * must converge with no command — without the identity file, only when a record that
   * survived names a document (its id becomes a former id of the new one: owner rule O4);
   * else the documents of the lost id are another installation's (docs/reliability.md,
   * "Identity"), left untouched, and a file of the same path and content held.
   */
  async damageJournal(kind: 'flip' | 'cut' | 'empty', at: number, identityFileLost = false): Promise<void> {
    await this.stop();
    const files = this.disk.backup();
    const path = journalPathOf(STATE_PATH);
    const journal = files.get(path);
    if (identityFileLost) this.loseIdentityFile(files);
    /** A byte flipped in a record that valid records follow: damage, never a torn tail. */
    let damage = false;
    if (journal !== undefined && journal.length > 0) {
      const offset = Math.min(journal.length - 1, Math.floor(at * journal.length));
      if (kind === 'flip') {
        const copy = Buffer.from(journal);
        copy[offset] = copy[offset]! ^ 0x20;
        files.set(path, copy);
        const nl = journal.indexOf(0x0a, offset);
        damage = journal[offset] !== 0x0a && copy[offset] !== 0x0a && nl >= 0 && nl < journal.length - 1;
      } else files.set(path, kind === 'cut' ? journal.subarray(0, offset) : Buffer.alloc(0));
    }
    this.disk.restore(files);
    const copies = (): number => [...this.disk.backup().keys()].filter((f) => f.startsWith(`${path}.damaged-`)).length;
    const before = copies();
    this.restarts++;
    await this.start();
    // journal.ts: damage is copied aside before anything is cut (and every valid record after it kept).
    if (damage && copies() === before) this.stateViolations.push(`at ${this.clock.t}: a byte flipped inside the journal (valid records after it) was not kept as a copy: taken for a torn tail`);
  }

  /** What the state's reader did wrong with a damaged journal (damageJournal). */
  readonly stateViolations: string[] = [];

  /** Every installation id a process of this world ran under. */
  readonly idsUsed = new Set<string>();
  /**
   * Ids the daemon must keep as former ids (owner rule O4): the old id of the last upgrade or
   * state that lost its identity, when a record its next state kept names a document of it.
   * Their documents are never another installation's to the oracle, and the daemon's state
   * must still know them after a restart.
   */
  readonly mustKnow = new Set<string>();
  /** Ids derived by an upgrade or drawn after a lost identity: never pinned on a second pod (startTwin). */
  private readonly unpinned = new Set<string>();
  /** The old id and its documents, checked at the next start (launch). */
  private expectFormer: { id: string; docIds: Set<string> } | undefined;
  /** Ids any process knew (its own or former ones) after the identity file was lost. */
  readonly knownSinceOrphaned = new Set<string>();
  /**
   * A process knows its ids from its state when it starts (a journal's damage may leave the
   * identity in the state: then the id was not lost), and former ids it learns at a pass.
   */
  private noteKnownIds(proc: Process): void {
    if (this.orphaned !== undefined) for (const id of this.knownIds(proc)) this.knownSinceOrphaned.add(id);
  }

  /** The ids the running daemon (else the last one) knows as its own: its id and former ids. */
  knownIds(p: Process | undefined = this.proc): Set<string> {
    const id = p?.store.identity;
    return new Set(id === undefined ? [this.installationId] : [id.installationId, ...id.formerIds]);
  }
  /**
   * The documents of the id a state lost with its identity file (damageJournal), as they
   * were then: while no later identity knows that id (its own or a former one), they are
   * another installation's, and must be left as they are (invariants.ts).
   */
  orphaned: { installationId: string; docs: Map<string, { name: string; content: string }> } | undefined;

  /**
   * The identity file is lost with the journal's damage (a restore of the journal alone, a
   * careless cleanup): once per history (the oracle keeps one orphaned id), never while
   * another writer shares the id (underOneId).
   */
  private loseIdentityFile(files: Map<string, Buffer>): void {
    if (this.orphaned !== undefined || this.underOneId()) return;
    files.delete(identityPathOf(STATE_PATH));
    const id = this.installationId;
    const docs = this.service.docs_().filter((d) => d.metadata['dssync_installation'] === id);
    this.orphaned = { installationId: id, docs: new Map(docs.map((d) => [d.id, { name: d.name, content: d.content }])) };
    this.mustKnow.clear();
    this.expectFormer = { id, docIds: new Set(docs.map((d) => d.id)) };
    this.drawnId = `${INSTALLATION}-after-loss`;
    this.unpinned.add(this.drawnId);
  }

  /** What a state with no identity (and no identity file to take it from) draws. */
  private drawnId = INSTALLATION;

  /**
   * Issue 34 case 5: the state as dssync 0.1.0 left it (format 3: no identity, no writer
   * sessions, no identity file) is started on a host with another name, so the id derived
   * from the host name is not the one its documents carry. The documents the state records
   * teach that id as a former one (owner rule O4), kept in the state: the mapping must
   * converge with no command, nothing uploaded twice, nobody else's document touched. Once
   * per history (a state upgraded is no longer 0.1.0's), never while another writer shares
   * the id (underOneId).
   */
  private upgraded = false;

  /**
   * Another writer shares the daemon's id (a second process running, a clone's documents):
   * the daemon's id is not changed under it (the oracle expects that writer reported as one
   * with our identity, which an old id's documents no longer are).
   */
  private underOneId(): boolean {
    return this.clones.size > 0 || this.twinLive();
  }

  /** The second process runs (started and neither stopped, killed nor crashed). */
  twinLive(): boolean {
    return this.twin !== undefined && !this.twin.crashed;
  }
  async upgradeFrom010UnderNewHostName(): Promise<void> {
    if (this.upgraded || this.underOneId()) return;
    this.upgraded = true;
    await this.stop();
    const id = this.installationId;
    this.mustKnow.clear();
    this.expectFormer = { id, docIds: new Set(this.service.docs_().filter((d) => d.metadata['dssync_installation'] === id).map((d) => d.id)) };
    const state = await readStateFile(STATE_PATH, this.disk.fs());
    if (state !== undefined) {
      const mappings = Object.fromEntries(Object.entries(state.mappings).map(([id, m]) => [id, { ...m, sessions: undefined }]));
      const files = this.disk.backup();
      for (const f of [journalPathOf(STATE_PATH), identityPathOf(STATE_PATH)]) files.delete(f);
      files.set(STATE_PATH, Buffer.from(toFormat3(encodeStateToString({ ...state, identity: undefined, mappings }))));
      this.disk.restore(files);
    }
    this.host = `sim-host-${this.restarts + 1}`;
    this.restarts++;
    await this.start();
    this.unpinned.add(this.installationId);
  }

  // ---- time ----------------------------------------------------------------------------

  /** Lets every pass, write and due timer of the processes run to their end. */
  async settle(): Promise<void> {
    for (let quiet = 0, i = 0; quiet < 3 && i < 100_000; i++) {
      await new Promise<void>((r) => setImmediate(r));
      let busy = false;
      for (const p of this.live()) {
        const fired = p.timers.fireDue();
        const folding = (p.store as unknown as { folding?: Promise<void> }).folding !== undefined;
        busy ||= fired || folding || p.inflight > 0;
      }
      // A crashed process's leftovers run to their end too (touching nothing).
      busy ||= (this.proc?.inflight ?? 0) > 0;
      quiet = busy ? 0 : quiet + 1;
    }
    this.service.landLate();
  }

  /**
   * A graceful stop of process `p`'s runner (its lease released after its last pass). It takes
   * time when a lease claim is in flight: the claim ends, its settle wait included, before
   * the release (mapping/lease.ts stop), so the clock moves on until the stop is done. Not
   * awaited once `p` crashed meanwhile (its timers are gone), and no restart meanwhile.
   */
  private async stopRunner(p: Process): Promise<void> {
    let done = false;
    const stopped = p.runner.stop(8_000).finally(() => void (done = true));
    await this.settle();
    for (let i = 0; !done && !p.crashed && i < 1_000; i++) await this.advance(SIM_LEASE.settleMs, false);
    if (!p.crashed) await stopped;
  }

  /** Moves the clock forward, firing the processes' timers on the way (restarting a crashed daemon, unless `restart` is false). */
  async advance(ms: number, restart = true): Promise<void> {
    const end = this.clock.t + ms;
    for (;;) {
      if (restart) await this.restartIfCrashed();
      const next = Math.min(...this.live().map((p) => p.timers.next() ?? Infinity));
      const late = this.service.lateDue();
      const at = Math.min(next, late ?? Infinity);
      if (at > end) break;
      this.clock.t = Math.max(this.clock.t, at);
      this.service.landLate();
      await this.settle();
    }
    // A request that took simulated time (a deadline waited out) may have carried the
    // clock past `end`: monotonic time never goes back.
    this.clock.t = Math.max(this.clock.t, end);
    this.service.landLate();
    await this.settle();
    if (restart) await this.restartIfCrashed();
  }

  // ---- a second process with our identity (issue 34 cases 2 and 3) ----------------------

  /** The second process, while it runs (or its crashed remains until the next twin). */
  twin: Process | undefined;
  /** The state's disk of the second host, and how the second process came to be. */
  private twinDisk: FakeDisk | undefined;
  private twinKind: TwinKind = 'pinned-replica';

  /**
   * A second process with our identity starts on another host: with a copy of the state
   * (a migration started before the old host stops: the volume copied as it is on disk), or
   * as a replica of a pinned id with a state of its own (`--replicas=2`). It mirrors the
   * same folder (the share both mount). Only the lease's holder writes.
   */
  async startTwin(kind: TwinKind, fresh = true): Promise<void> {
    if (this.twinLive()) return;
    // A replica pins the daemon's id; after an upgrade or a lost identity that id is derived or
    // drawn, and its former ids live in the daemon's state alone: nobody pins it on a second pod.
    // (Kept apart from mustKnow, which a restored backup empties while the id stays derived.)
    if (kind === 'pinned-replica' && (this.mustKnow.size > 0 || this.unpinned.has(this.installationId))) return;
    if (kind === 'copied-state' && fresh && !(await this.identityDurable())) return;
    this.twinKind = kind;
    if (kind === 'copied-state' && fresh) {
      this.twinDisk = new FakeDisk();
      this.twinDisk.restore(this.disk.backup());
    } else this.twinDisk ??= new FakeDisk();
    this.twin = await this.launch('sim-host-b', this.twinDisk, true, kind === 'pinned-replica' ? this.installationId : undefined);
    await this.settle();
  }

  /**
   * A copy of the state carries our identity only once the daemon wrote it (the identity
   * file, at its first flush), with every former id the daemon must know (mustKnow): a copy
   * taken earlier is another installation (an upgraded 0.1.0 state derives its id from the
   * new host's name) or lacks those former ids, and its process may re-mark the recorded
   * documents that would teach them to the daemon before the daemon lists them. Such a copy
   * is not a second process with our identity.
   */
  private async identityDurable(): Promise<boolean> {
    const { record } = await readIdentityFile(this.disk.fs(), identityPathOf(STATE_PATH));
    return record?.installationId === this.installationId && [...this.mustKnow].every((id) => record.formerIds.includes(id));
  }

  /** The second process is killed -9 (its lease is not released: it expires). */
  killTwin(): void {
    if (this.twin) this.crash(this.twin, 0);
  }

  /** The second process stops gracefully (its lease released: the other takes it at its next check). */
  async stopTwin(): Promise<void> {
    const t = this.twin;
    if (!t || t.crashed) return;
    await this.stopRunner(t);
    await t.store.close().catch(() => undefined);
    t.timers.kill();
    t.crashed = true;
    t.disk.stopProcess();
  }

  /** Both processes (re)start at the same instant: their first claims race. */
  async restartBothTogether(kind: TwinKind): Promise<void> {
    await this.stopTwin();
    await this.stop();
    this.restarts++;
    this.proc = await this.launch(this.host, this.disk);
    this.twin = undefined;
    await this.startTwin(kind);
  }

  // ---- the watcher: what the real one reports for each change ------------------------------

  private emit(kind: 'add' | 'change' | 'unlink' | 'addDir' | 'unlinkDir', rel: string): void {
    for (const p of this.live()) {
      const w = p.watcher;
      const isDir = kind === 'addDir' || kind === 'unlinkDir';
      if (!w || !w.filter(rel, isDir)) continue;
      const f = this.local.fileAt(rel);
      w.onEvent({ kind, path: rel, at: this.clock.t, ...(f && !isDir ? { size: f.data.length, mtimeMs: f.mtimeMs } : {}) });
    }
  }

  /** An edit of the ignore file: each watcher reloads its filter and reports the folder as a whole. */
  private ignoreFileChanged(): void {
    for (const p of this.live()) this.ignoreFileChangedFor(p.watcher);
  }

  private ignoreFileChangedFor(w: WatcherOptions | undefined): void {
    if (!w?.ignoreFile) return;
    const at = this.clock.t;
    void (async () => {
      // As watcher.ts does: the reloaded filter applies to the events from now on (a reload
      // that fails keeps the old one).
      const filter = await w.reloadFilter?.().catch(() => undefined);
      if (filter) w.filter = filter;
      w.onEvent({ kind: 'raw', path: '', at, reason: `the ignore file ${w.ignoreFile} changed` });
    })();
  }

  /** The outermost folder of `rel` that does not exist yet (a new folder is one addDir). */
  private newDirOf(rel: string): string | undefined {
    const parts = rel.split('/');
    for (let i = 1; i < parts.length; i++) {
      const d = parts.slice(0, i).join('/');
      if (!this.local.isDir(d)) return d;
    }
    return undefined;
  }

  write(rel: string, content: string | Buffer, mtimeMs?: number): void {
    if (rel === IGNORE_FILE) {
      this.local.write(rel, content, mtimeMs);
      this.ignoreFileChanged();
      return;
    }
    const existed = this.local.fileAt(rel) !== undefined;
    const newDir = this.newDirOf(rel);
    if (!this.local.write(rel, content, mtimeMs)) return;
    if (newDir !== undefined) this.emit('addDir', newDir);
    this.emit(existed ? 'change' : 'add', rel);
  }

  setMtime(rel: string, mtimeMs: number): void {
    this.local.setMtime(rel, mtimeMs);
    this.emit('change', rel);
  }

  setUnreadable(rel: string, unreadable: boolean): void {
    this.local.setUnreadable(rel, unreadable);
    this.emit('change', rel);
  }

  rename(from: string, to: string): void {
    const isDir = this.local.isDir(from);
    const replaced = this.local.fileAt(to) !== undefined;
    const newDir = this.newDirOf(to);
    if (!this.local.rename(from, to)) return;
    if (from === IGNORE_FILE || to === IGNORE_FILE) this.ignoreFileChanged();
    this.emit(isDir ? 'unlinkDir' : 'unlink', from);
    if (newDir !== undefined) this.emit('addDir', newDir);
    this.emit(isDir ? 'addDir' : replaced ? 'change' : 'add', to);
  }

  remove(rel: string): void {
    const isDir = this.local.isDir(rel);
    if (!isDir && !this.local.fileAt(rel)) return;
    this.local.remove(rel);
    if (rel === IGNORE_FILE) this.ignoreFileChanged();
    this.emit(isDir ? 'unlinkDir' : 'unlink', rel);
  }

  mkdir(rel: string): void {
    if (this.local.isDir(rel)) return;
    const newDir = this.newDirOf(`${rel}/x`);
    if (!this.local.mkdir(rel)) return;
    if (newDir !== undefined) this.emit('addDir', newDir);
  }

  // ---- people and other installations ---------------------------------------------------

  /**
   * Not generated, because no client can tell it apart: a person's document of the full
   * name and size of a file whose upload answer was lost and that no listing has shown
   * since (dssync then claims neither; docs/reliability.md, "Upload intents").
   */
  undecidable(name: string, size: number): boolean {
    const m = this.proc && !this.proc.crashed ? this.proc.store.mapping(MAPPING_ID) : undefined;
    return Object.values(m?.intents ?? {}).some((i) => i.kind === 'upload' && i.files.some((f) => f.documentId === undefined && f.path === name && f.size === size));
  }

  /** A file of that name and size that dssync has not uploaded yet (SIM_PERSON_RACES_UPLOAD). */
  racesUpload(name: string, size: number): boolean {
    const f = this.expected().files.has(name) ? this.local.fileAt(name) : undefined;
    return f !== undefined && f.data.length === size && !this.service.docs_().some((d) => d.metadata['dssync_installation'] === this.installationId && d.metadata['dssync_path'] === name);
  }

  personUpload(name: string, content: string, allowRace = true): void {
    if (this.undecidable(name, Buffer.byteLength(content))) return;
    if (!allowRace && this.racesUpload(name, Buffer.byteLength(content))) return;
    const d = this.service.create({ name, url: undefined, metadata: {}, size: Buffer.byteLength(content), content: sha256(content), byUs: false });
    this.people.push({ id: d.id, name, content: d.content, foreign: false, prunable: this.config.prune === 'all' });
  }

  /** Another installation (a copied config, another host) writes into the same data source. */
  foreignUpload(path: string, content: string): void {
    const metadata = buildMetadata(undefined, { path, sha256: sha256(content), size: Buffer.byteLength(content), mtimeMs: 1, mappingId: MAPPING_ID, installationId: 'another-installation' });
    const d = this.service.create({ name: path, url: undefined, metadata, size: Buffer.byteLength(content), content: sha256(content), byUs: false });
    this.people.push({ id: d.id, name: path, content: d.content, foreign: true, prunable: false });
  }

  /**
   * Another process writing with OUR identity (issue 23 defect 2: a host cloned from one
   * image, a state file copied to a second host, two configs sharing one state file): its
   * document carries our installation and mapping ids, and this state never recorded it.
   * It must never be deleted, and the conflict must be reported.
   */
  cloneUpload(path: string, content: string, inFlight = false): void {
    // The clone's own process has its own writer session (a VM image copy: same state, same
    // installation id, so the same upload tag, but another process). In flight: its upload
    // landed under its marked name, its metadata not written yet (or never: it died).
    const session = 'c1c1c1c1';
    const metadata = inFlight ? {} : buildMetadata(undefined, { path, sha256: sha256(content), size: Buffer.byteLength(content), mtimeMs: 1, mappingId: MAPPING_ID, installationId: this.installationId, session });
    const name = inFlight ? markUploadName(path, `${uploadTag(MAPPING_ID, this.installationId)}${session}0badf00d`) : path;
    const d = this.service.create({ name, url: undefined, metadata, size: Buffer.byteLength(content), content: sha256(content), byUs: false });
    this.people.push({ id: d.id, name, content: d.content, foreign: true, prunable: false });
    this.clones.set(d.id, this.installationId);
  }

  /** Documents of another writer with our identity (cloneUpload), and that identity. */
  readonly clones = new Map<string, string>();
  /** A pass reported another writer with this installation's identity (PassReport.identityConflict). */
  anotherWriterReported = false;
  /** Documents a pass listed among its conflicts (PassReport.conflicts). */
  readonly conflictsListed = new Set<string>();

  private ourDocs(): string[] {
    return this.service
      .docs_()
      .filter((d) => d.metadata['dssync_installation'] === this.installationId && !this.clones.has(d.id))
      .map((d) => d.id);
  }

  personDeletesOurs(pick: number): void {
    const ours = this.ourDocs();
    if (ours.length === 0) return;
    this.service.store.delete(ours[pick % ours.length]!);
    this.remoteTampered = true;
    this.tampers++;
  }

  personRenamesOurs(pick: number, name: string): void {
    const ours = this.ourDocs();
    if (ours.length === 0) return;
    // Renamed in the App: stored as the service stores any name (its rewrite rule), and
    // ignored by a service that ignores renames.
    if (this.service.variant.renamesIgnored) return;
    this.service.store.get(ours[pick % ours.length]!)!.name = storedName(name, this.service.variant.nameRule);
    this.remoteTampered = true;
    this.tampers++;
  }

  // ---- the oracle -------------------------------------------------------------------------

  /** What the data source must hold: included, readable files within maxFileBytes, and the paths whose documents are kept as they are. */
  expected(): { files: Map<string, string>; kept: Set<string>; unreadable: Set<string> } {
    const ignore = this.local.fileAt(IGNORE_FILE);
    const filter = createFilter({ include: this.config.include, exclude: this.config.exclude, ignoreFile: IGNORE_FILE }, ignore?.data.toString('utf8'));
    const files = new Map<string, string>();
    const kept = new Set<string>();
    const unreadable = new Set<string>();
    for (const [p, f] of this.local.files()) {
      if (!filter.includes(p, false)) continue;
      if (f.unreadable || f.data.length > this.config.maxFileBytes) kept.add(p);
      else files.set(p, sha256(f.data));
      if (f.unreadable) unreadable.add(p);
    }
    return { files, kept, unreadable };
  }
}

export type { BatchItem };

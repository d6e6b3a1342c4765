/**
 * One mapping's mirror: scan -> plan -> execute, the engine that `dssync sync` runs once
 * and the daemon runs again and again (DESIGN §2). The filesystem comes through the
 * LocalSide interface and the service through DatastoreApi, so both can be faked.
 */
import { listingBound } from './listing-bound.js';
import { forEachAtMost } from '../at-most.js';
import type { DatastoreApi } from '../api/api.js';
import { unlessGone } from '../api/errors.js';
import type { DocumentRecord, DocumentUpdate } from '../api/records.js';
import type { Logger } from '../log.js';
import type { FileEntry, Intent, MappingState, PassRecord } from '../state/schema.js';
import { documentFields, newSession, uploadTag, type DocumentFieldsSpec } from './document-fields.js';
import { entryFor, executePlan, type ExecutionResult, type OpEvent, type NameCheck, type StateWriter } from './executor.js';
import { checkGuards, countDeletes, DeleteWindow, type GuardVerdict } from './guards.js';
import { LocalFileChangedError, LocalFileVanishedError, type ChangeScope, type LocalSide, type ScanResult, type SkippedFile } from './local-side.js';
import { readMeta } from './metadata.js';
import { addCounts, describePlan, emptyReport, finishReport, logDoubtful, logMarked, logOwnership, reportLeftOver, type PassReport } from './pass-report.js';
import { confirmedPath, intentNameKeys, hashedRecord, lostUploadPins, newFilesNeedNoContent, ownerOfListing, pathsToHash, planMirror, NO_PATHS, vouchedByEntry, type DesiredOf, type HashedFile, type IntentPin, type LocalFileInfo, type Op, type PathSet, type PlanResult } from './plan.js';
import { renamedFromVanished, StabilityWindow } from './stability.js';
import { describeServiceNames, sameServiceNames } from './service-names.js';
import type { LeaseView } from './lease-view.js';
import type { LeaseRecord } from './lease.js';
import type { PageChain } from '../api/list-pages.js';
import type { OwnerOf } from './owner.js';
import { nfc } from '../unicode.js';
import { collectGarbage } from '../gc.js';

/** The service's listing lacks documents that exist: planning from it would duplicate them. */
export class ListingIncompleteError extends Error {
  override readonly name = 'ListingIncompleteError';
  readonly code = 'E_LISTING_INCOMPLETE';
}

/** The state operations the mirror needs (StateStore implements them). */
export interface MirrorState extends StateWriter {
  ensureMapping(mappingId: string, dataSourceId: string, root: string): MappingState;
  setLastPass(mappingId: string, pass: PassRecord): void;
  flush(): Promise<void>;
  /**
   * Records this process's writer session (StateStore.recordSession); true when it was not
   * recorded yet (the mirror then flushes it before writing anything). Without it, documents
   * carry no session.
   */
  recordSession?(mappingId: string, session: string, at: number): boolean;
  /**
   * Adds former ids of this installation to the state's identity (StateStore.addFormerIds);
   * true when it did not hold them yet (the mirror then flushes before writing anything).
   */
  addFormerIds?(ids: readonly string[]): boolean;
}

export interface MirrorSpec extends DocumentFieldsSpec {
  dataSourceId: string;
  /** Ids this installation used before (plan.ts PlanInput.formerInstallationIds). */
  formerInstallationIds?: readonly string[] | undefined;
  prune: 'ours' | 'all';
  maxDeletePercent: number;
  massDeleteMinimum: number;
  batchFiles: number;
  batchBytes: number;
  concurrency: number;
}

export interface MirrorDeps {
  spec: MirrorSpec;
  api: DatastoreApi;
  state: MirrorState;
  local: LocalSide;
  logger: Logger;
  /** The wall clock: timestamps written to the state, compared with file times and with intents of earlier processes. */
  now: () => number;
  /** A clock that never steps (Clock.monotonic), for this process's own windows: the caller's clock, no default. */
  monotonic: () => number;
  onOp?: ((e: OpEvent) => void) | undefined;
  /** The operations about to be carried out (each round's plan): a progress display's total. Read at once: execution empties the list. */
  onPlan?: ((ops: readonly Op[]) => void) | undefined;
  /**
   * The stability window of every full pass (ms; 0 or absent: none): stability.ts. A file
   * set aside is untouchable for the pass and named in the report's `settling`.
   */
  stabilityMs?: number | undefined;
  /**
   * How long an upload request may wait for its answer (connect and headers timeouts): an
   * earlier process's request may have been in flight that long after its intent began.
   * @default 70_000 (the queue.timeouts defaults)
   */
  requestTimeoutMs?: number | undefined;
  /**
   * The mapping's lease as it stands at each listing and plan (daemon/mapping/lease.ts; the
   * owner rule reads it, owner.ts). Absent, or answering undefined: not known, and the
   * owner rule stays conservative (nothing of an unrecorded session is taken).
   */
  lease?: (() => LeaseView | undefined) | undefined;
  /**
   * Awaited between a round's listing and its plan: a claim of the lease under way has
   * settled, or it rejects (the round's reads are dropped). The walk and the listing only
   * read, so they run beside the claim's settle wait; the plan stands on the lease (lease.ts).
   * True when it waited for a claim: the listing is then that much older than the round's
   * uploads, too old to tell a lost answer by name and size (executor.ts preexistingFresh).
   */
  leaseSettled?: (() => Promise<boolean>) | undefined;
  /**
   * Awaited before a full pass's listing begins: a claim of the lease under way has read the
   * marker (a former holder's last writes landed before that read, so a listing begun after
   * it shows them); at once when the lease is held. Rejects when the read found a live
   * holder, or when the lease is neither held nor being claimed (the pass lists nothing).
   */
  leaseRead?: (() => Promise<void>) | undefined;
  /** After leaseRead: that read found the lease free with exactly this record (an early listing's pages are then taken). */
  leaseReadShowed?: ((record: LeaseRecord) => boolean) | undefined;
  /** The writer session: the lease's, when there is one (its record names it); else drawn here. */
  session?: string | undefined;
}

export interface PassOptions {
  dryRun?: boolean;
  allowMassDelete?: boolean;
  /** Deletions the operator confirmed on the running daemon (guards.ts GuardInput.confirmedDeletes). */
  confirmedDeletes?: ReadonlySet<string> | undefined;
  signal?: AbortSignal | undefined;
  /** Rounds of list-plan-execute when answers were lost or files changed (default 3). */
  maxRounds?: number;
  /** A full pass's first listing, begun ahead by this mirror (listAhead): a start's, beside the watcher's set-up. */
  ahead?: ListingAhead | undefined;
}

/** A listing's first pages, fetched while the state loaded, after a read of the lease's marker that showed `record` (daemon/early-listing.ts). */
export interface EarlyPages {
  readonly dataSourceId: string;
  readonly record: LeaseRecord;
  readonly pages: PageChain;
  /** When its first page was asked for (the clock's wall and monotonic readings): the listing's age. */
  readonly listedAt: number;
  readonly listedAtMono: number;
}

/** The data source's listing of a full pass, begun ahead of its walk (Mirror.listAhead). */
export interface ListingAhead {
  readonly mirror: Mirror;
  /** Undefined when it failed (a live holder found by the lease's claim, a request's failure): the pass lists itself. */
  readonly listing: Promise<RemoteListing | undefined>;
}

/** What a full pass's listing of the data source found, and when it began. */
interface RemoteListing {
  /** When it began (after the lease's claim read its marker): wall clock and monotonic. */
  listedAt: number;
  listedAtMono: number;
  /** The lease as the owner rule read it when the listing began, and that rule. */
  lease: LeaseView | undefined;
  whose: OwnerOf<unknown>;
  /** The listing, less what `confirmed` holds. */
  remote: DocumentRecord[];
  /** Paths whose document the listing showed exactly as the state has it (the state's marks: EntryMarks). */
  confirmed: PathSet;
}

/**
 * A round with this many files to plan or more collects garbage before its plan and again
 * after it (gc.ts): the walk's and the hashing's garbage, then the plan's own, do not size the
 * heap that execution then fills (a first mirror of a million files: docs/performance.md,
 * "Session 22"). Far below it a collection's pause buys nothing.
 */
const COLLECT_FROM_FILES = 50_000;

/** Files hashed at once: enough to keep the libuv pool busy (each hash is a few small calls). */
const HASH_CONCURRENCY = 16;

/**
 * Bytes of small files a round keeps from their hash for their upload (LocalSide.hash
 * `keep`): such a file is opened and read once, not twice (docs/performance.md, "Session
 * 38"). Beyond it a file is read again when sent, so a round's memory stays bounded
 * whatever the tree; the bytes go with the round.
 */
export const KEEP_CONTENT_BYTES = 16 * 1024 * 1024;

/**
 * How long after an upload request ended its intent stays open (docs/reliability.md, "Upload
 * intents"). A service may commit an upload after the client gave up on its answer; while
 * the intent is open, such a late document (no metadata, our full name and size) is
 * recognised as ours and adopted or deleted as a duplicate. Closed only by a full listing
 * begun at least this long after the request ended.
 */
export const INTENT_SETTLE_MS = 60_000;

/** MirrorDeps.requestTimeoutMs's default: queue.timeouts.connectMs + headersMs. */
export const REQUEST_TIMEOUT_MS = 70_000;

/**
 * An inherited intent this much older than a listing (by its wall-clock start) is settled
 * at once: a one-shot `dssync sync` lives less than a window, and would otherwise leave it
 * open run after run (cron), never reporting an upload it lost. A commit later still is
 * recognised by its tagged nonce and deleted (plan.ts lostUploads).
 */
export const INTENT_STALE_MS = 15 * 60_000;

/** The local side of a round, ready to plan: hashed, with what cannot be read now set aside. */
interface PreparedLocal {
  local: Map<string, LocalFileInfo>;
  skipped: SkippedFile[];
  untouchable: (path: string) => boolean;
  /** True when `untouchable` holds for some path: the pass set a file or folder aside. */
  anySetAside: boolean;
  /** Files set aside by the stability window (the report's `settling`). */
  settling: string[];
  /** A file an incremental pass holds until a full pass's listing judges it. */
  listingNeeded: boolean;
  /** The bytes the hashes kept, by the record each made: what the upload of that record sends. */
  content: ReadonlyMap<LocalFileInfo, Uint8Array>;
  /** Files without an entry were left unhashed (plan.ts newFilesNeedNoContent): hashed as they are sent. */
  newFilesUnhashed: boolean;
}

/** What a round saw of both sides (Mirror.list). */
interface Listing extends PreparedLocal {
  /** When the listing began: wall clock and monotonic. */
  listedAt: number;
  listedAtMono: number;
  scan: ScanResult;
  /** The listing (a full pass), less what `confirmed` holds. */
  remote: DocumentRecord[] | undefined;
  /** Paths whose document the listing showed exactly as the state has it (the state's marks: EntryMarks). */
  confirmed: PathSet;
  /** Files the walk found (those vouched for included). */
  scanned: number;
  /** An incremental plan's paths (Mirror.widenScope). */
  planScope: Set<string> | undefined;
  /** Older than its round: begun ahead of the pass (listAhead), or the round then waited for the lease's claim (leaseSettled). */
  aged?: boolean;
  /** The lease as it stood when the listing began: the owner rule's input for this round. */
  lease: LeaseView | undefined;
}

export class Mirror {
  /** When the last execution of this process returned (monotonic): its requests had all ended. */
  private lastExecutionEnd: number | undefined;
  /**
   * The intents open when this process's first pass began: an earlier process's. Any other
   * is this process's own, and its settle window is counted on the monotonic clock.
   */
  private inherited: Set<string> | undefined;
  /**
   * What the service does to names (service-names.ts): read from the state's last pass
   * record at the first pass, taught by the answers since, written with each full pass's record.
   */
  private names: NameCheck | undefined;
  /** When this process first saw each inherited intent (monotonic): its window counts from then too. */
  private readonly firstSeen = new Map<string, number>();
  private readonly monotonic: () => number;
  /** Deletions of the last minutes, across passes: the mass-delete guard's window. */
  private readonly deletions = new DeleteWindow();
  /**
   * Unmarked documents of the last full listing, by name: an upload intent records those
   * named like its files, which its upload cannot have made. Undefined until a full listing.
   */
  private unmarkedByName: Map<string, string[]> | undefined;

  /**
   * This process's writer session (document-fields.ts newSession): in every upload's nonce
   * and every document's metadata, recorded in the state before the first pass writes.
   * Undefined without an installation id or a state that records sessions.
   */
  private readonly session: string | undefined;
  private readonly fieldsSpec: DocumentFieldsSpec;

  /** What the stability window sets aside, across passes. */
  private readonly stability: StabilityWindow;
  /** Ids this installation used before: the spec's, and those a listing taught since (keepFormerIds). */
  private formerIds: readonly string[];

  constructor(private readonly d: MirrorDeps) {
    this.monotonic = d.monotonic;
    this.stability = new StabilityWindow({ windowMs: d.stabilityMs ?? 0, now: () => d.now(), monotonic: this.monotonic });
    this.session = d.spec.installationId !== undefined && d.state.recordSession !== undefined ? (d.session ?? newSession()) : undefined;
    this.fieldsSpec = { ...d.spec, session: this.session };
    this.formerIds = d.spec.formerInstallationIds ?? [];
  }

  /**
   * True when a listing begun at `listedAt` (wall) / `listedAtMono` (monotonic) is late
   * enough to show everything the intent's request did. An intent of this process ended at
   * the latest when its last execution returned: counted on the monotonic clock, which no
   * clock step moves. An intent of an earlier process is settled only a full window after
   * this process first saw it, and once its request's own timeout and a window have passed
   * since its wall-clock start (the earlier process may have exited the moment it gave up).
   */
  private settledAt(listedAt: number, listedAtMono: number): (intent: Intent) => boolean {
    const requestMs = this.d.requestTimeoutMs ?? REQUEST_TIMEOUT_MS;
    return (intent) => {
      if (this.inherited?.has(intent.id) === false && this.lastExecutionEnd !== undefined) return listedAtMono >= this.lastExecutionEnd + INTENT_SETTLE_MS;
      const seen = this.firstSeen.get(intent.id) ?? listedAtMono;
      this.firstSeen.set(intent.id, seen);
      const started = Date.parse(intent.startedAt);
      if (listedAt >= started + INTENT_STALE_MS) return true;
      return listedAtMono >= seen + INTENT_SETTLE_MS && listedAt >= started + requestMs + INTENT_SETTLE_MS;
    };
  }

  get dataSourceId(): string {
    return this.d.spec.dataSourceId;
  }

  /** A full pass: scan the folder, list the data source, plan, check the guards, execute. */
  fullPass(opts: PassOptions = {}): Promise<PassReport> {
    return this.pass(undefined, opts);
  }

  /**
   * A pass over what watcher events named, trusting the state for the service's side (no
   * listing). Lost answers need a listing to settle: the report says `needsFullPass`.
   */
  changedPass(scope: ChangeScope, opts: PassOptions = {}): Promise<PassReport> {
    return this.pass(scope, { ...opts, maxRounds: 1 });
  }

  /**
   * Rounds of list -> plan -> execute (at most `maxRounds`: a lost answer or a file changed
   * while sent is looked at again straight away), then the report.
   */
  private async pass(scope: ChangeScope | undefined, opts: PassOptions): Promise<PassReport> {
    const { spec, state } = this.d;
    const startedAt = new Date(this.d.now()).toISOString();
    const report = emptyReport(spec.mappingId, !!opts.dryRun, startedAt);
    const mapping = state.ensureMapping(spec.mappingId, spec.dataSourceId, spec.root);
    this.inherited ??= new Set(Object.keys(mapping.intents));
    const names = (this.names ??= { known: mapping.lastPass?.serviceNames ?? {}, verified: false });
    const namesBefore = names.known;
    // Durable before anything this process writes carries it (a metadata update is not
    // preceded by an intent's flush), or the next process takes its documents for a clone's.
    if (this.session !== undefined && !opts.dryRun && state.recordSession?.(spec.mappingId, this.session, this.d.now())) await state.flush();
    const maxRounds = opts.maxRounds ?? 3;
    const fieldsSpec = this.fieldsSpec;
    const desired = (f: DesiredOf): DocumentUpdate => documentFields(fieldsSpec, f);

    for (let round = 1; round <= maxRounds; round++) {
      const ahead = round === 1 && opts.ahead?.mirror === this ? opts.ahead.listing : undefined;
      const listing = await this.list(scope, mapping, desired, opts.signal, ahead);
      // Begun ahead of the pass, or followed by a wait for the lease's claim: older than the round.
      if (!opts.dryRun && (await this.d.leaseSettled?.()) === true) listing.aged = true;
      if (ahead) listing.aged = true;
      report.settling = listing.settling.length > 0 ? listing.settling : undefined;
      if (listing.listingNeeded) report.needsFullPass = true;
      const large = listing.local.size >= COLLECT_FROM_FILES;
      if (large) collectGarbage();
      const { plan, verdict } = this.planRound(listing, scope, mapping, desired, opts, report, round);
      if (!verdict.ok || opts.dryRun) break;
      // The operations hold what execution needs: each file's record goes with its operation.
      listing.local.clear();
      if (large) collectGarbage();
      const again = await this.execute(plan, verdict, listing, mapping, desired, opts, report, round === maxRounds && !scope);
      if (!again) break;
      if (round === maxRounds) {
        reportLeftOver(report, again);
        break;
      }
      this.d.logger.info({ round }, 'looking again: an answer was lost or a file changed while being sent');
    }

    // Said once, by the pass that learned it: later passes plan around it (plan.ts serviceNames).
    finishReport(report, names.known.renamesIgnored === true && namesBefore.renamesIgnored !== true, new Date(this.d.now()).toISOString());
    if (!sameServiceNames(namesBefore, names.known)) this.d.logger.warn({ dataSourceId: spec.dataSourceId, serviceNames: names.known }, `the service ${describeServiceNames(names.known).join(', ')}: kept in the state, and planned around (docs/probe.md)`);
    if (!opts.dryRun) {
      if (!scope) {
        state.setLastPass(spec.mappingId, {
          startedAt: report.startedAt,
          finishedAt: report.finishedAt,
          ok: report.ok,
          summary: { ...report.counts },
          ...(report.blocked ? { error: report.blocked.message } : {}),
          ...(names.known.renamesIgnored || names.known.urlsIgnored || names.known.rule ? { serviceNames: names.known } : {}),
        });
      } else if (!sameServiceNames(namesBefore, names.known) && mapping.lastPass !== undefined) {
        // What an incremental pass learned of names is kept too: the next process plans around it.
        state.setLastPass(spec.mappingId, { ...mapping.lastPass, serviceNames: names.known });
      }
      await state.flush();
    }
    return report;
  }

  /**
   * A round's look at both sides: the walk (or the scope's files) and, for a full pass, the
   * listing; then the local side prepared (hashed, files being written set aside) and an
   * incremental pass's scope widened to what its plan must cover.
   */
  /**
   * Begins the next full pass's listing of the data source now (PassOptions.ahead): a start
   * lists while its watcher is set up, once the lease's claim has read its marker; the walk
   * waits for the watcher (a change made while the pass scans is then an event).
   */
  listAhead(signal?: AbortSignal, early?: EarlyPages): ListingAhead {
    const { spec, state } = this.d;
    const mapping = state.ensureMapping(spec.mappingId, spec.dataSourceId, spec.root);
    // A live holder found by the claim: nothing listed ahead (the first pass, if any, lists itself).
    const listing = this.listRemote(mapping, (f) => documentFields(this.fieldsSpec, f), signal, early).catch(() => undefined);
    return { mirror: this, listing };
  }

  private async listRemote(mapping: MappingState, desired: (f: DesiredOf) => DocumentUpdate, signal: AbortSignal | undefined, early?: EarlyPages): Promise<RemoteListing> {
    const { spec } = this.d;
    let pages: PageChain | undefined;
    try {
      await this.d.leaseRead?.();
      // Pages fetched before the claim's read are this listing's only when that read showed
      // the record the early read judged held by no one: nothing was written between them.
      if (early !== undefined && early.dataSourceId === spec.dataSourceId && this.d.leaseReadShowed?.(early.record)) pages = early.pages;
    } finally {
      if (early !== undefined && pages === undefined) {
        void early.pages.drop();
        this.d.logger.info('the listing begun while the state loaded is dropped: the lease marker changed after its read, another process holds the lease, or the data source is another');
      }
    }
    if (pages !== undefined) this.d.logger.info({ pages: pages.fetched }, 'the listing begun while the state loaded is kept: its pages are checked against the state');
    // A listing is as old as its first page: an early one's is older than the claim's read.
    const begun = pages === undefined ? undefined : early;
    const listedAt = begun?.listedAt ?? this.d.now();
    const listedAtMono = begun?.listedAtMono ?? this.monotonic();
    // What the state already says exactly is kept as the state's marks only: a restart over
    // a million unchanged files holds a byte an entry, not a million records.
    const confirmed = mapping.files.marks();
    const lease = this.d.lease?.();
    const whose = ownerOfListing({ mappingId: spec.mappingId, installationId: spec.installationId, formerInstallationIds: this.formerIds, state: mapping, lease });
    const confirm = (doc: DocumentRecord): boolean => {
      const path = confirmedPath(doc, whose, { desired, files: mapping.files });
      if (path !== undefined) confirmed.add(path);
      return path !== undefined;
    };
    const remote = await this.d.api.listDocuments(spec.dataSourceId, { signal, form: 'sync', keep: (doc) => !confirm(doc), ...listingBound(mapping.files.size), pages });
    return { listedAt, listedAtMono, lease, whose, remote, confirmed };
  }

  private async list(scope: ChangeScope | undefined, mapping: MappingState, desired: (f: DesiredOf) => DocumentUpdate, signal: AbortSignal | undefined, ahead?: Promise<RemoteListing | undefined>): Promise<Listing> {
    // The walk (disk) and the listing (network) are independent: done side by side, a
    // restart over 100,000 files waits for the longer of the two, not for both.
    const walkedAt = this.d.now();
    const walkedAtMono = this.monotonic();
    const lease = scope ? this.d.lease?.() : undefined;
    const [scan, listed] = await Promise.all([
      scope ? this.d.local.scanScope(scope) : this.d.local.scan({ vouch: (path, st) => vouchedByEntry(mapping.files.statOf(path), st, walkedAt), vouched: mapping.files.marks() }),
      scope ? undefined : ahead ? ahead.then((l) => l ?? this.listRemote(mapping, desired, signal)) : this.listRemote(mapping, desired, signal),
    ]);
    const remote = listed?.remote;
    const confirmed: PathSet = listed?.confirmed ?? NO_PATHS;
    if (remote) {
      await this.checkListing(remote, confirmed, mapping, signal);
      this.unmarkedByName = unmarkedByName(remote);
    }
    const scanned = scan.files.size + (scan.vouched?.size ?? 0);
    const prepared = await this.prepareLocal(scan, mapping, scope, remote);
    if (listed) this.stability.judged(listed.remote, prepared.anySetAside ? prepared.untouchable : undefined, mapping, listed.whose);
    const planScope = scope ? await this.widenScope(scope, prepared.local, mapping, prepared.untouchable) : undefined;
    const listedAt = listed?.listedAt ?? walkedAt;
    const listedAtMono = listed?.listedAtMono ?? walkedAtMono;
    return { listedAt, listedAtMono, scan, remote, confirmed, scanned, planScope, lease: listed ? listed.lease : lease, ...prepared };
  }

  /**
   * A round's plan and the guards' verdict on it, into the report and the log. The pass goes
   * no further when the verdict stops it.
   */
  private planRound(l: Listing, scope: ChangeScope | undefined, mapping: MappingState, desired: (f: DesiredOf) => DocumentUpdate, opts: PassOptions, report: PassReport, round: number) {
    const { spec, logger } = this.d;
    const excludedPaths = new Set(l.scan.skipped.filter((s) => s.excluded).map((s) => s.path));
    const plan = planMirror({
      mappingId: spec.mappingId,
      installationId: spec.installationId,
      formerInstallationIds: this.formerIds,
      local: l.local,
      vouched: l.scan.vouched,
      state: mapping,
      remote: l.remote,
      confirmed: l.remote ? l.confirmed : undefined,
      scope: l.planScope,
      desired,
      prune: spec.prune,
      untouchable: l.anySetAside ? l.untouchable : undefined,
      excluded: (p) => excludedPaths.has(p),
      settled: this.settledAt(l.listedAt, l.listedAtMono),
      serviceNames: this.names?.known,
      lease: l.lease,
      newFilesUnhashed: l.newFilesUnhashed,
    });
    const verdict = checkGuards({
      root: spec.root,
      rootStatus: l.scan.rootStatus,
      outageCause: l.scan.outageCause,
      // A partial look says nothing about the folder being empty.
      localFiles: scope ? Math.max(1, l.scanned) : l.scanned,
      // An incremental plan's count is the state's already. With prune "all", what it may
      // prune is the mapping's too (plan.ts prunableCount): added to what the listing shows of
      // ours, not to the state's count (entries of documents people deleted would count twice).
      knownDocuments: l.remote ? Math.max(plan.ourDocumentCount + plan.prunableCount, mapping.files.size) : plan.ourDocumentCount,
      ops: plan.ops,
      maxDeletePercent: spec.maxDeletePercent,
      massDeleteMinimum: spec.massDeleteMinimum,
      allowMassDelete: !!opts.allowMassDelete,
      confirmedDeletes: opts.confirmedDeletes,
      mappingId: spec.mappingId,
      recentDeletes: this.deletions.count(this.monotonic()),
    });
    describePlan(report, plan, mapping, spec.mappingId, l.skipped);
    if (!opts.dryRun) logMarked(logger, plan, round === 1);
    if (round === 1) logOwnership(logger, plan, report, spec);
    if (!verdict.ok) {
      report.blocked = verdict;
      logger.error({ kind: verdict.kind, deletes: verdict.deletes }, verdict.message);
    } else {
      logDoubtful(logger, plan);
    }
    return { plan, verdict };
  }

  /**
   * Carries out a round's plan and records its outcome in the state and the report. Returns
   * what calls for another round (a lost answer, files changed while sent, documents left
   * under a marked name by a service that ignores new names), or undefined when none does.
   * `last`: the last round of a full pass (lost uploads are pinned by a listing right away).
   */
  private async execute(
    plan: PlanResult,
    verdict: Extract<GuardVerdict, { ok: true }>,
    l: Listing,
    mapping: MappingState,
    desired: (f: DesiredOf) => DocumentUpdate,
    opts: PassOptions,
    report: PassReport,
    last: boolean,
  ): Promise<Pick<ExecutionResult, 'changed' | 'ambiguous'> | undefined> {
    const { spec, state, logger } = this.d;
    const names = this.names!;
    const renamesWereIgnored = names.known.renamesIgnored === true;
    const urlsWereIgnored = names.known.urlsIgnored === true;
    await this.keepFormerIds(plan.formerIds);
    pinIntents(state, spec.mappingId, plan.intentPins);
    for (const r of plan.refreshed) state.setFile(spec.mappingId, r.path, entryFor(r.file, r.documentId, this.d.now));
    this.d.onPlan?.(plan.ops);
    // Planned deletions count once carried out, whether or not each request succeeded:
    // conservative, and a failed one is planned (and counted) again only by a later pass.
    const deletes = opts.allowMassDelete || verdict.confirmed ? 0 : countDeletes(plan.ops);
    const result = await executePlan(plan.ops, {
      api: this.d.api,
      state,
      mappingId: spec.mappingId,
      dataSourceId: spec.dataSourceId,
      desired,
      batchFiles: spec.batchFiles,
      batchBytes: spec.batchBytes,
      concurrency: spec.concurrency,
      now: this.d.now,
      logger,
      signal: opts.signal,
      onOp: this.d.onOp,
      open: (file, content) => this.d.local.open(file, content ?? l.content.get(file)),
      hash: (file) => this.hashRecord(file, true),
      preexisting: this.preexisting(),
      // Only a listing of this very pass says what existed right before its uploads; not one
      // begun ahead of it or held while the lease's claim settled (a person may have uploaded meanwhile).
      preexistingFresh: l.remote !== undefined && l.aged !== true,
      uploadTag: spec.installationId === undefined ? undefined : uploadTag(spec.mappingId, spec.installationId),
      session: this.session,
      names,
      formats: spec.formats,
    });
    if (names.known.urlsIgnored === true && !urlsWereIgnored) {
      logger.warn({ dataSourceId: spec.dataSourceId }, `the service kept another url than the one sent in a document update: urls of mapping ${spec.mappingId} are no longer compared (a changed url template reaches only new documents); run 'dssync probe --write' and tell the service's operator`);
    }
    const renamesNowIgnored = names.known.renamesIgnored === true && !renamesWereIgnored;
    if (renamesNowIgnored) {
      logger.error(
        { dataSourceId: spec.dataSourceId, shown: names.shown },
        `the service ignored the new name of a document${names.shown === undefined ? '' : ` (it kept ${JSON.stringify(names.shown)})`}: uploads of mapping ${spec.mappingId} are now sent under their real names (a lost answer is then told by name and size), documents left under a marked name are sent again, and a renamed file's document keeps its old name in the App; run 'dssync probe --write' and tell the service's operator`,
      );
    }
    this.lastExecutionEnd = this.monotonic();
    // (An incremental pass has no listing of its own: nothing its lost answer left can be
    // told from a person's document by a listing now, so it waits for the next full pass.)
    if (result.ambiguous && last) await this.pinLostUploads(mapping, opts.signal);
    this.deletions.record(this.lastExecutionEnd, deletes);
    addCounts(report, result);
    report.skipped.push(...result.skipped);
    report.failures = [...result.failures, ...result.rejected];
    if (result.failures.length === 0 && !result.ambiguous) for (const id of plan.resolvedIntentIds) state.endIntent(spec.mappingId, id);
    return !result.ambiguous && result.changed.length === 0 && !renamesNowIgnored ? undefined : result;
  }

  /**
   * Ids a listing showed to be former ids of ours (plan.ts formerIds) stay ours: kept in the
   * state's identity, durable before this plan's writes re-mark the documents that showed
   * them, so a later process or a state rebuilt from the listing still knows them.
   */
  private async keepFormerIds(ids: readonly string[]): Promise<void> {
    const learned = ids.filter((id) => !this.formerIds.includes(id));
    if (learned.length === 0) return;
    this.formerIds = [...this.formerIds, ...learned];
    this.d.logger.info({ mapping: this.d.spec.mappingId, formerIds: learned }, 'documents the state records carry another installation id of this mapping: kept as a former id of this installation');
    if (this.d.state.addFormerIds?.(learned) === true) await this.d.state.flush();
  }

  /**
   * Right after a lost upload answer with no round left to look again: a listing now shows
   * what the upload made before anyone else can upload a document of the same name and
   * size, and the documents it ties to files are recorded in their intents as if the
   * answer had named them. A failure leaves the intents as they are (the next full pass
   * settles them by name and size).
   */
  private async pinLostUploads(mapping: MappingState, signal: AbortSignal | undefined): Promise<void> {
    const { spec, logger } = this.d;
    try {
      const remote = await this.d.api.listDocuments(spec.dataSourceId, { signal, form: 'sync', ...listingBound(mapping.files.size) });
      pinIntents(this.d.state, spec.mappingId, lostUploadPins({ mappingId: spec.mappingId, installationId: spec.installationId, formerInstallationIds: this.formerIds, state: mapping, remote, lease: this.d.lease?.(), serviceNames: this.names?.known }));
    } catch (e) {
      logger.info({ err: errorText(e) }, 'could not list the data source after a lost upload answer; the next full pass settles it');
    }
  }

  /** The unmarked documents an upload of a path cannot have made (undefined: no listing yet). */
  private preexisting(): ((path: string) => string[]) | undefined {
    const byName = this.unmarkedByName;
    if (!byName) return undefined;
    const rule = this.names?.known.rule;
    return (path) => intentNameKeys(path, rule).flatMap((k) => byName.get(k) ?? []);
  }

  /**
   * A listing that lacks documents the state knows, and that still exist, is incomplete
   * (paging dssync does not understand, a proxy cutting answers short): planning from it
   * would upload those files again, as duplicates. Documents deleted on the service are
   * missing too, legitimately; so a few of the missing ones (spread over the list) are
   * looked up, and any that exists stops the pass before anything is changed. A record of a
   * document the listing shows at another recorded path is not missing: one of two records
   * of one document (a state older versions left so), which the plan settles.
   */
  private async checkListing(remote: readonly DocumentRecord[], confirmed: PathSet, mapping: MappingState, signal: AbortSignal | undefined): Promise<void> {
    // Confirmed paths are the state's own (confirmedPath): as many as it holds, none is missing.
    if (confirmed.size === mapping.files.size) return;
    const ids = new Set<string>();
    for (const d of remote) ids.add(d.id);
    // No array of a million pairs, nor an entry per file, to find the few missing.
    let missing: [string, FileEntry][] = [];
    for (const path of mapping.files.keys()) {
      if (!confirmed.has(path) && !ids.has(mapping.files.documentIdOf(path)!)) missing.push([path, mapping.files.get(path)!]);
    }
    if (missing.length === 0) return;
    // The few missing ids, looked for among the confirmed paths (no set of a million ids).
    const atAnotherPath = new Set(missing.map(([, entry]) => entry.documentId));
    const listedElsewhere = new Set<string>();
    for (const path of confirmed) {
      const id = mapping.files.documentIdOf(path)!;
      if (atAnotherPath.has(id)) listedElsewhere.add(id);
    }
    missing = missing.filter(([, entry]) => !listedElsewhere.has(entry.documentId));
    if (missing.length === 0) return;
    const probes = [...new Set([0, Math.floor(missing.length / 2), missing.length - 1])].map((i) => missing[i]!);
    for (const [path, entry] of probes) {
      if ((await unlessGone(this.d.api.getDocument(this.d.spec.dataSourceId, entry.documentId, { signal }))) === undefined) continue;
      throw new ListingIncompleteError(
        `the listing of data source ${this.d.spec.dataSourceId} lacks document ${entry.documentId} (${path}), which exists; ${missing.length} known document(s) are missing from it: the service's list is incomplete (paged in a way dssync does not understand?); nothing was changed`,
      );
    }
  }

  /**
   * The paths an incremental plan covers: what the events named, what was found under the
   * named folders, what the state holds there, and — so that a rename is seen even when
   * its two halves arrived in different batches — tracked paths holding the same content as
   * a new file, when they no longer exist.
   */
  private async widenScope(
    scope: ChangeScope,
    local: Map<string, LocalFileInfo>,
    mapping: MappingState,
    untouchable: (p: string) => boolean,
  ): Promise<Set<string>> {
    const out = new Set<string>(scope.files);
    for (const p of local.keys()) out.add(p);
    // A folder event covers what is below it and the path itself (a file replaced by a folder).
    const dirs = scope.dirs.map((d) => (d === '' ? '' : `${d}/`));
    for (const d of scope.dirs) if (d !== '') out.add(d);
    // No array of a million paths or pairs at every change.
    if (dirs.length > 0) for (const p of mapping.files.keys()) if (dirs.some((d) => p.startsWith(d))) out.add(p);

    const newHashes = new Set<string>();
    for (const [p, f] of local) if (!mapping.files.has(p) && f.sha256) newHashes.add(f.sha256);
    if (newHashes.size === 0) return out;
    const candidates: string[] = [];
    for (const p of mapping.files.keys()) if (!out.has(p) && newHashes.has(mapping.files.sha256Of(p)!) && !untouchable(p)) candidates.push(p);
    if (candidates.length === 0) return out;
    const still = await this.d.local.scanScope({ files: candidates, dirs: [] });
    for (const p of candidates) {
      if (!still.files.has(p)) out.add(p);
    }
    return out;
  }

  /**
   * Hashes what the quick check cannot vouch for; sets aside what cannot be read now. The
   * scan's map is taken over (not copied: a million entries), so `scan.files` holds only
   * the files to plan with afterwards. `scope`: an incremental pass's; `remote`: a full pass's listing.
   */
  private async prepareLocal(scan: ScanResult, mapping: MappingState, scope: ChangeScope | undefined, remote: readonly DocumentRecord[] | undefined): Promise<PreparedLocal> {
    const full = scope === undefined;
    const local = scan.files;
    const skipped = [...scan.skipped];
    const blocked = new Set(scan.skipped.map((s) => s.path));
    const dirs = scan.unreadableDirs.map((d) => (d.endsWith('/') ? d : `${d}/`));
    for (const d of dirs) this.d.logger.warn({ path: d }, 'folder skipped for now: it cannot be listed; the documents of its files are kept');
    const settling: string[] = [];
    this.stability.forget(scan, scope, mapping);
    // A set-aside path whose document of ours the last listing left unjudged, gone when its
    // follow-up comes: only a listing can judge that document (an orphan of a lost answer).
    // Still there but skipped (excluded, unreadable) is not gone: it waits, with no full pass.
    let listingNeeded = !full && scope !== undefined && scope.files.some((path) => !local.has(path) && !blocked.has(path) && this.stability.needsListing(path));
    const renamed = renamedFromVanished(mapping.files, (p) => local.has(p) || scan.vouched?.has(p) === true || blocked.has(p) || dirs.some((d) => p.startsWith(d)));
    const toHash = pathsToHash(local, mapping.files, this.d.now()).filter((path) => {
      const file = local.get(path)!;
      if ((full && renamed(file)) || !this.stability.mayBeBeingWritten(file, full, mapping.files.statOf(path))) {
        if (full || !this.stability.needsListing(path)) return true;
        listingNeeded = true;
        local.delete(path);
        blocked.add(path);
        return false;
      }
      local.delete(path);
      blocked.add(path);
      settling.push(path);
      return false;
    });
    if (settling.length > 0) this.d.logger.info({ files: settling.length, first: settling[0] }, 'files changed within the stability window set aside: looked at again after it');
    // Nothing a new file's content could be matched with: it is hashed as it is sent.
    const newFilesUnhashed = remote !== undefined && newFilesNeedNoContent(remote, mapping, () => entriesSeen(local, scan.vouched, mapping));
    const content = new Map<LocalFileInfo, Uint8Array>();
    let kept = 0;
    const hashOne = async (path: string): Promise<void> => {
      const file = local.get(path)!;
      // Its size taken from the budget while it is read; what it kept, once it is.
      const reserved = kept + file.size <= KEEP_CONTENT_BYTES ? file.size : 0;
      kept += reserved;
      try {
        const h = await this.hashRecord(file, reserved > 0);
        local.set(path, h.file);
        if (h.content !== undefined) content.set(h.file, h.content);
        kept += h.content?.length ?? 0;
      } catch (e) {
        if (e instanceof LocalFileVanishedError) {
          local.delete(path);
        } else {
          // Being written, or unreadable: leave it (and its document) for a later pass.
          local.delete(path);
          blocked.add(path);
          skipped.push({ path, reason: e instanceof LocalFileChangedError ? 'changed while being read' : errorText(e) });
          this.d.logger.warn({ path, err: errorText(e) }, 'file skipped for now');
        }
      } finally {
        kept -= reserved;
      }
    };
    await forEachAtMost(newFilesUnhashed ? toHash.filter((p) => mapping.files.has(p)) : toHash, HASH_CONCURRENCY, hashOne);
    // Asked of every path a plan considers: a set of nothing is not asked (a restart's million paths).
    const untouchable = (p: string): boolean => (blocked.size > 0 && blocked.has(p)) || dirs.some((d) => p.startsWith(d));
    return { local, skipped, untouchable, anySetAside: blocked.size > 0 || dirs.length > 0, settling, listingNeeded, content, newFilesUnhashed };
  }

  /**
   * A file's record once hashed, with a small file's bytes when `keep` (LocalSide.hash): a
   * round's hash, or a file planned unhashed as its batch is sent (ExecutorOptions.hash).
   */
  private async hashRecord(file: LocalFileInfo, keep: boolean): Promise<{ file: HashedFile; content?: Uint8Array | undefined }> {
    // Before the read: a write during or after it, within the mtime's tick, is then
    // still "racy" for the next look (racy.ts).
    const hashedAt = this.d.now();
    const h = await this.d.local.hash(file, keep);
    return { file: hashedRecord(file, h, hashedAt), content: h.content };
  }

}

/** Entries whose path the walk found: vouched for, or to be looked at. */
function entriesSeen(local: ReadonlyMap<string, LocalFileInfo>, vouched: PathSet | undefined, mapping: MappingState): number {
  let n = vouched?.size ?? 0;
  for (const p of local.keys()) if (mapping.files.has(p)) n++;
  return n;
}

function unmarkedByName(remote: readonly DocumentRecord[]): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const doc of remote) {
    if (doc.name === undefined || readMeta(doc) !== undefined) continue;
    const key = nfc(doc.name);
    const list = out.get(key);
    if (list) list.push(doc.id);
    else out.set(key, [doc.id]);
  }
  return out;
}

/** Records in the intents the documents a listing tied to their files (plan.ts intentPins). */
function pinIntents(state: MirrorState, mappingId: string, pins: readonly IntentPin[]): void {
  const byIntent = new Map<string, (string | undefined)[]>();
  for (const p of pins) {
    const ids = byIntent.get(p.intentId) ?? [];
    ids[p.index] = p.documentId;
    byIntent.set(p.intentId, ids);
  }
  for (const [intentId, ids] of byIntent) state.setIntentDocuments(mappingId, intentId, ids);
}

function errorText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

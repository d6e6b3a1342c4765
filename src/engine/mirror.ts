/**
 * One mapping's mirror: scan -> plan -> execute, the engine that `dssync sync` runs once
 * and the daemon runs again and again (DESIGN §2). The filesystem comes through the
 * LocalSide interface and the service through DatastoreApi, so both can be faked.
 */
import PQueue from 'p-queue';
import type { DatastoreApi } from '../api/api.js';
import { isApiError } from '../api/errors.js';
import type { DocumentRecord, DocumentUpdate } from '../api/records.js';
import type { Logger } from '../log.js';
import type { EntryStat, FileEntry, Intent, MappingState, PassRecord } from '../state/schema.js';
import { documentFields, newSession, uploadTag, type DocumentFieldsSpec } from './document-fields.js';
import { entryFor, executePlan, type ExecutionResult, type FileFailure, type OpEvent, type RenameCheck, type StateWriter } from './executor.js';
import { checkGuards, countDeletes, DeleteWindow, type GuardVerdict, type RootStatus } from './guards.js';
import { readMeta } from './metadata.js';
import type { StatNow } from './racy.js';
import { confirmedPath, intentNameKeys, hashedRecord, lostUploadPins, pathsToHash, planMirror, vouchedByEntry, type DesiredOf, type IntentPin, type LocalFileInfo, type Op, type OtherOwner, type VouchedFiles } from './plan.js';

/** What a scan of the mapped folder found. */
export interface ScanResult {
  rootStatus: RootStatus;
  files: Map<string, LocalFileInfo>;
  /** Files present but not to be looked at now (too large, unreadable): their documents stay. */
  skipped: SkippedFile[];
  /** Folders that could not be read: everything under them stays as it is. */
  unreadableDirs: string[];
  /** Files the scan's `vouch` answered true for: not in `files` (plan.ts PlanInput.vouched). */
  vouched?: VouchedFiles | undefined;
  /**
   * Why the folder is an outage when the folder itself is fine but a file it needs is not
   * (the ignore file is a FIFO, a folder, too large): named by the guard instead of the folder.
   */
  outageCause?: { path: string; reason: string } | undefined;
}

export interface ScanOptions {
  /**
   * True when the caller already knows this very stat of the file (its state entry, the
   * quick check passing): the scan then keeps the path only (ScanResult.vouched).
   */
  vouch?: ((path: string, stat: StatNow) => boolean) | undefined;
}

/**
 * A file not mirrored. `excluded`: left out by a setting, as a filter would (larger than
 * maxFileBytes, a link leading outside the folder, a FIFO or socket) — reported, yet the
 * folder counts as in sync; otherwise the pass is incomplete until the cause is fixed.
 */
export interface SkippedFile {
  path: string;
  reason: string;
  excluded?: true | undefined;
}

export class LocalFileChangedError extends Error {
  override readonly name = 'LocalFileChangedError';
  /** Stable, for disposition() (errors/disposition.ts). */
  readonly code = 'E_LOCAL_FILE_CHANGED';
}
export class LocalFileVanishedError extends Error {
  override readonly name = 'LocalFileVanishedError';
  /** Stable, for disposition() (errors/disposition.ts). */
  readonly code = 'E_LOCAL_FILE_VANISHED';
}
/** The service's listing lacks documents that exist: planning from it would duplicate them. */
export class ListingIncompleteError extends Error {
  override readonly name = 'ListingIncompleteError';
  /** Stable, for disposition() (errors/disposition.ts). */
  readonly code = 'E_LISTING_INCOMPLETE';
}

/** The local filesystem as the mirror sees it (local/side.ts implements it on disk). */
export interface LocalSide {
  /** The whole folder. The result is the caller's: the mirror fills in hashes in its map. */
  scan(opts?: ScanOptions): Promise<ScanResult>;
  /**
   * A look at part of the tree after watcher events: these files, and these folders with
   * everything below them ('' = the whole tree). Paths relative to the mapped folder.
   */
  scanScope(scope: ChangeScope): Promise<ScanResult>;
  /**
   * Streams the file's content through SHA-256. Throws LocalFileChangedError when the file
   * changed while read, LocalFileVanishedError when it is gone.
   */
  hash(file: LocalFileInfo): Promise<HashedContent>;
}

/** A file's content hash, with the stat of the very file read (taken before the read). */
export interface HashedContent {
  sha256: string;
  size: number;
  mtimeMs: number;
  ctimeMs?: number | undefined;
  dev?: number | undefined;
  ino?: number | undefined;
}

/** What watcher events say to look at. */
export interface ChangeScope {
  files: readonly string[];
  dirs: readonly string[];
  /**
   * The watcher's stat of files it saw after their last event: the local side takes it
   * instead of statting the file again (one stat per path per change). A file without one
   * is stat-ed by the side.
   */
  seen?: ReadonlyMap<string, StatNow> | undefined;
}

/** The state operations the mirror needs (StateStore implements them). */
export interface MirrorState extends StateWriter {
  ensureMapping(mappingId: string, dataSourceId: string, root: string): MappingState;
  setLastPass(mappingId: string, pass: PassRecord): void;
  flush(): Promise<void>;
  /**
   * Records this process's writer session (StateStore.recordSession); true when it was not
   * recorded yet (the mirror then flushes it before writing anything). Without it (a test's
   * state), no session is used: documents carry none, as before sessions existed.
   */
  recordSession?(mappingId: string, session: string, at: number): boolean;
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
  /** A clock that never steps (Clock.monotonic), for this process's own windows; default performance.now. */
  monotonic?: (() => number) | undefined;
  onOp?: ((e: OpEvent) => void) | undefined;
  /** The operations about to be carried out (each round's plan): a progress display's total. */
  onPlan?: ((ops: readonly Op[]) => void) | undefined;
  /**
   * The stability window of every full pass (ms; 0 or absent: none). A file the walk finds
   * changed (to be hashed) whose mtime or ctime is younger than this by the wall clock is
   * set aside for the pass (untouchable: neither sent nor its document touched) and named
   * in the report's `settling`; a later pass sends it once it is older, or once its stat is
   * seen unchanged this long apart on the monotonic clock (a clock stepped back, a future
   * mtime). A file whose stat is the one the state recorded is never set aside. The event aggregator holds a file being written the same way; this covers the
   * passes that do not go through it (start, periodic rescan, reload, lost events, retry).
   */
  stabilityMs?: number | undefined;
  /**
   * How long an upload request may wait for its answer (connect and headers timeouts): an
   * earlier process's request may have been in flight that long after its intent began.
   * @default 70_000 (the queue.timeouts defaults)
   */
  requestTimeoutMs?: number | undefined;
}

export interface PassOptions {
  dryRun?: boolean;
  allowMassDelete?: boolean;
  /** Deletions the operator confirmed on the running daemon (guards.ts GuardInput.confirmedDeletes). */
  confirmedDeletes?: ReadonlySet<string> | undefined;
  signal?: AbortSignal | undefined;
  /** Rounds of list-plan-execute when answers were lost or files changed (default 3). */
  maxRounds?: number;
}

export interface PassReport {
  mappingId: string;
  ok: boolean;
  dryRun: boolean;
  /** The guard that stopped the pass, if one did. */
  blocked?: Extract<GuardVerdict, { ok: false }> | undefined;
  /** The plan of the last round (the whole plan for a dry run). */
  ops: Op[];
  counts: { uploaded: number; replaced: number; renamed: number; updated: number; deleted: number; adopted: number; forgotten: number; unchanged: number; skipped: number; failed: number };
  failures: FileFailure[];
  skipped: SkippedFile[];
  /**
   * Documents in the data source that carry dssync metadata of another mapping or another
   * installation: never touched; the operator must give each its own data source.
   */
  conflicts?: { path: string; documentId: string; reason: string }[] | undefined;
  /**
   * Files set aside because they may still be being written (MirrorDeps.stabilityMs): look
   * at them again after the window (the daemon does, with an incremental pass).
   */
  settling?: string[] | undefined;
  /**
   * Ownership in doubt (docs/reliability.md, "Identity"): 'another-writer' — a document of
   * ours the state never recorded, nothing was written; 'unadopted' — files held because
   * another installation's documents of this mapping id hold them (`dssync adopt`).
   */
  identityConflict?: 'another-writer' | 'unadopted' | undefined;
  /** An answer was lost in a pass without a listing: run a full pass to settle it. */
  needsFullPass?: boolean | undefined;
  /**
   * Uploads whose answer was lost that the listing never showed under their mark, when their
   * intent was settled: they never landed, or the service renamed them past recognition
   * (look for a document without metadata named like the file).
   */
  unfoundUploads?: { path: string; uploadName: string }[] | undefined;
  /**
   * The service ignored the new name of this run's first upload: uploads are now sent
   * under their real names (a lost answer told by name and size), and documents of ours
   * under another name are replaced (docs/probe.md). Also a line of `skipped` (excluded:
   * the pass still counts as in sync).
   */
  renameIgnored?: true | undefined;
  startedAt: string;
  finishedAt: string;
}

/**
 * Files hashed at once. Each hash is a handful of small filesystem calls in the libuv pool;
 * with more of them in flight the pool stays busy (10,000 small files: ~1.8 s at 4, ~1.1 s
 * at 16). Read buffers are sized to the file (at most 1 MiB each).
 */
const HASH_CONCURRENCY = 16;

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

export class Mirror {
  /** When the last execution of this process returned (monotonic): its requests had all ended. */
  private lastExecutionEnd: number | undefined;
  /**
   * The intents open when this process's first pass began: an earlier process's. Any other
   * is this process's own, and its settle window is counted on the monotonic clock.
   */
  private inherited: Set<string> | undefined;
  /** Whether the service renames with the metadata update, as this process's first upload showed. */
  private readonly renames: RenameCheck = { verified: false, ignored: false };
  /** When this process first saw each inherited intent (monotonic): its window counts from then too. */
  private readonly firstSeen = new Map<string, number>();
  private readonly monotonic: () => number;
  /**
   * Files set aside by the stability window, with their stat and when it was first seen so
   * (monotonic): a pass that finds the same stat a window later takes the file as stable.
   * `gone`: a full walk no longer found it, while the runner's follow-up still names it.
   * `released`: found stable at this stat, kept for a follow-up that may still name it
   * (forgetSettled).
   */
  private readonly settling = new Map<string, SettlingRecord>();
  /**
   * Files the last full pass set aside while its listing showed a document of ours for the
   * path that the state does not record there (a move whose record a crash cut, a lost
   * answer): their remote side was left unjudged, and the state cannot stand in for it. An
   * incremental pass (the follow-up) that finds one stable does not send it blind — that
   * made a duplicate of the document the listing showed (seed 7, history 4,302 of the
   * sim2 long run) — but holds it and asks for a full pass (`needsFullPass`).
   */
  private needsListing = new Set<string>();
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

  constructor(private readonly d: MirrorDeps) {
    this.monotonic = d.monotonic ?? (() => performance.now());
    this.session = d.spec.installationId !== undefined && d.state.recordSession !== undefined ? newSession() : undefined;
    this.fieldsSpec = { ...d.spec, session: this.session };
  }

  /**
   * True when a listing begun at `listedAt` (wall) / `listedAtMono` (monotonic) is late
   * enough to show everything the intent's request did. An intent of this process ended at
   * the latest when its last execution returned: counted on the monotonic clock, so that a
   * wall clock stepped forward does not close it at once (a late commit would then stay as
   * a duplicate) nor one stepped back hold it for the size of the step. An intent of an
   * earlier process (a crash, a kill, a one-shot sync that gave up on an answer) is settled
   * only a full window after this process first saw it, and once its request's own timeout
   * and a window have passed since its wall-clock start: the earlier process may have
   * exited the moment it gave up, and the service commit later still; counting from the
   * start alone closed it at this process's first listing, and the late document stayed
   * (issue 23, defect 4; a late commit after that is recognised by its nonce, plan.ts).
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

  get mappingId(): string {
    return this.d.spec.mappingId;
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

  private async pass(scope: ChangeScope | undefined, opts: PassOptions): Promise<PassReport> {
    const { spec, state, logger } = this.d;
    const startedAt = new Date(this.d.now()).toISOString();
    const report = emptyReport(spec.mappingId, !!opts.dryRun, startedAt);
    const mapping = state.ensureMapping(spec.mappingId, spec.dataSourceId, spec.root);
    this.inherited ??= new Set(Object.keys(mapping.intents));
    // Durable before anything this process writes carries it: a metadata update is not
    // preceded by an intent's flush, and a session lost in a crash made the next process
    // take its own documents for a clone's (seed 7, history 5,468 of the sim2 long run).
    if (this.session !== undefined && !opts.dryRun && state.recordSession?.(spec.mappingId, this.session, this.d.now())) await state.flush();
    const maxRounds = opts.maxRounds ?? 3;
    const fieldsSpec = this.fieldsSpec;
    const desired = (f: DesiredOf): DocumentUpdate => documentFields(fieldsSpec, f);

    for (let round = 1; round <= maxRounds; round++) {
      // The walk (disk) and the listing (network) are independent: done side by side, a
      // restart over 100,000 files waits for the longer of the two, not for both.
      const listedAt = this.d.now();
      const listedAtMono = this.monotonic();
      // What the state already says exactly, on either side, is kept as paths only: a
      // restart over a million unchanged files holds two sets, not a million records of each.
      const confirmed = new Set<string>();
      const confirm = (doc: DocumentRecord): boolean => {
        const path = confirmedPath(doc, { mappingId: spec.mappingId, installationId: spec.installationId, desired, files: mapping.files });
        // The state's copy of the path: a million confirmed paths hold no copies of their own.
        if (path !== undefined) confirmed.add(mapping.files.heldPath(path) ?? path);
        return path !== undefined;
      };
      const [scan, remote] = await Promise.all([
        scope ? this.d.local.scanScope(scope) : this.d.local.scan({ vouch: (path, st) => vouchedByEntry(mapping.files.statOf(path), st, listedAt) }),
        scope ? undefined : this.d.api.listDocuments(spec.dataSourceId, { signal: opts.signal, form: 'sync', keep: (doc) => !confirm(doc) }),
      ]);
      if (remote) {
        await this.checkListing(remote, confirmed, mapping, opts.signal);
        this.unmarkedByName = unmarkedByName(remote);
      }
      const scanned = scan.files.size + (scan.vouched?.paths.size ?? 0);
      const { local, skipped, untouchable, settling, listingNeeded } = await this.prepareLocal(scan, mapping, !scope, scope);
      report.settling = settling.length > 0 ? settling : undefined;
      if (listingNeeded) report.needsFullPass = true;
      if (remote) this.needsListing = unjudgedRemote(remote, settling, mapping, spec.mappingId);
      const excludedPaths = new Set(scan.skipped.filter((s) => s.excluded).map((s) => s.path));
      const planScope = scope ? await this.widenScope(scope, local, mapping, untouchable) : undefined;
      const plan = planMirror({
        mappingId: spec.mappingId,
        installationId: spec.installationId,
        formerInstallationIds: spec.formerInstallationIds,
        local,
        vouched: scan.vouched,
        state: mapping,
        remote,
        confirmed: remote ? confirmed : undefined,
        scope: planScope,
        desired,
        prune: spec.prune,
        untouchable,
        excluded: (p) => excludedPaths.has(p),
        settled: this.settledAt(listedAt, listedAtMono),
        renamesIgnored: this.renames.ignored,
      });
      const verdict = checkGuards({
        root: spec.root,
        rootStatus: scan.rootStatus,
        outageCause: scan.outageCause,
        // A partial look says nothing about the folder being empty.
        localFiles: scope ? Math.max(1, scanned) : scanned,
        // An incremental plan's count is the state's already: not counted twice at every change.
        // With prune "all", what it may prune is the mapping's too (plan.ts prunableCount):
        // added to what the listing shows of ours, not to the state's count, whose entries
        // of documents people deleted would count twice beside them (seed 7, history 6,427).
        knownDocuments: remote ? Math.max(plan.ourDocumentCount + plan.prunableCount, mapping.files.size) : plan.ourDocumentCount,
        ops: plan.ops,
        maxDeletePercent: spec.maxDeletePercent,
        massDeleteMinimum: spec.massDeleteMinimum,
        allowMassDelete: !!opts.allowMassDelete,
        confirmedDeletes: opts.confirmedDeletes,
        mappingId: spec.mappingId,
        recentDeletes: this.deletions.count(this.monotonic()),
      });
      report.ops = plan.ops;
      const heldIds = new Set(plan.held.map((h) => h.owner.documentId));
      report.conflicts = [
        ...plan.sameIdentity.map((o) => ({ path: o.path, documentId: o.documentId, reason: sameIdentityReason(o) })),
        ...plan.held.map((h) => ({ path: h.path, documentId: h.owner.documentId, reason: heldReason(h.owner, spec.mappingId) })),
        ...plan.otherOwners.filter((o) => !heldIds.has(o.documentId)).map((o) => ({ path: o.path, documentId: o.documentId, reason: ownerReason(o, spec.mappingId) })),
        ...plan.doubtful.map((d) => ({ path: d.name ?? d.id, documentId: d.id, reason: DOUBTFUL_REASON })),
        ...plan.foreignMarked.map((d) => ({ path: d.name ?? d.id, documentId: d.id, reason: FOREIGN_MARKED_REASON })),
      ];
      if (plan.unfoundUploads.length > 0) report.unfoundUploads = [...(report.unfoundUploads ?? []), ...plan.unfoundUploads];
      if (!opts.dryRun) this.reportMarked(plan, round === 1);
      report.identityConflict = plan.sameIdentity.length > 0 ? 'another-writer' : plan.held.length > 0 ? 'unadopted' : undefined;
      report.skipped = [...skipped, ...plan.skippedRejected.map((path) => ({ path, reason: rejectedReason(mapping, path) })), ...conflictsAsSkipped(report.conflicts)];
      report.counts.unchanged = plan.unchanged;
      if (round === 1 && plan.sameIdentity.length > 0) {
        logger.error(
          { dataSourceId: spec.dataSourceId, documents: plan.sameIdentity.length, example: report.conflicts[0] },
          `another writer uses this installation's identity (${spec.installationId ?? ''}) for mapping ${spec.mappingId}: ${plan.sameIdentity.length} document(s) of ours that this state never recorded; nothing was written. ${SAME_IDENTITY_FIX}`,
        );
      } else if (round === 1 && plan.held.length > 0) {
        logger.warn(
          { dataSourceId: spec.dataSourceId, documents: plan.held.length, example: report.conflicts[0] },
          `${plan.held.length} file(s) not uploaded: another dssync installation's document(s) for mapping ${spec.mappingId} hold the same path and content (a lost or new state?). ${adoptCommand(spec.mappingId)} takes them over`,
        );
      }
      if (round === 1 && plan.otherOwners.length > 0) {
        logger.warn(
          { dataSourceId: spec.dataSourceId, documents: plan.otherOwners.length, example: report.conflicts[0] },
          `the data source holds ${plan.otherOwners.length} document(s) written by dssync for another mapping or installation: left untouched; give each mapping its own data source`,
        );
      }
      if (!verdict.ok) {
        report.blocked = verdict;
        logger.error({ kind: verdict.kind, deletes: verdict.deletes }, verdict.message);
        break;
      }
      if (plan.doubtful.length > 0) {
        logger.warn(
          { documents: plan.doubtful.map((d) => ({ id: d.id, name: d.name })) },
          `${plan.doubtful.length} document(s) without metadata named like a file whose upload answer was lost, of its size: each may be that upload or someone's, unknowable which, so none is taken for ours (left untouched; the file is uploaded again). If one is a duplicate of the file, delete it by hand`,
        );
      }
      if (opts.dryRun) break;

      const renamesWereIgnored = this.renames.ignored;
      pinIntents(state, spec.mappingId, plan.intentPins);
      for (const r of plan.refreshed) state.setFile(spec.mappingId, r.path, entryFor(r.file, r.documentId, this.d.now));
      this.d.onPlan?.(plan.ops);
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
        root: spec.root,
        preexisting: this.preexisting(),
        // Only a listing of this very pass says what existed right before its uploads.
        preexistingFresh: remote !== undefined,
        uploadTag: spec.installationId === undefined ? undefined : uploadTag(spec.mappingId, spec.installationId),
        session: this.session,
        renameCheck: this.renames,
      });
      const renamesNowIgnored = this.renames.ignored && !renamesWereIgnored;
      if (renamesNowIgnored) {
        logger.error(
          { dataSourceId: spec.dataSourceId, shown: this.renames.shown },
          `the service ignored the new name of an uploaded document (it kept ${JSON.stringify(this.renames.shown ?? '')}): uploads of mapping ${spec.mappingId} are now sent under their real names (a lost answer is then told by name and size), and documents left under a marked name are sent again; run 'dssync probe --write' and tell the service's operator`,
        );
      }
      this.lastExecutionEnd = this.monotonic();
      // (An incremental pass has no listing of its own: nothing its lost answer left can be
      // told from a person's document by a listing now, so it waits for the next full pass.)
      if (result.ambiguous && round === maxRounds && !scope) await this.pinLostUploads(mapping, opts.signal);
      // Planned deletions count once carried out, whether or not each request succeeded:
      // conservative, and a failed one is planned (and counted) again only by a later pass.
      this.deletions.record(this.lastExecutionEnd, opts.allowMassDelete || (verdict.ok && verdict.confirmed) ? 0 : countDeletes(plan.ops));
      addCounts(report, result);
      report.failures = [...result.failures, ...result.rejected];
      if (result.failures.length === 0 && !result.ambiguous) for (const id of plan.resolvedIntentIds) state.endIntent(spec.mappingId, id);
      // Lost answers, files that changed under us and documents left under a marked name by
      // a service that ignores new names are looked at again straight away.
      if (!result.ambiguous && result.changed.length === 0 && !renamesNowIgnored) break;
      if (round === maxRounds) {
        for (const path of result.changed) report.skipped.push({ path, reason: 'changed while being sent' });
        if (result.ambiguous) {
          report.needsFullPass = true;
          report.failures.push({ path: '', op: 'upload', code: 'E_AMBIGUOUS', message: "a write's answer was lost (an upload, a delete or an update); the next full pass settles it" });
        }
        break;
      }
      logger.info({ round }, 'looking again: an answer was lost or a file changed while being sent');
    }

    if (this.renames.ignored) {
      report.renameIgnored = true;
      report.skipped.push({ path: '', reason: RENAME_IGNORED_REASON, excluded: true });
    }
    report.counts.skipped = report.skipped.length;
    report.counts.failed = report.failures.length;
    report.ok = !report.blocked && report.failures.length === 0 && report.skipped.every((s) => s.excluded);
    report.finishedAt = new Date(this.d.now()).toISOString();
    if (!opts.dryRun) {
      if (!scope) {
        state.setLastPass(spec.mappingId, {
          startedAt: report.startedAt,
          finishedAt: report.finishedAt,
          ok: report.ok,
          summary: { ...report.counts },
          ...(report.blocked ? { error: report.blocked.message } : {}),
        });
      }
      await state.flush();
    }
    return report;
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
      const remote = await this.d.api.listDocuments(spec.dataSourceId, { signal, form: 'sync' });
      pinIntents(this.d.state, spec.mappingId, lostUploadPins({ mappingId: spec.mappingId, installationId: spec.installationId, formerInstallationIds: spec.formerInstallationIds, state: mapping, remote }));
    } catch (e) {
      logger.info({ err: errorText(e) }, 'could not list the data source after a lost upload answer; the next full pass settles it');
    }
  }

  /** Says what the listing showed of marked uploads that no open intent names (plan.ts). */
  private reportMarked(plan: Pick<ReturnType<typeof planMirror>, 'lostUploads' | 'foreignMarked' | 'unfoundUploads'>, firstRound: boolean): void {
    const { logger } = this.d;
    if (plan.lostUploads.length > 0) {
      logger.warn(
        { documents: plan.lostUploads.slice(0, 10).map((d) => ({ id: d.id, name: d.name })), count: plan.lostUploads.length },
        `${plan.lostUploads.length} upload(s) of ours committed by the service after their answer was given up (a late commit): deleted, the files keep their own documents`,
      );
    }
    if (firstRound && plan.foreignMarked.length > 0) {
      logger.warn(
        { documents: plan.foreignMarked.slice(0, 10).map((d) => ({ id: d.id, name: d.name })), count: plan.foreignMarked.length },
        `${plan.foreignMarked.length} document(s) without metadata carry a dssync upload mark that is not this installation's: left untouched`,
      );
    }
    if (plan.unfoundUploads.length > 0) {
      logger.warn(
        { files: plan.unfoundUploads.slice(0, 10), count: plan.unfoundUploads.length },
        `${plan.unfoundUploads.length} upload(s) whose answer was lost do not show in the listing under the name they were sent with: they never landed, or the service renamed them past recognition (then a document without metadata named like the file is a duplicate: delete it by hand)`,
      );
    }
  }

  /** The unmarked documents an upload of a path cannot have made (undefined: no listing yet). */
  private preexisting(): ((path: string) => string[]) | undefined {
    const byName = this.unmarkedByName;
    if (!byName) return undefined;
    return (path) => intentNameKeys(path).flatMap((k) => byName.get(k) ?? []);
  }

  /**
   * A listing that lacks documents the state knows, and that still exist, is incomplete
   * (paging dssync does not understand, a proxy cutting answers short): planning from it
   * would upload those files again, as duplicates. Documents deleted on the service are
   * missing too, legitimately; so a few of the missing ones (spread over the list) are
   * looked up, and any that exists stops the pass before anything is changed.
   */
  private async checkListing(remote: readonly DocumentRecord[], confirmed: ReadonlySet<string>, mapping: MappingState, signal: AbortSignal | undefined): Promise<void> {
    const ids = new Set<string>();
    for (const d of remote) ids.add(d.id);
    // No array of a million pairs, nor an entry per file, to find the few missing.
    const missing: [string, FileEntry][] = [];
    for (const path of mapping.files.keys()) {
      if (!confirmed.has(path) && !ids.has(mapping.files.documentIdOf(path)!)) missing.push([path, mapping.files.get(path)!]);
    }
    if (missing.length === 0) return;
    const probes = [...new Set([0, Math.floor(missing.length / 2), missing.length - 1])].map((i) => missing[i]!);
    for (const [path, entry] of probes) {
      try {
        await this.d.api.getDocument(this.d.spec.dataSourceId, entry.documentId, { signal });
      } catch (e) {
        if (isApiError(e) && e.code === 'E_NOT_FOUND') continue;
        throw e;
      }
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
   * the files to plan with afterwards.
   */
  private async prepareLocal(scan: ScanResult, mapping: MappingState, full: boolean, scope?: ChangeScope) {
    const local = scan.files;
    const skipped = [...scan.skipped];
    const blocked = new Set(scan.skipped.map((s) => s.path));
    const dirs = scan.unreadableDirs.map((d) => (d.endsWith('/') ? d : `${d}/`));
    for (const d of dirs) this.d.logger.warn({ path: d }, 'folder skipped for now: it cannot be listed; the documents of its files are kept');
    const settling: string[] = [];
    this.forgetSettled(scan, scope, mapping);
    let listingNeeded = false;
    const toHash = pathsToHash(local, mapping.files, this.d.now()).filter((path) => {
      if (!this.mayBeBeingWritten(local.get(path)!, full, mapping.files.statOf(path))) {
        if (full || !this.needsListing.has(path)) return true;
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
    const queue = new PQueue({ concurrency: HASH_CONCURRENCY });
    const hashOne = async (path: string): Promise<void> => {
      const file = local.get(path)!;
      try {
        // Before the read: a write during or after it, within the mtime's tick, is then
        // still "racy" for the next look (racy.ts).
        const hashedAt = this.d.now();
        const h = await this.d.local.hash(file);
        local.set(path, hashedRecord(file, h, hashedAt));
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
      }
    };
    // A file that cannot be hashed is set aside above (vanished, or skipped for now). The
    // queue is fed as it drains: a task waiting in p-queue costs ~1 KB, so a million queued
    // at once held a gigabyte through the whole hash of a first mirror.
    let failure: { error: unknown } | undefined;
    for (const path of toHash) {
      if (failure) break;
      await queue.onSizeLessThan(HASH_CONCURRENCY);
      queue.add(() => hashOne(path)).catch((error: unknown) => (failure ??= { error }));
    }
    await queue.onIdle();
    if (failure) throw failure.error;
    const untouchable = (p: string): boolean => blocked.has(p) || dirs.some((d) => p.startsWith(d));
    return { local, skipped, untouchable, settling, listingNeeded };
  }

  /**
   * What is no longer waited for. The runner's follow-up of a set-aside file is an
   * incremental pass naming it a window later, and an incremental pass judges only a file it
   * has a record of (the aggregator holds the others). So a record outlives the file's
   * release and its absence from a full walk: forgotten early, the follow-up met a new
   * writer's first chunk there with no record and sent it half-written (seed 8, history
   * 623: set aside, swapped away, a slow writer at the same path; seed 7, history 2,645:
   * released by another pass, then truncated and rewritten before the follow-up came). A
   * file a full walk does not find is remembered as gone; a released one keeps the stat it
   * was released at, and any other stat at the follow-up is judged by the window again. A
   * record is dropped when a pass that names the path (the follow-up) finds the file gone,
   * or unchanged since its release; past MAX_SETTLING records the released ones go first.
   */
  private forgetSettled(scan: ScanResult, scope: ChangeScope | undefined, mapping: MappingState): void {
    if (this.settling.size === 0) return;
    const named = scope ? new Set(scope.files) : undefined;
    for (const [path, held] of this.settling) {
      if (scan.files.has(path)) continue;
      // Vouched: unchanged from the state's record, so stable at that stat.
      const vouched = scan.vouched?.paths.has(path) ? mapping.files.statOf(path) : undefined;
      if (!named && vouched) this.settling.set(path, { size: vouched.size, mtimeMs: vouched.mtimeMs, ctimeMs: vouched.ctimeMs, since: held.since, released: true });
      else if (!named) this.settling.set(path, { ...held, gone: true, released: undefined });
      else if (named.has(path) && !scan.vouched?.paths.has(path)) this.settling.delete(path);
    }
    if (this.settling.size > MAX_SETTLING) for (const [path, held] of this.settling) if (held.released && this.settling.size > MAX_SETTLING) this.settling.delete(path);
  }

  /** A file found stable: remembered at this stat for a follow-up still to come (forgetSettled). */
  private release(file: LocalFileInfo, full: boolean): false {
    const held = this.settling.get(file.path);
    if (held === undefined) return false;
    const unchanged = held.released === true && sameStat(held, file);
    if (unchanged && !full) this.settling.delete(file.path);
    else if (!unchanged) this.settling.set(file.path, { size: file.size, mtimeMs: file.mtimeMs, ctimeMs: file.ctimeMs, since: this.monotonic(), released: true });
    return false;
  }

  /**
   * The stability rule of every full pass (MirrorDeps.stabilityMs): true when `file` changed
   * too recently to be read whole. Checked in full passes, and in any pass for a file set
   * aside before (an incremental pass is the follow-up; events are held by the aggregator).
   *
   * A file is stable when any of these holds, none of which needs the mtime to be behind
   * the wall clock: its stat (size, mtime, ctime, dev, inode) is the one the state recorded
   * when it was last read whole (nothing wrote it since: a write moves the ctime to the
   * writer's "now", whatever that is); two looks a window apart on the monotonic clock saw
   * the same stat; or, when its times are behind the wall clock, they are a window old.
   * Without the first, a file written before a backward step (its mtime now in the future)
   * was set aside by every full pass until the wall clock caught up, so a document of it
   * that a person deleted was not uploaded again for up to the size of the step (issue 23,
   * the simulation's SIM_WALL_BACK_REPAIR).
   */
  private mayBeBeingWritten(file: LocalFileInfo, full: boolean, entry: EntryStat | undefined): boolean {
    const windowMs = this.d.stabilityMs ?? 0;
    const held = this.settling.get(file.path);
    if (windowMs <= 0 || (!full && !held)) return false;
    if (entry !== undefined && sameStatAsEntry(entry, file)) return this.release(file, full);
    if (held?.released && sameStat(held, file)) return this.release(file, full);
    // File times are wall-clock: compared with the wall clock (a future time proves nothing).
    const age = this.d.now() - Math.max(file.mtimeMs, file.ctimeMs ?? -Infinity);
    const mono = this.monotonic();
    const same = held !== undefined && !held.gone && !held.released && sameStat(held, file);
    // Two stats a window apart that agree prove it too, whatever the wall clock did.
    if (age >= windowMs || (same && mono - held.since >= windowMs)) return this.release(file, full);
    this.settling.set(file.path, { size: file.size, mtimeMs: file.mtimeMs, ctimeMs: file.ctimeMs, since: same ? held.since : mono });
    return true;
  }
}

/** Set-aside paths for which `remote` holds a document of ours (by metadata) that the state does not record at that path. */
function unjudgedRemote(remote: readonly DocumentRecord[], settling: readonly string[], mapping: MappingState, mappingId: string): Set<string> {
  const out = new Set<string>();
  if (settling.length === 0) return out;
  const aside = new Set(settling);
  for (const doc of remote) {
    const meta = readMeta(doc);
    if (meta === undefined || meta.mappingId !== mappingId || !aside.has(meta.path)) continue;
    if (mapping.files.documentIdOf(meta.path) !== doc.id) out.add(meta.path);
  }
  return out;
}

interface SettlingRecord {
  size: number;
  mtimeMs: number;
  ctimeMs: number | undefined;
  /** When this stat was first seen (monotonic). */
  since: number;
  gone?: true | undefined;
  released?: true | undefined;
}

/** Records of set-aside files kept at most (Mirror.settling): released ones are dropped first past it. */
const MAX_SETTLING = 100_000;

function sameStat(held: SettlingRecord, file: LocalFileInfo): boolean {
  return held.size === file.size && held.mtimeMs === file.mtimeMs && held.ctimeMs === file.ctimeMs;
}

/** The stat the state recorded, every field the walk gives known and equal (a fake may leave ctime, dev or inode out). */
function sameStatAsEntry(entry: EntryStat, file: LocalFileInfo): boolean {
  const known = (a: number | undefined, b: number | undefined): boolean => a !== undefined && b !== undefined && a === b;
  return entry.size === file.size && entry.mtimeMs === file.mtimeMs && known(entry.ctimeMs, file.ctimeMs) && known(entry.ino, file.ino) && (entry.dev === undefined || entry.dev === file.dev);
}

function unmarkedByName(remote: readonly DocumentRecord[]): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const doc of remote) {
    if (doc.name === undefined || readMeta(doc) !== undefined) continue;
    const key = doc.name.normalize('NFC');
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

/** Conflicts show in the skipped list (sync's output, status): the first few, then a count. */
const CONFLICTS_LISTED = 50;
function conflictsAsSkipped(conflicts: PassReport['conflicts']): { path: string; reason: string }[] {
  if (!conflicts || conflicts.length === 0) return [];
  const out = conflicts.slice(0, CONFLICTS_LISTED).map((c) => ({ path: c.path, reason: `conflict: document ${c.documentId} ${c.reason}` }));
  if (conflicts.length > CONFLICTS_LISTED) out.push({ path: '', reason: `conflict: ${conflicts.length - CONFLICTS_LISTED} more document(s) of another owner` });
  return out;
}

const DOUBTFUL_REASON =
  "has no metadata and the name and size of a file whose upload answer was lost: dssync's lost upload or someone's, unknowable which; left untouched (delete it by hand if it duplicates the file)";

const RENAME_IGNORED_REASON =
  "the service ignores a document's new name: uploads are sent under their real names, not marked (a lost answer is told by name and size only); see 'dssync probe --write'";

const FOREIGN_MARKED_REASON =
  "has no metadata and a dssync upload mark that is not this installation's (another installation's upload in progress, or an older dssync's): left untouched";

/** What settles another writer with our identity (docs/reliability.md, "Identity"). */
export const SAME_IDENTITY_FIX =
  "A cloned host, a copied state file or a pinned installationId used twice? On the host that should take a new identity run 'dssync identity reset --config F' (and give it its own mapping id or data source); on the host that should keep the documents run 'dssync adopt --config F --mapping M'";

function adoptCommand(mappingId: string, from?: string): string {
  return `'dssync adopt --config F --mapping ${mappingId}${from ? ` --from ${from}` : ''}'`;
}

function sameIdentityReason(o: OtherOwner): string {
  return `carries this installation's id (${o.installationId ?? ''}) but this state never recorded it: another writer with our identity; nothing written for this mapping. ${SAME_IDENTITY_FIX}`;
}

function heldReason(o: OtherOwner, mappingId: string): string {
  return `of another dssync installation (${o.installationId ?? 'no id: an older dssync'}) for this mapping id holds this file's path and content: not uploaded again (a lost or new state?); ${adoptCommand(mappingId, o.installationId)} takes them over`;
}

function ownerReason(o: OtherOwner, mappingId: string): string {
  if (o.mappingId !== mappingId) return `written by dssync for mapping ${JSON.stringify(o.mappingId)}: another owner, left untouched`;
  return o.installationId === undefined
    ? 'written by an older dssync for this mapping id, and this state file does not track it: another owner, left untouched'
    : `written by another dssync installation (${o.installationId}) for this mapping id: another owner, left untouched`;
}

function rejectedReason(mapping: MappingState, path: string): string {
  const r = mapping.rejected[path];
  return r ? `refused by the service${r.status ? ` (HTTP ${r.status})` : ''}: ${r.reason}; retried when the file changes` : 'refused by the service';
}

function errorText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

function emptyReport(mappingId: string, dryRun: boolean, startedAt: string): PassReport {
  return {
    mappingId,
    ok: false,
    dryRun,
    ops: [],
    counts: { uploaded: 0, replaced: 0, renamed: 0, updated: 0, deleted: 0, adopted: 0, forgotten: 0, unchanged: 0, skipped: 0, failed: 0 },
    failures: [],
    skipped: [],
    startedAt,
    finishedAt: startedAt,
  };
}

function addCounts(report: PassReport, r: ExecutionResult): void {
  report.counts.uploaded += r.counts.upload;
  report.counts.replaced += r.counts.replace;
  report.counts.renamed += r.counts.rename;
  report.counts.updated += r.counts['update-meta'];
  report.counts.deleted += r.counts.delete;
  report.counts.adopted += r.counts.adopt;
  report.counts.forgotten += r.counts.forget;
}


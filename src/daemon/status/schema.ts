/**
 * The shape of the daemon's `GET /status` answer: one zod schema, the single source of its
 * type. The daemon builds its answer as this type (Daemon.status(), MappingRunner.status());
 * `dssync status` and the status page read it back through the same schema.
 *
 * Extending it: add the field here, optional (`.optional()`) unless every daemon since the
 * field's introduction sends it, with a comment saying what it means for an operator; the
 * compiler then asks the producer (runner, daemon) for it. Readers parse with
 * `parseDaemonStatus`, which checks the known fields and keeps those it does not know (a
 * newer daemon, an older CLI: `status --json` passes them on), so adding a field never
 * breaks a reader.
 *
 * The status never holds a secret: the service's address and organization id, paths and
 * counters only (never the token, a password, or a client secret).
 */
import { z } from 'zod';
import type { StateIdentity } from '../../state/schema.js';
import type { StateRecovery } from '../../state/store.js';

const count = z.number().int().nonnegative();
const isoTime = z.string();

/** `paused`: the operator paused the mapping (`dssync pause`); it makes no request until resumed. */
export const RunnerPhaseSchema = z.enum(['starting', 'syncing', 'watching', 'degraded', 'stopped', 'paused', 'standby']);
export type RunnerPhase = z.infer<typeof RunnerPhaseSchema>;

export const RecentErrorSchema = z.object({
  at: isoTime,
  path: z.string().optional(),
  message: z.string(),
  /** The error's stable code (E_*, errors/codes.ts), beside the prose, when it has one. */
  code: z.string().optional(),
});
export type RecentError = z.infer<typeof RecentErrorSchema>;

export const PassCountsSchema = z.object({
  uploaded: count,
  replaced: count,
  renamed: count,
  updated: count,
  deleted: count,
  adopted: count,
  forgotten: count,
  unchanged: count,
  skipped: count,
  failed: count,
});

export const LastPassSchema = PassCountsSchema.extend({
  /** False when some operation failed or a file was refused/skipped (see lastFullPassOkAt). */
  ok: z.boolean(),
  finishedAt: isoTime,
  kind: z.enum(['full', 'changes']),
});

export const SkippedFileSchema = z.object({ path: z.string(), reason: z.string() });

/**
 * What keeps a file from the App (docs/status.md "Problems"). `no-text` and `unchecked` are
 * PDFs sent as they are whose text layer is missing or could not be checked.
 */
export const PROBLEM_KINDS = ['too-large', 'skipped', 'unreadable', 'refused', 'failed', 'not-ingested', 'conflict', 'no-text', 'unchecked'] as const;

/** A file not mirrored as it is (issue 25.1, docs/status.md "Problems"). */
export const ProblemSchema = z.object({
  path: z.string(),
  kind: z.enum(PROBLEM_KINDS),
  reason: z.string(),
  /** First seen not mirrored (kept across passes and restarts). */
  since: isoTime,
});

/** A file left out by a setting (a link leading outside the folder, a FIFO): named, not a problem. */
export const ExclusionSchema = z.object({ path: z.string(), reason: z.string(), since: isoTime });

/** One finished pass (issue 25.7, `dssync status --history`). */
export const PassRecordSchema = z.object({
  kind: z.enum(['start', 'full', 'incremental', 'rescan']),
  startedAt: isoTime,
  durationMs: z.number().nonnegative(),
  ok: z.boolean(),
  uploaded: count,
  replaced: count,
  renamed: count,
  deleted: count,
  skipped: count,
  failed: count,
  /** Why the pass stopped or failed as a whole. */
  error: z.string().optional(),
  /** The first few files' errors. */
  errors: z.array(z.string()),
});
export type PassRecordView = z.infer<typeof PassRecordSchema>;

export const PendingDeletesSchema = z.object({
  since: isoTime,
  message: z.string(),
  total: count,
  paths: z.array(z.string()),
  digest: z.string(),
  confirmed: z.boolean(),
});
export type PendingDeletesView = z.infer<typeof PendingDeletesSchema>;

export const NotIngestedSchema = z.object({
  path: z.string(),
  documentId: z.string(),
  uploadedAt: isoTime,
  /** The service's reason ("failed: text extraction failed: …"); absent: no chunks, the service said nothing. */
  reason: z.string().optional(),
});

/** How a mapping learns of changes (issue 12, docs/watch.md). */
export const WatchStatusSchema = z.object({
  /** The mapping's watch.mode: auto, events or poll. */
  mode: z.enum(['auto', 'events', 'poll']).optional(),
  /**
   * Each mount the folder spans (the one holding it first, then those below it): events or
   * polling, and why ("cifs is a network filesystem"). A polled mount has its share of the
   * last complete poll cycle: the files looked at under it and the time spent on it.
   */
  mounts: z.array(
    z.object({
      mountPoint: z.string(),
      rel: z.string(),
      fsType: z.string(),
      source: z.string(),
      kind: z.enum(['events', 'poll']),
      why: z.string(),
      files: count.optional(),
      lastCycleMs: z.number().optional(),
    }),
  ),
  /** Folders polled because the inotify watch limit was reached, and the command that raises it. */
  overLimit: z.array(z.string()),
  limitFix: z.string().optional(),
  /**
   * The poller, when something is polled: its settings (target interval, CPU budget in % of
   * one core), the interval achieved between the starts of the last two cycles, the last
   * complete cycle (entries and files looked at, wall and CPU time, per polled subtree).
   */
  poll: z
    .object({
      subtrees: z.array(z.string()),
      bySubtree: z.record(z.string(), z.object({ files: count, ms: z.number() })).optional(),
      cycles: count,
      lastEntries: count,
      lastFiles: count,
      lastCycleMs: z.number().optional(),
      achievedIntervalMs: z.number().optional(),
      lastCycleEndedAt: z.number().optional(),
      lastCycleCpuMs: z.number().optional(),
      targetIntervalMs: z.number().optional(),
      budgetPercent: z.number().optional(),
      problems: z.array(z.object({ kind: z.string(), path: z.string(), message: z.string() })),
    })
    .optional(),
  /** A hung or unmounted share, a folder the poller may not read, the watch limit. */
  problems: z.array(z.string()),
  /**
   * The process's watch, when events are watched: dssync's own inotify instance, or Node's
   * fs.watch and why (the module not built or not loadable, DSSYNC_NATIVE=0).
   */
  backend: z.object({ name: z.enum(['inotify', 'fs.watch']), why: z.string().optional() }).optional(),
  /**
   * The process's inotify queue, when events are watched: its size
   * (fs.inotify.max_queued_events), the overflows since the daemon started (reported by the
   * kernel, or inferred under fs.watch; each one made every mapping look at everything
   * again), and the last one: when, and (inferred) how many events arrived at once.
   */
  queue: z
    .object({
      /** True: overflows the kernel reported (dssync's inotify watch); false: inferred (fs.watch). */
      reported: z.boolean().optional(),
      queueSize: count,
      overflows: count,
      lastOverflowAt: z.string().optional(),
      lastBurst: count.optional(),
    })
    .optional(),
});
export type WatchStatusView = z.infer<typeof WatchStatusSchema>;

/**
 * The mapping's lease (docs/reliability.md, "The lease"): `held` (this process writes),
 * `standby` (another live process holds it: `holder` says which, and since when),
 * `acquiring` (a claim under way, or the service not answering), `at-risk` (not renewed for
 * long enough that writes stopped), `released` (stopping).
 */
export const LeaseStatusSchema = z.object({
  state: z.enum(['held', 'standby', 'acquiring', 'at-risk', 'released']),
  /** When this process took it (held). */
  since: z.string().optional(),
  /** The marker document's id. */
  documentId: z.string().optional(),
  /** The live holder, when another process (standby). */
  holder: z.object({ host: z.string(), session: z.string(), installationId: z.string(), since: z.string().optional() }).optional(),
  /** The last failed lease request. */
  error: z.string().optional(),
});
export type LeaseStatus = z.infer<typeof LeaseStatusSchema>;

export const MappingStatusSchema = z.object({
  id: z.string(),
  /** The mapped folder. */
  path: z.string(),
  /** The data source's id once resolved (a mapping by name has none before its first pass). */
  dataSourceId: z.string().optional(),
  /** Its name, when the config names it (`dataSource.name`). */
  dataSourceName: z.string().optional(),
  /**
   * What the operator must hear about the data source: renamed in the App (followed by id),
   * deleted (looked up again by name, or the mapping stopped). Absent when all is as configured.
   */
  dataSourceNotice: z.string().optional(),
  phase: RunnerPhaseSchema,
  /** Why the mapping is degraded (empty when it is not). */
  degraded: z.array(z.string()),
  /** What the daemon does next about each reason of `degraded`, in the same order (daemon/mapping/next-step.ts). */
  degradedNext: z.array(z.string()).optional(),
  filesTracked: count,
  /** Paths waiting in the aggregator or planned for the next pass. */
  pending: count,
  lastPass: LastPassSchema.optional(),
  /**
   * End of the last full pass after which nothing was left to retry: files the service
   * refused (413/415) or that were skipped do not prevent it, so it may equal
   * lastPass.finishedAt while lastPass.ok is false.
   */
  lastFullPassOkAt: isoTime.optional(),
  nextRescanAt: isoTime.optional(),
  /** The pass running now (absent between passes): operations finished so far. */
  currentPass: z.object({ kind: z.enum(['full', 'changes']), startedAt: isoTime, done: count }).optional(),
  /** Newest last; bounded by the runner. */
  recentErrors: z.array(RecentErrorSchema),
  /** Every file not mirrored, excluded ones too, as {path, reason} (older readers; see problems and excluded). */
  skipped: z.array(SkippedFileSchema),
  /**
   * Files not mirrored as they are, kept until each is mirrored or gone (across incremental
   * passes and restarts). Not empty: the mapping is not in sync.
   */
  problems: z.array(ProblemSchema).optional(),
  /** Problems in all, including those past the list's bound (1,000). */
  problemsTotal: count.optional(),
  /** Files left out by a setting: shown apart, they do not make a mapping out of sync. */
  excluded: z.array(ExclusionSchema).optional(),
  excludedTotal: count.optional(),
  /** The last passes, oldest first (at most 50). */
  history: z.array(PassRecordSchema).optional(),
  /** Uploaded documents that had no chunks after the ingestion delay. */
  notIngested: z.array(NotIngestedSchema),
  /** The lists' full lengths: /status carries the first 100 of each, /status/problems the rest. */
  skippedTotal: count.optional(),
  notIngestedTotal: count.optional(),
  recentErrorsTotal: count.optional(),
  watchedDirs: count,
  /** Watch modes per mount and polling figures (added by the watch helper, issue 12). */
  watch: WatchStatusSchema.optional(),
  /**
   * Paused by the operator since then (`dssync pause`, the page; kept across restarts): no
   * request for this mapping; changes are noted (`pending`) and sent on resume. Not a problem.
   */
  paused: z.object({ since: isoTime }).optional(),
  /**
   * A pass stopped by the mass-delete guard, waiting for the operator's decision (`dssync
   * confirm-delete`): what it would delete (the first 100 paths; `total` in all), the guard's
   * message, and `digest`, which names this very set (a confirmation of an older set is refused).
   * `confirmed`: confirmed, the next pass may delete these and no more.
   */
  pendingDeletes: PendingDeletesSchema.optional(),
  /** Stopped until the operator fixes the configuration and reloads (its data source by id is gone): no retries. */
  halted: z.boolean().optional(),
  /** The mapping's lease (absent until its data source is resolved). */
  lease: LeaseStatusSchema.optional(),
});
export type MappingStatus = z.infer<typeof MappingStatusSchema>;


export const RequestStatsSchema = z.object({
  total: count,
  retries: count,
  throttled: count,
  inFlight: count,
  queued: count,
  /** The rate learned from the service's 429s (requests per second), when one was. */
  learnedRps: z.number().optional(),
});

/**
 * Who owns the documents this daemon writes (docs/reliability.md, "Identity"): the operator
 * reads the id here to pin it (`installationId`, DSSYNC_INSTALLATION_ID) before moving the
 * installation into containers.
 */
export const InstallationStatusSchema = z.object({
  /** The installation id written into every document (dssync_installation). */
  id: z.string(),
  /** 'drawn' at random with the state, 'derived' from an older state (host + path), 'pinned' by config or environment. */
  origin: z.enum(['drawn', 'derived', 'pinned']),
  /** How many ids this state used before (a pin replaced them): their documents are still ours. */
  formerIds: count,
  /** The state was rebuilt at this start: corrupt (moved aside) or missing, with the identity recovered or not. */
  stateRebuilt: z.object({ kind: z.enum(['corrupt', 'missing', 'empty', 'damaged']), identity: z.enum(['recovered', 'none', 'unreadable']), movedTo: z.string().optional() }).optional(),
});
export type InstallationStatus = z.infer<typeof InstallationStatusSchema>;

/** The status's view of the installation's identity (undefined until it is established). */
export function installationStatus(identity: StateIdentity | undefined, recovery: StateRecovery | undefined): InstallationStatus | undefined {
  if (identity === undefined) return undefined;
  return {
    id: identity.installationId,
    origin: identity.origin,
    formerIds: identity.formerIds.length,
    ...(recovery ? { stateRebuilt: { kind: recovery.kind, identity: recovery.identity, ...(recovery.movedTo !== undefined ? { movedTo: recovery.movedTo } : {}) } } : {}),
  };
}

export const DaemonStatusSchema = z.object({
  version: z.string(),
  pid: z.number().int(),
  startedAt: isoTime,
  configFile: z.string().optional(),
  statePath: z.string(),
  /** Absent until the first mapping has started on a new state (the id is drawn then). */
  installation: InstallationStatusSchema.optional(),
  /** The service's address (never the token). */
  baseUrl: z.string(),
  organizationId: z.string(),
  stopping: z.boolean(),
  requests: RequestStatsSchema,
  /** This process's memory (MB): resident set, JS heap used and reserved, outside the heap. */
  memory: z.object({ rssMB: z.number(), heapUsedMB: z.number(), heapTotalMB: z.number(), externalMB: z.number() }).optional(),
  /** The state file: its last write (wall time incl. fsync, bytes, longest event-loop block) and load. */
  state: z
    .looseObject({ writes: count, lastWriteMs: z.number(), lastBytes: count, lastMaxBlockMs: z.number(), loadMs: z.number().optional() })
    .optional(),
  mappings: z.array(MappingStatusSchema),
});
export type DaemonStatus = z.infer<typeof DaemonStatusSchema>;

/**
 * Reads a `/status` answer (already JSON-parsed). Returns the status, or a one-line reason
 * naming the first field that does not fit (for "something else answers on that port").
 */
export function parseDaemonStatus(body: unknown): { ok: true; status: DaemonStatus } | { ok: false; reason: string } {
  const r = DaemonStatusSchema.safeParse(body);
  // The body itself, not r.data: zod drops keys it does not know, a reader should not.
  if (r.success) return { ok: true, status: body as DaemonStatus };
  const issue = r.error.issues[0];
  const where = issue && issue.path.length > 0 ? issue.path.join('.') : 'the answer';
  return { ok: false, reason: `${where}: ${issue?.message ?? 'not a dssync status'}` };
}

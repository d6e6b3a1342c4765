/**
 * What a pass reports and says: its report, filled in round by round from the plan and the
 * execution, and the log lines about documents it leaves alone (conflicts, lost uploads).
 */
import type { Logger } from '../log.js';
import type { MappingState } from '../state/schema.js';
import type { DocumentFieldsSpec } from './document-fields.js';
import type { ExecutionResult, FileFailure } from './executor.js';
import type { GuardVerdict } from './guards.js';
import type { SkippedFile } from './local-side.js';
import type { Op, OtherOwner, PlanResult } from './plan.js';

export interface PassReport {
  mappingId: string;
  ok: boolean;
  dryRun: boolean;
  /** The guard that stopped the pass, if one did. */
  blocked?: Extract<GuardVerdict, { ok: false }> | undefined;
  /**
   * A dry run's plan. A pass that writes hands its operations to the executor, which lets
   * each go as it ends (executor.ts executePlan): empty afterwards; `counts` say what was done.
   */
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
  "the service ignores a document's new name: uploads are sent under their real names, not marked (a lost answer is told by name and size only), and a renamed file's document keeps its old name in the App; see 'dssync probe --write'";

const FOREIGN_MARKED_REASON =
  "has no metadata and a dssync upload mark that is not this installation's (another installation's upload in progress, or an older dssync's): left untouched";

/** What settles another writer with our identity (docs/reliability.md, "Identity"). */
const SAME_IDENTITY_FIX =
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

export function emptyReport(mappingId: string, dryRun: boolean, startedAt: string): PassReport {
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

/** The report's count of each kind of operation. */
const COUNTED = { upload: 'uploaded', replace: 'replaced', rename: 'renamed', 'update-meta': 'updated', delete: 'deleted', adopt: 'adopted', forget: 'forgotten' } as const;

export function addCounts(report: PassReport, r: ExecutionResult): void {
  for (const kind of Object.keys(COUNTED) as Op['kind'][]) report.counts[COUNTED[kind]] += r.counts[kind];
}

/** A round's plan into the report: its operations, the documents it leaves alone and why, what it skips. */
export function describePlan(report: PassReport, plan: PlanResult, mapping: MappingState, mappingId: string, skipped: readonly SkippedFile[]): void {
  report.ops = plan.ops;
  const heldIds = new Set(plan.held.map((h) => h.owner.documentId));
  report.conflicts = [
    ...plan.sameIdentity.map((o) => ({ path: o.path, documentId: o.documentId, reason: sameIdentityReason(o) })),
    ...plan.held.map((h) => ({ path: h.path, documentId: h.owner.documentId, reason: heldReason(h.owner, mappingId) })),
    ...plan.otherOwners.filter((o) => !heldIds.has(o.documentId)).map((o) => ({ path: o.path, documentId: o.documentId, reason: ownerReason(o, mappingId) })),
    ...plan.doubtful.map((d) => ({ path: d.name ?? d.id, documentId: d.id, reason: DOUBTFUL_REASON })),
    ...plan.foreignMarked.map((d) => ({ path: d.name ?? d.id, documentId: d.id, reason: FOREIGN_MARKED_REASON })),
  ];
  if (plan.unfoundUploads.length > 0) report.unfoundUploads = [...(report.unfoundUploads ?? []), ...plan.unfoundUploads];
  report.identityConflict = plan.sameIdentity.length > 0 ? 'another-writer' : plan.held.length > 0 ? 'unadopted' : undefined;
  report.skipped = [...skipped, ...plan.skippedRejected.map((path) => ({ path, reason: rejectedReason(mapping, path) })), ...conflictsAsSkipped(report.conflicts)];
  report.counts.unchanged = plan.unchanged;
}

/** Said by a pass's first round: documents of ours the state never recorded, files held by another installation's, other owners. */
export function logOwnership(logger: Logger, plan: PlanResult, report: PassReport, spec: Pick<DocumentFieldsSpec, 'mappingId' | 'installationId'> & { dataSourceId: string }): void {
  if (plan.sameIdentity.length > 0) {
    logger.error(
      { dataSourceId: spec.dataSourceId, documents: plan.sameIdentity.length, example: report.conflicts?.[0] },
      `another writer uses this installation's identity (${spec.installationId ?? ''}) for mapping ${spec.mappingId}: ${plan.sameIdentity.length} document(s) of ours that this state never recorded; nothing was written. ${SAME_IDENTITY_FIX}`,
    );
  } else if (plan.held.length > 0) {
    logger.warn(
      { dataSourceId: spec.dataSourceId, documents: plan.held.length, example: report.conflicts?.[0] },
      `${plan.held.length} file(s) not uploaded: another dssync installation's document(s) for mapping ${spec.mappingId} hold the same path and content (a lost or new state?). ${adoptCommand(spec.mappingId)} takes them over`,
    );
  }
  if (plan.recovered > 0) {
    logger.warn(
      { dataSourceId: spec.dataSourceId, documents: plan.recovered },
      `recovered ${plan.recovered} document(s) of this installation that the state never recorded (a restore, a journal cut short, a lost state): this process holds the mapping's lease and their writer is gone; recorded and re-marked with this session, nothing uploaded again`,
    );
  }
  if (plan.otherOwners.length > 0) {
    logger.warn(
      { dataSourceId: spec.dataSourceId, documents: plan.otherOwners.length, example: report.conflicts?.[0] },
      `the data source holds ${plan.otherOwners.length} document(s) written by dssync for another mapping or installation: left untouched; give each mapping its own data source`,
    );
  }
}

/** Says what the listing showed of marked uploads that no open intent names (plan.ts). */
export function logMarked(logger: Logger, plan: Pick<PlanResult, 'lostUploads' | 'foreignMarked' | 'unfoundUploads'>, firstRound: boolean): void {
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

/** Says which unmarked documents a lost upload may or may not have made: none is taken for ours. */
export function logDoubtful(logger: Logger, plan: Pick<PlanResult, 'doubtful'>): void {
  if (plan.doubtful.length === 0) return;
  logger.warn(
    { documents: plan.doubtful.map((d) => ({ id: d.id, name: d.name })) },
    `${plan.doubtful.length} document(s) without metadata named like a file whose upload answer was lost, of its size: each may be that upload or someone's, unknowable which, so none is taken for ours (left untouched; the file is uploaded again). If one is a duplicate of the file, delete it by hand`,
  );
}

/** The last round left files that changed while sent, or a lost answer: the report says so. */
export function reportLeftOver(report: PassReport, result: Pick<ExecutionResult, 'changed' | 'ambiguous'>): void {
  for (const path of result.changed) report.skipped.push({ path, reason: 'changed while being sent' });
  if (result.ambiguous) {
    report.needsFullPass = true;
    report.failures.push({ path: '', op: 'upload', code: 'E_CONNECTION', ambiguous: true, message: "a write's answer was lost (an upload, a delete or an update); the next full pass settles it" });
  }
}

/** The pass's totals and verdict, once its rounds are done. */
export function finishReport(report: PassReport, renameIgnored: boolean, finishedAt: string): void {
  if (renameIgnored) {
    report.renameIgnored = true;
    report.skipped.push({ path: '', reason: RENAME_IGNORED_REASON, excluded: true });
  }
  report.counts.skipped = report.skipped.length;
  report.counts.failed = report.failures.length;
  report.ok = !report.blocked && report.failures.length === 0 && report.skipped.every((s) => s.excluded);
  report.finishedAt = finishedAt;
}

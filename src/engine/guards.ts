/**
 * "Never delete on doubt" (DESIGN §4), as a pure verdict on a pass before anything is
 * carried out.
 */
import { unmarkedName } from './document-fields.js';
import type { Op } from './plan.js';

export type RootStatus = 'ok' | 'missing' | 'not-a-directory' | 'unreadable';

export interface GuardInput {
  root: string;
  rootStatus: RootStatus;
  /** The file that makes the folder an outage (the ignore file), when it is not the folder itself. */
  outageCause?: { path: string; reason: string } | undefined;
  /** Included files found in the folder. */
  localFiles: number;
  /** Documents of this mapping known in the data source (or the state, without a listing). */
  knownDocuments: number;
  ops: readonly Op[];
  /** Largest share (0-100) of the known documents one pass may delete. */
  maxDeletePercent: number;
  /** Fewer deletions than this never trip the share check (a 3-file folder may lose 2). */
  massDeleteMinimum: number;
  allowMassDelete: boolean;
  /**
   * Deletions already carried out within the sliding window (DeleteWindow): a tree deleted
   * folder by folder, each pass below the share, is judged as one deletion. Default 0.
   */
  recentDeletes?: number | undefined;
  /**
   * Paths whose deletion the operator confirmed on the running daemon (`dssync
   * confirm-delete`): a pass whose counted deletions are all among them passes the share
   * and empty-folder checks; one more and it is stopped again (the set grew: ask again).
   */
  confirmedDeletes?: ReadonlySet<string> | undefined;
  /** The mapping, to name the command that confirms on a running daemon. */
  mappingId?: string | undefined;
}

export type GuardVerdict =
  /** `confirmed`: allowed only because the operator confirmed these deletions. */
  | { ok: true; deletes: number; confirmed?: true | undefined }
  /** `confirmable`: the operator may confirm these deletions (`deletedPaths`); a missing root may not. */
  | { ok: false; kind: 'outage' | 'mass-delete'; deletes: number; message: string; confirmable?: true | undefined; deletedPaths?: string[] | undefined };

export function checkGuards(g: GuardInput): GuardVerdict {
  const deletes = countDeletes(g.ops);
  const confirmed = g.confirmedDeletes !== undefined && deletes > 0 && deletedPaths(g.ops).every((p) => g.confirmedDeletes!.has(p));
  const allow = g.allowMassDelete || confirmed;
  const fix = `If that is intended, confirm it: with the daemon running, dssync confirm-delete${g.mappingId === undefined ? '' : ` --mapping ${g.mappingId}`} (or the status page; dssync status${g.mappingId === undefined ? '' : ` --mapping ${g.mappingId}`} --pending-deletes lists them); without a daemon, dssync sync --allow-mass-delete`;
  if (g.rootStatus !== 'ok' && g.outageCause !== undefined) {
    return { ok: false, kind: 'outage', deletes, message: `the ignore file of ${g.root} (ignoreFile "${g.outageCause.path}") cannot be used: ${g.outageCause.reason}; treated as an outage, nothing was deleted` };
  }
  if (g.rootStatus !== 'ok') {
    const what = { missing: 'is missing', 'not-a-directory': 'is not a folder', unreadable: 'cannot be read' }[g.rootStatus];
    return {
      ok: false,
      kind: 'outage',
      deletes,
      message: `the mapped folder ${g.root} ${what}: treated as an outage (is the drive mounted?); nothing was deleted`,
    };
  }
  if (g.localFiles === 0 && g.knownDocuments > 0 && deletes > 0 && !allow) {
    return {
      ok: false,
      kind: 'outage',
      deletes,
      confirmable: true,
      deletedPaths: deletedPaths(g.ops),
      message: `the mapped folder ${g.root} is empty while the data source holds ${g.knownDocuments} of its documents: treated as an outage (an unmounted drive?); nothing was deleted. If the folder really was emptied, ${fix.replace(/^If that is intended, c/, 'c')}`,
    };
  }
  // Judged over the window: what this pass deletes plus what passes of the window deleted,
  // out of what the data source held at the window's start (now + already deleted).
  const recent = deletes > 0 ? (g.recentDeletes ?? 0) : 0;
  const total = deletes + recent;
  const base = g.knownDocuments + recent;
  if (!allow && total >= g.massDeleteMinimum && base > 0 && (total / base) * 100 > g.maxDeletePercent) {
    const pct = Math.round((total / base) * 100);
    const what =
      recent > 0
        ? `this pass would delete ${deletes} documents, after ${recent} deleted in the last ${Math.round(DELETE_WINDOW_MS / 60_000)} minutes: ${total} of ${base}`
        : `this pass would delete ${deletes} of ${g.knownDocuments} documents`;
    return {
      ok: false,
      kind: 'mass-delete',
      deletes,
      confirmable: true,
      deletedPaths: deletedPaths(g.ops),
      message: `${what} (${pct}%, more than maxDeletePercent ${g.maxDeletePercent}%); nothing was changed. ${fix}`,
    };
  }
  return confirmed && !g.allowMassDelete ? { ok: true, deletes, confirmed: true } : { ok: true, deletes };
}

/** The paths of the deletions `countDeletes` counts (what an operator is asked to confirm). */
export function deletedPaths(ops: readonly Op[]): string[] {
  const paths: string[] = [];
  const counted = countedDelete(ops);
  for (const o of ops) {
    if (counted(o)) paths.push(o.path);
    else if (o.kind === 'replace' && (o.unmarkedOld ?? 0) > 0) paths.push(o.path);
  }
  return paths;
}

/**
 * Deletions that take something away: documents of files deleted locally, foreign ones
 * pruned, and every document without dssync metadata (ours only by an upload intent or the
 * state's word), whatever the reason, in a replace too. A duplicate or stale version that
 * carries our metadata is not counted: its file is still in the data source; nor is a lost
 * upload of ours (its mark names this installation) whose file the same plan sends again.
 */
export function countDeletes(ops: readonly Op[]): number {
  let n = 0;
  const counted = countedDelete(ops);
  for (const o of ops) {
    if (counted(o)) n++;
    else if (o.kind === 'replace') n += o.unmarkedOld ?? 0;
  }
  return n;
}

/** How far back the mass-delete guard counts deletions (docs/reliability.md, "Mass-delete guard"). */
export const DELETE_WINDOW_MS = 10 * 60_000;

/**
 * Deletions over a sliding window of time, across passes: a pure accumulator (time passed
 * in), kept in memory by a mapping's Mirror for the daemon's life. A restart starts an empty
 * window; the share check of the first pass still applies.
 */
export class DeleteWindow {
  private readonly events: { at: number; count: number }[] = [];

  constructor(private readonly windowMs: number = DELETE_WINDOW_MS) {}

  record(now: number, count: number): void {
    if (count > 0) this.events.push({ at: now, count });
    this.prune(now);
  }

  /** Deletions recorded within the window ending at `now`. */
  count(now: number): number {
    this.prune(now);
    let n = 0;
    for (const e of this.events) n += e.count;
    return n;
  }

  private prune(now: number): void {
    while (this.events.length > 0 && this.events[0]!.at <= now - this.windowMs) this.events.shift();
  }
}

/** countDeletes' rule for one delete op, given the plan it is part of. */
function countedDelete(ops: readonly Op[]): (o: Op) => boolean {
  let resent: Set<string> | undefined;
  return (o) => {
    if (o.kind !== 'delete' || !(o.reason === 'deleted-locally' || o.reason === 'not-in-folder' || o.unmarked)) return false;
    if (o.reason !== 'lost-upload') return true;
    resent ??= new Set(ops.filter((x) => x.kind === 'upload' || x.kind === 'replace').map((x) => x.path));
    return !resent.has(unmarkedName(o.path));
  };
}

/**
 * "Never delete on doubt" (DESIGN §4), as a pure verdict on a pass before anything is
 * carried out.
 */
import type { Op } from './plan.js';

export type RootStatus = 'ok' | 'missing' | 'not-a-directory' | 'unreadable';

export interface GuardInput {
  root: string;
  rootStatus: RootStatus;
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
}

export type GuardVerdict =
  | { ok: true; deletes: number }
  | { ok: false; kind: 'outage' | 'mass-delete'; deletes: number; message: string };

export function checkGuards(g: GuardInput): GuardVerdict {
  const deletes = countDeletes(g.ops);
  if (g.rootStatus !== 'ok') {
    const what = { missing: 'is missing', 'not-a-directory': 'is not a folder', unreadable: 'cannot be read' }[g.rootStatus];
    return {
      ok: false,
      kind: 'outage',
      deletes,
      message: `the mapped folder ${g.root} ${what}: treated as an outage (is the drive mounted?); nothing was deleted`,
    };
  }
  if (g.localFiles === 0 && g.knownDocuments > 0 && deletes > 0 && !g.allowMassDelete) {
    return {
      ok: false,
      kind: 'outage',
      deletes,
      message: `the mapped folder ${g.root} is empty while the data source holds ${g.knownDocuments} of its documents: treated as an outage (an unmounted drive?); nothing was deleted. If the folder really was emptied, run dssync sync --allow-mass-delete`,
    };
  }
  if (!g.allowMassDelete && deletes >= g.massDeleteMinimum && g.knownDocuments > 0 && (deletes / g.knownDocuments) * 100 > g.maxDeletePercent) {
    const pct = Math.round((deletes / g.knownDocuments) * 100);
    return {
      ok: false,
      kind: 'mass-delete',
      deletes,
      message: `this pass would delete ${deletes} of ${g.knownDocuments} documents (${pct}%, more than maxDeletePercent ${g.maxDeletePercent}%); nothing was changed. If that is intended, run dssync sync --allow-mass-delete`,
    };
  }
  return { ok: true, deletes };
}

/**
 * Deletions that take something away: documents of files deleted locally, foreign ones
 * pruned, and every document without dssync metadata (ours only by an upload intent or the
 * state's word), whatever the reason, in a replace too. A duplicate or stale version that
 * carries our metadata is not counted: its file is still in the data source.
 */
export function countDeletes(ops: readonly Op[]): number {
  let n = 0;
  for (const o of ops) {
    if (o.kind === 'delete' && (o.reason === 'deleted-locally' || o.reason === 'not-in-folder' || o.unmarked)) n++;
    else if (o.kind === 'replace') n += o.unmarkedOld ?? 0;
  }
  return n;
}

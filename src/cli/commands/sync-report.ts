/**
 * How `dssync sync` reports: the plan of a dry run, a closing summary per mapping, and the
 * same as JSON for scripts.
 */
import type { Op } from '../../engine/plan.js';
import type { PassReport } from '../../engine/pass-report.js';
import { printable } from '../../printable.js';
import { formatCoverage, type MappingCoverage } from '../coverage-table.js';
import type { DispositionExit } from '../../errors/codes.js';

export interface MappingOutcome {
  mappingId: string;
  dataSourceId?: string | undefined;
  report?: PassReport | undefined;
  /** A mapping that could not run at all (data source missing, folder gone...). */
  error?: string | undefined;
  /** Uploaded, but the service says it could not ingest them. */
  notIngested?: NotIngestedFile[] | undefined;
  /** What the operator must hear about the data source: renamed in the App and followed, or deleted and replaced. */
  notices?: string[] | undefined;
  /** The exit code the error asks for (its disposition: errors/disposition.ts). */
  exitCode?: DispositionExit | undefined;
  /** Files still changing when the sync stopped waiting (sync.ts fullPassSettled): not sent, the next run sends them. */
  changing?: { paths: string[]; windowMs: number } | undefined;
  /** A dry run's coverage: what each extension's files will become. */
  coverage?: MappingCoverage | undefined;
}

export interface NotIngestedFile {
  path: string;
  documentId?: string | undefined;
  /** The service's status, as it spells it. */
  status: string;
  reason?: string | undefined;
}

export function outcomeOk(o: MappingOutcome): boolean {
  if (o.error || o.notIngested?.length || o.changing?.paths.length) return false;
  return o.report?.ok === true;
}

/** One planned or done operation, its names made safe for a terminal: the action in a column of 9, then the path. */
export function describeOp(op: Op): string {
  const action = (op.kind === 'update-meta' ? 'update' : op.kind).padEnd(9);
  if (op.kind === 'rename') return printable(`${action}${op.from} -> ${op.path}`);
  return printable(`${action}${op.path}${op.kind === 'delete' && op.reason !== 'deleted-locally' ? ` (${op.reason})` : ''}`);
}

export function formatSyncHuman(outcomes: readonly MappingOutcome[]): string {
  const lines: string[] = [];
  for (const o of outcomes) {
    const head = `${o.mappingId}${o.dataSourceId ? ` -> ${o.dataSourceId}` : ''}`;
    for (const n of o.notices ?? []) lines.push(printable(`${o.mappingId}: NOTE: ${n}`));
    if (o.error || !o.report) {
      lines.push(`${head}: FAILED: ${o.error ?? 'no report'}`);
      continue;
    }
    const r = o.report;
    if (r.dryRun) {
      const writes = plannedWrites(r);
      lines.push(`${head}: dry run, ${writes.length} change(s) planned, ${r.counts.unchanged} unchanged`);
      for (const op of writes) lines.push(`  would ${describeOp(op)}`);
    } else {
      const c = r.counts;
      lines.push(
        `${head}: ${c.uploaded} uploaded, ${c.replaced} replaced, ${c.renamed} renamed, ${c.updated} updated, ${c.deleted} deleted, ${c.adopted ? `${c.adopted} adopted, ` : ''}${c.unchanged} unchanged, ${c.skipped} skipped, ${c.failed} failed`,
      );
    }
    if (r.blocked) lines.push(`  STOPPED: ${r.blocked.message}`);
    for (const s of r.skipped) lines.push(printable(`  skipped ${s.path}: ${s.reason}`));
    for (const p of o.changing?.paths ?? []) lines.push(printable(`  changing ${p}: changed within the last ${o.changing!.windowMs / 1000} s (being written?); not sent, the next run sends it`));
    for (const f of r.failures) lines.push(printable(`  failed  ${f.path || '(batch)'}: ${f.message}${f.status ? ` (HTTP ${f.status})` : ''}`));
    for (const n of o.notIngested ?? []) lines.push(printable(`  not ingested  ${n.path}: the service says "${n.status}"${n.reason ? `: ${n.reason}` : ''}`));
    for (const u of r.unfoundUploads ?? []) {
      lines.push(printable(`  lost upload not found  ${u.path}: its answer was lost and no document named like ${JSON.stringify(u.uploadName)} (its mark) is listed: it never landed, or the service renamed it (a document without metadata named like the file would then be a duplicate)`));
    }
    if (o.coverage) lines.push(printable(formatCoverage(o.coverage, true).trimEnd()));
  }
  lines.push(closingLine(outcomes));
  return `${lines.join('\n')}\n`;
}

/** Changes a dry run planned (adopt and forget only touch the state, which a dry run never writes). */
function plannedWrites(r: PassReport): Op[] {
  return r.ops.filter((op) => op.kind !== 'adopt' && op.kind !== 'forget');
}

/** The last line: what is true after this run, never "In sync." after a dry run planned changes. */
export function closingLine(outcomes: readonly MappingOutcome[]): string {
  const ok = outcomes.every(outcomeOk);
  if (outcomes.some((o) => o.report?.dryRun)) {
    const n = outcomes.reduce((sum, o) => sum + (o.report ? plannedWrites(o.report).length : 0), 0);
    const what = n === 0 ? 'nothing to change' : `${n} change${n === 1 ? '' : 's'} planned`;
    return ok ? `Dry run: ${what}; nothing was written.` : `Dry run: ${what}, and a sync would not complete: see above. Nothing was written.`;
  }
  return ok ? 'In sync.' : 'Not in sync: see above.';
}

export function formatSyncJson(outcomes: readonly MappingOutcome[]): string {
  const mappings = outcomes.map((o) => ({
    mappingId: o.mappingId,
    dataSourceId: o.dataSourceId,
    ok: outcomeOk(o),
    ...(o.error ? { error: o.error } : {}),
    ...(o.notices?.length ? { notices: o.notices } : {}),
    ...(o.report
      ? {
          dryRun: o.report.dryRun,
          counts: o.report.counts,
          blocked: o.report.blocked ? { kind: o.report.blocked.kind, message: o.report.blocked.message } : undefined,
          skipped: o.report.skipped,
          failures: o.report.failures,
          notIngested: o.notIngested ?? [],
          ...(o.changing?.paths.length ? { changing: o.changing.paths } : {}),
          ...(o.report.unfoundUploads ? { unfoundUploads: o.report.unfoundUploads } : {}),
          ...(o.report.renameIgnored ? { renameIgnored: true } : {}),
          ...(o.report.dryRun ? { plan: o.report.ops.map(planEntry) } : {}),
          ...(o.coverage ? { coverage: { rows: o.coverage.rows, total: o.coverage.total, ...(o.coverage.error !== undefined ? { error: o.coverage.error } : {}) } } : {}),
          startedAt: o.report.startedAt,
          finishedAt: o.report.finishedAt,
        }
      : {}),
  }));
  return `${JSON.stringify({ ok: mappings.every((m) => m.ok), mappings }, null, 2)}\n`;
}

function planEntry(op: Op): Record<string, unknown> {
  switch (op.kind) {
    case 'rename':
      return { op: op.kind, from: op.from, path: op.path, documentId: op.documentId };
    case 'replace':
      return { op: op.kind, path: op.path, oldDocumentIds: op.oldDocumentIds };
    case 'delete':
      return { op: op.kind, path: op.path, documentId: op.documentId, reason: op.reason };
    case 'update-meta':
    case 'adopt':
      return { op: op.kind, path: op.path, documentId: op.documentId };
    default:
      return { op: op.kind, path: op.path };
  }
}

/**
 * How `dssync sync` reports: the plan of a dry run, a closing summary per mapping, and the
 * same as JSON for scripts.
 */
import type { Op } from '../engine/plan.js';
import type { PassReport } from '../engine/mirror.js';

export interface MappingOutcome {
  mappingId: string;
  dataSourceId?: string | undefined;
  report?: PassReport | undefined;
  /** A mapping that could not run at all (data source missing, folder gone...). */
  error?: string | undefined;
  /** The error is a configuration problem (exit 2). */
  configProblem?: boolean | undefined;
  /** A dry run that needs no plan to be told (the data source does not exist yet). */
  note?: string | undefined;
}

export function outcomeOk(o: MappingOutcome): boolean {
  if (o.error) return false;
  return o.report ? o.report.ok : o.note !== undefined;
}

export function describeOp(op: Op): string {
  switch (op.kind) {
    case 'upload':
      return `upload   ${op.path}`;
    case 'replace':
      return `replace  ${op.path}`;
    case 'rename':
      return `rename   ${op.from} -> ${op.path}`;
    case 'update-meta':
      return `update   ${op.path}`;
    case 'delete':
      return `delete   ${op.path}${op.reason === 'deleted-locally' ? '' : ` (${op.reason})`}`;
    case 'adopt':
      return `adopt    ${op.path}`;
    case 'forget':
      return `forget   ${op.path}`;
  }
}

export function formatSyncHuman(outcomes: readonly MappingOutcome[]): string {
  const lines: string[] = [];
  for (const o of outcomes) {
    const head = `${o.mappingId}${o.dataSourceId ? ` -> ${o.dataSourceId}` : ''}`;
    if (o.note) {
      lines.push(`${head}: ${o.note}`);
      continue;
    }
    if (o.error || !o.report) {
      lines.push(`${head}: FAILED: ${o.error ?? 'no report'}`);
      continue;
    }
    const r = o.report;
    if (r.dryRun) {
      const writes = r.ops.filter((op) => op.kind !== 'adopt' && op.kind !== 'forget');
      lines.push(`${head}: dry run, ${writes.length} change(s) planned, ${r.counts.unchanged} unchanged`);
      for (const op of writes) lines.push(`  would ${describeOp(op)}`);
    } else {
      const c = r.counts;
      lines.push(
        `${head}: ${c.uploaded} uploaded, ${c.replaced} replaced, ${c.renamed} renamed, ${c.updated} updated, ${c.deleted} deleted, ${c.unchanged} unchanged, ${c.skipped} skipped, ${c.failed} failed`,
      );
    }
    if (r.blocked) lines.push(`  STOPPED: ${r.blocked.message}`);
    for (const s of r.skipped) lines.push(`  skipped ${s.path}: ${s.reason}`);
    for (const f of r.failures) lines.push(`  failed  ${f.path || '(batch)'}: ${f.message}${f.status ? ` (HTTP ${f.status})` : ''}`);
  }
  const ok = outcomes.every(outcomeOk);
  lines.push(ok ? 'In sync.' : 'Not in sync: see above.');
  return `${lines.join('\n')}\n`;
}

export function formatSyncJson(outcomes: readonly MappingOutcome[]): string {
  const mappings = outcomes.map((o) => ({
    mappingId: o.mappingId,
    dataSourceId: o.dataSourceId,
    ok: outcomeOk(o),
    ...(o.error ? { error: o.error } : {}),
    ...(o.note ? { note: o.note } : {}),
    ...(o.report
      ? {
          dryRun: o.report.dryRun,
          counts: o.report.counts,
          blocked: o.report.blocked ? { kind: o.report.blocked.kind, message: o.report.blocked.message } : undefined,
          skipped: o.report.skipped,
          failures: o.report.failures,
          ...(o.report.dryRun ? { plan: o.report.ops.map(planEntry) } : {}),
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

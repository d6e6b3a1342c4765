/**
 * One mapping's last passes (issue 25.7), as the connectors' sync-job history: kind, start,
 * duration, counts, and the first few errors. Newest last, at most HISTORY_PASSES; persisted
 * beside the state (records-file.ts), so a restart keeps it.
 */
import { scrub } from '../../secrets.js';
import type { PassReport } from '../../engine/pass-report.js';
import type { PassRecordView } from '../status/schema.js';

/** One pass of the history (status/schema.ts PassRecordSchema): its errors scrubbed of secrets. */
export type PassRecord = PassRecordView;
/** start: the first full pass after the daemon (or the mapping) started; rescan: the periodic or asked-for one. */
export type PassHistoryKind = PassRecord['kind'];

export const HISTORY_PASSES = 50;
export const ERRORS_PER_PASS = 5;
const ERROR_CHARS = 300;

function short(text: string): string {
  const t = scrub(text).replace(/\s+/g, ' ');
  return t.length > ERROR_CHARS ? `${t.slice(0, ERROR_CHARS - 1)}…` : t;
}

/** A finished pass as a history line. */
export function recordOfReport(kind: PassHistoryKind, r: Pick<PassReport, 'ok' | 'counts' | 'failures' | 'blocked' | 'startedAt' | 'finishedAt'>): PassRecord {
  const c = r.counts;
  const errors = r.failures.slice(0, ERRORS_PER_PASS).map((f) => short(`${f.path ? `${f.path}: ` : ''}${f.op}: ${f.message}`));
  return {
    kind,
    startedAt: r.startedAt,
    durationMs: Math.max(0, Date.parse(r.finishedAt) - Date.parse(r.startedAt)),
    ok: r.ok,
    uploaded: c.uploaded,
    replaced: c.replaced,
    renamed: c.renamed,
    deleted: c.deleted,
    skipped: c.skipped,
    failed: c.failed,
    error: r.blocked ? short(r.blocked.message) : undefined,
    errors,
  };
}

const NOTHING_DONE = { uploaded: 0, replaced: 0, renamed: 0, deleted: 0, skipped: 0, failed: 0 };

/** A pass that failed as a whole (no report): the service unreachable, the folder gone. */
export function failedRecord(kind: PassHistoryKind, startedAt: number, now: number, message: string): PassRecord {
  return {
    kind,
    startedAt: new Date(startedAt).toISOString(),
    durationMs: Math.max(0, now - startedAt),
    ok: false,
    ...NOTHING_DONE,
    error: short(message),
    errors: [],
  };
}

export class PassHistory {
  private readonly passes: PassRecord[];

  constructor(
    initial: readonly PassRecord[] = [],
    private readonly limit = HISTORY_PASSES,
  ) {
    this.passes = initial.slice(-limit);
  }

  add(r: PassRecord): void {
    this.passes.push(r);
    if (this.passes.length > this.limit) this.passes.splice(0, this.passes.length - this.limit);
  }

  /** Oldest first. */
  list(): PassRecord[] {
    return [...this.passes];
  }
}

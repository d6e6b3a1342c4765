/**
 * One mapping's files not mirrored as they are (issue 25.1): skipped, unreadable, refused by
 * the service, failed, not ingested, held in a conflict — each with its reason and since
 * when. Files excluded by a setting (over maxFileBytes, a link leading outside the folder, a
 * FIFO) are kept apart: named, not problems — but a file over maxFileBytes is a problem
 * (not mirrored, and most likely wanted).
 *
 * An entry stays until the file is mirrored or gone: an operation that sends or deletes it,
 * or a pass that looked at it and no longer reports it (a full pass looks at everything; an
 * incremental pass only at its scope, so it never clears what it did not look at).
 *
 * Pure bookkeeping, bounded: at most `limit` entries of each kind per mapping; past it the
 * others are only counted. Persisted by records-file.ts beside the state, so a restart
 * keeps the list (and each entry's first sighting).
 */
import type { ChangeScope } from '../../engine/local-side.js';
import type { PassReport } from '../../engine/pass-report.js';
import type { FileFailure } from '../../engine/executor.js';
import { TOO_LARGE_REASON } from '../../local/side.js';
import type { z } from 'zod';
import type { ExclusionSchema, PROBLEM_KINDS, ProblemSchema } from '../status/schema.js';

export type ProblemKind = (typeof PROBLEM_KINDS)[number];
/** A file not mirrored as it is, since when (kept while the reason changes). */
export type Problem = z.infer<typeof ProblemSchema>;
export type Exclusion = z.infer<typeof ExclusionSchema>;

/** Kinds a pass does not judge: the file was sent; what came after (the ingestion check, the PDF's text check) settles them. */
const AFTER_SENDING: ReadonlySet<ProblemKind> = new Set(['not-ingested', 'no-text', 'unchecked']);

/** Was the file sent (its problem came after)? Such a file is not "skipped". */
export const wasSent = (kind: ProblemKind): boolean => AFTER_SENDING.has(kind);

export interface ProblemListData {
  problems: Problem[];
  excluded: Exclusion[];
  /** Entries past the bound: counted, not listed. */
  problemsOver: number;
  excludedOver: number;
}

export const PROBLEMS_LIMIT = 1000;

/** The reasons the local side gives a file it could not read (errno words, fs.ts). */
const UNREADABLE = /EACCES|EPERM|permission denied|cannot be read|not readable|unreadable|EIO\b/i;

/** What a report's skip is, for the operator. */
export function classify(reason: string): ProblemKind {
  if (reason.startsWith(TOO_LARGE_REASON)) return 'too-large';
  if (reason.startsWith('conflict:')) return 'conflict';
  if (UNREADABLE.test(reason)) return 'unreadable';
  return 'skipped';
}

/** Is the path inside the pass's scope (a file it names, or under a folder it names)? */
function inScope(scope: ChangeScope, path: string): boolean {
  const p = path.endsWith('/') ? path.slice(0, -1) : path;
  if (scope.files.includes(p)) return true;
  return scope.dirs.some((d) => d === '' || p === d || p.startsWith(`${d}/`));
}

export class ProblemList {
  private readonly problems = new Map<string, Problem>();
  private readonly excluded = new Map<string, Exclusion>();
  private problemsOver = 0;
  private excludedOver = 0;

  constructor(
    private readonly now: () => number,
    private readonly limit = PROBLEMS_LIMIT,
  ) {}

  static from(data: ProblemListData | undefined, now: () => number, limit = PROBLEMS_LIMIT): ProblemList {
    const l = new ProblemList(now, limit);
    for (const p of data?.problems ?? []) if (l.problems.size < limit) l.problems.set(p.path, p);
    for (const e of data?.excluded ?? []) if (l.excluded.size < limit) l.excluded.set(e.path, e);
    l.problemsOver = data?.problemsOver ?? 0;
    l.excludedOver = data?.excludedOver ?? 0;
    return l;
  }

  /**
   * A finished pass: what it reports replaces what the list said about the files it looked
   * at (everything for a full pass, `scope` for an incremental one); the rest stays. A pass
   * stopped by a guard changed nothing: it only adds. Entries of a file that was sent
   * (AFTER_SENDING) are not the pass's to judge: operations and their checks settle them.
   */
  onPass(report: Pick<PassReport, 'skipped' | 'failures' | 'blocked' | 'settling'>, scope: ChangeScope | undefined, refused: (f: FileFailure) => boolean): boolean {
    const seenProblems = new Map<string, { kind: ProblemKind; reason: string }>();
    const seenExcluded = new Map<string, string>();
    for (const s of report.skipped) {
      if (s.path === '') continue; // a note about the whole mapping, not a file
      // Over maxFileBytes is an exclusion to the engine (the pass is complete), yet a file
      // the operator most likely wants mirrored: listed as a problem until it is.
      if (s.excluded && classify(s.reason) !== 'too-large') seenExcluded.set(s.path, s.reason);
      else seenProblems.set(s.path, { kind: classify(s.reason), reason: s.reason });
    }
    for (const f of report.failures) {
      if (f.path === '' || seenProblems.has(f.path)) continue;
      seenProblems.set(f.path, { kind: refused(f) ? 'refused' : 'failed', reason: `${f.op}: ${f.message}` });
    }
    // A file set aside as maybe being written was not looked at: its follow-up pass decides.
    const settling = new Set(report.settling ?? []);
    const looked = (path: string): boolean => !report.blocked && !settling.has(path) && (scope === undefined || inScope(scope, path));
    let changed = false;
    for (const [path, p] of this.problems) {
      if (AFTER_SENDING.has(p.kind) || seenProblems.has(path) || !looked(path)) continue;
      this.problems.delete(path);
      changed = true;
    }
    for (const path of this.excluded.keys()) {
      if (seenExcluded.has(path) || !looked(path)) continue;
      this.excluded.delete(path);
      changed = true;
    }
    if (!report.blocked && scope === undefined) {
      // A full pass saw every file: the counts past the bound start again from it.
      this.problemsOver = 0;
      this.excludedOver = 0;
    }
    for (const [path, s] of seenProblems) changed = this.put(path, s.kind, s.reason) || changed;
    for (const [path, reason] of seenExcluded) changed = this.putExcluded(path, reason) || changed;
    return changed;
  }

  /** The file was sent, renamed or deleted: nothing stands between it and its document. */
  mirrored(path: string): boolean {
    return this.problems.delete(path) || this.excluded.delete(path);
  }

  /** A document without chunks after the ingestion delay (the ingestion check). */
  notIngested(path: string, reason: string): boolean {
    return this.put(path, 'not-ingested', reason);
  }

  /**
   * A PDF sent as it is without a text layer, or whose layer could not be checked
   * (text-check.ts). The service's own verdict (not-ingested) says more: it stays.
   */
  textLayer(path: string, kind: 'no-text' | 'unchecked', reason: string): boolean {
    if (this.problems.get(path)?.kind === 'not-ingested') return false;
    return this.put(path, kind, reason);
  }

  data(): ProblemListData {
    return { problems: [...this.problems.values()], excluded: [...this.excluded.values()], problemsOver: this.problemsOver, excludedOver: this.excludedOver };
  }

  /** Problems listed plus those counted past the bound. */
  problemCount(): number {
    return this.problems.size + this.problemsOver;
  }

  excludedCount(): number {
    return this.excluded.size + this.excludedOver;
  }

  private put(path: string, kind: ProblemKind, reason: string): boolean {
    const old = this.problems.get(path);
    if (old) {
      if (old.kind === kind && old.reason === reason) return false;
      this.problems.set(path, { ...old, kind, reason });
      return true;
    }
    if (this.problems.size >= this.limit) {
      this.problemsOver++;
      return true;
    }
    this.problems.set(path, { path, kind, reason, since: new Date(this.now()).toISOString() });
    return true;
  }

  private putExcluded(path: string, reason: string): boolean {
    const old = this.excluded.get(path);
    if (old) {
      if (old.reason === reason) return false;
      this.excluded.set(path, { ...old, reason });
      return true;
    }
    if (this.excluded.size >= this.limit) {
      this.excludedOver++;
      return true;
    }
    this.excluded.set(path, { path, reason, since: new Date(this.now()).toISOString() });
    return true;
  }
}

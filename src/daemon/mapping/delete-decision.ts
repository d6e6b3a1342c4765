/**
 * A mapping's pass stopped by the mass-delete guard waits for the operator's decision
 * (issue 25.5, docs/status.md "Confirming a mass delete"): what it would delete, once, and
 * whether the operator confirmed it. Pure: the runner tells it what each pass met.
 *
 * A confirmation holds for the set that was shown (named by its digest) and no more: the
 * next pass may delete those paths; if it would delete another one, the guard stops it
 * again and a new set waits for a new decision.
 */
import { createHash } from 'node:crypto';
import type { PendingDeletesView } from '../status/schema.js';

/** Paths /status carries of a waiting set (the total is given beside them). */
export const PENDING_DELETES_SHOWN = 100;

interface Waiting {
  paths: string[];
  digest: string;
  since: string;
  message: string;
}

export type ConfirmResult = { ok: true; total: number } | { ok: false; reason: 'nothing-waiting' | 'changed' };

/** Names a set of paths, whatever their order: 16 hex digits of a SHA-256. */
export function deletesDigest(paths: readonly string[]): string {
  return createHash('sha256').update([...new Set(paths)].sort().join('\u0000')).digest('hex').slice(0, 16);
}

export class DeleteDecision {
  private waiting: Waiting | undefined;
  private confirmed: Set<string> | undefined;

  /**
   * A pass was stopped by the guard with these deletions. True when this is a new set (the
   * runner tells the log and the errors once per set, not once per pass); the same set
   * again keeps its first sighting and its confirmation.
   */
  blocked(paths: readonly string[], message: string, now: string): boolean {
    const digest = deletesDigest(paths);
    if (this.waiting?.digest === digest) return false;
    this.waiting = { paths: [...new Set(paths)].sort(), digest, since: now, message };
    this.confirmed = undefined;
    return true;
  }

  /** A pass got past the guard: nothing waits any more (files back, or the confirmed deletions done). */
  passed(): boolean {
    const was = this.waiting !== undefined;
    this.waiting = undefined;
    this.confirmed = undefined;
    return was;
  }

  /** The operator's yes, for the set named by `digest` (or the one waiting now when absent). */
  confirm(digest?: string | undefined): ConfirmResult {
    const w = this.waiting;
    if (!w) return { ok: false, reason: 'nothing-waiting' };
    if (digest !== undefined && digest !== w.digest) return { ok: false, reason: 'changed' };
    this.confirmed = new Set(w.paths);
    return { ok: true, total: w.paths.length };
  }

  get isWaiting(): boolean {
    return this.waiting !== undefined;
  }

  /** The deletions the next pass may carry out past the guard, when confirmed. */
  confirmedDeletes(): ReadonlySet<string> | undefined {
    return this.confirmed;
  }

  view(): PendingDeletesView | undefined {
    const w = this.waiting;
    if (!w) return undefined;
    return { since: w.since, message: w.message, total: w.paths.length, paths: w.paths.slice(0, PENDING_DELETES_SHOWN), digest: w.digest, confirmed: this.confirmed !== undefined };
  }
}

/**
 * One error disposition (issues 9, 27.2, 38.2): a single pure function decides, from any error
 * dssync meets, what to do about it — retry it later, refuse it for this file only, stop the
 * mapping, or stop the process — and with which exit code a command ends. It decides by the
 * error's stable `code` alone, as the registry (errors/codes.ts) lists it, never by class
 * names or messages, so it imports no other dssync folder and every layer may ask it.
 */
import { codeEntry, ERROR_CODES, type DispositionExit, type DispositionKind } from './codes.js';

export interface Disposition {
  kind: DispositionKind;
  exitCode: DispositionExit;
  /** Short and stable, for logs and tests. */
  reason: string;
  /**
   * A write whose answer was lost: not a failure of the service but an unknown outcome,
   * which the next full pass (a listing) settles; no back-off, no "degraded".
   */
  settledByListing?: true;
}

/** Where the error happened: an operation on one file, or the mapping as a whole. */
export type ErrorScope = 'file' | 'mapping';

/** What disposition() reads of an error: its code, and the fields of a service error. */
interface Coded {
  code?: unknown;
  status?: unknown;
  ambiguous?: unknown;
}

/** The one decision, from the registry (errors/codes.ts); an unregistered code is E_UNEXPECTED. */
export function disposition(e: unknown, scope: ErrorScope = 'mapping'): Disposition {
  const err = (typeof e === 'object' && e !== null ? e : {}) as Coded;
  const entry = (typeof err.code === 'string' ? codeEntry(err.code) : undefined) ?? ERROR_CODES.E_UNEXPECTED;
  const status = typeof err.status === 'number' ? ` (HTTP ${err.status})` : '';
  if (scope === 'file' && entry.file !== undefined) return d(entry.file, 1, entry.file === 'refusedForFile' ? `${entry.reason}${status}` : entry.reason);
  // A write whose answer was lost is settled by the next listing, not retried after a back-off.
  if (err.ambiguous === true && entry.kind === 'retry') return { ...d('retry', 1, 'answer lost'), settledByListing: true };
  return d(entry.kind, entry.exit, entry.file === 'refusedForFile' ? `${entry.reason}${status}` : entry.reason);
}

function d(kind: DispositionKind, exitCode: DispositionExit, reason: string): Disposition {
  return { kind, exitCode, reason };
}

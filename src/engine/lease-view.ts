/**
 * What the owner rule (owner.ts) needs to know of a mapping's lease (DESIGN §7,
 * docs/reliability.md "The lease"): only the lease's holder writes to a mapping, so a
 * document of our identity written by a session our state never recorded is ours to recover
 * only while we hold the lease and its writer is not the live holder.
 *
 * The lease itself lives in the data source as a marker document (lease.ts); the planner
 * and every other rule must leave that document alone: `isLeaseDocument`.
 */
import type { DocumentRecord } from '../api/records.js';

export interface LeaseView {
  /** This process holds the mapping's lease: it alone may write to the mapping. */
  held: boolean;
  /**
   * The writer session of another process that holds the lease and is live (its record
   * changed within the lease's duration, as this process observed it). Undefined when we
   * hold it, or when nobody live does.
   */
  liveSession?: string | undefined;
}

/** The metadata key every lease marker document carries (its value: the mapping id). */
export const LEASE_META_KEY = 'dssync_lease';
/** The name prefix of a lease marker document (before its metadata is written). */
export const LEASE_NAME_PREFIX = '.dssync-lease';

/** A lease marker document: never planned, adopted, pruned or reported as foreign. */
export function isLeaseDocument(doc: Pick<DocumentRecord, 'name' | 'metadata'>): boolean {
  if (doc.metadata !== undefined && doc.metadata !== null && typeof doc.metadata === 'object' && LEASE_META_KEY in doc.metadata) return true;
  return (doc.name ?? '').startsWith(LEASE_NAME_PREFIX);
}

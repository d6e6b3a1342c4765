/**
 * A restart's listing begun while its state loads (issue 39.2; docs/reliability.md, "The
 * listing begun while the state loads"). The state's load (2–5 s at a million files) came
 * before the first request, and the listing's pages, one after the other, are a restart's
 * path: now they are fetched during the load, kept as they came (api/list-pages.ts
 * PageChain), and checked against the state once it is loaded.
 *
 * The rule is the one of "Reading while the claim settles": what a listing could miss is a
 * write that lands after it began, and only a holder of the lease writes. So it begins only
 * - for the data source and lease marker the last start kept beside the state (a mapping by
 *   id names that data source);
 * - after a read of that marker whose record is held by no one (engine/lease.ts heldByNoOne:
 *   released, or a dead predecessor's of this host): whatever its holder wrote landed
 *   before that read;
 * and its pages are taken only when the lease's claim, read once the state is loaded, found
 * that very record free (MappingLease.claimReadShowed): no claim, renewal or release was
 * written between the two reads, so no one wrote between them. Otherwise they are dropped
 * and the listing begins after the claim's read, as before.
 */
import type { DatastoreClient } from '../api/client.js';
import { unlessGone } from '../api/errors.js';
import type { MappingConfig } from '../config/types.js';
import { heldByNoOne, leaseMarkersOf, type HostProbe } from '../engine/lease.js';
import type { EarlyPages } from '../engine/mirror.js';
import { silentLogger } from '../log.js';
import { nodeLockProbe } from '../state/lock.js';
import type { Clock } from '../time/clock.js';
import { rememberedMarker } from './mapping/lease.js';

/** The answers kept at most (~100 pages of 1,000 documents): a bound on the memory a slow load can hold. */
export const EARLY_PAGES_MAX_BYTES = 64 * 1024 * 1024;

/**
 * The marker's read waits at most this long (its retries included): the mapping's start waits
 * for it, so a service that does not answer is found out by the start's own requests, as
 * before, not after this read's retries too.
 */
export const EARLY_READ_TIMEOUT_MS = 5_000;

export interface EarlyListing extends EarlyPages {
  /** The marker read: the lease takes its id from here instead of reading it again. */
  readonly documentId: string;
}

export interface EarlyListingOptions {
  client: DatastoreClient;
  mapping: MappingConfig;
  statePath: string;
  clock: Clock;
  /** Stops the pages (the daemon stops). */
  signal: AbortSignal;
  probe?: HostProbe | undefined;
}

/** Begins a mapping's listing now when the rule above allows it; undefined otherwise (or on any failure). */
export async function beginEarlyListing(o: EarlyListingOptions): Promise<EarlyListing | undefined> {
  try {
    // Silent: the lease reads the same file again and says what is wrong with it.
    const memo = await rememberedMarker(o.statePath, o.mapping.id, silentLogger);
    if (memo === undefined || (o.mapping.dataSourceId !== undefined && o.mapping.dataSourceId !== memo.dataSourceId)) return undefined;
    const doc = await unlessGone(o.client.getDocument(memo.dataSourceId, memo.documentId, { signal: AbortSignal.any([o.signal, AbortSignal.timeout(EARLY_READ_TIMEOUT_MS)]) }));
    const record = doc === undefined ? undefined : leaseMarkersOf([doc], o.mapping.id)[0]?.record;
    if (record === undefined || !heldByNoOne(record, o.probe ?? nodeLockProbe) || o.signal.aborted) return undefined;
    const listedAt = o.clock.now();
    const listedAtMono = o.clock.monotonic();
    return { dataSourceId: memo.dataSourceId, documentId: memo.documentId, record, listedAt, listedAtMono, pages: o.client.documentPages(memo.dataSourceId, EARLY_PAGES_MAX_BYTES, o.signal) };
  } catch {
    return undefined; // the lease and the listing find out for themselves, as at any start
  }
}

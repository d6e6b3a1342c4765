/**
 * The ingestion check: some time after an upload, ask the service whether the document was
 * ingested; one that was not is reported (logs, status, metrics) as not ingested, with the
 * service's reason when it gives one. Checks run one at a time through the client's shared
 * pacer, so they never crowd out mirroring work.
 *
 * What it costs (docs/performance.md, "Requests per document"): where the document records
 * carry the ingestion state (`status`, `failure_reason`: the emulator's do), one listing of
 * the data source, one request per page, answers for every document waiting, due or not (a
 * final state is final). A listing is used when it costs fewer pages than the documents it
 * answers for; otherwise each due document is read on its own (one GET). Only where the
 * records say nothing is a document's chunk listing asked (the service's silence is learnt
 * once), at most FALLBACK_PER_SECOND a second.
 *
 * The queue is a Map in upload order: the delay is the same for every upload, so upload
 * order is due order, and tracking, forgetting and taking the next due are constant-time
 * (a burst of 75,000 uploads must not scan a list per upload). What goes wrong in bulk —
 * uploads dropped beyond the bound, documents not ingested — is told in one summarised
 * log line per interval, not one per document: journald drops lines past its rate limit,
 * and the real ones would go with them.
 */
import type { DatastoreApi } from '../../api/api.js';
import { isApiError } from '../../api/errors.js';
import { ingestionStatus, type IngestionStatus } from '../../api/ingestion-status.js';
import type { DocumentRecord } from '../../api/records.js';
import type { Logger } from '../../log.js';
import type { Clock } from '../../time/clock.js';
import type { z } from 'zod';
import type { NotIngestedSchema } from '../status/schema.js';

/** A document found not ingested, with the service's word when it said one (status/schema.ts). */
export type NotIngested = z.infer<typeof NotIngestedSchema>;

interface Due {
  path: string;
  documentId: string;
  uploadedAt: number;
  dueAt: number;
  /** Times found still in progress. */
  rechecks: number;
}

/** At most this many documents wait for a check; past it, the oldest are dropped (summarised). */
export const MAX_TRACKED = 10_000;
/** At most one summary line per this interval. */
export const SUMMARY_INTERVAL_MS = 60_000;
/** Paths named in a summary line; the rest are counted. */
const SUMMARY_EXAMPLES = 3;
/** The per-document chunk listings (records that say nothing) at most this many a second. */
export const FALLBACK_PER_SECOND = 5;
/** Documents the service still reports as in progress are asked again this many times, a delay apart. */
export const IN_PROGRESS_RECHECKS = 3;
/** States that say ingestion is not finished yet (the rest are final: ready or failed). */
const IN_PROGRESS = new Set(['pending', 'processing', 'queued', 'indexing', 'ingesting', 'uploaded', 'running', 'in_progress']);

export class IngestionChecker {
  /** By path, in upload order (= due order). */
  private readonly queue = new Map<string, Due>();
  private readonly failed = new Map<string, NotIngested>();
  private timer: unknown;
  private busy = false;
  private stopped = false;
  /** A paused mapping makes no request: checks wait (their queue is kept) until resume. */
  private paused = false;
  /** What the next summary line tells. */
  private dropped = 0;
  private notIngestedSince: string[] = [];
  private notIngestedCount = 0;
  private summaryTimer: unknown;
  private lastSummaryAt: number | undefined;

  constructor(
    private readonly o: {
      api: DatastoreApi;
      dataSourceId: () => string | undefined;
      delayMs: number;
      clock: Clock;
      logger: Logger;
      signal?: AbortSignal;
      /** A document found without chunks (the runner's problem list keeps it). */
      onNotIngested?: (n: NotIngested) => void;
      /** The client's page size (`?limit=`), for the cost of a listing. Default 1000. */
      pageSize?: number;
    },
  ) {}

  /** The records say nothing of ingestion (learnt from the first listing or GET): chunk listings. */
  private recordsSilent = false;
  /** Documents in the data source at the last listing (undefined before the first). */
  private listedDocuments: number | undefined;

  /** A document was uploaded for `path`: check it after the delay. */
  track(path: string, documentId: string): void {
    if (this.stopped) return;
    const now = this.o.clock.monotonic();
    this.failed.delete(path);
    // Delete, then set: a path uploaded again moves to the end (its new due time).
    this.queue.delete(path);
    // uploadedAt is shown (wall clock); dueAt is a deadline (monotonic).
    this.queue.set(path, { path, documentId, uploadedAt: this.o.clock.now(), dueAt: now + this.o.delayMs, rechecks: 0 });
    if (this.queue.size > MAX_TRACKED) {
      const oldest = this.queue.keys().next().value as string;
      this.queue.delete(oldest);
      this.dropped++;
      this.summarise();
    }
    this.schedule();
  }

  /** A path was deleted or renamed away: nothing to check any more. */
  forget(path: string): void {
    this.failed.delete(path);
    this.queue.delete(path);
  }

  notIngested(): NotIngested[] {
    return [...this.failed.values()];
  }

  /** Documents waiting for their check. */
  get pending(): number {
    return this.queue.size;
  }

  /** No check while paused; the one in flight finishes. */
  pause(): void {
    this.paused = true;
    if (this.timer !== undefined) this.o.clock.clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** Checks resume; those due meanwhile run at once. */
  resume(): void {
    this.paused = false;
    this.schedule();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer !== undefined) this.o.clock.clearTimeout(this.timer);
    if (this.summaryTimer !== undefined) this.o.clock.clearTimeout(this.summaryTimer);
    this.timer = this.summaryTimer = undefined;
    // What was counted and not yet told is told now, not lost.
    this.report();
  }

  private next(): Due | undefined {
    return this.queue.values().next().value as Due | undefined;
  }

  private schedule(): void {
    if (this.stopped || this.paused || this.busy || this.timer !== undefined) return;
    const next = this.next();
    if (!next) return;
    this.timer = this.o.clock.setTimeout(() => {
      this.timer = undefined;
      void this.checkDue();
    }, Math.max(0, next.dueAt - this.o.clock.monotonic()));
  }

  private async checkDue(): Promise<void> {
    this.busy = true;
    try {
      const ds = this.o.dataSourceId();
      const due = this.dueNow();
      if (!ds) {
        for (const d of due) this.queue.delete(d.path);
      } else if (due.length > 0) {
        if (!this.recordsSilent && this.listingIsCheaper(due.length)) await this.checkByListing(ds);
        else await this.checkEach(ds, due);
      }
    } finally {
      this.busy = false;
      this.schedule();
    }
  }

  private dueNow(): Due[] {
    const now = this.o.clock.monotonic();
    const out: Due[] = [];
    for (const d of this.queue.values()) {
      if (d.dueAt > now) break; // upload order is due order
      out.push(d);
    }
    return out;
  }

  /** A listing's pages against one GET per due document; unknown size: list (a first mirror). */
  private listingIsCheaper(dueCount: number): boolean {
    if (this.listedDocuments === undefined) return true;
    const pages = Math.max(1, Math.ceil(this.listedDocuments / (this.o.pageSize ?? 1000)));
    return pages <= dueCount;
  }

  /** One listing answers for every document waiting whose record carries a final state. */
  private async checkByListing(ds: string): Promise<void> {
    const byId = new Map<string, Due>();
    for (const d of this.queue.values()) byId.set(d.documentId, d);
    const found = new Map<string, DocumentRecord>();
    let listed = 0;
    try {
      await this.o.api.listDocuments(ds, {
        signal: this.o.signal,
        keep: (doc) => {
          listed++;
          if (byId.has(doc.id)) found.set(doc.id, doc);
          return false; // nothing kept in memory but what is matched above
        },
      });
    } catch (e) {
      // Not ours to retry at once: the due documents are asked again after the delay.
      this.o.logger.debug({ err: e instanceof Error ? e.message : String(e) }, 'ingestion check: listing failed');
      for (const d of this.dueNow()) {
        if (d.rechecks >= IN_PROGRESS_RECHECKS) this.queue.delete(d.path);
        else this.requeue(d, d.rechecks + 1);
      }
      return;
    }
    this.listedDocuments = listed;
    const now = this.o.clock.monotonic();
    let told = 0;
    const silent: Due[] = [];
    for (const d of [...this.queue.values()]) {
      const rec = found.get(d.documentId);
      if (!rec) {
        // Replaced or deleted since (due), or not listed yet (not due): the latter waits.
        if (d.dueAt <= now) this.queue.delete(d.path);
        continue;
      }
      const st = ingestionStatus(rec);
      if (st) told++;
      if (st) this.settle(d, st);
      else if (d.dueAt <= now) silent.push(d);
    }
    if (told === 0 && silent.length > 0) this.recordsSilent = true;
    if (silent.length > 0) await this.checkEach(ds, silent);
  }

  /** Each due document on its own: its record (GET), or its chunks when records say nothing. */
  private async checkEach(ds: string, due: Due[]): Promise<void> {
    for (const d of due) {
      if (this.stopped || this.paused) return;
      if (this.queue.get(d.path) !== d) continue; // uploaded again, or forgotten meanwhile
      try {
        if (!this.recordsSilent) {
          const st = ingestionStatus(await this.o.api.getDocument(ds, d.documentId, { signal: this.o.signal }));
          if (st) {
            this.settle(d, st);
            continue;
          }
          this.recordsSilent = true;
        }
        this.queue.delete(d.path);
        const chunks = await this.o.api.listChunks(ds, d.documentId, { signal: this.o.signal });
        if (chunks.length === 0) this.report1(d, undefined);
        await this.o.clock.sleep(1000 / FALLBACK_PER_SECOND, this.o.signal).catch(() => undefined);
      } catch (e) {
        this.queue.delete(d.path);
        // Gone (replaced or deleted since): nothing to report. Other failures: not our
        // business to retry; the next upload of the file is checked again.
        if (!(isApiError(e) && e.code === 'E_NOT_FOUND')) {
          this.o.logger.debug({ path: d.path, err: e instanceof Error ? e.message : String(e) }, 'ingestion check failed');
        }
      }
    }
  }

  /** The service's word on one document: done, failed (reported with its reason), or not yet. */
  private settle(d: Due, st: IngestionStatus): void {
    if (st.failed) {
      this.queue.delete(d.path);
      this.report1(d, `${st.status}${st.reason ? `: ${st.reason}` : ''}`);
      return;
    }
    if (!IN_PROGRESS.has(st.status.toLowerCase())) {
      this.queue.delete(d.path); // ingested
      return;
    }
    if (d.dueAt > this.o.clock.monotonic()) return; // not due yet: asked at its time
    if (d.rechecks >= IN_PROGRESS_RECHECKS) {
      this.queue.delete(d.path);
      this.report1(d, `still ${st.status} after ${IN_PROGRESS_RECHECKS + 1} checks`);
      return;
    }
    this.requeue(d, d.rechecks + 1);
  }

  /** Asked again a delay from now (moved to the end: due order stays upload order). */
  private requeue(d: Due, rechecks = d.rechecks): void {
    this.queue.delete(d.path);
    this.queue.set(d.path, { ...d, dueAt: this.o.clock.monotonic() + this.o.delayMs, rechecks });
  }

  private report1(d: Due, reason: string | undefined): void {
    const n: NotIngested = { path: d.path, documentId: d.documentId, uploadedAt: new Date(d.uploadedAt).toISOString(), ...(reason ? { reason } : {}) };
    this.failed.set(d.path, n);
    this.o.onNotIngested?.(n);
    this.notIngestedCount++;
    if (this.notIngestedSince.length < SUMMARY_EXAMPLES) this.notIngestedSince.push(reason ? `${d.path} (${reason})` : d.path);
    this.summarise();
  }

  /** Tells now when nothing was told for an interval; otherwise at the end of the interval. */
  private summarise(): void {
    if (this.stopped || this.summaryTimer !== undefined) return;
    const now = this.o.clock.monotonic();
    const wait = this.lastSummaryAt === undefined ? 0 : Math.max(0, this.lastSummaryAt + SUMMARY_INTERVAL_MS - now);
    if (wait === 0) {
      this.report();
      return;
    }
    this.summaryTimer = this.o.clock.setTimeout(() => {
      this.summaryTimer = undefined;
      this.report();
    }, wait);
  }

  private report(): void {
    if (this.dropped === 0 && this.notIngestedCount === 0) return;
    this.lastSummaryAt = this.o.clock.monotonic();
    if (this.notIngestedCount > 0) {
      const more = this.notIngestedCount - this.notIngestedSince.length;
      this.o.logger.warn(
        { count: this.notIngestedCount, examples: this.notIngestedSince },
        `${this.notIngestedCount} document(s) not ingested (${this.notIngestedSince.join(', ')}${more > 0 ? ` and ${more} more` : ''}); dssync status lists them with the service's reason`,
      );
    }
    if (this.dropped > 0) {
      this.o.logger.warn(
        { dropped: this.dropped, tracked: MAX_TRACKED },
        `${this.dropped} upload(s) not checked for ingestion: more than ${MAX_TRACKED} were waiting for their check`,
      );
    }
    this.dropped = 0;
    this.notIngestedCount = 0;
    this.notIngestedSince = [];
  }
}

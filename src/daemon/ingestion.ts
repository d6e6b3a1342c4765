/**
 * The ingestion check: some time after an upload, list the document's chunks; a document
 * still without chunks is reported (logs, status, metrics) as not ingested. Checks run one
 * at a time through the client's shared pacer, so they never crowd out mirroring work.
 *
 * The queue is a Map in upload order: the delay is the same for every upload, so upload
 * order is due order, and tracking, forgetting and taking the next due are constant-time
 * (a burst of 75,000 uploads must not scan a list per upload). What goes wrong in bulk —
 * uploads dropped beyond the bound, documents not ingested — is told in one summarised
 * log line per interval, not one per document: journald drops lines past its rate limit,
 * and the real ones would go with them.
 */
import type { DatastoreApi } from '../api/api.js';
import { isApiError } from '../api/errors.js';
import type { Logger } from '../log.js';
import type { Clock } from '../time/clock.js';

export interface NotIngested {
  path: string;
  documentId: string;
  uploadedAt: string;
}

interface Due {
  path: string;
  documentId: string;
  uploadedAt: number;
  dueAt: number;
}

/** At most this many documents wait for a check; past it, the oldest are dropped (summarised). */
export const MAX_TRACKED = 10_000;
/** At most one summary line per this interval. */
export const SUMMARY_INTERVAL_MS = 60_000;
/** Paths named in a summary line; the rest are counted. */
const SUMMARY_EXAMPLES = 3;

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
    },
  ) {}

  /** A document was uploaded for `path`: check it after the delay. */
  track(path: string, documentId: string): void {
    if (this.stopped) return;
    const now = this.o.clock.monotonic();
    this.failed.delete(path);
    // Delete, then set: a path uploaded again moves to the end (its new due time).
    this.queue.delete(path);
    // uploadedAt is shown (wall clock); dueAt is a deadline (monotonic).
    this.queue.set(path, { path, documentId, uploadedAt: this.o.clock.now(), dueAt: now + this.o.delayMs });
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
      for (let due = this.next(); !this.stopped && !this.paused && due && due.dueAt <= this.o.clock.monotonic(); due = this.next()) {
        this.queue.delete(due.path);
        const ds = this.o.dataSourceId();
        if (!ds) continue;
        try {
          const chunks = await this.o.api.listChunks(ds, due.documentId, { signal: this.o.signal });
          if (chunks.length === 0) {
            const n = { path: due.path, documentId: due.documentId, uploadedAt: new Date(due.uploadedAt).toISOString() };
            this.failed.set(due.path, n);
            this.o.onNotIngested?.(n);
            this.notIngestedCount++;
            if (this.notIngestedSince.length < SUMMARY_EXAMPLES) this.notIngestedSince.push(due.path);
            this.summarise();
          }
        } catch (e) {
          // Gone (replaced or deleted since): nothing to report. Other failures: not our
          // business to retry; the next upload of the file is checked again.
          if (!(isApiError(e) && e.code === 'E_NOT_FOUND')) {
            this.o.logger.debug({ path: due.path, err: e instanceof Error ? e.message : String(e) }, 'ingestion check failed');
          }
        }
      }
    } finally {
      this.busy = false;
      this.schedule();
    }
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
        `${this.notIngestedCount} document(s) not ingested: no chunks after the ingestion delay (${this.notIngestedSince.join(', ')}${more > 0 ? ` and ${more} more` : ''}); dssync status lists them`,
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

/**
 * The ingestion check: some time after an upload, list the document's chunks; a document
 * still without chunks is reported (logs, status, metrics) as not ingested. Checks run one
 * at a time through the client's shared pacer, so they never crowd out mirroring work.
 */
import type { DatastoreApi } from '../api/api.js';
import { isApiError } from '../api/errors.js';
import type { Logger } from '../log.js';
import type { Timers } from './timers.js';

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

/** At most this many documents wait for a check; past it, the oldest are dropped (logged). */
const MAX_TRACKED = 10_000;

export class IngestionChecker {
  private queue: Due[] = [];
  private readonly failed = new Map<string, NotIngested>();
  private timer: unknown;
  private busy = false;
  private stopped = false;

  constructor(
    private readonly o: {
      api: DatastoreApi;
      dataSourceId: () => string | undefined;
      delayMs: number;
      timers: Timers;
      logger: Logger;
      signal?: AbortSignal;
    },
  ) {}

  /** A document was uploaded for `path`: check it after the delay. */
  track(path: string, documentId: string): void {
    if (this.stopped) return;
    const now = this.o.timers.now();
    this.failed.delete(path);
    this.queue = this.queue.filter((d) => d.path !== path);
    this.queue.push({ path, documentId, uploadedAt: now, dueAt: now + this.o.delayMs });
    if (this.queue.length > MAX_TRACKED) {
      const dropped = this.queue.splice(0, this.queue.length - MAX_TRACKED);
      this.o.logger.warn({ dropped: dropped.length }, 'too many uploads to check ingestion for all of them; some are not checked');
    }
    this.schedule();
  }

  /** A path was deleted or renamed away: nothing to check any more. */
  forget(path: string): void {
    this.failed.delete(path);
    this.queue = this.queue.filter((d) => d.path !== path);
  }

  notIngested(): NotIngested[] {
    return [...this.failed.values()];
  }

  stop(): void {
    this.stopped = true;
    if (this.timer !== undefined) this.o.timers.clearTimeout(this.timer);
  }

  private schedule(): void {
    if (this.stopped || this.busy || this.timer !== undefined || this.queue.length === 0) return;
    const next = this.queue[0]!;
    this.timer = this.o.timers.setTimeout(() => {
      this.timer = undefined;
      void this.checkDue();
    }, Math.max(0, next.dueAt - this.o.timers.now()));
  }

  private async checkDue(): Promise<void> {
    this.busy = true;
    try {
      while (!this.stopped && this.queue[0] && this.queue[0].dueAt <= this.o.timers.now()) {
        const due = this.queue.shift()!;
        const ds = this.o.dataSourceId();
        if (!ds) continue;
        try {
          const chunks = await this.o.api.listChunks(ds, due.documentId, { signal: this.o.signal });
          if (chunks.length === 0) {
            this.failed.set(due.path, { path: due.path, documentId: due.documentId, uploadedAt: new Date(due.uploadedAt).toISOString() });
            this.o.logger.warn({ path: due.path, documentId: due.documentId }, 'document not ingested: no chunks after the ingestion delay');
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
}

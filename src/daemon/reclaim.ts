/**
 * Gives back the memory of a full pass. A pass over 100,000 files builds a few hundred MB
 * of short-lived objects (the listing, the walk, the plan); V8 collects garbage only when
 * the program allocates, so an idle daemon would hold that memory until its next pass, an
 * hour later (docs/performance.md: 820 MB resident at idle, 150 MB after one collection).
 *
 * After a full pass (several mappings' passes share one reclaim), full collections: the
 * first returns the pass's objects, the second (`SHRINK_DELAY_MS` later) the pages the
 * first one swept; while the young generation is still larger than at start, more follow,
 * each `SHRINK_DELAY_MS` after the one before (at most `SHRINK_TRIES` after the first), to
 * give back what V8 grew it to for the pass: V8 shrinks it in a full collection only when
 * the program allocated little over the last `V8_THROUGHPUT_WINDOW_MS`, so one made while
 * the watch is still set up, or right after the pass, keeps it (32 MB resident at rest;
 * docs/performance.md "Memory at rest (issue 39.3)"). Then malloc's free pages are given
 * back (malloc-trim.ts): what the pass freed below blocks still in use stays resident
 * otherwise.
 */
import { getHeapSpaceStatistics } from 'node:v8';
import { collectGarbage } from '../gc.js';
import type { Logger } from '../log.js';
import { trimMalloc } from '../malloc-trim.js';
import type { Clock, TimerHandle } from '../time/clock.js';

/** From the end of a full pass to the first collection. */
export const RECLAIM_DELAY_MS = 2_000;
/** The span over which V8 measures the allocation rate that decides whether the young generation shrinks. */
export const V8_THROUGHPUT_WINDOW_MS = 5_000;
/** From one collection to the next: past V8's window, with a margin. */
export const SHRINK_DELAY_MS = V8_THROUGHPUT_WINDOW_MS + 3_000;
/** Collections after the first: one, and more while the young generation is larger than at start. */
export const SHRINK_TRIES = 3;
/** Logged (info) once the collections after a full pass are done: the memory at rest is then what it will stay. */
export const RECLAIM_DONE_MESSAGE = 'memory of the full pass released';

export interface ReclaimerOptions {
  clock: Clock;
  logger: Logger;
  /** A full collection; false when the runtime offers none. Default collectGarbage. */
  collect?: () => boolean;
  /** The resident size, undefined when it cannot be read (EMFILE). Default the process's. */
  rss?: () => number | undefined;
  /** The young generation's size (bytes). Default V8's new space. */
  youngBytes?: () => number;
  /** Gives malloc's free pages back; undefined when it cannot. Default trimMalloc. */
  trim?: () => boolean | undefined;
}

/** The collections after a full pass, on the daemon's clock. */
export class Reclaimer {
  private timer: TimerHandle | undefined;
  private stopped = false;
  private readonly collect: () => boolean;
  private readonly rss: () => number | undefined;
  private readonly youngBytes: () => number;
  private readonly trim: () => boolean | undefined;
  /** The young generation's size at start: what it shrinks back to. */
  private readonly youngAtStart: number;

  constructor(private readonly o: ReclaimerOptions) {
    this.collect = o.collect ?? collectGarbage;
    this.rss = o.rss ?? processRss;
    this.youngBytes = o.youngBytes ?? newSpaceBytes;
    this.trim = o.trim ?? trimMalloc;
    this.youngAtStart = this.youngBytes();
  }

  /** A full pass ended: collect RECLAIM_DELAY_MS later, then every SHRINK_DELAY_MS (module comment). */
  afterFullPass(): void {
    if (this.timer !== undefined || this.stopped) return;
    const before = this.rss();
    // A timer's exception is uncaught and would end the daemon: a failed collection or
    // measure (EMFILE when descriptors run out) is logged at any step, the sync goes on.
    const step = (tries: number): void => {
      this.timer = undefined;
      try {
        if (this.stopped || !this.collect()) return;
        const young = this.youngBytes();
        if (tries === 0 || (young > this.youngAtStart && tries < SHRINK_TRIES)) {
          this.timer = this.o.clock.setTimeout(() => step(tries + 1), SHRINK_DELAY_MS);
          return;
        }
        const mb = (n: number | undefined): number | undefined => (n === undefined ? undefined : Math.round(n / 1024 / 1024));
        const collected = this.rss();
        const trimmed = this.trim();
        this.o.logger.info({ rssMB: mb(this.rss()), beforeMB: mb(before), collectedMB: mb(collected), youngMB: mb(young), trimmed }, RECLAIM_DONE_MESSAGE);
      } catch (e) {
        this.o.logger.warn({ err: e instanceof Error ? e.message : String(e) }, 'reclaiming the memory of the full pass failed');
      }
    };
    this.timer = this.o.clock.setTimeout(() => step(0), RECLAIM_DELAY_MS);
  }

  stop(): void {
    this.stopped = true;
    if (this.timer !== undefined) this.o.clock.clearTimeout(this.timer);
    this.timer = undefined;
  }
}

function newSpaceBytes(): number {
  return getHeapSpaceStatistics().find((s) => s.space_name === 'new_space')?.space_size ?? 0;
}

function processRss(): number | undefined {
  try {
    return process.memoryUsage.rss();
  } catch {
    return undefined;
  }
}

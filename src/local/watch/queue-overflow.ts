/**
 * inotify's queue overflow: reported by the kernel under dssync's own watch (inotify.ts),
 * inferred under Node's fs.watch, as far as it lets it be seen.
 *
 * The native watch reads the kernel's IN_Q_OVERFLOW record and says so (`overflowed`): no
 * guess, and nothing below applies. Under fs.watch (the module not built, or
 * DSSYNC_NATIVE=0):
 *
 * The kernel queues at most fs.inotify.max_queued_events events per inotify instance (16,384
 * by default); past that it drops events and queues one IN_Q_OVERFLOW record (watch
 * descriptor -1). libuv drops that record (it maps descriptors to handles, and -1 has none),
 * so fs.watch never says events were lost: a folder created during a burst would never be
 * watched, edits never looked at, until the next periodic full pass.
 *
 * What Node does let us see is how the events arrive. Every fs.watch of the process shares
 * one inotify instance (one per event loop), and libuv reads that instance until it is empty
 * in one go, calling each watch's callback synchronously, all within one event-loop turn.
 * So the number of events delivered in one turn is the length the queue had (plus what
 * arrived while it was read). A turn that delivers at least OVERFLOW_SHARE of the queue's
 * size means the queue was full or nearly so: the kernel may have dropped events. That is
 * the signal: the watcher then asks for a full pass. A false alarm (a queue that filled to
 * 90 % without overflowing) costs one full pass; a missed overflow would cost the changes.
 * A flood that keeps the queue full turn after turn is one overflow, not one per turn.
 *
 * Why the share is below 100 %: the events of a watch removed meanwhile still take room in
 * the queue but reach no callback (libuv drops them too), and a process may have watches
 * other than the folder watches counted here.
 *
 * The queue's size is read from /proc once, before the process's first watch: the kernel
 * fixes an instance's size when the instance is created (libuv creates it at the first
 * fs.watch), so a value changed later applies only after a restart.
 */
import { readFile } from 'node:fs/promises';
import { realClock } from '../../time/clock.js';

export const MAX_QUEUED_EVENTS_PATH = '/proc/sys/fs/inotify/max_queued_events';
/** The kernel's default, assumed when /proc cannot be read. */
export const DEFAULT_MAX_QUEUED_EVENTS = 16_384;
/** A turn delivering at least this share of the queue's size counts as a possible overflow. */
export const OVERFLOW_SHARE = 0.9;
/** The command that raises the queue's size (said wherever an overflow is reported). */
export const RAISE_QUEUE_LIMIT = 'sysctl fs.inotify.max_queued_events=65536 (and in /etc/sysctl.d/ to keep it), then restart dssync';

/**
 * One overflow: when, the queue's size, and either how many events arrived at once (a
 * possible overflow, inferred) or nothing (the kernel reported it).
 */
export interface QueueOverflow {
  at: number;
  events?: number | undefined;
  queueSize: number;
}

/** What status shows: the queue's size, overflows since start, the last one. */
export interface QueueView {
  /** True: the overflows are the kernel's reports (the native watch); false: inferred (fs.watch). */
  reported: boolean;
  queueSize: number;
  overflows: number;
  lastOverflowAt?: string | undefined;
  lastBurst?: number | undefined;
}

export interface QueueMonitorOptions {
  /** Runs `fn` once the current event-loop turn's I/O callbacks are done (setImmediate). */
  defer: (fn: () => void) => void;
  now: () => number;
  /** max_queued_events. */
  readQueueSize: () => Promise<number>;
}

export class InotifyQueueMonitor {
  private inTurn = 0;
  /** The last turn was a possible overflow: the next full one belongs to the same flood. */
  private flooding = false;
  private size: number | undefined;
  private sizeRead: Promise<void> | undefined;
  private overflows = 0;
  private last: QueueOverflow | undefined;
  private readonly listeners = new Set<(o: QueueOverflow) => void>();
  private kernelReports = false;

  constructor(private readonly o: QueueMonitorOptions) {}

  /** The watch reads the kernel's overflow records (inotify.ts): events are no longer counted. */
  reportedByKernel(): void {
    this.kernelReports = true;
  }

  /**
   * The kernel reported an overflow. Several in one event-loop turn are one: the caller
   * reports once per read of the records.
   */
  overflowed(): void {
    this.record(undefined);
  }

  /** Reads the queue's size, once per process; call before the first watch. */
  prepare(): Promise<void> {
    this.sizeRead ??= this.o
      .readQueueSize()
      .catch(() => DEFAULT_MAX_QUEUED_EVENTS)
      .then((n) => void (this.size = Number.isSafeInteger(n) && n > 0 ? n : DEFAULT_MAX_QUEUED_EVENTS));
    return this.sizeRead;
  }

  /** One inotify event delivered to a watch callback (fs.watch's: see above). */
  note(): void {
    if (this.kernelReports) return;
    if (this.inTurn++ === 0) this.o.defer(() => this.endTurn());
  }

  /** Called at each possible overflow; returns the unsubscribe function. */
  subscribe(fn: (o: QueueOverflow) => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  view(): QueueView {
    return { reported: this.kernelReports, queueSize: this.queueSize(), overflows: this.overflows, lastOverflowAt: this.last && new Date(this.last.at).toISOString(), lastBurst: this.last?.events };
  }

  private queueSize(): number {
    return this.size ?? DEFAULT_MAX_QUEUED_EVENTS;
  }

  private endTurn(): void {
    const events = this.inTurn;
    this.inTurn = 0;
    const full = events >= Math.ceil(this.queueSize() * OVERFLOW_SHARE);
    const wasFlooding = this.flooding;
    this.flooding = full;
    if (!full || wasFlooding) return;
    this.record(events);
  }

  /** One overflow, told to every watcher: inferred from `events` at once, or the kernel's (undefined). */
  private record(events: number | undefined): void {
    this.overflows++;
    this.last = { at: this.o.now(), events, queueSize: this.queueSize() };
    for (const fn of [...this.listeners]) fn(this.last);
  }
}

/** The process's one monitor: every watch of the process shares one inotify instance, so one queue. */
export const inotifyQueue = new InotifyQueueMonitor({
  defer: (fn) => void setImmediate(fn),
  // The process's one monitor is its own composition edge: the real clock's wall reading dates an overflow for display.
  now: () => realClock.now(),
  readQueueSize: async () => Number((await readFile(MAX_QUEUED_EVENTS_PATH, 'utf8')).trim()),
});

/**
 * The event aggregator: turns the watcher's stream of raw events into batches of paths for
 * the engine to look at (DESIGN §1.2). PURE: no timers and no I/O; time comes in with each
 * event and each drain, so every rule below is unit-tested on a fake clock.
 *
 * Events only decide WHAT to look at; the planner decides what to do (it stats, hashes and
 * pairs renames by content). So the aggregator may over-report (a path that no longer
 * exists is harmless), but must not:
 * - report a path while it is still being written (per-path quiet, growth detection);
 * - report a deletion before an addition that may pair with it as a rename (all pending
 *   removals and the paths active around them are released together, in one batch);
 * - grow without bound (a storm of paths turns into one "rescan everything").
 *
 * Rules:
 * - per path: a path is ready after `quietMs` without events, or `maxWaitMs` after its first
 *   event;
 * - a file that may be half-written is "unsettled" and waits for a longer stability window
 *   after its last size change: `settleMs` plus a quarter of how long it has been changing
 *   size, at most `maxStabilityMs`. Unsettled: its size changed between two events (also
 *   across a release, see below), it was just created (`add`), or it is empty (a truncate
 *   before a rewrite). A writer that pauses between writes (200 KB every 0.5 s) is thus
 *   never caught between two writes;
 * - a released file's size and how long it had been changing are remembered for its
 *   stability window (`settleMs` for one never seen changing) after its last event: a
 *   change within it is the same write going on (a size change is growth); a change after
 *   it is a new write, judged on its own, as a pause longer than the window is taken for
 *   the end of the write (a save of a file saved a few seconds before goes after the
 *   debounce);
 * - a file seen empty and written again within `refillMs` of that (an existing file saved
 *   in one go: open with O_TRUNC, write, close; the watcher's stat of the truncation's
 *   event ran before the write) is settled again, as when the stat comes after the write
 *   and never sees the empty file: which of the two a save gets is a race between the
 *   daemon's stat and the writer's next system call, and must not decide a 2 s wait. A
 *   file still empty, refilled later than that, or resized again stays unsettled;
 * - a file whose size keeps changing is still released `writeFinishMaxMs` after its first
 *   event (its latest state, at a bounded rate: never once per write);
 * - a removal (unlink, unlinkDir as the last event) is ready only `renameWindowMs` after it;
 * - the removal group: every pending removal plus every path with events within
 *   `renameWindowMs` of one is released in the same batch, when all of them are ready (or,
 *   as a bound, `maxWaitMs` after the earliest removal: then what is ready goes);
 * - a file or folder created and deleted again while pending (editor temp files, vim's
 *   "4913" probe, office lock files, build folders) is dropped: the service never knew it —
 *   unless a pass that may have sent it ran meanwhile (passStarted..passEnded, created
 *   during that pass included) or the state tracks the file (`syncedSize` knows it);
 * - events under a pending folder event fold into it: the folder is re-walked as a whole
 *   (a deleted folder is one entry, not one per file). A file written under it makes the
 *   folder unsettled like the file itself (the walk would read it half-written), and its
 *   size is remembered as a released file's, so that its next write after the folder's
 *   release (before its window ended: a rescan) is seen as growth;
 * - what happened before the aggregator started is unknown (events are lost at a restart):
 *   for `maxStabilityMs` after `startedAt`, a file's first `change` counts as unsettled
 *   unless its size is the one last synced (`syncedSize`), so a writer that was pausing
 *   when the daemon (re)started is not caught between two writes, while a same-size save
 *   still goes after the debounce.
 */
import type { ChangeScope } from '../../engine/local-side.js';
import type { StatNow } from '../../engine/racy.js';
import { nfc } from '../../unicode.js';

export type RawEventKind = 'add' | 'change' | 'unlink' | 'addDir' | 'unlinkDir' | 'raw';

/**
 * One event from the watcher. `raw` means "something happened at this path" without
 * knowing whether it exists (a stat that failed for another reason than ENOENT).
 */
export interface RawEvent {
  kind: RawEventKind;
  /** Relative POSIX path, NFC ('' is the mapped folder itself). */
  path: string;
  size?: number | undefined;
  mtimeMs?: number | undefined;
  /** The watcher's lstat of the file after this event: kept on the local side (ObservedStats), not here. */
  stat?: StatNow | undefined;
  /** When the event happened (ms, the same clock as `drain(now)`). */
  at: number;
  /** For an event on the mapped folder itself: why it must be looked at as a whole. */
  reason?: string | undefined;
}

export interface AggregatorOptions {
  /** A path is looked at after this much quiet (ms): the config's `debounceMs`, which holds its default. */
  quietMs: number;
  /** A path that keeps changing (without growing) is still looked at after this long (ms). */
  maxWaitMs: number;
  /** A removal is held this long so that an addition can pair with it as a rename (ms). */
  renameWindowMs: number;
  /**
   * An unsettled file (created, growing, emptied) waits this long after its last size
   * change, plus a quarter of how long it has been changing size (ms).
   */
  settleMs: number;
  /** The bound of that stability window (ms). */
  maxStabilityMs: number;
  /** A file whose size keeps changing is looked at after this long at the latest (ms). */
  writeFinishMaxMs: number;
  /**
   * A file seen empty (a truncation) and then with content within this long (ms) is one
   * save in one go, not a truncate-then-rewrite in progress (see the rules): far below a
   * writer's pauses, far above the microseconds between a save's truncation and its write.
   */
  refillMs: number;
  /** More pending paths than this: drop them all and ask for a rescan (bounded memory). */
  maxPending: number;
  /** nextDeadline() is rounded up to this grid, so that a burst drains in few batches (ms). */
  batchTickMs: number;
  /**
   * When the aggregator started (ms, the events' clock): its first `maxStabilityMs` are
   * treated as after a loss of memory (see the rules). Default: never (no start window).
   */
  startedAt?: number | undefined;
  /**
   * The one read of the state: the size last synced for a file, undefined when the state
   * does not track it. For the start window, and a tracked file's document exists, so its
   * removal is always told (a second guard to passStarted's).
   */
  syncedSize?: ((relPath: string) => number | undefined) | undefined;
}

/** The aggregator's own tuning; `quietMs` is the config's and has no default here. */
export const DEFAULT_AGGREGATOR_OPTIONS: Readonly<Omit<AggregatorOptions, 'quietMs'>> = Object.freeze({
  maxWaitMs: 10_000,
  renameWindowMs: 1500,
  settleMs: 2000,
  maxStabilityMs: 30_000,
  writeFinishMaxMs: 60_000,
  refillMs: 100,
  maxPending: 100_000,
  batchTickMs: 200,
});

/** One released path, with what the daemon needs to measure lag. */
export interface BatchItem {
  path: string;
  isDir: boolean;
  /** The last event said the path is gone (a hint: the planner checks the disk). */
  gone: boolean;
  firstEventAt: number;
}

export interface Batch {
  /**
   * The paths to look at, sorted, with their timing: files, and folders (`isDir`) whose
   * whole subtree must be walked again (added, moved or deleted).
   */
  items: BatchItem[];
  /** The watcher lost events (error, overflow, too many pending): look at everything. */
  rescan: boolean;
  /** Why a rescan is asked for. */
  reasons: string[];
}

export function isEmptyBatch(b: Batch): boolean {
  return !b.rescan && b.items.length === 0;
}

interface Entry {
  path: string;
  isDir: boolean;
  firstAt: number;
  lastAt: number;
  events: number;
  /** The first event created the path: it did not exist before this entry. */
  bornHere: boolean;
  /** The last event removed the path. */
  gone: boolean;
  size: number | undefined;
  /** Unsettled (created, size changed or empty) since this time; undefined: settled. */
  unsettledSince: number | undefined;
  /** The last event that made or kept the file unsettled. */
  lastChangeAt: number | undefined;
  /**
   * When the file was first seen empty while that alone made it unsettled (a settled file
   * truncated), and its size before (if known): refilled within `refillMs` to a size a stat
   * after the write would not have seen as a resize, it was a save in one go (the rules).
   */
  emptied: { at: number; sizeBefore: number | undefined } | undefined;
  /**
   * A folder created and deleted again: reported never, but kept for `renameWindowMs` so
   * that late events for files under it (a folder's watch can report them after the folder's own removal) fold into it.
   */
  dropped: boolean;
}

/** What is remembered of a released file, so that a writer pausing between writes is seen. */
interface Recent {
  size: number | undefined;
  unsettledSince: number | undefined;
  lastChangeAt: number | undefined;
  lastAt: number;
}

export class EventAggregator {
  private readonly o: AggregatorOptions;
  private readonly files = new Map<string, Entry>();
  private readonly recent = new Map<string, Recent>();
  private readonly dirs = new Map<string, Entry>();
  private rescanReasons: string[] = [];
  private rescanAt: number | undefined;
  /** Earliest time a drain can release something; exact after a drain, lowered by pushes. */
  private deadline: number | undefined;
  /** What the pass running now may send (passStarted to passEnded). */
  private passCovers: ((path: string) => boolean) | undefined;

  constructor(opts: Partial<AggregatorOptions> & Pick<AggregatorOptions, 'quietMs'>) {
    this.o = { ...DEFAULT_AGGREGATOR_OPTIONS, ...opts };
    for (const k of ['quietMs', 'maxWaitMs', 'renameWindowMs', 'settleMs', 'maxStabilityMs', 'writeFinishMaxMs', 'refillMs', 'maxPending', 'batchTickMs'] as const) {
      const v = this.o[k];
      if (!Number.isFinite(v) || v < 0) throw new RangeError(`EventAggregator: ${k} must be a number >= 0, got ${String(v)}`);
    }
  }

  push(e: RawEvent): void {
    const path = normalize(e.path);
    const isDir = e.kind === 'addDir' || e.kind === 'unlinkDir';
    if (path === '') {
      // The mapped folder itself appeared or vanished: only a full look can say what changed.
      this.overflow(e.reason ?? `${e.kind} of the mapped folder itself`, e.at);
      return;
    }
    const created = e.kind === 'add' || e.kind === 'addDir';
    const removed = e.kind === 'unlink' || e.kind === 'unlinkDir';
    const holder = this.holderOf(path, !isDir && removed);
    if (holder) {
      fold(holder, e.at);
      if (!isDir && !removed && !holder.dropped) this.writtenUnder(holder, path, e.size, e.at, e.at);
      this.lower(holder);
      return;
    }
    const map = isDir ? this.dirs : this.files;
    let entry = map.get(path);
    if (entry?.dropped && !removed) {
      map.delete(path);
      entry = undefined;
    }
    if (!entry) {
      // Created while a pass that may send it runs, or a path the state tracks: the
      // service may know it, so its removal is told.
      const maybeKnown = this.mayBeSent(path) || this.o.syncedSize?.(path) !== undefined;
      entry = { path, isDir, firstAt: e.at, lastAt: e.at, events: 0, bornHere: created && !maybeKnown, gone: false, size: undefined, unsettledSince: undefined, lastChangeAt: undefined, emptied: undefined, dropped: false };
      const mem = isDir ? undefined : this.recent.get(path);
      if (mem && !this.writeEnded(mem, e.at)) {
        // Released a moment ago and written again: the same write may still be going on.
        entry.size = mem.size;
        entry.unsettledSince = mem.unsettledSince;
        entry.lastChangeAt = mem.lastChangeAt;
      }
      map.set(path, entry);
    }
    fold(entry, e.at);
    entry.gone = removed;
    if (removed) {
      this.recent.delete(path);
      entry.size = undefined;
      entry.unsettledSince = undefined;
      entry.lastChangeAt = undefined;
      entry.emptied = undefined;
      if (entry.bornHere) {
        // Created and deleted while pending: nothing to tell the service.
        if (isDir) {
          entry.dropped = true;
        } else {
          map.delete(path);
          return;
        }
      }
    } else if (!isDir) {
      const resized = e.size !== undefined && entry.size !== undefined && entry.size !== e.size;
      // Its first change since a start whose past is unknown: it may be a write resuming.
      const unknownPast =
        entry.events === 1 &&
        entry.size === undefined &&
        this.o.startedAt !== undefined &&
        e.at < this.o.startedAt + this.o.maxStabilityMs &&
        (e.size === undefined || this.o.syncedSize?.(path) !== e.size);
      const was = entry.emptied;
      const refilled =
        was !== undefined &&
        e.kind === 'change' &&
        e.size !== undefined &&
        e.size > 0 &&
        e.at - was.at <= this.o.refillMs &&
        (was.sizeBefore === undefined || was.sizeBefore === e.size);
      if (refilled) {
        // A save in one go whose truncation the watcher's stat happened to see: settled, as
        // the same save is when the stat comes after its write (then nothing saw it empty).
        entry.unsettledSince = undefined;
        entry.lastChangeAt = undefined;
        entry.emptied = undefined;
      } else if (e.kind === 'add' || resized || e.size === 0 || unknownPast) {
        const onlyEmptied = e.kind === 'change' && e.size === 0 && !unknownPast && (entry.unsettledSince === undefined || was !== undefined);
        entry.emptied = onlyEmptied ? (was ?? { at: e.at, sizeBefore: entry.size }) : undefined;
        entry.unsettledSince ??= resized ? Math.min(entry.firstAt, entry.lastChangeAt ?? Infinity) : e.at;
        entry.lastChangeAt = e.at;
      } else {
        entry.emptied = undefined;
      }
      if (e.size !== undefined) entry.size = e.size;
    }
    this.lower(entry);
    if (this.files.size + this.dirs.size > this.o.maxPending) {
      this.overflow(`more than ${this.o.maxPending} paths pending`, e.at);
    }
  }

  /**
   * A pass begins that may send what is pending here (a file held by its stability window,
   * say; all of it for a full pass, what is under its scope otherwise), and, until
   * passEnded(), whatever its walk finds created meanwhile: such a path is no longer
   * "created here", and its removal is told like any other (its document may exist).
   */
  passStarted(scope?: ChangeScope): void {
    this.passCovers = coverage(scope);
    this.passMaySend(this.passCovers);
  }

  /** The pass begun by passStarted() ended (succeeded or not): what its walk may have sent is covered. */
  passEnded(): void {
    const covered = this.passCovers;
    this.passCovers = undefined;
    if (covered) this.passMaySend(covered);
  }

  private passMaySend(covered: (path: string) => boolean): void {
    for (const map of [this.files, this.dirs]) for (const e of map.values()) if (e.bornHere && covered(e.path)) e.bornHere = false;
  }

  /** A pass running now may send `path` (its walk may find it). */
  private mayBeSent(path: string): boolean {
    return this.passCovers?.(path) === true;
  }

  /** The watcher lost events (error, overflow): the next batch asks for a rescan. */
  overflow(reason: string, at: number): void {
    this.rescanReasons.push(reason);
    this.rescanAt = Math.min(this.rescanAt ?? at, at);
    this.deadline = Math.min(this.deadline ?? at, at);
    // A rescan looks at everything: pending paths beyond the bound are not worth keeping.
    if (this.files.size + this.dirs.size > this.o.maxPending) {
      this.files.clear();
      this.dirs.clear();
    }
  }

  /** Paths ready to be looked at, removed from the pending set. */
  drain(now: number): Batch {
    if (this.rescanAt !== undefined && now >= this.rescanAt) return this.drainAll();
    this.collapseUnderDirs();

    for (const [path, r] of this.recent) if (this.writeEnded(r, now)) this.recent.delete(path);
    const live: Entry[] = [];
    for (const map of [this.files, this.dirs]) {
      for (const [path, e] of map) {
        if (!e.dropped) live.push(e);
        else if (now >= e.lastAt + this.o.renameWindowMs) map.delete(path);
      }
    }

    // The removal group: all pending removals and the paths active around them.
    const w = this.o.renameWindowMs;
    let spanStart = Infinity;
    let spanEnd = -Infinity;
    let earliestRemoval = Infinity;
    for (const e of live) {
      if (!e.gone) continue;
      spanStart = Math.min(spanStart, e.firstAt - w);
      spanEnd = Math.max(spanEnd, e.lastAt + w);
      earliestRemoval = Math.min(earliestRemoval, e.lastAt);
    }
    const inGroup = (e: Entry): boolean => e.gone || (e.lastAt >= spanStart && e.firstAt <= spanEnd);
    const forceAt = earliestRemoval + this.o.maxWaitMs;
    let groupReadyAt = -Infinity;
    for (const e of live) if (inGroup(e)) groupReadyAt = Math.max(groupReadyAt, this.readyAt(e));
    const groupGoes = groupReadyAt <= now;
    const groupForced = !groupGoes && now >= forceAt;

    const released: Entry[] = [];
    let next = Infinity;
    for (const e of live) {
      const ready = this.readyAt(e);
      const grouped = inGroup(e);
      const goes = grouped ? groupGoes || (groupForced && ready <= now) : ready <= now;
      if (goes) {
        released.push(e);
        (e.isDir ? this.dirs : this.files).delete(e.path);
        if (!e.isDir && !e.gone) this.remember(e);
      } else {
        next = Math.min(next, grouped && !groupForced ? Math.min(groupReadyAt, forceAt) : ready);
      }
    }
    this.deadline = next === Infinity ? undefined : Math.max(next, now + 1);
    if (this.rescanAt !== undefined) this.deadline = Math.min(this.deadline ?? this.rescanAt, this.rescanAt);
    return this.toBatch(released, false, []);
  }

  /** When drain() could next return something (undefined: nothing pending). */
  nextDeadline(): number | undefined {
    if (this.deadline === undefined) return undefined;
    const tick = this.o.batchTickMs;
    return tick > 0 ? Math.ceil(this.deadline / tick) * tick : this.deadline;
  }

  /** Paths and folders waiting to be reported. */
  pendingCount(): number {
    let n = this.files.size;
    for (const d of this.dirs.values()) if (!d.dropped) n++;
    return n;
  }

  /** A path's own ready time, ignoring the removal group. */
  private readyAt(e: Entry): number {
    if (e.gone) return e.lastAt + Math.max(this.o.quietMs, this.o.renameWindowMs);
    const quietAt = e.lastAt + this.o.quietMs;
    const capAt = e.firstAt + this.o.maxWaitMs;
    if (e.unsettledSince === undefined || e.lastChangeAt === undefined) return Math.min(quietAt, capAt);
    // Stable for a window that grows with how long the size has been changing (bounded);
    // a file that never settles goes at writeFinishMaxMs: its latest state, once per bound.
    const settleAt = e.lastChangeAt + this.stabilityWindow(e);
    return Math.min(Math.max(quietAt, settleAt), Math.max(capAt, settleAt), e.firstAt + this.o.writeFinishMaxMs);
  }

  /**
   * How long a file must keep its size to be taken as written: `settleMs` plus a quarter of
   * how long its size has been changing (none for a file not seen changing), at least
   * `quietMs`, at most `maxStabilityMs`.
   */
  private stabilityWindow(w: Pick<Recent, 'unsettledSince' | 'lastChangeAt'>): number {
    const changingMs = w.unsettledSince === undefined || w.lastChangeAt === undefined ? 0 : w.lastChangeAt - w.unsettledSince;
    return Math.min(this.o.maxStabilityMs, Math.max(this.o.quietMs, this.o.settleMs + Math.floor(changingMs / 4)));
  }

  /** A released file quiet for longer than its stability window: its write ended, what comes next is a new one. */
  private writeEnded(r: Recent, at: number): boolean {
    return at - r.lastAt > this.stabilityWindow(r);
  }

  /** Keeps a released file's size and unsettled time for its stability window (bounded memory). */
  private remember(e: Entry): void {
    if (this.recent.size >= this.o.maxPending) this.recent.clear();
    this.recent.set(e.path, { size: e.size, unsettledSince: e.unsettledSince, lastChangeAt: e.lastChangeAt, lastAt: e.lastAt });
  }

  /**
   * A file written under a pending folder: the folder waits for the file's stability window
   * (its walk reads the file), and the file's size is remembered beyond the folder's release.
   */
  private writtenUnder(holder: Entry, path: string, size: number | undefined, since: number, at: number): void {
    holder.unsettledSince = Math.min(holder.unsettledSince ?? since, since);
    holder.lastChangeAt = Math.max(holder.lastChangeAt ?? at, at);
    if (this.recent.size >= this.o.maxPending) this.recent.clear();
    const known = this.recent.get(path);
    this.recent.set(path, { size: size ?? known?.size, unsettledSince: Math.min(known?.unsettledSince ?? since, since), lastChangeAt: at, lastAt: at });
  }

  /** A push can only make its entry ready later, or add a new ready time: keep the minimum. */
  private lower(e: Entry): void {
    if (e.dropped) return;
    const t = this.readyAt(e);
    this.deadline = this.deadline === undefined ? t : Math.min(this.deadline, t);
  }

  /**
   * The outermost pending folder entry holding `path` (dropped ones included, so that events
   * under a deleted temp folder vanish with it). `orSelf`: a file removal on a path that is a
   * pending folder is the folder's (a watcher that learns of a removal after the fact cannot
   * tell a file from a folder); any other file event there is a file replacing the folder.
   */
  private holderOf(path: string, orSelf: boolean): Entry | undefined {
    if (this.dirs.size === 0) return undefined;
    let i = path.indexOf('/');
    while (i >= 0) {
      const d = this.dirs.get(path.slice(0, i));
      if (d) return d;
      i = path.indexOf('/', i + 1);
    }
    return orSelf ? this.dirs.get(path) : undefined;
  }

  /** Entries created before an event on one of their folders fold into that folder. */
  private collapseUnderDirs(): void {
    if (this.dirs.size === 0) return;
    for (const map of [this.files, this.dirs]) {
      for (const [path, e] of map) {
        const holder = this.holderOf(path, !e.isDir && e.gone);
        if (!holder || holder === e) continue;
        holder.firstAt = Math.min(holder.firstAt, e.firstAt);
        holder.lastAt = Math.max(holder.lastAt, e.lastAt);
        holder.events += e.events;
        if (!e.isDir && !e.gone && !holder.dropped && e.unsettledSince !== undefined && e.lastChangeAt !== undefined) {
          this.writtenUnder(holder, path, e.size, e.unsettledSince, e.lastChangeAt);
        }
        map.delete(path);
      }
    }
  }

  private drainAll(): Batch {
    const released: Entry[] = [];
    for (const map of [this.files, this.dirs]) for (const e of map.values()) if (!e.dropped) released.push(e);
    this.files.clear();
    this.dirs.clear();
    for (const e of released) if (!e.isDir && !e.gone) this.remember(e);
    const reasons = this.rescanReasons;
    this.rescanReasons = [];
    this.rescanAt = undefined;
    this.deadline = undefined;
    return this.toBatch(released, true, reasons);
  }

  private toBatch(released: Entry[], rescan: boolean, reasons: string[]): Batch {
    const items: BatchItem[] = released.map((e) => ({ path: e.path, isDir: e.isDir, gone: e.gone, firstEventAt: e.firstAt }));
    items.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
    return { items, rescan, reasons };
  }
}

/** What a pass may send: `scope` undefined is everything; a folder covers what is below it ('' the whole tree). */
function coverage(scope: ChangeScope | undefined): (path: string) => boolean {
  if (!scope) return () => true;
  const files = new Set(scope.files);
  return (path) => files.has(path) || scope.dirs.some((d) => d === '' || path === d || path.startsWith(`${d}/`));
}

function fold(e: Entry, at: number): void {
  e.events++;
  e.firstAt = Math.min(e.firstAt, at);
  e.lastAt = Math.max(e.lastAt, at);
}

function normalize(path: string): string {
  return nfc(path.replace(/^(\.\/)+/, '').replace(/\/+$/, ''));
}

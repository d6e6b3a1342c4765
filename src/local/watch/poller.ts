/**
 * Polling for the parts of a mapped folder where inotify is blind (network and FUSE mounts,
 * folders past the inotify watch limit): a stat-only walk compared with the previous one
 * (the quick check: device, inode, size, mtime, ctime; no content is read), whose changes
 * are reported as the same RawEvents the event watcher sends, so that they go through the
 * same aggregator and planner (renames paired by content, deletions guarded).
 *
 * Each folder is listed in one call, `LocalFs.listFolder`: its entries and its files' `lstat`
 * numbers in one answer, from a worker thread on the disk (folder-lister.ts), so that a hung
 * mount blocks a worker, not libuv's thread pool. Folders are listed without following a link.
 *
 * Cost control: the walk runs at most `concurrency` listings at once (I/O), and
 * after each slice of entries it sleeps long enough that the CPU it used (the workers'
 * included: process CPU) stays under `budgetPercent` of one core. A tree too large for one
 * cycle per interval is therefore not skipped: its cycle takes longer (spread over time),
 * and the interval achieved is reported.
 *
 * Failure is never read as deletion:
 * - a `lstat` that does not answer within `callTimeoutMs`, or a folder's listing that makes
 *   no progress for that long (a hung mount; a listing merely slow keeps moving), ends the cycle with
 *   nothing reported, and no new cycle starts while it is still pending (a hung listing holds
 *   a worker, a hung subtree `lstat` a libuv thread); the problem is reported (the mapping
 *   shows degraded);
 * - a polled subtree whose device changed or vanished (a share unmounted: the mount point is
 *   an empty folder of the parent filesystem) is an outage: nothing is reported under it;
 * - a folder that cannot be read (EACCES) is reported, its last known content kept, the
 *   rest polled.
 *
 * A subtree's first walk only learns it (a snapshot to compare the next walk with). Whatever
 * changed in it before that walk must be found otherwise: for the subtrees learned in the
 * poller's first cycle, by the full pass the caller runs after it (the watcher resolves only
 * once that cycle ended); for a subtree learned later (a folder past the inotify limit found
 * after start, a first cycle cut short by a hung call), the poller itself reports the subtree
 * as a whole once learned (`addDir`, or a `raw` event of the mapped folder: the engine walks
 * it against what was synced), so that an edit made between the start's full pass and the
 * walk that learned its folder is not absorbed into the snapshot unreported.
 */
import type { RawEvent } from './aggregator.js';
import { joinRel } from '../paths.js';
import { errnoOf } from '../../errors/errno.js';
import type { Clock, TimerHandle } from '../../time/clock.js';
import { type LocalFs } from '../fs.js';
import { ENTRY_DIR, ENTRY_FILE, ListingProgress, STAT_CTIME, STAT_DEV, STAT_FAILED, STAT_FIELDS, STAT_INO, STAT_MTIME, STAT_SIZE, type FolderListing } from '../folder-listing.js';

/** The part of the one LocalFs the poller calls (nodeFs, or a fake in tests). */
export type PollFs = Pick<LocalFs, 'lstat' | 'listFolder'>;

export interface PollerOptions {
  root: string;
  /** The polled subtrees, relative to the root ('' = all of it). */
  subtrees: readonly string[];
  /** Read at every use (an edited ignore file swaps it). */
  filter: (relPath: string, isDir: boolean) => boolean;
  emit: (e: RawEvent) => void;
  /** Target time between the starts of two cycles (ms). */
  intervalMs: number;
  /** CPU the poller may use, in percent of one core. */
  budgetPercent: number;
  /**
   * Hung after this long (ms, default 10 s): the lstat of a subtree's folder that has not
   * answered, or a folder's listing that has made no progress (neither its readdir nor any
   * of its files' lstats answered) meanwhile, however long it takes while it moves.
   */
  callTimeoutMs?: number | undefined;
  /**
   * Folder listings in flight at once (default 2). The lister runs as many at once as it has
   * workers (1 or 2); more would only wait in a worker's queue (where the listings before
   * them count as their progress).
   */
  concurrency?: number | undefined;
  fs: PollFs;
  /** Cycles, CPU slices and hung-call deadlines run on its monotonic reading. */
  clock: Clock;
  /** CPU time used by this process so far (ms): a resource, not a clock reading. */
  cpuMs: () => number;
  /** Called when the set of current problems changes. */
  onProblems?: ((problems: readonly PollProblem[]) => void) | undefined;
}

export interface PollProblem {
  kind: 'hung' | 'unmounted' | 'denied' | 'failed';
  /** Relative path concerned ('' = the mapped folder). */
  path: string;
  message: string;
}

export interface PollStats {
  subtrees: string[];
  /** Per polled subtree, in the last complete cycle: files looked at and the time spent on it (ms). */
  bySubtree: Record<string, { files: number; ms: number }>;
  cycles: number;
  /** Files and folders looked at in the last complete cycle. */
  lastEntries: number;
  lastFiles: number;
  /** Wall time of the last complete cycle (ms). */
  lastCycleMs: number | undefined;
  /** Time between the starts of the last two complete cycles (ms): the interval achieved. */
  achievedIntervalMs: number | undefined;
  lastCycleEndedAt: number | undefined;
  /** CPU used by the last cycle (ms). */
  lastCycleCpuMs: number | undefined;
  problems: PollProblem[];
}

interface Seen {
  dev: number;
  ino: number;
  size: number;
  mtimeMs: number;
  ctimeMs: number;
  isDir: boolean;
}

/**
 * What a folder is in the snapshot: a folder's listing has no numbers for its subfolders,
 * and none are needed (the diff compares a folder's presence and type, never its numbers:
 * what changes in it shows in its entries).
 */
const FOLDER: Seen = Object.freeze({ dev: 0, ino: 0, size: 0, mtimeMs: 0, ctimeMs: 0, isDir: true });

class Hung extends Error {}

/** Work between two budget checks (entries listed). */
const SLICE = 256;

/** One poll cycle's work in progress. */
interface Cycle {
  /** The snapshot being made: path -> what was seen. */
  next: Map<string, Seen>;
  problems: PollProblem[];
  /** Waits, after each slice of calls, as long as the CPU budget needs. */
  pace: () => Promise<void>;
  /** A listing made no progress within the timeout: the cycle stops, nothing is reported. */
  hung: boolean;
}

/** Looks at a listing's progress per timeout (call()). */
const LOOKS = 4;

export class Poller {
  private readonly o: PollerOptions;
  private readonly subtrees = new Set<string>();
  /**
   * The subtrees given at construction: mounts, each walked on its own (a mount nested in a
   * polled mount is not walked twice) so that each has its own device check (an unmounted
   * inner share is an outage too). Subtrees added later (folders past the inotify limit)
   * are plain folders below an event-watched parent.
   */
  private readonly mountSubtrees = new Set<string>();
  /** Per subtree: the device it lives on, learned at its first cycle. */
  private readonly devOf = new Map<string, number>();
  /** Everything seen under the polled subtrees at the last cycle. */
  private snapshot = new Map<string, Seen>();
  private baselined = new Set<string>();
  /** Cycles ended so far, complete or not: subtrees learned after the first are reported whole. */
  private cyclesEnded = 0;
  private readonly firstCycle: Promise<void>;
  private firstCycleEnded: () => void = () => undefined;
  private stopped = false;
  private pendingCalls = 0;
  private loop: Promise<void> | undefined;
  private wake: (() => void) | undefined;
  private problems: PollProblem[] = [];
  private readonly stats: PollStats;

  constructor(opts: PollerOptions) {
    this.o = opts;
    for (const s of opts.subtrees) {
      this.subtrees.add(s);
      this.mountSubtrees.add(s);
    }
    this.stats = { subtrees: [...this.subtrees], bySubtree: {}, cycles: 0, lastEntries: 0, lastFiles: 0, lastCycleMs: undefined, achievedIntervalMs: undefined, lastCycleEndedAt: undefined, lastCycleCpuMs: undefined, problems: [] };
    this.firstCycle = new Promise<void>((resolve) => (this.firstCycleEnded = resolve));
  }

  /**
   * Starts cycling. Resolves once the first cycle has ended (complete, or cut short by a
   * hung call) or the poller is stopped: that cycle only learns what is there, so the caller
   * runs its full pass after it (see the file's comment).
   */
  start(): Promise<void> {
    this.loop ??= this.run();
    return this.firstCycle;
  }

  /**
   * Adds a subtree (a folder that could not get an inotify watch); learned at the next
   * cycle. A folder already inside a polled subtree adds nothing; subtrees already below it
   * stay (each walks on its own: see owner()).
   */
  addSubtree(rel: string): void {
    if (this.subtrees.has(rel) || this.owner(rel) !== undefined) return;
    this.subtrees.add(rel);
    this.stats.subtrees = [...this.subtrees];
    this.wake?.();
  }

  status(): PollStats {
    return { ...this.stats, subtrees: [...this.subtrees], bySubtree: { ...this.stats.bySubtree }, problems: [...this.problems] };
  }

  /**
   * The subtree whose walk lists a path: the deepest one holding it strictly (a nested
   * subtree's own folder is an entry of the subtree around it).
   */
  private owner(p: string): string | undefined {
    // Up the path's folders (many subtrees past the watch limit: a lookup per level, not a scan).
    for (let i = p.lastIndexOf('/'); i > 0; i = p.lastIndexOf('/', i - 1)) {
      const dir = p.slice(0, i);
      if (this.subtrees.has(dir)) return dir;
    }
    return p !== '' && this.subtrees.has('') ? '' : undefined;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.firstCycleEnded();
    this.wake?.();
    await this.loop;
  }

  /** One cycle now (tests); resolves when it is done. */
  async cycleOnce(): Promise<void> {
    await this.cycle();
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      const started = this.o.clock.monotonic();
      await this.cycle();
      if (this.stopped) return;
      const wait = Math.max(0, started + this.o.intervalMs - this.o.clock.monotonic());
      await new Promise<void>((resolve) => {
        this.wake = resolve;
        void this.o.clock.sleep(Math.max(wait, 10)).then(resolve);
      });
      this.wake = undefined;
    }
  }

  private setProblems(p: PollProblem[]): void {
    const same = p.length === this.problems.length && p.every((x, i) => x.kind === this.problems[i]!.kind && x.path === this.problems[i]!.path && x.message === this.problems[i]!.message);
    this.problems = p;
    if (!same) this.o.onProblems?.(p);
  }

  private async cycle(): Promise<void> {
    try {
      await this.walkOnce();
    } finally {
      this.cyclesEnded++;
      this.firstCycleEnded();
    }
  }

  private async walkOnce(): Promise<void> {
    const clock = this.o.clock;
    /** Subtrees learned in this cycle are reported whole unless it is the first cycle. */
    const reportLearned = this.cyclesEnded > 0;
    const learned: string[] = [];
    const problems: PollProblem[] = [];
    if (this.pendingCalls > 0) {
      // A call of an earlier cycle still hangs: starting more would pile up on it.
      problems.push({ kind: 'hung', path: '', message: `a filesystem call under ${this.o.root} has not answered for over ${this.timeout() / 1000} s: the mount looks hung; polling waits for it (nothing is deleted meanwhile)` });
      this.setProblems(problems);
      return;
    }
    const startedAt = clock.monotonic();
    const cpu0 = this.o.cpuMs();
    const cycle: Cycle = { next: new Map(), problems, pace: this.budgetPacer(cpu0, startedAt), hung: false };
    let files = 0;
    const bySubtree: PollStats['bySubtree'] = {};
    const events: RawEvent[] = [];
    for (const sub of [...this.subtrees].sort()) {
      if (this.stopped) return;
      const first = !this.baselined.has(sub);
      const subStartedAt = clock.monotonic();
      const top = await this.checkTop(sub, problems);
      if (top === 'hung') return this.setProblems(problems);
      if (top === 'dropped') continue;
      if (top === 'outage') {
        // Keep what was known under it: nothing is reported gone while the share is away.
        this.keep(cycle, sub, sub);
        continue;
      }
      const subFiles = await this.walkSubtree(cycle, sub);
      if (cycle.hung) {
        problems.push({ kind: 'hung', path: sub, message: `a folder listing under ${this.abs(sub)} made no progress for ${this.timeout() / 1000} s: the mount looks hung; nothing is reported until it answers` });
        this.setProblems(problems);
        return; // the snapshot is kept as it was: nothing reported, nothing deleted
      }
      files += subFiles;
      bySubtree[sub] = { files: subFiles, ms: clock.monotonic() - subStartedAt };
      if (first) {
        // Baselined only when the cycle completes: a cycle cut short by a hang stores no snapshot.
        learned.push(sub);
        continue;
      }
      this.diff(sub, cycle.next, events, startedAt);
    }
    if (this.stopped) return;
    this.snapshot = cycle.next;
    for (const sub of learned) {
      this.baselined.add(sub);
      // What changed in it before this walk learned it: the engine walks it as a whole.
      if (reportLearned) events.push(sub === '' ? { kind: 'raw', path: '', at: startedAt, reason: `the poller learned ${this.o.root} after the start's full pass: looking at it whole` } : { kind: 'addDir', path: sub, at: startedAt });
    }
    for (const e of events) this.o.emit(e);
    this.endCycle({ startedAt, cpu0, entries: cycle.next.size, files, bySubtree });
    this.setProblems(problems);
  }

  /**
   * Sleeps after each slice so that CPU stays under the budget: a slice that used C ms of
   * CPU must last C × 100 / budget ms. The time it already took counts: waiting on a slow
   * mount or for a busy CPU is not added to the pause (it would stretch the cycle twice).
   */
  private budgetPacer(cpu0: number, startedAt: number): () => Promise<void> {
    const clock = this.o.clock;
    let sliceCpu0 = cpu0;
    let sliceAt0 = startedAt;
    let sliceCalls = 0;
    /** While set, every worker waits: the pause after a slice holds the whole walk. */
    let gate: Promise<void> | undefined;
    return async () => {
      while (gate) await gate;
      if (++sliceCalls < SLICE) return;
      sliceCalls = 0;
      const used = this.o.cpuMs() - sliceCpu0;
      const rest = (used * 100) / this.o.budgetPercent - (clock.monotonic() - sliceAt0);
      if (rest > 1) {
        gate = clock.sleep(rest).then(() => {
          gate = undefined;
          sliceCpu0 = this.o.cpuMs();
          sliceAt0 = clock.monotonic();
        });
        await gate;
      } else {
        sliceCpu0 = this.o.cpuMs();
        sliceAt0 = clock.monotonic();
      }
    };
  }

  /** The entries of `sub` (or of `dir` below it) as last seen, kept: not seen is not gone. */
  private keep(cycle: Cycle, sub: string, dir: string): void {
    for (const [p, s] of this.snapshot) if (p !== dir && under(p, dir) && this.owner(p) === sub) cycle.next.set(p, s);
  }

  /**
   * Is the subtree's top still the polled filesystem: 'ok'; 'outage' (unmounted, replaced,
   * unreadable); 'hung' (its stat did not answer); 'dropped' (a folder polled for the watch
   * limit, deleted: its event-watched parent reports it).
   */
  private async checkTop(sub: string, problems: PollProblem[]): Promise<'ok' | 'outage' | 'hung' | 'dropped'> {
    try {
      const top = await this.call(() => this.o.fs.lstat(this.abs(sub)));
      const known = this.devOf.get(sub);
      if (!top.isDirectory() || (known !== undefined && known !== top.dev)) {
        problems.push({ kind: 'unmounted', path: sub, message: `${this.abs(sub)} is no longer the polled filesystem (unmounted or replaced): treated as an outage, nothing under it is reported deleted` });
        return 'outage';
      }
      this.devOf.set(sub, top.dev);
      return 'ok';
    } catch (e) {
      if (e instanceof Hung) {
        problems.push({ kind: 'hung', path: sub, message: `stat of ${this.abs(sub)} did not answer within ${this.timeout() / 1000} s: the mount looks hung; nothing is reported until it answers` });
        return 'hung';
      }
      if (!this.mountSubtrees.has(sub) && codeOf(e) === 'ENOENT') {
        this.dropSubtree(sub);
        return 'dropped';
      }
      problems.push({ kind: 'unmounted', path: sub, message: `${this.abs(sub)} cannot be read (${codeOf(e)}): treated as an outage, nothing under it is reported deleted` });
      return 'outage';
    }
  }

  /** Breadth-first over the subtree's folders, `concurrency` listings at once: the files seen. */
  private async walkSubtree(cycle: Cycle, sub: string): Promise<number> {
    const queue: string[] = [sub];
    const limit = this.o.concurrency ?? 2;
    let files = 0;
    await new Promise<void>((resolve) => {
      let running = 0;
      const pump = (): void => {
        while (!cycle.hung && !this.stopped && running < limit && queue.length > 0) {
          const dir = queue.shift()!;
          running++;
          void this.visit(cycle, sub, dir, queue).then((n) => void (files += n)).finally(() => {
            running--;
            pump();
          });
        }
        if (running === 0 && (queue.length === 0 || cycle.hung || this.stopped)) resolve();
      };
      pump();
    });
    return files;
  }

  /** One folder of `sub`: its entries into the cycle's snapshot, its subfolders onto `queue`; the files seen. */
  private async visit(cycle: Cycle, sub: string, dir: string, queue: string[]): Promise<number> {
    let listing: FolderListing;
    try {
      // One call per folder: its entries and its files' lstat (LocalFs.listFolder). Never
      // through a link (an entry that is a link is not polled; a folder swapped for one
      // since its parent was listed is gone from here). No signal: see call().
      const progress = new ListingProgress();
      listing = await this.call(() => this.o.fs.listFolder(this.abs(dir), { noFollow: true, progress }), progress);
    } catch (e) {
      if (e instanceof Hung) {
        cycle.hung = true;
        return 0;
      }
      const code = codeOf(e);
      if (code === 'ENOENT' || code === 'ENOTDIR' || code === 'ELOOP') return 0; // gone since its parent was read
      cycle.problems.push({ kind: code === 'EACCES' || code === 'EPERM' ? 'denied' : 'failed', path: dir, message: `cannot list ${this.abs(dir)} (${code}): its content is not polled; the rest is` });
      this.keep(cycle, sub, dir);
      return 0;
    }
    const { names, types, stats } = listing;
    const { next } = cycle;
    let files = 0;
    for (let i = 0; i < names.length; i++) {
      if (cycle.hung || this.stopped) return files;
      const type = types[i];
      // Links, FIFOs, sockets and devices are neither folders nor files to poll.
      if (type !== ENTRY_DIR && type !== ENTRY_FILE) continue;
      const rel = joinRel(dir, names[i]!);
      const isDir = type === ENTRY_DIR;
      if (!this.o.filter(rel, isDir)) continue;
      await cycle.pace();
      if (isDir) {
        // A subtree of its own (a mount inside this one) is walked on its own.
        if (!this.subtrees.has(rel)) queue.push(rel);
        next.set(rel, FOLDER);
        continue;
      }
      const o = i * STAT_FIELDS;
      const size = stats[o + STAT_SIZE]!;
      if (size >= 0) {
        files++;
        const ctimeMs = stats[o + STAT_CTIME]!;
        next.set(rel, { dev: stats[o + STAT_DEV]!, ino: stats[o + STAT_INO]!, size, mtimeMs: stats[o + STAT_MTIME]!, ctimeMs: Number.isNaN(ctimeMs) ? 0 : ctimeMs, isDir: false });
      } else if (size === STAT_FAILED) {
        // Unreadable is not gone: it (and, were it a folder when last seen, what it held) is kept as last seen.
        const old = this.snapshot.get(rel);
        if (old) {
          next.set(rel, old);
          if (old.isDir) this.keep(cycle, sub, rel);
        }
      }
      // STAT_GONE (deleted since listed) and STAT_OTHER_TYPE (no longer a regular file):
      // not there as a file now.
    }
    return files;
  }

  /** A complete cycle's figures into the stats. */
  private endCycle(c: { startedAt: number; cpu0: number; entries: number; files: number; bySubtree: PollStats['bySubtree'] }): void {
    const end = this.o.clock.monotonic();
    const achievedIntervalMs = this.lastStart === undefined ? undefined : c.startedAt - this.lastStart;
    this.lastStart = c.startedAt;
    const cycle = { lastEntries: c.entries, lastFiles: c.files, bySubtree: c.bySubtree, achievedIntervalMs, lastCycleMs: end - c.startedAt, lastCycleEndedAt: end, lastCycleCpuMs: this.o.cpuMs() - c.cpu0 };
    Object.assign(this.stats, { cycles: this.stats.cycles + 1 }, cycle);
  }

  private lastStart: number | undefined;

  private dropSubtree(sub: string): void {
    this.subtrees.delete(sub);
    this.baselined.delete(sub);
    this.devOf.delete(sub);
    this.stats.subtrees = [...this.subtrees];
  }

  /** What changed in `sub` (not in subtrees nested in it) between the snapshot and `next`, as RawEvents. */
  private diff(sub: string, next: Map<string, Seen>, out: RawEvent[], at: number): void {
    for (const [p, s] of next) {
      if (this.owner(p) !== sub) continue;
      const old = this.snapshot.get(p);
      if (!old || old.isDir !== s.isDir) {
        out.push(s.isDir ? { kind: 'addDir', path: p, at } : { kind: 'add', path: p, size: s.size, mtimeMs: s.mtimeMs, at });
      } else if (!s.isDir && (old.ino !== s.ino || old.size !== s.size || old.mtimeMs !== s.mtimeMs || old.ctimeMs !== s.ctimeMs || old.dev !== s.dev)) {
        out.push({ kind: 'change', path: p, size: s.size, mtimeMs: s.mtimeMs, at });
      }
    }
    for (const [p, old] of this.snapshot) {
      if (this.owner(p) !== sub || next.has(p)) continue;
      out.push({ kind: old.isDir ? 'unlinkDir' : 'unlink', path: p, at });
    }
  }

  private abs(rel: string): string {
    return rel === '' ? this.o.root : `${this.o.root}/${rel}`;
  }

  private timeout(): number {
    return this.o.callTimeoutMs ?? 10_000;
  }

  /**
   * A filesystem call with a bounded wait. A call that times out keeps running (a syscall
   * cannot be cancelled); it is counted until it settles, and no cycle starts meanwhile, so
   * a hung mount holds at most one cycle's listings. A listing is not aborted at its
   * deadline: the lister tells a stuck worker by the requests it still has (folder-lister.ts
   * `pick`), and an abandoned one would make the worker blocked in the kernel look idle, the
   * next listing of any mapping handed to it.
   *
   * With `progress` (a listing), the deadline is on progress, not on the whole call: it is
   * looked at every quarter of the timeout, and the call is hung once it has not moved for
   * four looks in a row (no progress for the timeout, noticed within a quarter more). A
   * folder of 10,000 files at 1 ms per `lstat` takes 10 s and is slow, not hung. Without it
   * (a single `lstat`), the whole call has the timeout.
   */
  private call<T>(f: () => Promise<T>, progress?: ListingProgress): Promise<T> {
    this.pendingCalls++;
    const p = f().finally(() => {
      this.pendingCalls--;
    });
    return new Promise<T>((resolve, reject) => {
      let done = false;
      const looks = progress ? LOOKS : 1;
      let seen = progress?.read();
      let quiet = 0;
      let t: TimerHandle;
      const look = (): void => {
        if (done) return;
        const now = progress?.read();
        // A look that sees it moved starts the count again: that progress may be just before it.
        if (now !== seen) {
          seen = now;
          quiet = 0;
        } else {
          quiet++;
        }
        if (quiet < looks) {
          t = this.o.clock.setTimeout(look, this.timeout() / looks);
          return;
        }
        done = true;
        reject(new Hung());
      };
      t = this.o.clock.setTimeout(look, this.timeout() / looks);
      const settle = <V>(f: (v: V) => void) => (v: V): void => {
        if (done) return;
        done = true;
        this.o.clock.clearTimeout(t);
        f(v);
      };
      p.then(settle(resolve), settle(reject));
    });
  }
}

function under(p: string, sub: string): boolean {
  return sub === '' || p === sub || p.startsWith(`${sub}/`);
}

function codeOf(e: unknown): string {
  return errnoOf(e) ?? (e instanceof Error ? e.message : String(e));
}

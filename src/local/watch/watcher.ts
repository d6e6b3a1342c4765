/**
 * Watches one mapped folder and reports RawEvents (relative POSIX NFC paths, with the time
 * they happened) for the aggregator. It decides nothing: a missed or extra event costs a
 * look at a path, never a wrong operation (the planner checks the disk).
 *
 * Two sources, both feeding the same aggregator (docs/watch.md):
 * - events: one plain fs.watch per folder (folder-watch.ts), no watch and no stat per file.
 *   A folder's watch names every file created, written, renamed or deleted in it; each named
 *   file is then lstat-ed once (at most one stat per path at a time) to tell "exists, with
 *   this size" from "gone", and that stat is kept for the pass's look (ObservedStats). Files created in a brand-new folder before its watch exists have no
 *   event, but the folder's `addDir` makes the engine walk it whole;
 * - polling (watch/poller.ts): a stat-only walk of the mounts where inotify cannot see other
 *   hosts' changes (network, FUSE, unknown: watch/mounts.ts), and of folders past the
 *   inotify watch limit.
 *
 * The mapping's filter applies here too: excluded folders are not watched at all, events
 * for excluded files are not reported (temp, lock and swap files are excluded by the
 * filter; the planner pairs renames by content, so it never needs to see them).
 */
import { realpath, stat } from 'node:fs/promises';
import { resolve } from 'node:path';
import type { RawEvent } from './aggregator.js';
import type { ObservedStats } from '../observed-stats.js';
import { watchFolders, type FolderWatch } from './folder-watch.js';
import { mountFor, parseMountInfo, planMounts, readMountInfo, type MountPlanEntry } from './mounts.js';
import { Poller, type PollStats } from './poller.js';
import { inotifyQueue, RAISE_QUEUE_LIMIT, type QueueOverflow, type QueueView } from './queue-overflow.js';
import { watchBackend, type WatchBackend } from './inotify.js';
import { toRelPath } from '../paths.js';
import { nodeFs } from '../fs.js';
import type { Clock } from '../../time/clock.js';
import { errnoOf } from '../../errors/errno.js';

/**
 * What went wrong, for the daemon:
 * - 'E_WATCH_ROOT_GONE': the mapped folder vanished (deleted, renamed, unmounted); the watcher no
 *   longer sees anything: mark the mapping degraded, start a new watcher once it is back;
 * - 'E_WATCH_ROOT_UNUSABLE': the mapped folder could not be watched at start (missing, not a folder);
 * - 'E_WATCH_LIMIT': the system's watch limit is reached (ENOSPC/EMFILE): events are being
 *   missed in some folders from now on; rescan periodically and raise the limit;
 * - 'E_WATCH_FAILED': any other watcher failure; events may have been missed: rescan;
 * - 'E_WATCH_DEGRADED': the poller cannot see part of the folder (a hung or unmounted share,
 *   a folder it may not read); nothing is reported deleted there; status() lists it;
 * - 'E_WATCH_MOUNTS_CHANGED': a filesystem was mounted or unmounted on or below the folder since the
 *   watcher started (a share mounted again over the bare mount point, a share mounted into
 *   a subfolder): this watcher's events and polling plan no longer fit; start a new one;
 * - 'E_WATCH_QUEUE_OVERFLOW': so many events arrived at once that the kernel's inotify queue may
 *   have overflowed and dropped some (watch/queue-overflow.ts): rescan;
 * - 'E_WATCH_ROOT_MOVED': the mapped path now leads to another folder (a symlink re-pointed, the
 *   deploy switch `ln -sfn releases/2 current`) while the old one still exists: this
 *   watcher follows the old folder; start a new one, and look at everything (full pass).
 */
import type { WatchErrorCode } from '../../errors/codes.js';

export class WatchError extends Error {
  override readonly name = 'WatchError';
  constructor(
    readonly code: WatchErrorCode,
    /** The mapped folder. */
    readonly root: string,
    message: string,
    /** True when events may have been lost: the daemon should ask for a rescan. */
    readonly lostEvents: boolean,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

export interface WatcherOptions {
  /** The mapped folder. */
  root: string;
  /** The mapping's filter on relative paths (true: mirrored). */
  filter: (relPath: string, isDir: boolean) => boolean;
  /**
   * The mapping's ignore file (relative path) and how to read the filter again: when the
   * file is edited, the new filter applies to the watches at once (folders it now excludes
   * are dropped, folders it now includes are watched) and the mapped folder is reported as
   * a whole (a full pass: newly excluded documents follow the deletion rules, newly
   * included files are uploaded). A reload that fails keeps the old filter (the pass then
   * finds the ignore file unreadable and treats the folder as an outage).
   */
  ignoreFile?: string | undefined;
  reloadFilter?: (() => Promise<(relPath: string, isDir: boolean) => boolean>) | undefined;
  onEvent: (e: RawEvent) => void;
  /** Where the stat of each event's file is kept for the local side's look at it. */
  observed?: ObservedStats | undefined;
  onError: (err: WatchError) => void;
  /** Called once the initial watch is set up (startWatcher resolves then too). */
  onReady?: (() => void) | undefined;
  /**
   * How changes are learned of (docs/watch.md): 'auto' (the config's default) watches events
   * everywhere and also polls the mounts where events miss what other hosts change
   * (network, FUSE, unknown); 'events' never polls (but folders past the inotify limit);
   * 'poll' polls everything and watches no event.
   */
  watchMode: 'auto' | 'events' | 'poll';
  /** The poller's target interval (ms) and CPU budget (% of one core): the config's `watch` (its defaults are DEFAULTS.watch). */
  pollTargetMs: number;
  pollBudgetPercent: number;
  /** The mount table's text (tests); default /proc/self/mountinfo. */
  readMountInfo?: (() => Promise<string>) | undefined;
  /** How often the folder's identity and the mounts below it are checked again (ms, default 5 s). */
  mountCheckMs?: number | undefined;
  /**
   * Aborted when the caller stops: a start still waiting for the poller's first cycle (a
   * large share walks for minutes at its CPU budget) ends at once; the caller closes what
   * it gets.
   */
  signal?: AbortSignal | undefined;
  /**
   * The one clock: events are stamped with its monotonic reading (the aggregator's windows
   * run on it), the poller and the mount checks wait on it. The caller supplies the real one.
   */
  clock: Clock;
}

/** A mount of the folder, how it is watched, and for a polled one its share of the last cycle. */
export interface WatchedMount extends MountPlanEntry {
  /** Files looked at under this mount in the last complete poll cycle (polled mounts). */
  files?: number | undefined;
  /** Time the last complete cycle spent on this mount (ms). */
  lastCycleMs?: number | undefined;
}

/** What the watcher does, for status, metrics and `config check`. */
export interface WatchStatus {
  /** The watch.mode it runs under. */
  mode: 'auto' | 'events' | 'poll';
  /** The mounts the folder spans, each with how it is watched and why. */
  mounts: WatchedMount[];
  /** Folders (relative) polled because no inotify watch could be added (ENOSPC). */
  overLimit: string[];
  /** The fix for overLimit, when there is some. */
  limitFix?: string | undefined;
  /** Present when something is polled; with the settings it runs under. */
  poll?: (PollStats & { targetIntervalMs: number; budgetPercent: number }) | undefined;
  /** Current problems of the watch (hung or unmounted share, denied folder, watch limit). */
  problems: string[];
  /** The process's watch, when events are watched (inotify.ts). */
  backend?: WatchBackend | undefined;
  /**
   * The process's inotify queue, when events are watched: its size and the overflows seen
   * since the daemon started (each one rescanned every mapping).
   */
  queue?: QueueView | undefined;
}

export interface Watcher {
  /** The watched folder as resolved (symbolic links resolved). */
  readonly root: string;
  /** Stops watching; no event or error is reported after it resolves. */
  close(): Promise<void>;
  /**
   * Folders whose watch is set up (the mapped folder included): the inotify cost in
   * watched mounts. A new folder counts once events in it are seen.
   */
  watchedDirs(): number;
  /** What is watched and polled, and current problems (absent in test doubles). */
  status?(): WatchStatus;
}

/** The command that raises the inotify watch limit (said wherever the limit is reported). */
export const RAISE_WATCH_LIMIT = 'sysctl fs.inotify.max_user_watches=524288 (and in /etc/sysctl.d/ to keep it)';

/**
 * Starts watching `opts.root`; resolves once the initial watch is ready and, when something
 * is polled, the poller's first cycle has learned it (the caller's full pass comes after it,
 * so a change made meanwhile is seen by one or the other). Rejects with a
 * WatchError('E_WATCH_ROOT_UNUSABLE') when the folder is missing or not a folder.
 */
export async function startWatcher(opts: WatcherOptions): Promise<Watcher> {
  const run = await openRun(opts);
  const { root, clock } = run;
  let folders: FolderWatch | undefined;
  const onIgnoreFileChange = ignoreFileReloader(run, opts, async () => {
    await folders?.refilter();
  });
  const ignoreRel = opts.ignoreFile ? toRelPath(root, resolve(root, opts.ignoreFile)) : undefined;

  // Which mounts get events and which are polled (auto: by filesystem type).
  const watchMode = opts.watchMode;
  const mounts = planMounts(parseMountInfo(await (opts.readMountInfo ?? readMountInfo)()), root, watchMode);
  const overLimit: string[] = [];
  let limitProblem: string | undefined;
  let pollProblems: string[] = [];
  let poller: Poller | undefined;
  /** Set once the start's first cycle ran: a poller created later starts at once. */
  let pollerStarted = false;
  const polledMounts = mounts.filter((m) => m.kind === 'poll').map((m) => m.rel);
  const usePoller = (): Poller => {
    if (poller) return poller;
    poller = newPoller(run, opts, polledMounts, (problems) => {
      pollProblems = problems.map((p) => p.message);
      // Logged (and the mapping shows degraded through status()); events are not lost.
      for (const p of problems) run.fail(new WatchError('E_WATCH_DEGRADED', root, p.message, false));
    });
    if (pollerStarted && !run.closed) void poller.start();
    return poller;
  };

  let unsubscribeQueue: (() => void) | undefined;
  if (watchMode !== 'poll') {
    // Before the process's first watch creates the inotify queue: its size is fixed then.
    await inotifyQueue.prepare();
    folders = await watchFolders({
      root,
      filter: (p, isDir) => run.filter(p, isDir),
      emit: run.emit,
      checkRoot: () => void checkRoot(run),
      onWatchError: (err) => run.fail(classifyWatchError(root, err)),
      // Past the inotify limit, folders are polled instead of going unwatched.
      onWatchLimit: (rel) => {
        overLimit.push(rel);
        const first = limitProblem === undefined;
        limitProblem = `the inotify watch limit is reached: ${overLimit.length} folder(s) under ${root} are polled instead of watched; raise it: ${RAISE_WATCH_LIMIT}`;
        if (first) run.fail(new WatchError('E_WATCH_LIMIT', root, limitProblem, false));
        usePoller().addSubtree(rel);
      },
      ignoreFile: ignoreRel ? { rel: ignoreRel, onChange: onIgnoreFileChange } : undefined,
      clock,
    });
    // The queue is the process's: an overflow may have dropped events of any folder. (One
    // during the setup above is covered by the caller's full pass, which comes after it.)
    unsubscribeQueue = inotifyQueue.subscribe((o) => run.fail(queueOverflowError(root, o)));
  }
  if (polledMounts.length > 0) usePoller();
  pollerStarted = true;
  // Its first cycle learns the polled tree before the caller's full pass (see above).
  if (poller && !run.closed) await firstCycle(poller, opts.signal);
  void watchMounts(run, opts, mounts);
  opts.onReady?.();
  return {
    root,
    async close() {
      run.closed = true;
      unsubscribeQueue?.();
      folders?.close();
      await poller?.stop();
    },
    watchedDirs: () => folders?.watchedDirs() ?? 0,
    status: () => {
      const poll = poller?.status();
      return {
        mode: watchMode,
        mounts: poll ? withPollFigures(mounts, poll) : mounts,
        overLimit: [...overLimit],
        limitFix: overLimit.length > 0 ? RAISE_WATCH_LIMIT : undefined,
        poll: poll && { ...poll, targetIntervalMs: opts.pollTargetMs, budgetPercent: opts.pollBudgetPercent },
        problems: [...(limitProblem ? [limitProblem] : []), ...pollProblems],
        backend: folders ? watchBackend() : undefined,
        queue: folders ? inotifyQueue.view() : undefined,
      };
    },
  };
}

/** One watcher's folder and what its parts share while it runs. */
interface WatchRun {
  /** The folder as configured, and as resolved (symbolic links followed) with its identity. */
  readonly given: string;
  readonly root: string;
  readonly identity: { dev: number; ino: number };
  readonly clock: Clock;
  /** The mapping's filter, replaced when the ignore file is read again. */
  filter: (relPath: string, isDir: boolean) => boolean;
  closed: boolean;
  rootGone: boolean;
  rootMoved: boolean;
  /** Hands an event to the caller (none once closed or the root is gone). */
  emit(e: RawEvent): void;
  /** Reports an error to the caller (none once closed). */
  fail(err: WatchError): void;
}

/** The folder resolved and checked (WatchError 'E_WATCH_ROOT_UNUSABLE' when missing or not a folder). */
async function openRun(opts: WatcherOptions): Promise<WatchRun> {
  const given = resolve(opts.root);
  let root: string;
  let identity: { dev: number; ino: number };
  try {
    root = await realpath(given);
    const st = await stat(root);
    if (!st.isDirectory()) throw new Error('not a folder');
    identity = { dev: st.dev, ino: st.ino };
  } catch (e) {
    throw new WatchError('E_WATCH_ROOT_UNUSABLE', given, `cannot watch ${given}: ${describe(e)}`, true, { cause: e });
  }
  const run: WatchRun = {
    given, root, identity, clock: opts.clock, filter: opts.filter, closed: false, rootGone: false, rootMoved: false,
    emit: (e) => {
      // After the root is gone, paths under it mean nothing (the daemon starts a new watcher).
      if (run.closed || run.rootGone) return;
      try {
        opts.observed?.note(e.path, e.stat);
        opts.onEvent(e);
      } catch (err) {
        opts.onError(new WatchError('E_WATCH_FAILED', root, `the event handler failed on ${e.kind} ${e.path}: ${describe(err)}`, true, { cause: err }));
      }
    },
    fail: (err) => {
      if (!run.closed) opts.onError(err);
    },
  };
  return run;
}

/**
 * The root's watch names the root itself when it is deleted or moved away. The inode check
 * also catches a folder renamed away and another created in its place: the watches
 * follow the old inode, so events would describe the wrong folder.
 */
async function checkRoot(run: WatchRun): Promise<void> {
  const { root, given, identity } = run;
  let same = false;
  try {
    const st = await stat(root);
    same = st.isDirectory() && st.dev === identity.dev && st.ino === identity.ino;
  } catch {
    // gone
  }
  if (!same) {
    if (run.closed || run.rootGone) return;
    run.rootGone = true;
    run.fail(new WatchError('E_WATCH_ROOT_GONE', root, `the watched folder ${root} is gone (deleted, renamed or unmounted); nothing under it is watched any more`, true));
    return;
  }
  // The path as configured, followed: a symlink (or a symlink above it) re-pointed leads
  // elsewhere while the folder watched is still there.
  try {
    const st = await stat(given);
    if (st.dev === identity.dev && st.ino === identity.ino) return;
  } catch {
    return; // the link is being replaced (ln -sfn renames over it) or gone: looked at again at the next check
  }
  if (run.closed || run.rootMoved) return;
  run.rootMoved = true;
  const now = await realpath(given).catch(() => given);
  run.fail(new WatchError('E_WATCH_ROOT_MOVED', root, `${given} now leads to ${now}, no longer to ${root}: watching it again`, true));
}

/**
 * What an edit of the ignore file does: the filter read again, the watches refiltered, the
 * folder reported as a whole. One reload at a time; an edit during a reload triggers one
 * more afterwards.
 */
function ignoreFileReloader(run: WatchRun, opts: Pick<WatcherOptions, 'reloadFilter' | 'ignoreFile'>, refilter: () => Promise<void>): () => void {
  let reloading: Promise<void> | undefined;
  let reloadAgain = false;
  return () => {
    if (reloading) {
      reloadAgain = true;
      return;
    }
    reloading = (async () => {
      do {
        reloadAgain = false;
        const at = run.clock.monotonic();
        try {
          if (opts.reloadFilter) run.filter = await opts.reloadFilter();
        } catch {
          // Kept the old filter: the full pass below reports the unreadable ignore file.
        }
        if (run.closed) return;
        await refilter();
        run.emit({ kind: 'raw', path: '', at, reason: `the ignore file ${opts.ignoreFile ?? ''} changed` });
      } while (reloadAgain && !run.closed);
    })().finally(() => {
      reloading = undefined;
    });
  };
}

function newPoller(run: WatchRun, opts: WatcherOptions, subtrees: string[], onProblems: (problems: readonly { message: string }[]) => void): Poller {
  return new Poller({
    root: run.root,
    subtrees,
    filter: (p, isDir) => run.filter(p, isDir),
    emit: run.emit,
    intervalMs: opts.pollTargetMs,
    budgetPercent: opts.pollBudgetPercent,
    fs: nodeFs,
    clock: run.clock,
    cpuMs: () => {
      const u = process.cpuUsage();
      return (u.user + u.system) / 1000;
    },
    onProblems,
  });
}

/** The poller's first cycle, given up (the poller stopped) when `signal` aborts. */
async function firstCycle(poller: Poller, signal: AbortSignal | undefined): Promise<void> {
  const giveUp = (): void => void poller.stop();
  if (signal?.aborted) giveUp();
  signal?.addEventListener('abort', giveUp, { once: true });
  await poller.start();
  signal?.removeEventListener('abort', giveUp);
}

/**
 * Mounts change without an event: a share unmounted leaves its watches silent, a share
 * mounted again over the bare mount point hides the folder this watcher follows. The
 * folder's identity and the mount table are looked at again every few seconds (one
 * stat, one read of /proc/self/mountinfo; a check still waiting on a hung mount is not
 * repeated).
 */
async function watchMounts(run: WatchRun, opts: WatcherOptions, mounts: readonly MountPlanEntry[]): Promise<void> {
  const planKey = (plan: readonly MountPlanEntry[]): string => plan.map((m) => `${m.rel}\0${m.mountPoint}\0${m.fsType}\0${m.source}\0${m.kind}`).join('\n');
  const startedPlan = planKey(mounts);
  const over = (): boolean => run.closed || run.rootGone;
  while (!over()) {
    // On the clock's timer, which keeps no stopping process alive (as the check must not).
    await new Promise<void>((r) => run.clock.setTimeout(r, opts.mountCheckMs ?? 5_000));
    if (over()) return;
    await checkRoot(run);
    if (over()) return;
    const now = planMounts(parseMountInfo(await (opts.readMountInfo ?? readMountInfo)()), run.root, opts.watchMode);
    if (over()) return;
    if (planKey(now) !== startedPlan) {
      const what = now.map((m) => `${m.mountPoint} ${m.fsType}`).join(', ');
      run.fail(new WatchError('E_WATCH_MOUNTS_CHANGED', run.root, `the filesystems mounted on or below ${run.root} changed (now: ${what}): watching it again`, true));
      return;
    }
  }
}

/**
 * Each polled mount's share of the last cycle: the polled subtrees it holds (itself, and
 * folders past the watch limit would belong to an event-watched mount). Subtrees not yet
 * walked leave the figures absent.
 */
function withPollFigures(mounts: readonly MountPlanEntry[], poll: PollStats): WatchedMount[] {
  return mounts.map((m) => {
    if (m.kind !== 'poll') return m;
    let files: number | undefined;
    let ms: number | undefined;
    for (const [sub, f] of Object.entries(poll.bySubtree)) {
      if (mountFor(mounts, sub) !== m) continue;
      files = (files ?? 0) + f.files;
      ms = (ms ?? 0) + f.ms;
    }
    return { ...m, files, lastCycleMs: ms };
  });
}

/** A possible inotify queue overflow: what happened, what dssync does, and the fix if it repeats. */
function queueOverflowError(root: string, o: QueueOverflow): WatchError {
  return new WatchError(
    'E_WATCH_QUEUE_OVERFLOW',
    root,
    o.events === undefined
      ? `the inotify event queue overflowed (the kernel reported it; it holds ${o.queueSize} events, fs.inotify.max_queued_events) and events were dropped, so everything under ${root} is looked at again (full pass); if this repeats, raise it: ${RAISE_QUEUE_LIMIT}`
      : `the inotify event queue may have overflowed: ${o.events} events arrived at once and it holds ${o.queueSize} (fs.inotify.max_queued_events); the kernel drops what does not fit, so everything under ${root} is looked at again (full pass); if this repeats, raise it: ${RAISE_QUEUE_LIMIT}`,
    true,
  );
}

/** A watch error as a WatchError: a watch limit is told apart (it needs the operator). */
export function classifyWatchError(root: string, err: unknown): WatchError {
  const code = errnoOf(err);
  if (code === 'ENOSPC' || code === 'EMFILE' || code === 'ENFILE') {
    const which = code === 'ENOSPC' ? `ENOSPC: the inotify watch limit): changes there are missed until the next rescan; raise it: ${RAISE_WATCH_LIMIT}` : `${code}: the open-file limit): changes there are missed until the next rescan; raise LimitNOFILE= (systemd) or ulimit -n`;
    return new WatchError('E_WATCH_LIMIT', root, `cannot watch more folders under ${root} (${which}`, true, { cause: err });
  }
  return new WatchError('E_WATCH_FAILED', root, `watching ${root} failed: ${describe(err)}`, true, { cause: err });
}

function describe(e: unknown): string {
  if (e instanceof Error) {
    const code = (e as NodeJS.ErrnoException).code;
    return code && !e.message.includes(code) ? `${code}: ${e.message}` : e.message;
  }
  return String(e);
}

/**
 * The chokidar adapter: watches one mapped folder and reports RawEvents (relative POSIX NFC
 * paths, with the time they happened) for the aggregator. It decides nothing: a missed or
 * extra event costs a look at a path, never a wrong operation (the planner checks the disk).
 *
 * Two modes (LIBRARIES.md, chokidar 5, and an experiment on this machine):
 * - 'folders' (default): one plain fs.watch per folder (folder-watch.ts), no watch and no
 *   stat per file (chokidar stats every file at start, even ignored ones). A folder's
 *   watch names every file created, written, renamed or deleted in it; each named file is
 *   then lstat-ed (at most one stat per path at a time) to tell "exists, with this size"
 *   from "gone". Files created in a brand-new folder before its watch exists have no
 *   event, but the folder's `addDir` makes the engine walk it whole.
 * - 'files': chokidar watches every file and its add/change/unlink events are passed on.
 *   Forced by polling (polling a folder cannot see a file's content change).
 *
 * The mapping's filter applies here too: excluded folders are not watched at all, events
 * for excluded files are not reported (temp, lock and swap files are excluded by the
 * filter; the planner pairs renames by content, so it never needs to see them).
 */
import { watch, type FSWatcher } from 'chokidar';
import type { Dirent, Stats } from 'node:fs';
import { lstat, readdir, realpath, stat } from 'node:fs/promises';
import { setTimeout as delay } from 'node:timers/promises';
import { basename, join, resolve } from 'node:path';
import type { RawEvent } from './aggregator.js';
import { watchFolders } from './folder-watch.js';
import { isInside, toRelPath } from './paths.js';

export type WatchMode = 'folders' | 'files';

/**
 * What went wrong, for the daemon:
 * - 'root-gone': the mapped folder vanished (deleted, renamed, unmounted); the watcher no
 *   longer sees anything: mark the mapping degraded, start a new watcher once it is back;
 * - 'root-unusable': the mapped folder could not be watched at start (missing, not a folder);
 * - 'watch-limit': the system's watch limit is reached (ENOSPC/EMFILE): events are being
 *   missed in some folders from now on; rescan periodically and raise the limit;
 * - 'watch-failed': any other watcher failure; events may have been missed: rescan.
 */
export type WatchErrorCode = 'root-gone' | 'root-unusable' | 'watch-limit' | 'watch-failed';

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
  onError: (err: WatchError) => void;
  /** Called once the initial watch is set up (startWatcher resolves then too). */
  onReady?: (() => void) | undefined;
  /** Poll instead of inotify (network mounts where inotify sees nothing); implies 'files'. */
  usePolling?: boolean | undefined;
  /** Polling interval (ms, default 1000). */
  pollIntervalMs?: number | undefined;
  /** Watch every file too (one inotify watch each). Default false: folders only. */
  watchFiles?: boolean | undefined;
  now?: (() => number) | undefined;
}

export interface Watcher {
  readonly mode: WatchMode;
  /** The watched folder as resolved (symbolic links resolved). */
  readonly root: string;
  /** Stops watching; no event or error is reported after it resolves. */
  close(): Promise<void>;
  /**
   * Folders whose watch is set up (the mapped folder included): the inotify cost in
   * 'folders' mode. A new folder counts once events in it are seen.
   */
  watchedDirs(): number;
}

/** How often a new folder is checked for its watch being up, and for how long at most. */
const VERIFY_POLL_MS = 25;
const VERIFY_GIVE_UP_MS = 10_000;

/** At most this many stats at once in 'folders' mode (a burst of 10,000 files queues). */
const STAT_CONCURRENCY = 16;

/**
 * Starts watching `opts.root`; resolves once the initial watch is ready. Rejects with a
 * WatchError('root-unusable') when the folder is missing or not a folder.
 */
export async function startWatcher(opts: WatcherOptions): Promise<Watcher> {
  const now = opts.now ?? Date.now;
  const given = resolve(opts.root);
  let root: string;
  let identity: { dev: number; ino: number };
  try {
    root = await realpath(given);
    const st = await stat(root);
    if (!st.isDirectory()) throw new Error('not a folder');
    identity = { dev: st.dev, ino: st.ino };
  } catch (e) {
    throw new WatchError('root-unusable', given, `cannot watch ${given}: ${describe(e)}`, true, { cause: e });
  }
  const mode: WatchMode = opts.usePolling || opts.watchFiles ? 'files' : 'folders';
  let closed = false;

  let rootGone = false;
  const emit = (e: RawEvent): void => {
    // After the root is gone, paths under it mean nothing (the daemon starts a new watcher).
    if (closed || rootGone) return;
    try {
      opts.onEvent(e);
    } catch (err) {
      opts.onError(new WatchError('watch-failed', root, `the event handler failed on ${e.kind} ${e.path}: ${describe(err)}`, true, { cause: err }));
    }
  };
  const fail = (err: WatchError): void => {
    if (!closed) opts.onError(err);
  };

  const reportRootGone = (): void => {
    if (rootGone) return;
    rootGone = true;
    fail(new WatchError('root-gone', root, `the watched folder ${root} is gone (deleted, renamed or unmounted); nothing under it is watched any more`, true));
  };
  /**
   * chokidar does not always report the root's own removal (an empty root: never), but the
   * root's watch names the root itself when it is deleted or moved away. The inode check
   * also catches a folder renamed away and another created in its place: the watches
   * follow the old inode, so events would describe the wrong folder.
   */
  const checkRoot = async (): Promise<void> => {
    try {
      const st = await stat(root);
      if (st.isDirectory() && st.dev === identity.dev && st.ino === identity.ino) return;
    } catch {
      // gone
    }
    if (!closed) reportRootGone();
  };

  const rel = (abs: string): string | undefined => toRelPath(root, abs);
  let filter = opts.filter;

  if (mode === 'folders') {
    // Plain fs.watch per folder (folder-watch.ts): chokidar would stat every file at start.
    const queue = new StatQueue(
      STAT_CONCURRENCY,
      (r, abs, at, named) =>
        statEvent(r, abs, at, named).then((e) => {
          if (e) emit(e);
        }),
      () => closed,
    );
    /** One reload at a time; an edit during a reload triggers one more afterwards. */
    let reloading: Promise<void> | undefined;
    let reloadAgain = false;
    const onIgnoreFileChange = (): void => {
      if (reloading) {
        reloadAgain = true;
        return;
      }
      reloading = (async () => {
        do {
          reloadAgain = false;
          const at = now();
          try {
            if (opts.reloadFilter) filter = await opts.reloadFilter();
          } catch {
            // Kept the old filter: the full pass below reports the unreadable ignore file.
          }
          if (closed) return;
          await folders.refilter();
          emit({ kind: 'raw', path: '', at, reason: `the ignore file ${opts.ignoreFile ?? ''} changed` });
        } while (reloadAgain && !closed);
      })().finally(() => {
        reloading = undefined;
      });
    };
    const ignoreRel = opts.ignoreFile ? toRelPath(root, resolve(root, opts.ignoreFile)) : undefined;
    const folders = await watchFolders({
      root,
      filter: (p, isDir) => filter(p, isDir),
      emit,
      requestStat: (r, abs, at, named) => queue.request(r, abs, at, named),
      checkRoot: () => void checkRoot(),
      onWatchError: (err) => fail(classifyWatchError(root, err)),
      ignoreFile: ignoreRel ? { rel: ignoreRel, onChange: onIgnoreFileChange } : undefined,
      now,
    });
    opts.onReady?.();
    return {
      mode,
      root,
      async close() {
        closed = true;
        folders.close();
      },
      watchedDirs: () => folders.watchedDirs(),
    };
  }

  const watcher: FSWatcher = watch(root, {
    ignoreInitial: true, // the daemon does a full pass at start
    followSymlinks: false, // as the walk: a link is not followed into another tree
    alwaysStat: true, // sizes, to tell a file still growing
    usePolling: !!opts.usePolling,
    interval: opts.pollIntervalMs ?? 1000,
    binaryInterval: opts.pollIntervalMs ?? 1000,
    ignorePermissionErrors: false,
    // Absolute paths here, even with cwd; called without stats first, then with them.
    ignored: (abs: string, stats?: Stats) => {
      const r = rel(abs);
      if (r === undefined) return false; // the root (or above it)
      if (!stats) return !filter(r, true) && !filter(r, false);
      if (stats.isDirectory()) return !filter(r, true);
      return !filter(r, false);
    },
  });

  watcher.on('error', (err: unknown) => fail(classifyWatchError(root, err)));

  const rootName = basename(root);
  watcher.on('raw', (eventType: string, filename: unknown, details: unknown) => {
    if (closed) return;
    const watched = (details as { watchedPath?: unknown } | undefined)?.watchedPath;
    if (typeof watched !== 'string') return;
    if (watched === root && filename === rootName) void checkRoot();
  });

  const onFile = (kind: 'add' | 'change' | 'unlink') => (abs: string, st?: Stats) => {
    const r = rel(abs);
    if (r === undefined || !filter(r, false)) return;
    emit({ kind, path: r, at: now(), ...(st && kind !== 'unlink' ? { size: st.size, mtimeMs: st.mtimeMs } : {}) });
  };
  watcher.on('add', onFile('add'));
  watcher.on('change', onFile('change'));
  watcher.on('unlink', onFile('unlink'));
  /**
   * chokidar reads a new folder, THEN watches it: a subfolder created in between is never
   * watched (nor a file, in 'files' mode), so changes in it would go unseen until a rescan.
   * (Files in 'folders' mode need nothing: the folder's walk, due after quietMs, sees them.)
   * Once the folder's watch is up, compare its listing with what chokidar tracks and add
   * what it missed; for folders added that way, their subfolders are checked too.
   * Adding a path chokidar already watches is harmless (no duplicate events).
   */
  const verifyDir = async (abs: string, recursive: boolean): Promise<void> => {
    for (let waited = 0; !watcher._closers.has(abs); waited += VERIFY_POLL_MS) {
      if (closed || waited > VERIFY_GIVE_UP_MS) return;
      await delay(VERIFY_POLL_MS);
    }
    let entries: Dirent[];
    try {
      entries = await readdir(abs, { withFileTypes: true });
    } catch {
      return; // gone again: its removal is reported by the parent's watch
    }
    if (closed) return;
    const known = watcher._watched.get(abs);
    for (const d of entries) {
      const child = join(abs, d.name);
      const r = rel(child);
      if (r === undefined) continue;
      if (d.isDirectory()) {
        if (!filter(r, true)) continue;
        if (!known?.has(d.name)) {
          emit({ kind: 'addDir', path: r, at: now() });
          watcher.add(child);
          void verifyDir(child, true);
        } else if (recursive) {
          void verifyDir(child, true);
        }
      } else if (mode === 'files' && d.isFile() && !known?.has(d.name) && filter(r, false)) {
        emit({ kind: 'change', path: r, at: now() });
        watcher.add(child);
      }
    }
  };

  watcher.on('addDir', (abs: string) => {
    const r = rel(abs);
    if (r === undefined || !filter(r, true)) return;
    emit({ kind: 'addDir', path: r, at: now() });
    void verifyDir(abs, false);
  });
  watcher.on('unlinkDir', (abs: string) => {
    if (resolve(abs) === root) {
      reportRootGone();
      return;
    }
    const r = rel(abs);
    if (r !== undefined && filter(r, true)) emit({ kind: 'unlinkDir', path: r, at: now() });
  });

  await new Promise<void>((ready) => watcher.once('ready', ready));
  opts.onReady?.();

  return {
    mode,
    root,
    async close() {
      closed = true;
      await watcher.close();
    },
    watchedDirs() {
      // chokidar registers a path's closer once its watch is set up (after the folder's
      // first read), and keeps a listing for every folder: both means a watched folder.
      let n = 0;
      for (const path of watcher._closers.keys()) if (isInside(root, path) && watcher._watched.has(path)) n++;
      return n;
    },
  };
}

/**
 * What a raw event on `abs` turned out to be, by looking at it now. A file named by a
 * 'rename' event is new under this name: `add` (the aggregator lets it settle: it may be
 * the first chunk of a file still being written).
 */
async function statEvent(path: string, abs: string, at: number, named: boolean): Promise<RawEvent | undefined> {
  try {
    const st = await lstat(abs);
    if (st.isDirectory()) return undefined; // folders are reported by the folder watch (addDir/unlinkDir)
    if (st.isFile()) return { kind: named ? 'add' : 'change', path, size: st.size, mtimeMs: st.mtimeMs, at };
    // A symbolic link or a special file: let the engine decide what it is.
    return { kind: 'change', path, at };
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return { kind: 'unlink', path, at };
    return { kind: 'raw', path, at };
  }
}

/**
 * Runs at most `limit` stats at once and at most one per path: a path that gets more raw
 * events while its stat runs is stat-ed once more afterwards (its final state is what
 * counts), keeping the time of the earliest event not yet covered.
 */
class StatQueue {
  private readonly state = new Map<string, { abs: string; at: number; named: boolean; running: boolean; again?: number | undefined }>();
  private readonly queue: string[] = [];
  private head = 0;
  private running = 0;

  constructor(
    private readonly limit: number,
    private readonly run: (path: string, abs: string, at: number, named: boolean) => Promise<void>,
    private readonly closed: () => boolean,
  ) {}

  request(path: string, abs: string, at: number, named = false): void {
    const s = this.state.get(path);
    if (!s) {
      this.state.set(path, { abs, at, named, running: false });
      this.queue.push(path);
      this.pump();
    } else {
      if (s.running && s.again === undefined) s.again = at;
      // A 'rename' among the events coalesced here: the next stat reports the file as new.
      if (named) s.named = true;
    }
  }

  private pump(): void {
    while (this.running < this.limit && this.head < this.queue.length) {
      const path = this.queue[this.head++]!;
      if (this.head > 1024 && this.head * 2 > this.queue.length) {
        this.queue.splice(0, this.head);
        this.head = 0;
      }
      const s = this.state.get(path);
      if (!s) continue;
      s.running = true;
      this.running++;
      const named = s.named;
      s.named = false;
      void this.run(path, s.abs, s.at, named).finally(() => {
        this.running--;
        if (s.again !== undefined && !this.closed()) {
          s.at = s.again;
          s.again = undefined;
          s.running = false;
          this.queue.push(path);
        } else {
          this.state.delete(path);
        }
        this.pump();
      });
    }
  }
}

/** A chokidar error as a WatchError: a watch limit is told apart (it needs the operator). */
export function classifyWatchError(root: string, err: unknown): WatchError {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  if (code === 'ENOSPC' || code === 'EMFILE' || code === 'ENFILE') {
    return new WatchError(
      'watch-limit',
      root,
      `cannot watch more folders under ${root} (${code}): changes there are missed until the next rescan; raise fs.inotify.max_user_watches / the open-file limit`,
      true,
      { cause: err },
    );
  }
  return new WatchError('watch-failed', root, `watching ${root} failed: ${describe(err)}`, true, { cause: err });
}

function describe(e: unknown): string {
  if (e instanceof Error) {
    const code = (e as NodeJS.ErrnoException).code;
    return code && !e.message.includes(code) ? `${code}: ${e.message}` : e.message;
  }
  return String(e);
}

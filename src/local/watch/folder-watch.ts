/**
 * The watcher's 'folders' mode on plain fs.watch: one inotify watch per mapped folder, no
 * watch and no stat per file: the start lists folders only (bounded concurrency) and
 * watches each one.
 *
 * Events (the RawEvent kinds of aggregator.ts, which watcher.ts passes on): a folder's watch
 * names every entry created, written, renamed or deleted in it; each named path is stat-ed
 * (at most one stat per path at a time) and reported as `change` (with size and mtime, and
 * the stat itself, which the local side keeps for the pass's look: ObservedStats),
 * `unlink`, `raw` (unknown), or — for folders — `addDir` / `unlinkDir`. A new folder is
 * watched before it is listed, so a subfolder created meanwhile is found either way; files
 * written into it before its watch exists are found by the engine's walk of the `addDir`.
 *
 * Watches are tied to a folder's identity (device, inode), not only its path: an inotify
 * watch follows its inode, so after `mv docs old; mkdir docs` (or the deploy pattern
 * `rm -rf docs; mv staging docs`) the watch kept under "docs" would describe another folder
 * and the new "docs" would go unwatched. Whenever an event names a watched folder (the
 * parent's event, or the folder's own watch reporting itself moved, deleted or failing),
 * its identity is checked; a folder replaced under its own name is watched again (and
 * reported as `addDir`, so the engine walks it and pairs moved files as renames).
 */
import { basename, join } from 'node:path';
import PQueue from 'p-queue';
import type { RawEvent } from './aggregator.js';
import { errorCode, nodeFs, type FolderWatcher, type LocalFs } from '../fs.js';
import type { FsStats } from '../sys-calls.js';
import { LifoQueue } from '../lifo-queue.js';
import { joinRel } from '../paths.js';
import { internalized } from '../../interned.js';
import { nfc } from '../../unicode.js';
import { subfolderNames } from './inotify.js';
import { inotifyQueue } from './queue-overflow.js';
import type { Clock } from '../../time/clock.js';

export interface FolderWatchOptions {
  /** The mapped folder, resolved (no symbolic link). */
  root: string;
  /** Read at every use: the watcher may swap the filter (an edited ignore file). */
  filter: (relPath: string, isDir: boolean) => boolean;
  emit: (e: RawEvent) => void;
  /** The root's own watch named the root (deleted, moved away?): look whether it is still there. */
  checkRoot: () => void;
  /** A watch could not be set up or failed (events may be missed there). */
  onWatchError: (err: unknown) => void;
  /**
   * A folder could not get a watch because the inotify limit is reached (ENOSPC): it and
   * everything below it are left to the caller (polled). Without it, that is a watch error.
   */
  onWatchLimit?: ((rel: string) => void) | undefined;
  /** The ignore file's path relative to the root, and what to do when an event names it. */
  ignoreFile?: { rel: string; onChange: () => void } | undefined;
  /** Events are stamped with its monotonic reading (the aggregator's windows run on it). */
  clock: Clock;
  /** The filesystem calls (tests count them); default the real ones. */
  fs?: LocalFs | undefined;
}

export interface FolderWatch {
  close(): void;
  /** Folders watched (the root included). */
  watchedDirs(): number;
  /**
   * The filter changed: stops watching folders it now excludes, watches (and reports as
   * `addDir`) folders it now includes. Resolves once done.
   */
  refilter(): Promise<void>;
}

/** Folders listed at once while setting up watches. */
const LIST_CONCURRENCY = 16;

/** Paths looked at (lstat) at once after their events (a burst of 10,000 files queues). */
const LOOK_CONCURRENCY = 16;

/**
 * A watched folder: its path, its watch, and the identity (device, inode) the watch follows.
 * A daemon watches tens of thousands of folders, and what each one holds is paid that many
 * times at rest: its absolute path is made when an event needs it (FolderWatches.absOf), and
 * its watch's two listeners are shared by every folder (they find the folder by the watch
 * that calls them: FolderWatches.byWatcher).
 */
class Watched {
  readonly rel: string;

  constructor(
    rel: string,
    readonly dev: number,
    readonly ino: number,
    readonly watcher: FolderWatcher,
  ) {
    // Kept for the daemon's life, and the key of a map: one string (interned.ts).
    this.rel = internalized(rel);
  }
}

export async function watchFolders(o: FolderWatchOptions): Promise<FolderWatch> {
  const watch = new FolderWatches(o);
  await watch.addTree('', o.root, false);
  return watch;
}

/** The watches of one mapped folder, and the looks at the paths their events name. */
class FolderWatches implements FolderWatch {
  private readonly fs: LocalFs;
  /** Relative path -> the folder watched there ('' = the root). */
  private readonly watches = new Map<string, Watched>();
  /** Each folder by its watch: what the shared listeners are called on. */
  private readonly byWatcher = new Map<FolderWatcher, Watched>();
  /** Every watch's listeners, called with the watch as `this` (LocalFs.watch). */
  private readonly onChange: (this: FolderWatcher, type: string, filename: string | Buffer | null) => void;
  private readonly onFailure: (this: FolderWatcher, err: Error) => void;
  private closed = false;
  private readonly looks: PathLooks;

  constructor(private readonly o: FolderWatchOptions) {
    this.fs = o.fs ?? nodeFs;
    this.looks = new PathLooks(LOOK_CONCURRENCY, (rel, abs, at, named) => this.look(rel, abs, at, named), () => this.closed, o.onWatchError);
    const byWatcher = this.byWatcher;
    const onRaw = (folder: Watched, type: string, filename: string | Buffer | null): void => this.onRaw(folder, type, filename);
    const onFailed = (folder: Watched, err: Error): void => this.onWatchFailed(folder, err);
    // A watch closed already is no folder's any more: what it still says is not heard.
    this.onChange = function (type, filename) {
      const folder = byWatcher.get(this);
      if (folder) onRaw(folder, type, filename);
    };
    this.onFailure = function (err) {
      const folder = byWatcher.get(this);
      if (folder) onFailed(folder, err);
    };
  }

  close(): void {
    this.closed = true;
    for (const w of this.watches.values()) w.watcher.close();
    this.watches.clear();
    this.byWatcher.clear();
  }

  /** A folder's disk path: the root's, joined with its path relative to it. */
  private absOf(rel: string): string {
    return rel === '' ? this.o.root : join(this.o.root, rel);
  }

  watchedDirs(): number {
    return this.watches.size;
  }

  async refilter(): Promise<void> {
    for (const [rel] of [...this.watches]) {
      if (rel !== '' && this.watches.has(rel) && !this.o.filter(rel, true)) this.unwatchTree(rel);
    }
    await this.addTree('', this.o.root, true, true);
  }

  /** Stops watching the folder at `rel` and every folder below it; true when it was watched. */
  private unwatchTree(rel: string): boolean {
    const was = this.watches.has(rel);
    const prefix = rel === '' ? '' : `${rel}/`;
    for (const [p, w] of this.watches) {
      if (p === rel || p.startsWith(prefix)) {
        w.watcher.close();
        this.watches.delete(p);
        this.byWatcher.delete(w.watcher);
      }
    }
    return was;
  }

  private onRaw(folder: Watched, type: string, filename: string | Buffer | null): void {
    const o = this.o;
    const dirRel = folder.rel;
    const dirAbs = this.absOf(dirRel);
    // Counted even after close: the event took its room in the process's inotify queue.
    inotifyQueue.note();
    if (this.closed) return;
    const at = o.clock.monotonic();
    // null: the event is about the watched folder itself (LocalFs.watch), as fs.watch's own name for it is.
    const name = filename === null ? basename(dirAbs) : typeof filename === 'string' ? filename : filename.toString('utf8');
    if (dirAbs === o.root && name === basename(o.root)) o.checkRoot();
    if (!name) {
      // Linux always names the entry; if not, only a walk of the folder can tell what changed.
      o.emit(dirRel === '' ? { kind: 'raw', path: '', at } : { kind: 'addDir', path: dirRel, at });
      return;
    }
    // A folder's own watch names the folder itself when it is moved or deleted (or this is
    // a child of the same name): is the path still the folder this watch follows?
    if (dirAbs !== o.root && name === basename(dirAbs)) this.looks.request(dirRel, dirAbs, at, false);
    const abs = join(dirAbs, name);
    const rel = joinRel(dirRel, name);
    if (o.ignoreFile && rel === o.ignoreFile.rel) o.ignoreFile.onChange();
    if (this.watches.has(rel) || o.filter(rel, true) || o.filter(rel, false)) this.looks.request(rel, abs, at, type === 'rename');
  }

  /**
   * What is at a path an event named, by one lstat: a folder new (watched and reported as
   * `addDir`), replaced under its own name (another device/inode: watched again) or gone
   * (`unlinkDir`); a file created or written (`add` or `change`, with its size and the stat
   * itself, so that the engine need not stat it again); gone (`unlink`); or unknown (`raw`:
   * the lstat failed otherwise). `named`: the event was a 'rename' (the entry appeared or
   * vanished under this name), so a file found there is new under this name (`add`: it may
   * still be written).
   */
  private async look(rel: string, abs: string, at: number, named: boolean): Promise<void> {
    const o = this.o;
    let st: FsStats | undefined;
    let failure: unknown;
    try {
      st = await this.fs.lstat(abs);
    } catch (e) {
      failure = e;
    }
    if (this.closed) return;
    if (st?.isDirectory()) {
      const w = this.watches.get(rel);
      if (w && w.dev === st.dev && w.ino === st.ino) return;
      // New, or replaced under its own name: the old watch (if any) follows another folder.
      this.unwatchTree(rel);
      if (!o.filter(rel, true)) return;
      o.emit({ kind: 'addDir', path: rel, at });
      // Not awaited: listing a new tree must not hold a place meant for one path's lstat.
      void this.addTree(rel, abs, true);
      return;
    }
    if (this.unwatchTree(rel)) {
      o.emit({ kind: 'unlinkDir', path: rel, at });
      return;
    }
    if (!o.filter(rel, false)) return;
    if (st === undefined) {
      const code = errorCode(failure);
      o.emit({ kind: code === 'ENOENT' || code === 'ENOTDIR' ? 'unlink' : 'raw', path: rel, at });
    } else if (st.isFile()) {
      // The stat is kept only when the path is the file's name as on disk: the local side
      // finds a name in another Unicode form by listing its folder, and stats it then.
      const stat = rel === nfc(rel) ? { size: st.size, mtimeMs: st.mtimeMs, ctimeMs: st.ctimeMs, dev: st.dev, ino: st.ino } : undefined;
      o.emit({ kind: named ? 'add' : 'change', path: rel, size: st.size, mtimeMs: st.mtimeMs, at, stat });
    } else {
      // A symbolic link or a special file: let the engine decide what it is.
      o.emit({ kind: 'change', path: rel, at });
    }
  }

  /**
   * Watches `abs`, then lists it and does the same for each subfolder (bounded concurrency).
   * `descend`: also list folders already watched (a filter change may include folders below).
   */
  async addTree(rel: string, abs: string, report: boolean, descend = false): Promise<void> {
    // Last in, first out: deep before wide, so few folders wait to be listed.
    const queue = new PQueue({ concurrency: LIST_CONCURRENCY, queueClass: LifoQueue });
    const list = (dRel: string, dAbs: string): void => {
      // A folder that cannot be listed is left to its parent's watch (an event names it
      // again); anything else that fails is a watch error (events may be missed there).
      queue
        .add(async () => {
          for (const sub of await this.visit(dRel, dAbs, report, descend)) list(sub.rel, sub.abs);
        })
        .catch((err: unknown) => this.o.onWatchError(err));
    };
    list(rel, abs);
    await queue.onIdle();
  }

  /** Watches a folder (unless watched: then only with `descend`) and lists its subfolders to visit. */
  private async visit(dRel: string, dAbs: string, report: boolean, descend: boolean): Promise<{ rel: string; abs: string }[]> {
    const o = this.o;
    if (this.closed) return [];
    if (this.watches.has(dRel) && !descend) return [];
    // A folder that cannot be listed, or not watched, names no subfolder.
    const names = (this.watches.has(dRel) ? await subfolderNames(this.fs, dAbs) : await this.watchOne(dRel, dAbs)) ?? [];
    const subs: { rel: string; abs: string }[] = [];
    for (const name of names) {
      const r = joinRel(dRel, name);
      if (!o.filter(r, true)) continue;
      const a = join(dAbs, name);
      if (this.watches.has(r)) {
        if (descend) subs.push({ rel: r, abs: a });
        continue;
      }
      // Found while setting up a new folder: reported, so its contents are walked too.
      if (report) o.emit({ kind: 'addDir', path: r, at: o.clock.monotonic() });
      subs.push({ rel: r, abs: a });
    }
    return subs;
  }

  /**
   * One folder's watch, and its subfolders' names (undefined: not watched). Its identity is
   * read BEFORE the watch is set up (LocalFs.watchFolder): if the folder is replaced in
   * between, the identity kept is the new folder's while the watch follows the old one, and
   * the next event on the path finds the mismatch and watches again (the other order would
   * hide the mismatch for good).
   */
  private async watchOne(dRel: string, dAbs: string): Promise<string[] | undefined> {
    const { o, watches } = this;
    let start;
    try {
      start = await this.fs.watchFolder(dAbs, this.onChange);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOSPC' && o.onWatchLimit) o.onWatchLimit(dRel);
      // Gone again before its watch was set up: its parent's watch reports that.
      else if (code !== 'ENOENT' && code !== 'ENOTDIR') o.onWatchError(err);
      return undefined;
    }
    // Gone again, or no folder: its parent's watch reports that.
    if (start === undefined) return undefined;
    const { watcher } = start;
    // Closed, or watched meanwhile (an event's look): this second watch is not kept.
    if (this.closed || watches.has(dRel)) {
      watcher.close();
      return undefined;
    }
    watcher.on('error', this.onFailure);
    const folder = new Watched(dRel, start.dev, start.ino, watcher);
    watches.set(folder.rel, folder);
    this.byWatcher.set(watcher, folder);
    return start.folders;
  }

  /**
   * A folder's watch failed. The root's: look whether it is still there. Another's: the
   * folder itself went away or was replaced (its watch ends with it), so look again; a
   * folder still there under the same identity means the watch really failed.
   */
  private onWatchFailed(folder: Watched, err: Error): void {
    const o = this.o;
    if (this.closed) return;
    if (folder.rel === '') {
      o.checkRoot();
      return;
    }
    const abs = this.absOf(folder.rel);
    void this.fs.lstat(abs).then(
      (s) => s,
      () => undefined,
    ).then((s) => {
      if (this.watches.get(folder.rel) !== folder) return;
      if (s?.isDirectory() && s.dev === folder.dev && s.ino === folder.ino) o.onWatchError(err);
      else this.looks.request(folder.rel, abs, o.clock.monotonic(), false);
    });
  }
}

/**
 * The looks at paths named by events: at most `limit` at once, first in, first out, and at
 * most one per path: a path that gets more events while its look runs is looked at once
 * more afterwards (its final state is what counts), with the time of the earliest event
 * not yet covered. Events on a path waiting for its look fold into it.
 */
class PathLooks {
  private readonly state = new Map<string, PathLook>();
  private readonly queue: PQueue;

  constructor(limit: number, private readonly look: (rel: string, abs: string, at: number, named: boolean) => Promise<void>, private readonly closed: () => boolean, private readonly onError: (err: unknown) => void) {
    this.queue = new PQueue({ concurrency: limit });
  }

  request(rel: string, abs: string, at: number, named: boolean): void {
    const s = this.state.get(rel);
    if (!s) {
      const fresh: PathLook = { abs, at, named, running: false, again: undefined };
      this.state.set(rel, fresh);
      this.enqueue(rel, fresh);
      return;
    }
    if (s.running && s.again === undefined) s.again = at;
    // A 'rename' among the events folded here: the next look reports a file as new.
    if (named) s.named = true;
  }

  private enqueue(rel: string, s: PathLook): void {
    this.queue
      .add(async () => {
        s.running = true;
        const named = s.named;
        s.named = false;
        try {
          await this.look(rel, s.abs, s.at, named);
        } finally {
          if (s.again !== undefined && !this.closed()) {
            s.at = s.again;
            s.again = undefined;
            s.running = false;
            this.enqueue(rel, s);
          } else {
            this.state.delete(rel);
          }
        }
      })
      // A look reports what it finds; one that throws (an emit that failed) may have missed an event.
      .catch(this.onError);
  }
}

interface PathLook {
  abs: string;
  at: number;
  named: boolean;
  running: boolean;
  again: number | undefined;
}

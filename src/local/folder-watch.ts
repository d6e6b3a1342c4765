/**
 * The watcher's 'folders' mode on plain fs.watch: one inotify watch per mapped folder, no
 * watch and no stat per file. chokidar, even told to ignore files, reads every folder at
 * start and stats every file in it (its readdirp runs with alwaysStat): over 100,000 files
 * in 5,000 folders that is 100,000 lstats at each daemon start, alongside the full pass's
 * own walk, and ~330 MB of memory the process keeps afterwards (performance.md). Here the
 * start lists folders only (bounded concurrency) and watches each one.
 *
 * Events are the same as the chokidar-based mode reported (watcher.ts): a folder's watch
 * names every entry created, written, renamed or deleted in it; each named path is stat-ed
 * (at most one stat per path at a time) and reported as `change` (with size and mtime),
 * `unlink`, `raw` (unknown), or — for folders — `addDir` / `unlinkDir`. A new folder is
 * watched before it is listed, so a subfolder created meanwhile is found either way; files
 * written into it before its watch exists are found by the engine's walk of the `addDir`.
 */
import { watch as fsWatch, type FSWatcher } from 'node:fs';
import { lstat, readdir } from 'node:fs/promises';
import { basename, join } from 'node:path';
import type { RawEvent } from './aggregator.js';
import { joinRel } from './paths.js';

export interface FolderWatchOptions {
  /** The mapped folder, resolved (no symbolic link). */
  root: string;
  filter: (relPath: string, isDir: boolean) => boolean;
  emit: (e: RawEvent) => void;
  /** A file's or folder's state, stat-ed now (at most one stat per path at a time). */
  requestStat: (rel: string, abs: string, at: number) => void;
  /** The root's own watch named the root (deleted, moved away?): look whether it is still there. */
  checkRoot: () => void;
  /** A watch could not be set up or failed (events may be missed there). */
  onWatchError: (err: unknown) => void;
  now: () => number;
}

export interface FolderWatch {
  close(): void;
  /** Folders watched (the root included). */
  watchedDirs(): number;
}

/** Folders listed at once while setting up watches. */
const LIST_CONCURRENCY = 16;

export async function watchFolders(o: FolderWatchOptions): Promise<FolderWatch> {
  /** Absolute path -> its relative path ('' = root) and watch. */
  const watches = new Map<string, { rel: string; watcher: FSWatcher }>();
  let closed = false;

  /** Stops watching `abs` and every folder below it; true when `abs` was watched. */
  const unwatchTree = (abs: string): boolean => {
    const was = watches.has(abs);
    const prefix = `${abs}/`;
    for (const [p, w] of watches) {
      if (p === abs || p.startsWith(prefix)) {
        w.watcher.close();
        watches.delete(p);
      }
    }
    return was;
  };

  const onRaw = (dirAbs: string, dirRel: string, filename: string | Buffer | null): void => {
    if (closed) return;
    const at = o.now();
    const name = typeof filename === 'string' ? filename : filename?.toString('utf8');
    if (dirAbs === o.root && name === basename(o.root)) o.checkRoot();
    if (!name) {
      // Linux always names the entry; if not, only a walk of the folder can tell what changed.
      if (dirRel === '') o.emit({ kind: 'raw', path: '', at });
      else o.emit({ kind: 'addDir', path: dirRel, at });
      return;
    }
    const abs = join(dirAbs, name);
    const rel = joinRel(dirRel, name);
    if (watches.has(abs) || o.filter(rel, true)) {
      // Possibly a folder (created, moved in or out, deleted): look at what is there now.
      void classify(rel, abs, at);
      return;
    }
    if (o.filter(rel, false)) o.requestStat(rel, abs, at);
  };

  /** A path named by an event that may be a folder: a new one is watched, a vanished one dropped. */
  const classify = async (rel: string, abs: string, at: number): Promise<void> => {
    let isDir = false;
    try {
      isDir = (await lstat(abs)).isDirectory();
    } catch {
      // gone (or unreadable): the stat below tells a file's fate
    }
    if (closed) return;
    if (isDir) {
      if (watches.has(abs) || !o.filter(rel, true)) return;
      o.emit({ kind: 'addDir', path: rel, at });
      await addTree(rel, abs, true);
      return;
    }
    if (unwatchTree(abs)) {
      o.emit({ kind: 'unlinkDir', path: rel, at });
      return;
    }
    if (o.filter(rel, false)) o.requestStat(rel, abs, at);
  };

  /** Watches `abs`, then lists it and does the same for each subfolder (bounded concurrency). */
  const addTree = async (rel: string, abs: string, report: boolean): Promise<void> => {
    const queue: { rel: string; abs: string }[] = [{ rel, abs }];
    let running = 0;
    await new Promise<void>((resolve) => {
      const pump = (): void => {
        if (closed) {
          if (running === 0) resolve();
          return;
        }
        while (running < LIST_CONCURRENCY && queue.length > 0) {
          const dir = queue.pop()!;
          running++;
          void visit(dir.rel, dir.abs).then((subs) => {
            running--;
            for (const s of subs) queue.push(s);
            if (running === 0 && queue.length === 0) resolve();
            else pump();
          });
        }
        if (running === 0 && queue.length === 0) resolve();
      };
      pump();
    });

    async function visit(dRel: string, dAbs: string): Promise<{ rel: string; abs: string }[]> {
      if (closed || watches.has(dAbs)) return [];
      try {
        const w = fsWatch(dAbs, { persistent: true }, (_type, filename) => onRaw(dAbs, dRel, filename));
        w.on('error', (err) => {
          if (closed) return;
          // The folder itself went away (its watch ends with it): the parent's watch says so.
          if (dAbs === o.root) o.checkRoot();
          else o.onWatchError(err);
        });
        watches.set(dAbs, { rel: dRel, watcher: w });
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        // Gone again before its watch was set up: its parent's watch reports that.
        if (code !== 'ENOENT' && code !== 'ENOTDIR') o.onWatchError(err);
        return [];
      }
      let entries;
      try {
        entries = await readdir(dAbs, { withFileTypes: true });
      } catch {
        return [];
      }
      const subs: { rel: string; abs: string }[] = [];
      for (const d of entries) {
        if (!d.isDirectory()) continue;
        const r = joinRel(dRel, d.name);
        if (!o.filter(r, true)) continue;
        const a = join(dAbs, d.name);
        if (watches.has(a)) continue;
        // Found while setting up a new folder: reported, so its contents are walked too.
        if (report) o.emit({ kind: 'addDir', path: r, at: o.now() });
        subs.push({ rel: r, abs: a });
      }
      return subs;
    }
  };

  await addTree('', o.root, false);

  return {
    close() {
      closed = true;
      for (const w of watches.values()) w.watcher.close();
      watches.clear();
    },
    watchedDirs() {
      return watches.size;
    },
  };
}

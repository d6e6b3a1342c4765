/**
 * The folders' watches (LocalFs.watch) on one inotify instance of dssync's own
 * (native/inotify.c, built by scripts/build-native.mjs), or on Node's fs.watch where that
 * module is not there.
 *
 * Why: fs.watch holds ~1.35 KB per watched folder (its FSWatcher and FSEvent objects,
 * libuv's handle and watcher list), ~60 MB for the 50,000 folders of a million files, and
 * hides the kernel's report that the queue overflowed (queue-overflow.ts). Here a folder's
 * watch is one small object in one map from watch descriptor to watch; the records are read
 * in one piece and decoded here (inotify-events.ts), and an overflow is the kernel's own
 * IN_Q_OVERFLOW, not a guess.
 *
 * What a listener hears is what fs.watch says on Linux: ('rename' | 'change', the entry's
 * name), in the kernel's order, synchronously as the records are read, and nothing from a
 * watch after its close(). An event about the watched folder itself (moved, deleted, its
 * watch dropped by the kernel) names no entry: the filename is null (fs.watch gives the
 * folder's own name there; folder-watch.ts takes null as that name). One folder watched
 * twice (two mappings over one folder, a bind mount) is one kernel watch shared by both,
 * removed when the last of them closes. The instance is opened at the first watch and
 * closed with the last, so it holds the process open exactly while fs.watch's would.
 *
 * `DSSYNC_NATIVE=0` chooses fs.watch (docs/config.md); the choice is made once per
 * process, at its first watch, and shown by `watchBackend()`.
 */
import { watch as fsWatch } from 'node:fs';
import type { CheckResult } from '../../check-result.js';
import type { AsyncSysCalls } from '../sys-calls.js';
import { loadNativeModule } from '../../native.js';
import { eventType, forEachEvent, IN_IGNORED, IN_Q_OVERFLOW, WATCH_MASK } from './inotify-events.js';
import { inotifyQueue } from './queue-overflow.js';

/** native/inotify.c's functions. */
export interface NativeInotify {
  /** Opens an instance; `onData` gets each read's records, or null and an error code. */
  open(onData: (records: Buffer | null, code?: string) => void): unknown;
  /** The watch descriptor; throws an Error with the errno's `code` (ENOSPC, ENOENT, ENOTDIR…). */
  add(handle: unknown, path: string, mask: number): number;
  /**
   * Each folder's lstat, watch, then its subfolders' names, on libuv's pool; then `done` with
   * an answer a path: [wd, dev, ino, ...names], null when the path is no folder (gone), or the
   * watch's errno code. Absent from a module built before it.
   */
  startAll?(handle: unknown, paths: string[], mask: number, done: (answers: StartAnswer[]) => void): void;
  remove(handle: unknown, wd: number): void;
  close(handle: unknown): void;
}

/** A folder's watch (LocalFs.watch). Its listeners are called with it as `this`, as Node's fs.watch calls them. */
export interface FolderWatcher {
  close(): void;
  on(event: 'error', listener: (this: FolderWatcher, err: Error) => void): unknown;
}

/** NativeInotify.startAll's answer for one path. */
export type StartAnswer = (number | string)[] | string | null;

/** A folder watched, and its subfolders as listed after its watch was set up (LocalFs.watchFolder). */
export interface FolderStart {
  watcher: FolderWatcher;
  /** The folder's identity, read before its watch was set up. */
  dev: number;
  ino: number;
  /** Its subfolders' names; none when it could not be listed. */
  folders: string[];
}

/** What a folder's watch tells: 'rename' | 'change', and the entry's name (null: the folder itself). */
export type WatchListener = (this: FolderWatcher, type: string, filename: string | Buffer | null) => void;

type ErrorListener = (this: FolderWatcher, err: Error) => void;

/** InotifyWatch.wd of a watch the kernel dropped (its folder gone, or unmounted). */
const DROPPED = -1;
/** InotifyWatch.wd of a watch closed. */
const CLOSED = -2;

class InotifyWatch implements FolderWatcher {
  onError: ErrorListener | undefined = undefined;
  /** Records read before it was registered (InotifyWatches.started), heard before any later one. */
  held: HeldRecord[] | undefined = undefined;

  constructor(
    private readonly owner: InotifyWatches,
    /** The kernel's descriptor, or DROPPED, or CLOSED. */
    public wd: number,
    readonly listener: WatchListener,
  ) {}

  close(): void {
    this.owner.close(this);
  }

  /** One error listener (the one folder-watch.ts sets). */
  on(event: 'error', listener: ErrorListener): this {
    if (event === 'error') this.onError = listener;
    return this;
  }
}

/** The watches on one instance. Exported for its tests, which give it a fake native module. */
export class InotifyWatches {
  private handle: unknown = undefined;
  private readonly byWd = new Map<number, InotifyWatch | InotifyWatch[]>();
  /** Watches not closed (a dropped one too: its owner closes it). */
  private open = 0;
  /** Folders' starts asked for in this turn of the event loop (start). */
  private asked: AskedStart[] = [];
  /** Batches of starts on the pool. */
  private starting = 0;
  /** The records read while a batch was on the pool, for the watches it adds. */
  private held: HeldRecord[] = [];
  /** Descriptors whose last watch closed while a batch was on the pool (close). */
  private readonly unremoved = new Set<number>();

  constructor(
    private readonly native: NativeInotify,
    private readonly onOverflow: () => void,
  ) {}

  watch(path: string, listener: WatchListener): FolderWatcher {
    return this.register(this.call((h) => this.native.add(h, path, WATCH_MASK)), listener);
  }

  /** Whether the module has startAll (one built before it has not). */
  get canStart(): boolean {
    return typeof this.native.startAll === 'function';
  }

  /**
   * LocalFs.watchFolder on the native watch: the folders asked for in one turn of the event
   * loop are started in one batch on libuv's pool (NativeInotify.startAll).
   */
  start(path: string, listener: WatchListener): Promise<FolderStart | undefined> {
    return new Promise((resolve, reject) => {
      this.asked.push({ path, listener, resolve, reject });
      if (this.asked.length === 1) setImmediate(() => this.startAsked());
    });
  }

  private startAsked(): void {
    const batch = this.asked.splice(0, this.asked.length);
    let handle: unknown;
    try {
      handle = this.call((h) => {
        this.native.startAll!(
          h,
          batch.map((a) => a.path),
          WATCH_MASK,
          (answers) => this.started(handle, batch, answers),
        );
        return h;
      });
    } catch (err) {
      for (const a of batch) a.reject(err);
      return;
    }
    this.starting++;
  }

  /**
   * A batch's answers: each folder's watch registered. The records read while the batch ran
   * that name a new watch's descriptor (the kernel's events between its add on the pool and its
   * registration here) are owed to it, so none is missed: given before any record read later.
   */
  private started(handle: unknown, batch: AskedStart[], answers: StartAnswer[]): void {
    this.starting--;
    const made: InotifyWatch[] = [];
    batch.forEach((a, i) => {
      const answer = handle === this.handle ? answers[i] : 'EBADF';
      if (answer === null || answer === undefined) {
        a.resolve(undefined);
      } else if (typeof answer === 'string') {
        a.reject(Object.assign(new Error(`inotify_add_watch: ${answer}`), { code: answer }));
      } else {
        const w = this.register(answer[0] as number, a.listener);
        made.push(w);
        a.resolve({ watcher: w, dev: answer[1] as number, ino: answer[2] as number, folders: answer.slice(3) as string[] });
      }
    });
    for (const w of made) this.unremoved.delete(w.wd);
    const held = this.held;
    if (this.starting === 0) {
      this.held = [];
      if (this.open > 0) this.unremoved.forEach((wd) => this.remove(wd));
      this.unremoved.clear();
    }
    // Given once their owner has learnt of the watches (it does when the starts resolve, so
    // not now): at the next record read for one, or at the next turn of the event loop.
    const owed: InotifyWatch[] = [];
    for (const w of held.length > 0 ? made : []) {
      const mine = held.filter((r) => r.wd === w.wd);
      if (mine.length === 0) continue;
      w.held = mine;
      owed.push(w);
    }
    if (owed.length > 0) setImmediate(() => owed.forEach((w) => this.giveHeld(w)));
    if (this.open === 0 && this.starting === 0) this.shut();
  }

  /** The records read before `w` was registered, given to it. */
  private giveHeld(w: InotifyWatch): void {
    const held = w.held;
    w.held = undefined;
    for (const r of held ?? []) {
      const dropped = (r.mask & IN_IGNORED) !== 0;
      // The kernel removed the watch before it was registered: as onData does.
      if (dropped && this.byWd.get(r.wd) !== undefined) this.byWd.delete(r.wd);
      this.deliver(w, dropped, eventType(r.mask), r.name);
    }
  }

  private deliver(w: InotifyWatch, dropped: boolean, type: string, name: string | undefined): void {
    if (w.held) this.giveHeld(w);
    if (w.wd === CLOSED) return;
    if (dropped) w.wd = DROPPED;
    w.listener.call(w, type, name ?? null);
  }

  /** A call on the instance, opened first if need be (and shut again when the call fails and nothing is watched). */
  private call<T>(fn: (handle: unknown) => T): T {
    this.handle ??= this.native.open((records, code) => this.onData(records, code));
    try {
      return fn(this.handle);
    } catch (err) {
      if (this.open === 0 && this.starting === 0) this.shut();
      throw err;
    }
  }

  private register(wd: number, listener: WatchListener): InotifyWatch {
    const w = new InotifyWatch(this, wd, listener);
    const had = this.byWd.get(wd);
    this.byWd.set(wd, had === undefined ? w : Array.isArray(had) ? [...had, w] : [had, w]);
    this.open++;
    return w;
  }

  close(w: InotifyWatch): void {
    if (w.wd === CLOSED) return;
    const wd = w.wd;
    w.wd = CLOSED;
    this.open--;
    if (wd >= 0) {
      const had = this.byWd.get(wd);
      const rest = Array.isArray(had) ? had.filter((x) => x !== w) : [];
      if (rest.length === 0) {
        this.byWd.delete(wd);
        // A batch on the pool may have added a folder that shares this descriptor (the same
        // inode under another name: `mv staging docs`): removed only once the batches answered.
        if (this.starting > 0) this.unremoved.add(wd);
        else if (this.open > 0) this.remove(wd);
      } else {
        this.byWd.set(wd, rest.length === 1 ? rest[0]! : rest);
      }
    }
    // The last watch closes the instance (and every watch with it), unless a batch of starts is adding more.
    if (this.open === 0 && this.starting === 0) this.shut();
  }

  /** Like fs.watch's close, never throws: a descriptor gone already is no error. */
  private remove(wd: number): void {
    try {
      this.native.remove(this.handle, wd);
    } catch {
      // nothing to undo
    }
  }

  /** Watches not closed. */
  size(): number {
    return this.open;
  }

  private shut(): void {
    if (this.handle === undefined) return;
    this.native.close(this.handle);
    this.handle = undefined;
    this.byWd.clear();
    this.unremoved.clear();
  }

  private onData(records: Buffer | null, code?: string): void {
    if (records === null) {
      this.failed(code ?? 'EIO');
      return;
    }
    let overflow = false;
    forEachEvent(records, (wd, mask, name) => {
      if (wd === -1) {
        if (mask & IN_Q_OVERFLOW) overflow = true;
        return;
      }
      if (this.starting > 0) this.held.push({ wd, mask, name });
      const entry = this.byWd.get(wd);
      if (entry === undefined) return;
      const dropped = (mask & IN_IGNORED) !== 0;
      // The kernel removed the watch (its folder deleted or unmounted): the descriptor may be
      // given again to another folder, so it names these watches no more.
      if (dropped) this.byWd.delete(wd);
      const type = eventType(mask);
      if (!Array.isArray(entry)) {
        this.deliver(entry, dropped, type, name);
        return;
      }
      const sharers = [...entry];
      if (dropped) for (const w of sharers) if (w.wd !== CLOSED) w.wd = DROPPED;
      // A listener may close a sharer meanwhile: the ones closed hear nothing more.
      for (const w of sharers) this.deliver(w, dropped, type, name);
    });
    if (overflow) this.onOverflow();
  }

  /** Reading the instance failed: every watch has failed, and says so. */
  private failed(code: string): void {
    const err = Object.assign(new Error(`reading the inotify instance failed: ${code}`), { code });
    const watches = [...this.byWd.values()].flat();
    this.shut();
    for (const w of watches) {
      w.wd = DROPPED;
      w.onError?.call(w, err);
    }
  }
}

/** A folder's start asked for (InotifyWatches.start). */
interface AskedStart {
  path: string;
  listener: WatchListener;
  resolve: (start: FolderStart | undefined) => void;
  reject: (err: unknown) => void;
}

/** An event record read while a batch of starts was on the pool. */
interface HeldRecord {
  wd: number;
  mask: number;
  name: string | undefined;
}

/** Which watch the process uses, and why it is fs.watch when it is. */
export interface WatchBackend {
  name: 'inotify' | 'fs.watch';
  /** Why not the native watch (fs.watch only). */
  why?: string | undefined;
}

/** The native module, or why it is not used. */
export function loadNativeInotify(env: NodeJS.ProcessEnv = process.env): { native: NativeInotify } | { why: string } {
  const loaded = loadNativeModule<NativeInotify>('inotify', env);
  return 'module' in loaded ? { native: loaded.module } : loaded;
}

type Watch = (path: string, listener: WatchListener) => FolderWatcher;
type Start = (path: string, listener: WatchListener) => Promise<FolderStart | undefined>;

let chosen: { backend: WatchBackend; watch: Watch; start?: Start | undefined } | undefined;

function choose(): { backend: WatchBackend; watch: Watch; start?: Start | undefined } {
  const loaded = loadNativeInotify();
  if ('why' in loaded) {
    return { backend: { name: 'fs.watch', why: loaded.why }, watch: (path, listener) => fsWatch(path, { persistent: true }, listener) };
  }
  inotifyQueue.reportedByKernel();
  const watches = new InotifyWatches(loaded.native, () => inotifyQueue.overflowed());
  return {
    backend: { name: 'inotify' },
    watch: (path, listener) => watches.watch(path, listener),
    start: watches.canStart ? (path, listener) => watches.start(path, listener) : undefined,
  };
}

/** LocalFs.watch: the native watch, or fs.watch (chosen at the process's first watch). */
export function watchFolder(path: string, listener: WatchListener): FolderWatcher {
  chosen ??= choose();
  return chosen.watch(path, listener);
}

/** The calls a folder's start makes one by one (LocalFs's). */
export type FolderStartSteps = Pick<AsyncSysCalls, 'lstat' | 'readdir'> & { watch: (path: string, listener: WatchListener) => FolderWatcher };

/** LocalFs.watchFolder: the native watch's one call, or the same steps through `steps` (fs.watch). */
export function startFolder(path: string, listener: WatchListener, steps: FolderStartSteps): Promise<FolderStart | undefined> {
  chosen ??= choose();
  return chosen.start ? chosen.start(path, listener) : startFolderBySteps(steps, path, listener);
}

/**
 * A folder's start, step by step (the fakes', and fs.watch's): the folder's identity (lstat:
 * undefined when it is no folder), its watch (throws its error), then its subfolders (none
 * when it cannot be listed).
 */
export async function startFolderBySteps(fs: FolderStartSteps, path: string, listener: WatchListener): Promise<FolderStart | undefined> {
  let s;
  try {
    s = await fs.lstat(path);
  } catch {
    return undefined;
  }
  if (!s.isDirectory()) return undefined;
  const watcher = fs.watch(path, listener);
  return { watcher, dev: s.dev, ino: s.ino, folders: (await subfolderNames(fs, path)) ?? [] };
}

/** The names of a folder's subfolders, by readdir; undefined when it cannot be listed. */
export async function subfolderNames(fs: Pick<AsyncSysCalls, 'readdir'>, path: string): Promise<string[] | undefined> {
  try {
    return (await fs.readdir(path)).filter((d) => d.isDirectory()).map((d) => d.name);
  } catch {
    return undefined;
  }
}

/** The process's watch, once it has watched a folder. */
export function watchBackend(): WatchBackend | undefined {
  return chosen?.backend;
}

/** fs.watch's memory a watched folder beyond the native watch's (docs/performance.md, "Session 29"). */
const FS_WATCH_EXTRA_BYTES = 1_200;

/**
 * `dssync config check`: which watch a daemon started here would use (PURE: `loaded` is
 * loadNativeInotify's answer), and what fs.watch would cost for `folders` folders.
 */
export function nativeWatchCheck(folders: number, loaded: { native: NativeInotify } | { why: string }): CheckResult {
  const base = { check: 'inotify' };
  if ('native' in loaded) return { ...base, level: 'ok', message: "folders are watched on one inotify instance of dssync's own (its native module loads)" };
  if (loaded.why === 'DSSYNC_NATIVE=0') return { ...base, level: 'ok', message: "events through Node's fs.watch (DSSYNC_NATIVE=0)" };
  const mb = Math.round((folders * FS_WATCH_EXTRA_BYTES) / 1024 / 1024);
  return {
    ...base,
    level: 'warn',
    message: `dssync's inotify module cannot be used (${loaded.why}): events would come through Node's fs.watch, about 1.2 KB more memory a watched folder${mb > 0 ? ` (~${mb} MB for ${folders} folders)` : ''}, and a queue overflow only inferred`,
    fix: 'install a C compiler (apt-get install gcc libc6-dev) and run npm run build in the checkout, or install the release tarball, which carries the module built for x86-64 Linux',
  };
}

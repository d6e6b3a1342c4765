/**
 * The watches on one inotify instance (inotify.ts), with a fake native module: what each
 * folder's listener hears, a folder watched twice, a watch the kernel dropped, the instance
 * opened with the first watch and closed with the last, the kernel's overflow report, an
 * error of the instance; the folders' starts in batches (start): their answers, and the
 * records read while a batch was on the pool, owed to the watches it added.
 */
import { describe, expect, it } from 'vitest';
import type { FolderWatcher } from '../../../../src/local/fs.js';
import { IN_CREATE, IN_DELETE_SELF, IN_IGNORED, IN_MODIFY, IN_MOVED_TO, IN_Q_OVERFLOW, WATCH_MASK } from '../../../../src/local/watch/inotify-events.js';
import { InotifyWatches, type NativeInotify, type StartAnswer } from '../../../../src/local/watch/inotify.js';
import { records } from './inotify-records.js';

/** A kernel of sorts: a descriptor per inode (here per path), the same one for a path watched twice. */
class FakeNative implements NativeInotify {
  opened = 0;
  closed = 0;
  onData: ((records: Buffer | null, code?: string) => void) | undefined;
  readonly wds = new Map<string, number>();
  readonly removed: number[] = [];
  readonly masks: number[] = [];
  private next = 1;
  fail: string | undefined;

  open(onData: (records: Buffer | null, code?: string) => void): unknown {
    this.opened++;
    this.onData = onData;
    return { instance: this.opened };
  }
  add(_handle: unknown, path: string, mask: number): number {
    if (this.fail) throw Object.assign(new Error(`inotify_add_watch: ${this.fail}`), { code: this.fail });
    this.masks.push(mask);
    let wd = this.wds.get(path);
    if (wd === undefined) this.wds.set(path, (wd = this.next++));
    return wd;
  }
  remove(_handle: unknown, wd: number): void {
    this.removed.push(wd);
    for (const [p, w] of this.wds) if (w === wd) this.wds.delete(p);
  }
  close(): void {
    this.closed++;
    this.onData = undefined;
    this.wds.clear();
  }
}

function setup() {
  const native = new FakeNative();
  let overflows = 0;
  const watches = new InotifyWatches(native, () => overflows++);
  const heard: [string, string, string | null][] = [];
  const watch = (path: string, label = path): FolderWatcher =>
    watches.watch(path, function (type, filename) {
      heard.push([label, type, filename as string | null]);
    });
  return { native, watches, heard, watch, overflows: () => overflows };
}

describe('InotifyWatches', () => {
  it("tells each folder's listener its events, in the kernel's order, as fs.watch would: the type, the name, null for the folder itself", () => {
    const { native, heard, watch } = setup();
    const a = watch('/share/a');
    watch('/share/b');
    expect(native.masks).toEqual([WATCH_MASK, WATCH_MASK]);
    native.onData!(
      records([
        { wd: 1, mask: IN_CREATE, name: 'new.txt' },
        { wd: 2, mask: IN_MODIFY, name: 'old.txt' },
        { wd: 1, mask: IN_MOVED_TO, name: 'moved.txt' },
        { wd: 2, mask: IN_DELETE_SELF },
        { wd: 9, mask: IN_CREATE, name: 'nobody' },
      ]),
    );
    expect(heard).toEqual([
      ['/share/a', 'rename', 'new.txt'],
      ['/share/b', 'change', 'old.txt'],
      ['/share/a', 'rename', 'moved.txt'],
      ['/share/b', 'rename', null],
    ]);
    // Called with the watch as `this`, as fs.watch calls its listener.
    const selves: FolderWatcher[] = [];
    const w = new InotifyWatches(native, () => undefined);
    const c = w.watch('/share/c', function () {
      selves.push(this);
    });
    native.onData!(records([{ wd: native.wds.get('/share/c')!, mask: IN_CREATE, name: 'x' }]));
    expect(selves).toEqual([c]);
    expect(selves[0]).toBe(c);
    expect(a).not.toBe(c);
  });

  it('a watch closed hears nothing more, even from records read in the same piece; its descriptor is removed', () => {
    const { native, heard, watch } = setup();
    const a = watch('/share/a');
    watch('/share/b');
    a.close();
    a.close();
    expect(native.removed).toEqual([1]);
    native.onData!(records([{ wd: 1, mask: IN_CREATE, name: 'late' }, { wd: 2, mask: IN_CREATE, name: 'b1' }]));
    expect(heard).toEqual([['/share/b', 'rename', 'b1']]);
  });

  it('a folder watched twice shares one kernel watch: both hear it, and it is removed only when both have closed', () => {
    const { native, heard, watch } = setup();
    const one = watch('/share/a', 'one');
    const two = watch('/share/a', 'two');
    watch('/share/other');
    native.onData!(records([{ wd: 1, mask: IN_CREATE, name: 'f' }]));
    expect(heard).toEqual([
      ['one', 'rename', 'f'],
      ['two', 'rename', 'f'],
    ]);
    one.close();
    expect(native.removed).toEqual([]);
    native.onData!(records([{ wd: 1, mask: IN_CREATE, name: 'g' }]));
    expect(heard.at(-1)).toEqual(['two', 'rename', 'g']);
    two.close();
    expect(native.removed).toEqual([1]);
  });

  it('a sharer closed by the listener of another, in the middle of one event, hears nothing of it', () => {
    const { native, watches } = setup();
    const heard: string[] = [];
    const sharer: { watch?: FolderWatcher } = {};
    watches.watch('/share/a', () => {
      heard.push('first');
      sharer.watch?.close();
    });
    sharer.watch = watches.watch('/share/a', () => heard.push('second'));
    native.onData!(records([{ wd: 1, mask: IN_CREATE, name: 'f' }]));
    expect(heard).toEqual(['first']);
    expect(native.removed).toEqual([]);
  });

  it('a watch the kernel dropped (its folder deleted) says so, and its descriptor given again names the new folder only', () => {
    const { native, heard, watch } = setup();
    const gone = watch('/share/gone');
    watch('/share/keep');
    native.onData!(records([{ wd: 1, mask: IN_DELETE_SELF }, { wd: 1, mask: IN_IGNORED }]));
    expect(heard).toEqual([
      ['/share/gone', 'rename', null],
      ['/share/gone', 'rename', null],
    ]);
    // The kernel reuses descriptor 1 for another folder: the dropped watch hears none of it,
    // and closing it removes nothing.
    native.wds.set('/share/fresh', 1);
    watch('/share/fresh');
    native.onData!(records([{ wd: 1, mask: IN_CREATE, name: 'x' }]));
    expect(heard.at(-1)).toEqual(['/share/fresh', 'rename', 'x']);
    gone.close();
    expect(native.removed).toEqual([]);
    native.onData!(records([{ wd: 1, mask: IN_CREATE, name: 'y' }]));
    expect(heard.at(-1)).toEqual(['/share/fresh', 'rename', 'y']);
  });

  it('opens the instance with the first watch and closes it with the last (so it holds the process no longer than fs.watch would)', () => {
    const { native, watches, watch } = setup();
    expect(native.opened).toBe(0);
    const a = watch('/share/a');
    const b = watch('/share/b');
    expect(native.opened).toBe(1);
    a.close();
    expect(native.closed).toBe(0);
    b.close();
    expect(native.closed).toBe(1);
    expect(watches.size()).toBe(0);
    watch('/share/c');
    expect(native.opened).toBe(2);
  });

  it("a watch that cannot be added throws the kernel's code (ENOSPC: the watch limit), and a first one leaves no instance open", () => {
    const { native, watch } = setup();
    native.fail = 'ENOSPC';
    expect(() => watch('/share/a')).toThrow(expect.objectContaining({ code: 'ENOSPC' }));
    expect(native.opened).toBe(1);
    expect(native.closed).toBe(1);
  });

  it("the kernel's overflow record is reported once per read, however many it holds", () => {
    const { native, heard, watch, overflows } = setup();
    watch('/share/a');
    native.onData!(records([{ wd: 1, mask: IN_CREATE, name: 'f' }, { wd: -1, mask: IN_Q_OVERFLOW }, { wd: -1, mask: IN_Q_OVERFLOW }]));
    expect(overflows()).toBe(1);
    expect(heard).toEqual([['/share/a', 'rename', 'f']]);
    native.onData!(records([{ wd: 1, mask: IN_CREATE, name: 'g' }]));
    expect(overflows()).toBe(1);
  });

  it('a failed read of the instance is an error of every watch, with its code, and closes the instance', () => {
    const { native, watches } = setup();
    const errors: [FolderWatcher, string | undefined][] = [];
    for (const p of ['/share/a', '/share/b']) {
      const w = watches.watch(p, () => undefined);
      w.on('error', function (err) {
        errors.push([this, (err as NodeJS.ErrnoException).code]);
      });
    }
    native.onData!(null, 'EIO');
    expect(errors.map(([, code]) => code)).toEqual(['EIO', 'EIO']);
    expect(native.closed).toBe(1);
  });
});

/** A fake module with startAll: each batch waits on the pool until the test answers it. */
class FakeStarting extends FakeNative {
  readonly batches: { paths: string[]; done: (answers: StartAnswer[]) => void }[] = [];
  startAll(_handle: unknown, paths: string[], _mask: number, done: (answers: StartAnswer[]) => void): void {
    this.batches.push({ paths, done });
  }
  /** The pool answers the oldest batch: each path's folder watched (its descriptor), with `subs`, or what `answer` says. */
  answer(answer: (path: string) => StartAnswer | undefined = () => undefined, subs: string[] = []): void {
    const b = this.batches.shift()!;
    b.done(
      b.paths.map((p) => {
        const a = answer(p);
        return a !== undefined ? a : [this.add(undefined, p, WATCH_MASK), 7, 42, ...subs];
      }),
    );
  }
}

function startSetup() {
  const native = new FakeStarting();
  const watches = new InotifyWatches(native, () => undefined);
  const heard: [string, string, string | null][] = [];
  const start = (path: string) =>
    watches.start(path, function (type, filename) {
      heard.push([path, type, filename as string | null]);
    });
  return { native, watches, heard, start };
}

const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('InotifyWatches.start (a folder watched and its subfolders named, the watcher set-up)', () => {
  it('starts the folders asked for in one turn in one batch: a folder with its identity and subfolders, no folder, a watch that failed with its code', async () => {
    const { native, start } = startSetup();
    const a = start('/share/a');
    const gone = start('/share/gone');
    const full = start('/share/full');
    await turn();
    expect(native.batches.map((b) => b.paths)).toEqual([['/share/a', '/share/gone', '/share/full']]);
    native.answer((p) => (p.endsWith('gone') ? null : p.endsWith('full') ? 'ENOSPC' : undefined), ['x', 'y']);
    const got = await a;
    expect(got).toMatchObject({ dev: 7, ino: 42, folders: ['x', 'y'] });
    await expect(gone).resolves.toBeUndefined();
    await expect(full).rejects.toMatchObject({ code: 'ENOSPC' });
  });

  it('a record read while its batch was on the pool reaches the watch it added, once; a watch already there hears it as it comes', async () => {
    const { native, watches, heard, start } = startSetup();
    watches.watch('/share', function (type, filename) {
      heard.push(['/share', type, filename as string | null]);
    });
    const sub = start('/share/sub');
    await turn();
    // The pool has added the watch (descriptor 2) and listed the folder; a folder made in it
    // now is not in that listing, and its record is read before the batch's answer.
    native.add(undefined, '/share/sub', WATCH_MASK);
    native.onData!(records([{ wd: 2, mask: IN_CREATE, name: 'made-meanwhile' }, { wd: 1, mask: IN_CREATE, name: 'top' }]));
    expect(heard).toEqual([['/share', 'rename', 'top']]);
    native.answer();
    await sub;
    await turn();
    expect(heard).toEqual([
      ['/share', 'rename', 'top'],
      ['/share/sub', 'rename', 'made-meanwhile'],
    ]);
    // Records after the batch go to the watch as they come, and nothing is given twice.
    native.onData!(records([{ wd: 2, mask: IN_MODIFY, name: 'f' }]));
    expect(heard.slice(2)).toEqual([['/share/sub', 'change', 'f']]);
  });

  it('a folder deleted before its watch was registered: the watch says it was dropped', async () => {
    const { native, heard, start } = startSetup();
    const sub = start('/share/sub');
    await turn();
    native.add(undefined, '/share/sub', WATCH_MASK);
    native.onData!(records([{ wd: 1, mask: IN_DELETE_SELF }, { wd: 1, mask: IN_IGNORED }]));
    native.answer();
    const got = await sub;
    await turn();
    expect(heard).toEqual([
      ['/share/sub', 'rename', null],
      ['/share/sub', 'rename', null],
    ]);
    // Its descriptor names it no more.
    native.onData!(records([{ wd: 1, mask: IN_CREATE, name: 'later' }]));
    expect(heard).toHaveLength(2);
    got!.watcher.close();
  });

  it('keeps the instance open while a batch runs with no watch open, and closes it after a batch that added none', async () => {
    const { native, watches, start } = startSetup();
    const w = watches.watch('/share/a', () => undefined);
    const gone = start('/share/gone');
    await turn();
    w.close();
    expect(native.closed).toBe(0);
    native.answer(() => null);
    await gone;
    expect(native.closed).toBe(1);
  });

  it("a descriptor whose last watch closes while a batch runs is not removed when the batch's folder shares it (mv staging docs), and is removed when none does", async () => {
    const { native, watches, heard, start } = startSetup();
    const staging = watches.watch('/share/staging', () => undefined);
    const other = watches.watch('/share/other', () => undefined);
    const docs = start('/share/docs');
    const gone = start('/share/gone');
    await turn();
    // The folder once at "staging" is now "docs": the pool's add found its watch (descriptor 1).
    staging.close();
    other.close();
    expect(native.removed).toEqual([]);
    native.answer((p) => (p.endsWith('docs') ? [1, 7, 42] : null));
    await docs;
    await gone;
    expect(native.removed).toEqual([2]);
    native.onData!(records([{ wd: 1, mask: IN_CREATE, name: 'after-deploy.txt' }]));
    expect(heard).toEqual([['/share/docs', 'rename', 'after-deploy.txt']]);
  });

  it('a batch whose instance failed meanwhile answers EBADF for its folders', async () => {
    const { native, watches, start } = startSetup();
    watches.watch('/share/a', () => undefined);
    const sub = start('/share/sub');
    await turn();
    native.onData!(null, 'EIO');
    native.answer();
    await expect(sub).rejects.toMatchObject({ code: 'EBADF' });
  });
});

describe('InotifyWatches.start: the records held, for a listener shared by every folder (folder-watch.ts)', () => {
  /** One listener for every watch, which hears only the watches it has learnt of, as folder-watch's finds its folder by its watch. */
  function shared() {
    const known = new Set<FolderWatcher>();
    const heard: [string, string | null][] = [];
    const listener = function (this: FolderWatcher, type: string, filename: string | Buffer | null) {
      if (known.has(this)) heard.push([type, filename as string | null]);
    };
    return { known, heard, listener };
  }

  /** A folder started, with a record read between its watch's add on the pool and the batch's answer; its owner then learns of its watch. */
  async function startedWithHeldRecord() {
    const { native, watches } = startSetup();
    const { known, heard, listener } = shared();
    const sub = watches.start('/share/sub', listener);
    await turn();
    native.add(undefined, '/share/sub', WATCH_MASK);
    native.onData!(records([{ wd: 1, mask: IN_CREATE, name: 'made-meanwhile' }]));
    native.answer();
    known.add((await sub)!.watcher);
    return { native, heard };
  }

  it('reach the watch once its owner has learnt of it (after the start resolved), before any record read later', async () => {
    const { native, heard } = await startedWithHeldRecord();
    // A record read before the held ones were given: they come first.
    native.onData!(records([{ wd: 1, mask: IN_MODIFY, name: 'later' }]));
    expect(heard).toEqual([
      ['rename', 'made-meanwhile'],
      ['change', 'later'],
    ]);
  });

  it('reach it at the next turn of the event loop when nothing else is read', async () => {
    const { heard } = await startedWithHeldRecord();
    expect(heard).toEqual([]);
    await turn();
    expect(heard).toEqual([['rename', 'made-meanwhile']]);
  });
});

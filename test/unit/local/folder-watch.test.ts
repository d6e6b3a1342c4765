/**
 * The folder watch on a fake filesystem whose stats are counted: a changed file is stat-ed
 * once, by the watch's look after its event, and that stat stays on the local side
 * (ObservedStats, as watcher.ts notes it) until the side's look at the path takes it
 * instead of statting the file again (issue 13, "one stat per path per change"); the
 * aggregator's batch carries paths only (issue 38.6).
 */
import { describe, expect, it, vi } from 'vitest';
import { DEFAULT_INCLUDE } from '../../../src/config/schema.js';
import { EventAggregator, type RawEvent } from '../../../src/local/watch/aggregator.js';
import { watchFolders } from '../../../src/local/watch/folder-watch.js';
import type { LocalFs } from '../../../src/local/fs.js';
import { ObservedStats } from '../../../src/local/observed-stats.js';
import { diskPathOf } from '../../../src/local/paths.js';
import { createLocalSide } from '../../../src/local/side.js';
import { FakeClock } from '../../helpers/fake-clock.js';
import { FakeLocal } from '../../helpers/fake-local.js';

const mapping = { path: '/r', include: DEFAULT_INCLUDE, exclude: [], maxFileBytes: 1 << 20, followSymlinks: false };

/** A FakeLocal whose stat and lstat calls are counted per path, with fake folder watches. */
function setup() {
  const disk = new FakeLocal({ watch: true }).dir('/r').file('/r/a.txt', 'hello', 1000).dir('/r/sub').file('/r/sub/b.md', 'bee', 1000);
  const stats = new Map<string, number>();
  const count = (path: string): void => {
    stats.set(path, (stats.get(path) ?? 0) + 1);
  };
  const counted: LocalFs = Object.assign(Object.create(disk) as FakeLocal, {
    stat: (p: string) => (count(p), disk.stat(p)),
    lstat: (p: string) => (count(p), disk.lstat(p)),
  });
  const listeners = disk.watchers;
  // The same LocalFs (its lstat counted), as the folder watch of the daemon gets the walk's.
  const watchFs: LocalFs = Object.assign(Object.create(counted) as LocalFs, {
    lstat: (p: string) => counted.lstat(p),
  });
  return { disk, counted, stats, listeners, watchFs };
}

/** Watches /r, feeding an aggregator; `looked()` resolves once `n` more events were emitted. */
async function watching(t: ReturnType<typeof setup>, clock: FakeClock) {
  const aggregator = new EventAggregator({ quietMs: 300 });
  const observed = new ObservedStats();
  const emitted: RawEvent[] = [];
  let waiter: { n: number; resolve: () => void } | undefined;
  const watch = await watchFolders({
    root: '/r',
    filter: () => true,
    emit: (e) => {
      observed.note(e.path, e.stat); // as watcher.ts does with each event
      emitted.push(e);
      aggregator.push(e);
      if (waiter && emitted.length >= waiter.n) waiter.resolve();
    },
    checkRoot: () => undefined,
    onWatchError: (err) => {
      throw err;
    },
    clock,
    fs: t.watchFs,
  });
  const looked = (n: number): Promise<void> => {
    const target = emitted.length + n;
    return new Promise((resolve) => {
      waiter = { n: target, resolve };
    });
  };
  return { aggregator, observed, emitted, watch, looked };
}

describe('folder watch → local side (its stat), aggregator (the path): one stat per changed path', () => {
  it('stats a written file once, and the local side reports it by that stat', async () => {
    const t = setup();
    const clock = new FakeClock(10_000);
    const w = await watching(t, clock);
    t.stats.clear(); // the folders' own stats when their watches were set up

    t.disk.file('/r/a.txt', 'hello, world', 2000);
    t.disk.file('/r/sub/b.md', 'bees', 2500);
    const done = w.looked(2);
    t.listeners.get('/r')?.('change', 'a.txt');
    t.listeners.get('/r/sub')?.('change', 'b.md');
    await done;

    clock.tick(5_000);
    const scope = { files: w.aggregator.drain(clock.now()).items.map((i) => i.path), dirs: [] };
    expect(scope.files).toEqual(['a.txt', 'sub/b.md']);
    const scan = await createLocalSide(mapping, { fs: t.counted, observed: w.observed }).scanScope(scope);
    w.watch.close();

    expect(scan.files.get('a.txt')).toMatchObject({ size: 12, mtimeMs: 2000 });
    expect(scan.files.get('sub/b.md')).toMatchObject({ size: 4, mtimeMs: 2500 });
    expect(diskPathOf('/r', scan.files.get('sub/b.md')!)).toBe('/r/sub/b.md');
    expect(t.stats.get('/r/a.txt')).toBe(1);
    expect(t.stats.get('/r/sub/b.md')).toBe(1);
  });

  it('events during a look fold into one more look, whose stat is the one kept', async () => {
    const t = setup();
    const clock = new FakeClock(10_000);
    // The first look at a.txt reads the file as it was, then waits until the test lets it answer.
    let release = (): void => undefined;
    const gate = new Promise<void>((r) => (release = r));
    const lstat = t.watchFs.lstat;
    let held = false;
    t.watchFs.lstat = async (p) => {
      const st = await lstat(p);
      if (p === '/r/a.txt' && !held) {
        held = true;
        await gate;
      }
      return st;
    };
    const w = await watching(t, clock);
    t.stats.clear();

    const done = w.looked(2);
    t.listeners.get('/r')?.('change', 'a.txt');
    await clock.settle(); // the first look is under way
    t.disk.file('/r/a.txt', 'written again, longer', 3000);
    for (let i = 0; i < 3; i++) t.listeners.get('/r')?.('change', 'a.txt');
    release();
    await done;
    await clock.settle();

    expect(t.stats.get('/r/a.txt')).toBe(2);
    expect(w.emitted.map((e) => e.stat?.size)).toEqual([5, 21]);
    expect(w.observed.take('a.txt')).toMatchObject({ size: 21, mtimeMs: 3000 });
    w.watch.close();
  });

  it('a path named without a stat (a deletion, a poll) is stat-ed by the local side, and is gone', async () => {
    const t = setup();
    const clock = new FakeClock(10_000);
    const w = await watching(t, clock);
    t.disk.remove('/r/a.txt');
    const done = w.looked(1);
    t.listeners.get('/r')?.('rename', 'a.txt');
    await done;
    expect(w.emitted).toEqual([{ kind: 'unlink', path: 'a.txt', at: 10_000 }]);

    clock.tick(5_000);
    const scope = { files: w.aggregator.drain(clock.now()).items.map((i) => i.path), dirs: [] };
    const scan = await createLocalSide(mapping, { fs: t.counted, observed: w.observed }).scanScope(scope);
    w.watch.close();
    expect(scan.files.has('a.txt')).toBe(false);
  });

  it('a later event without a stat forgets the earlier one, a stat is taken once, a full scan forgets all: the side looks again', async () => {
    const observed = new ObservedStats();
    const stat = { size: 1, mtimeMs: 1, dev: 1, ino: 2 };
    observed.note('a.txt', stat);
    observed.note('a.txt', undefined);
    expect(observed.take('a.txt')).toBeUndefined();
    observed.note('a.txt', stat);
    expect(observed.take('a.txt')).toEqual(stat);
    expect(observed.take('a.txt')).toBeUndefined();
    observed.note('a.txt', stat);
    await createLocalSide(mapping, { fs: setup().counted, observed }).scan();
    expect(observed.take('a.txt')).toBeUndefined();
  });
});

describe('folder watch: a watch that fails', () => {
  it('reports the failure of a folder still there, and watches again a folder replaced under its name', async () => {
    const disk = new FakeLocal({ watch: true }).dir('/r').dir('/r/sub').file('/r/sub/b.md', 'bee', 1000);
    const clock = new FakeClock(10_000);
    const emitted: RawEvent[] = [];
    const errors: unknown[] = [];
    let wake: (() => void) | undefined;
    const next = (): Promise<void> => new Promise((resolve) => (wake = resolve));
    const watch = await watchFolders({
      root: '/r',
      filter: () => true,
      emit: (e) => {
        emitted.push(e);
        wake?.();
      },
      checkRoot: () => undefined,
      onWatchError: (err) => {
        errors.push(err);
        wake?.();
      },
      clock,
      fs: disk,
    });
    expect(watch.watchedDirs()).toBe(2);

    // The same folder, still there: its watch itself failed (events may be missed there).
    let seen = next();
    disk.watchErrors.get('/r/sub')?.(new Error('the watch broke'));
    await seen;
    expect(errors).toEqual([new Error('the watch broke')]);
    expect(emitted).toEqual([]);

    // Replaced under its name (another inode): watched again, and reported so that it is walked.
    disk.remove('/r/sub');
    disk.mkdir('/r/sub');
    seen = next();
    disk.watchErrors.get('/r/sub')?.(new Error('gone with its folder'));
    await seen;
    expect(emitted).toEqual([{ kind: 'addDir', path: 'sub', at: 10_000 }]);
    await vi.waitFor(() => expect(watch.watchedDirs()).toBe(2));
    expect(disk.watchers.has('/r/sub')).toBe(true);
    expect(errors).toHaveLength(1);
    watch.close();
    expect(disk.watchers.size).toBe(0);
  });
});

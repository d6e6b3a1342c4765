/**
 * The watcher on real folders with real chokidar, in both modes. No fixed sleeps: every
 * assertion waits for a condition (generous timeouts), and "nothing was reported" is
 * checked after a later event (a marker file, or a second watcher) proves the watcher saw
 * what came after.
 */
import { appendFile, lstat, mkdir, mkdtemp, realpath, rename, rm, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EventAggregator } from '../../../src/local/watch/aggregator.js';
import { ObservedStats } from '../../../src/local/observed-stats.js';
import type { RawEvent } from '../../../src/local/watch/aggregator.js';
import { classifyWatchError, startWatcher, WatchError, type Watcher, type WatcherOptions } from '../../../src/local/watch/watcher.js';
import { realClock } from '../../../src/time/clock.js';
import { waitFor } from '../../helpers/wait-for.js';
import { DEFAULTS } from '../../../src/config/schema.js';

const TIMEOUT = 20_000;

/** Visible paths only, as the built-in filter does for hidden entries. */
const noHidden = (rel: string): boolean => !rel.split('/').some((s) => s.startsWith('.'));

/** waitFor with what was seen in the timeout message. */
function waitSeen(what: string, cond: () => boolean, seen: () => unknown, timeoutMs = 10_000): Promise<void> {
  return waitFor(cond, { what, timeout: timeoutMs, interval: 20, describe: () => JSON.stringify(seen()) });
}

interface Harness {
  root: string;
  events: RawEvent[];
  errors: WatchError[];
  watcher: Watcher;
  /** Waits for an event matching `pred` (among events not yet consumed by an earlier wait). */
  waitEvent(what: string, pred: (e: RawEvent) => boolean): Promise<RawEvent>;
}

let root: string;
const open: Watcher[] = [];
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'dssync-watch-'));
});
afterEach(async () => {
  await Promise.all(open.splice(0).map((w) => w.close()));
  await rm(root, { recursive: true, force: true });
});

/** The config's watch defaults, as the daemon passes them (config/load.ts resolves them). */
const WATCH = { watchMode: DEFAULTS.watch.mode, pollTargetMs: DEFAULTS.watch.pollIntervalSeconds * 1000, pollBudgetPercent: DEFAULTS.watch.pollBudgetPercent };

async function watchRoot(opts: Partial<WatcherOptions> = {}): Promise<Harness> {
  const events: RawEvent[] = [];
  const errors: WatchError[] = [];
  const watcher = await startWatcher({
    root,
    filter: noHidden,
    onEvent: (e) => events.push(e),
    onError: (e) => errors.push(e),
    clock: realClock,
    ...WATCH,
    ...opts,
  });
  open.push(watcher);
  const waitEvent = async (what: string, pred: (e: RawEvent) => boolean): Promise<RawEvent> => {
    await waitSeen(what, () => events.some(pred), () => events);
    return events.find(pred)!;
  };
  return { root, events, errors, watcher, waitEvent };
}

const exists = (e: RawEvent): boolean => e.kind === 'add' || e.kind === 'change';

describe.each([
  { name: 'folders only (raw events)', opts: {} },
])('startWatcher, $name', ({ opts }) => {
  it('reports a file added, changed and deleted, with sizes', { timeout: TIMEOUT }, async () => {
    const h = await watchRoot(opts);
    await writeFile(join(root, 'a.txt'), 'hello');
    await h.waitEvent('a.txt present', (e) => e.path === 'a.txt' && exists(e));
    const appendedAt = realClock.monotonic();
    await appendFile(join(root, 'a.txt'), ' world');
    await h.waitEvent('a.txt changed', (e) => e.path === 'a.txt' && exists(e) && e.at >= appendedAt);
    // Each path is stat-ed again after its last raw event: the final size always arrives.
    // (chokidar's own change events may stop at an intermediate size: LIBRARIES.md.)
    await waitSeen('the final size', () => h.events.filter((e) => e.path === 'a.txt').at(-1)?.size === 11, () => h.events);
    await unlink(join(root, 'a.txt'));
    await h.waitEvent('a.txt unlinked', (e) => e.path === 'a.txt' && e.kind === 'unlink');
    expect(h.errors).toEqual([]);
  });

  it("keeps each written file's stat on the local side for the pass's look, and forgets it when the file goes (issue 38.6)", { timeout: TIMEOUT }, async () => {
    const observed = new ObservedStats();
    const h = await watchRoot({ ...opts, observed });
    await writeFile(join(root, 'b.txt'), 'twelve bytes');
    await h.waitEvent('b.txt present', (e) => e.path === 'b.txt' && exists(e));
    await unlink(join(root, 'b.txt'));
    await h.waitEvent('b.txt unlinked', (e) => e.path === 'b.txt' && e.kind === 'unlink');
    expect(observed.take('b.txt')).toBeUndefined();
    await writeFile(join(root, 'c.txt'), 'abc');
    await h.waitEvent('c.txt written', (e) => e.path === 'c.txt' && exists(e) && e.size === 3);
    expect(observed.take('c.txt')).toMatchObject({ size: 3, ino: (await lstat(join(root, 'c.txt'))).ino });
    expect(h.errors).toEqual([]);
  });

  it('reports a rename as the old path gone and the new one present', { timeout: TIMEOUT }, async () => {
    await mkdir(join(root, 'in'));
    await writeFile(join(root, 'in', 'scan.pdf'), 'pdf');
    const h = await watchRoot(opts);
    await rename(join(root, 'in', 'scan.pdf'), join(root, 'filed.pdf'));
    await h.waitEvent('in/scan.pdf unlinked', (e) => e.path === 'in/scan.pdf' && e.kind === 'unlink');
    await h.waitEvent('filed.pdf present', (e) => e.path === 'filed.pdf' && exists(e));
  });

  it('reports a moved folder as unlinkDir of the old path and addDir of the new one', { timeout: TIMEOUT }, async () => {
    await mkdir(join(root, 'projects', 'alpha', 'docs'), { recursive: true });
    await writeFile(join(root, 'projects', 'alpha', 'docs', 'spec.md'), '# spec');
    const h = await watchRoot(opts);
    await rename(join(root, 'projects', 'alpha'), join(root, 'alpha-2024'));
    await h.waitEvent('projects/alpha unlinkDir', (e) => e.path === 'projects/alpha' && e.kind === 'unlinkDir');
    await h.waitEvent('alpha-2024 addDir', (e) => e.path === 'alpha-2024' && e.kind === 'addDir');
    // And the moved folder is watched under its new name. The addDir is reported before the
    // watches of its subfolders exist (a write in between is the daemon's walk of the new
    // folder to read), so the file is written again until the change is seen: a folder that
    // stayed unwatched times out.
    const writtenAt = realClock.monotonic();
    let version = 2;
    const seen = (e: RawEvent): boolean => e.path === 'alpha-2024/docs/spec.md' && exists(e) && e.at >= writtenAt;
    await waitFor(
      async () => {
        if (h.events.some(seen)) return true;
        await writeFile(join(root, 'alpha-2024', 'docs', 'spec.md'), `# spec v${version++}`);
        return false;
      },
      { what: 'a change under the moved folder', timeout: 10_000, interval: 300, describe: () => JSON.stringify(h.events) },
    );
  });

  it('ends an atomic save (temp file renamed over the file) with the real path reported as present', { timeout: TIMEOUT }, async () => {
    await writeFile(join(root, 'report.txt'), 'version 1');
    const h = await watchRoot(opts);
    const agg = new EventAggregator({ quietMs: 50, renameWindowMs: 100, batchTickMs: 0 });
    for (const tmp of ['.report.txt.swp-tmp', 'report.txt.tmp-42']) {
      await writeFile(join(root, tmp), 'version 2, longer');
      await rename(join(root, tmp), join(root, 'report.txt'));
    }
    await h.waitEvent('report.txt present', (e) => e.path === 'report.txt' && exists(e));
    // The hidden temp file is filtered out; nothing says the real file is gone.
    expect(h.events.filter((e) => e.path.startsWith('.'))).toEqual([]);
    const last = h.events.filter((e) => e.path === 'report.txt').at(-1)!;
    expect(exists(last)).toBe(true);
    // Through the aggregator: the real file is reported, present.
    for (const e of h.events) agg.push(e);
    const batch = agg.drain(Math.max(...h.events.map((e) => e.at)) + 10_000);
    expect(batch.items.find((i) => i.path === 'report.txt')).toMatchObject({ gone: false, isDir: false });
    expect(batch.items.map((i) => i.path).filter((p) => p !== 'report.txt' && p !== 'report.txt.tmp-42')).toEqual([]);
  });

  it('reports nothing from hidden folders, and does not watch them', { timeout: TIMEOUT }, async () => {
    await mkdir(join(root, '.git', 'objects'), { recursive: true });
    await mkdir(join(root, 'visible'));
    const h = await watchRoot(opts);
    expect(h.watcher.watchedDirs()).toBe(2); // the root and "visible"
    await writeFile(join(root, '.git', 'objects', 'ab12'), 'blob');
    await mkdir(join(root, '.cache'));
    await writeFile(join(root, '.cache', 'x.bin'), 'cached');
    await writeFile(join(root, '.hidden-file'), 'h');
    await writeFile(join(root, 'visible', 'marker.txt'), 'm');
    await h.waitEvent('the marker', (e) => e.path === 'visible/marker.txt' && exists(e));
    expect(h.events.filter((e) => !noHidden(e.path))).toEqual([]);
  });

  it('reports a folder created with subfolders and files, and then watches all of it', { timeout: TIMEOUT }, async () => {
    const h = await watchRoot(opts);
    // Created faster than chokidar can read-then-watch each level.
    await mkdir(join(root, 'new', 'deeper', 'deepest'), { recursive: true });
    await writeFile(join(root, 'new', 'deeper', 'n.txt'), 'n');
    // The top folder is reported (the engine walks its whole subtree)...
    await h.waitEvent('addDir new', (e) => e.path === 'new' && e.kind === 'addDir');
    // ...and every level ends up watched, so that later changes anywhere in it are seen.
    await waitSeen('all levels watched', () => h.watcher.watchedDirs() === 4, () => h.watcher.watchedDirs());
    await writeFile(join(root, 'new', 'deeper', 'deepest', 'later.txt'), 'later');
    await h.waitEvent('later.txt', (e) => e.path === 'new/deeper/deepest/later.txt' && exists(e));
  });

  it('reports names in NFC even when the disk holds them in NFD', { timeout: TIMEOUT }, async () => {
    const h = await watchRoot(opts);
    await writeFile(join(root, 'Re\u0301union.txt'), 'nfd');
    await h.waitEvent('the NFC name', (e) => e.path === 'R\u00e9union.txt' && exists(e));
  });

  it('stops reporting after close()', { timeout: TIMEOUT }, async () => {
    const h = await watchRoot(opts);
    await h.watcher.close();
    // A second watcher on the same folder proves the change happened and was seen.
    const control = await watchRoot(opts);
    await writeFile(join(root, 'after-close.txt'), 'x');
    await control.waitEvent('the control sees the file', (e) => e.path === 'after-close.txt');
    await writeFile(join(root, 'after-close-2.txt'), 'y');
    await control.waitEvent('the control sees the second file', (e) => e.path === 'after-close-2.txt');
    expect(h.events).toEqual([]);
  });

  it.each(['deleted while empty', 'deleted with its contents', 'renamed away'])(
    'reports the mapped folder %s as a root-gone error, without crashing',
    { timeout: TIMEOUT },
    async (how) => {
      if (how === 'deleted with its contents') {
        await mkdir(join(root, 'sub'));
        await writeFile(join(root, 'f.txt'), 'f');
      }
      const h = await watchRoot(opts);
      if (how === 'renamed away') await rename(root, `${root}-moved`);
      else await rm(root, { recursive: true });
      try {
        await waitSeen('a root-gone error', () => h.errors.some((e) => e.code === 'E_WATCH_ROOT_GONE'), () => h.errors);
        expect(h.errors[0]).toBeInstanceOf(WatchError);
        expect(h.errors[0]).toMatchObject({ code: 'E_WATCH_ROOT_GONE', lostEvents: true });
        expect(h.errors[0]!.message).toContain(h.watcher.root);
      } finally {
        await rm(`${root}-moved`, { recursive: true, force: true });
      }
    },
  );
});

describe('startWatcher, other cases', () => {
  it('rejects a missing folder with a root-unusable error naming it', { timeout: TIMEOUT }, async () => {
    const missing = join(root, 'does-not-exist');
    const err = await startWatcher({ root: missing, clock: realClock, ...WATCH, filter: () => true, onEvent: () => {}, onError: () => {} }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WatchError);
    expect(err).toMatchObject({ code: 'E_WATCH_ROOT_UNUSABLE' });
    expect((err as Error).message).toContain(missing);
  });

  it('reports a failing event handler as an error instead of crashing, and keeps watching', { timeout: TIMEOUT }, async () => {
    let calls = 0;
    const h = await watchRoot({
      onEvent: (e) => {
        calls++;
        if (e.path === 'bad.txt') throw new Error('handler broke');
        h.events.push(e);
      },
    });
    await writeFile(join(root, 'bad.txt'), 'x');
    await waitSeen('the handler error', () => h.errors.length > 0, () => calls);
    expect(h.errors[0]).toMatchObject({ code: 'E_WATCH_FAILED' });
    expect(h.errors[0]!.message).toMatch(/handler broke/);
    await writeFile(join(root, 'good.txt'), 'y');
    await h.waitEvent('good.txt', (e) => e.path === 'good.txt');
  });

  it('tells a watch limit (ENOSPC) from other watcher errors', () => {
    const limit = classifyWatchError('/srv/share', Object.assign(new Error('ENOSPC: System limit for number of file watchers reached'), { code: 'ENOSPC' }));
    expect(limit).toMatchObject({ code: 'E_WATCH_LIMIT', lostEvents: true, root: '/srv/share' });
    expect(limit.message).toMatch(/max_user_watches/);
    expect(classifyWatchError('/srv/share', new Error('EIO'))).toMatchObject({ code: 'E_WATCH_FAILED', lostEvents: true });
  });

  it('says when the mounts on or below the folder change (a share mounted into it): mounts-changed, to be watched again', { timeout: TIMEOUT }, async () => {
    const real = await realpath(root);
    let table = `1 0 8:1 / / rw - ext4 /dev/sda1 rw`;
    const h = await watchRoot({ readMountInfo: async () => table, mountCheckMs: 20 });
    expect(h.watcher.status!().mounts).toEqual([expect.objectContaining({ fsType: 'ext4', kind: 'events' })]);
    table += `\n2 1 0:50 / ${real.replace(/ /g, '\\040')}/share rw - cifs //fileserver/Public rw`;
    await waitSeen('mounts-changed', () => h.errors.some((e) => e.code === 'E_WATCH_MOUNTS_CHANGED'), () => h.errors);
    const err = h.errors.find((e) => e.code === 'E_WATCH_MOUNTS_CHANGED')!;
    expect(err.message).toContain(`${real}/share cifs`);
    expect(err.lostEvents).toBe(true);
  });

  it('watches by polling when asked (watch.mode "poll"), reporting add, change and unlink', { timeout: TIMEOUT }, async () => {
    const h = await watchRoot({ watchMode: 'poll', pollTargetMs: 50 });
    expect(h.watcher.status!()).toMatchObject({ mounts: [{ kind: 'poll', why: 'watch.mode is "poll"' }] });
    // Ready once the first cycle has learned the folder: a change from now on is reported.
    expect(h.watcher.status!().poll!.cycles).toBeGreaterThanOrEqual(1);
    expect(h.watcher.watchedDirs()).toBe(0); // no inotify watch at all
    await writeFile(join(root, 'p.txt'), 'one');
    await h.waitEvent('p.txt added', (e) => e.path === 'p.txt' && e.kind === 'add');
    await writeFile(join(root, 'p.txt'), 'two, longer');
    await h.waitEvent('p.txt changed', (e) => e.path === 'p.txt' && e.kind === 'change' && e.size === 11);
    await unlink(join(root, 'p.txt'));
    await h.waitEvent('p.txt unlinked', (e) => e.path === 'p.txt' && e.kind === 'unlink');
  });

  it('a start stopped while its first poll cycle runs ends at once, having learned nothing (the caller closes it)', { timeout: TIMEOUT }, async () => {
    await writeFile(join(root, 'p.txt'), 'one');
    const stopping = new AbortController();
    stopping.abort();
    const h = await watchRoot({ watchMode: 'poll', pollTargetMs: 50, signal: stopping.signal });
    expect(h.watcher.status!().poll).toMatchObject({ cycles: 0 });
  });

  it('feeds a burst of files moved between folders into one aggregator batch', { timeout: TIMEOUT }, async () => {
    await mkdir(join(root, 'inbox'));
    await mkdir(join(root, 'filed'));
    for (let k = 0; k < 200; k++) await writeFile(join(root, 'inbox', `scan-${k}.pdf`), `scan ${k}`);
    const h = await watchRoot();
    for (let k = 0; k < 200; k++) await rename(join(root, 'inbox', `scan-${k}.pdf`), join(root, 'filed', `scan-${k}.pdf`));
    await waitSeen(
      'all 400 events',
      () => new Set(h.events.map((e) => `${e.kind}:${e.path}`)).size >= 400,
      () => h.events.length,
    );
    const agg = new EventAggregator({ quietMs: 1000, batchTickMs: 0 });
    for (const e of h.events) agg.push(e);
    const batch = agg.drain(Math.max(...h.events.map((e) => e.at)) + 60_000);
    expect(batch.items.filter((i) => !i.isDir)).toHaveLength(400);
    expect(batch.items.filter((i) => i.gone).map((i) => i.path)).toEqual(Array.from({ length: 200 }, (_, k) => `inbox/scan-${k}.pdf`).sort());
  });
});

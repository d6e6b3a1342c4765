/**
 * dssync's own inotify watch (native/inotify.c, src/local/watch/inotify.ts) on real folders:
 * what a folder's listener hears is what fs.watch says for the same changes, watched side by
 * side; a deleted folder's watch says so and a closed one goes quiet; the kernel's overflow
 * record is read (fs.watch's libuv drops it). The module must be built: CI builds it
 * (DSSYNC_REQUIRE_NATIVE=1); a machine without a C compiler skips these and says so.
 */
import { closeSync, lstatSync, mkdirSync, openSync, readFileSync, watch as fsWatch, type FSWatcher } from 'node:fs';
import { appendFile, mkdir, mkdtemp, rename, rm, rmdir, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { FolderWatcher } from '../../../src/local/fs.js';
import { InotifyWatches, loadNativeInotify, watchBackend, watchFolder } from '../../../src/local/watch/inotify.js';
import { waitFor } from '../../helpers/wait-for.js';

const loaded = loadNativeInotify({});
const why = 'why' in loaded ? loaded.why : undefined;
if (why && process.env.DSSYNC_REQUIRE_NATIVE === '1') throw new Error(`the native inotify module is required here (DSSYNC_REQUIRE_NATIVE=1): ${why}`);
const native = 'native' in loaded ? loaded.native : undefined;
const SKIP = why ? ` (SKIPPED: ${why})` : '';

let root: string;
const open: { close(): void }[] = [];
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'dssync-inotify-'));
});
afterEach(async () => {
  for (const w of open.splice(0)) w.close();
  await rm(root, { recursive: true, force: true });
});

type Heard = [string, string];

/** `heard` with each run of identical events as one. */
function merged(heard: Heard[]): Heard[] {
  return heard.filter((e, i) => i === 0 || e[0] !== heard[i - 1]![0] || e[1] !== heard[i - 1]![1]);
}

/** Watches `dir` with both: what each heard, a self event named as fs.watch names it. */
function both(watches: InotifyWatches, dir: string, heard: { native: Heard[]; fs: Heard[] }): void {
  const own = watches.watch(dir, (type, filename) => heard.native.push([type, (filename as string | null) ?? basename(dir)]));
  const theirs: FSWatcher = fsWatch(dir, { persistent: true }, (type, filename) => heard.fs.push([type, String(filename)]));
  theirs.on('error', () => undefined);
  open.push(own, theirs);
}

describe.skipIf(!native)(`dssync's inotify watch${SKIP}`, () => {
  it('hears what fs.watch hears, in the same order: created, written, renamed, deleted, a folder made and removed, the watched folder itself deleted', { timeout: 30_000 }, async () => {
    const watches = new InotifyWatches(native!, () => undefined);
    open.push({ close: () => undefined });
    const top = { native: [] as Heard[], fs: [] as Heard[] };
    const sub = { native: [] as Heard[], fs: [] as Heard[] };
    await mkdir(join(root, 'sub'));
    both(watches, root, top);
    both(watches, join(root, 'sub'), sub);

    await writeFile(join(root, 'report.txt'), 'one');
    await appendFile(join(root, 'report.txt'), ' two');
    await rename(join(root, 'report.txt'), join(root, 'Bericht ü.txt'));
    await rm(join(root, 'Bericht ü.txt'));
    await mkdir(join(root, 'made'));
    await rmdir(join(root, 'made'));
    await writeFile(join(root, 'sub', 'inner.txt'), 'x');
    await rm(join(root, 'sub'), { recursive: true });
    await writeFile(join(root, 'end'), '');
    // Each watch has its own instance, so its own queue, read in one order: 'end', written
    // last, comes after everything else in both (the subfolder's events included).
    const done = (h: Heard[]): boolean => h.some(([, n]) => n === 'end');
    await waitFor(() => done(top.native) && done(top.fs), { what: 'both watches to hear the last file', timeout: 15_000, describe: () => JSON.stringify({ top, sub }) });

    // The kernel merges an event with an identical one still unread right before it in the
    // same queue: whether two writes make one event or two depends on when each instance was
    // read. Compared with such repeats merged, the two say the same.
    expect(merged(top.native)).toEqual(merged(top.fs));
    expect(merged(sub.native)).toEqual(merged(sub.fs));
    // What the kernel said, spelled out: the watched folder's own deletion comes last, as 'rename' of its name.
    expect(top.native).toContainEqual(['rename', 'Bericht ü.txt']);
    expect(top.native).toContainEqual(['change', 'report.txt']);
    expect(sub.native.at(-1)).toEqual(['rename', 'sub']);
  });

  it('a closed watch hears nothing more; the instance closes with the last watch', { timeout: 30_000 }, async () => {
    const watches = new InotifyWatches(native!, () => undefined);
    const quiet: string[] = [];
    const loud: string[] = [];
    await mkdir(join(root, 'a'));
    await mkdir(join(root, 'b'));
    const a = watches.watch(join(root, 'a'), (_t, f) => quiet.push(String(f)));
    const b = watches.watch(join(root, 'b'), (_t, f) => loud.push(String(f)));
    a.close();
    await writeFile(join(root, 'a', 'after-close'), '');
    await writeFile(join(root, 'b', 'marker'), '');
    await waitFor(() => loud.includes('marker'), { what: 'the open watch to hear its file', timeout: 15_000 });
    expect(quiet).toEqual([]);
    b.close();
    expect(watches.size()).toBe(0);
  });

  const size = Number(readFileSync('/proc/sys/fs/inotify/max_queued_events', 'utf8').trim());
  const tooLarge = !(size <= 200_000);
  it.skipIf(tooLarge)(`reads the kernel's overflow record: more events than the queue holds, made while nothing reads, are one overflow${tooLarge ? ` (SKIPPED: fs.inotify.max_queued_events is ${size}, too many files to make)` : ''}`, { timeout: 60_000 }, async () => {
    let overflows = 0;
    let events = 0;
    const watches = new InotifyWatches(native!, () => overflows++);
    const w: FolderWatcher = watches.watch(root, () => void events++);
    open.push(w);
    // Synchronously, so that nothing reads the queue meanwhile: one IN_CREATE a file.
    mkdirSync(join(root, 'x'));
    for (let i = 0; i < size + 100; i++) closeSync(openSync(join(root, `f${i}`), 'w'));
    await waitFor(() => overflows > 0, { what: 'the overflow record', timeout: 30_000, describe: () => `${events} events, ${overflows} overflows` });
    expect(overflows).toBe(1);
    // The kernel kept `size` events (the folder and the first files) and dropped the rest.
    expect(events).toBeLessThanOrEqual(size);
  });

  it("starts a folder on libuv's pool: its identity as lstat reads it, its subfolders only (no file, no link), then hears a folder made in it; no folder is undefined", { timeout: 30_000 }, async () => {
    await mkdir(join(root, 'one'));
    await mkdir(join(root, 'two'));
    await writeFile(join(root, 'file.txt'), 'x');
    await symlink(join(root, 'one'), join(root, 'link'));
    const watches = new InotifyWatches(native!, () => undefined);
    const heard: Heard[] = [];
    const got = await watches.start(root, (type, filename) => heard.push([type, String(filename)]));
    expect(got).toBeDefined();
    open.push(got!.watcher);
    const st = lstatSync(root);
    expect({ dev: got!.dev, ino: got!.ino }).toEqual({ dev: st.dev, ino: st.ino });
    expect([...got!.folders].sort()).toEqual(['one', 'two']);
    const [file, link, missing] = await Promise.all(['file.txt', 'link', 'missing'].map((n) => watches.start(join(root, n), () => undefined)));
    expect([file, link, missing]).toEqual([undefined, undefined, undefined]);
    await mkdir(join(root, 'made'));
    await waitFor(() => heard.some(([, name]) => name === 'made'), { what: 'the folder made after the start', timeout: 15_000, describe: () => JSON.stringify(heard) });
    expect(watches.size()).toBe(1);
  });

  it('is the watch the process uses (LocalFs.watch), unless DSSYNC_NATIVE=0', async () => {
    const w = watchFolder(root, () => undefined);
    open.push(w);
    expect(watchBackend()).toEqual({ name: 'inotify' });
    expect(loadNativeInotify({ DSSYNC_NATIVE: '0' })).toEqual({ why: 'DSSYNC_NATIVE=0' });
  });
});

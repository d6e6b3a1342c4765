/**
 * The poller over a real folder, listing through the production worker lister (issue 27.4:
 * its cycle lists each folder with one LocalFs.listFolder call). A listing blocked in the
 * kernel (a test hook opens a FIFO in the worker, as a hung mount would block it) is
 * reported hung at the deadline with nothing reported, no further listing is started while
 * it hangs, and polling resumes once it answers. A listing that is slow but keeps moving
 * (a test hook holds each file's lstat) is not hung, however long it takes.
 */
import { execFileSync } from 'node:child_process';
import { closeSync, constants, existsSync, openSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { RawEvent } from '../../../src/local/watch/aggregator.js';
import { FolderLister } from '../../../src/local/folder-lister.js';
import { nodeFs } from '../../../src/local/fs.js';
import { Poller, type PollFs, type PollProblem } from '../../../src/local/watch/poller.js';
import { FakeClock } from '../../helpers/fake-clock.js';
import { heldLstats } from '../../helpers/held-lstats.js';
import { waitFor } from '../../helpers/wait-for.js';

let dir: string;
let lister: FolderLister | undefined;
let fifo: string;
let blocked = false;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'dssync-poller-'));
  fifo = join(dir, '.fifo');
  execFileSync('mkfifo', [fifo]);
});
afterEach(async () => {
  if (blocked) await release(fifo);
  lister?.close();
  lister = undefined;
  await rm(dir, { recursive: true, force: true });
});

/** Opens the FIFO for writing once a reader waits on it: the blocked worker's open returns. */
async function release(path: string): Promise<void> {
  for (;;) {
    try {
      closeSync(openSync(path, constants.O_WRONLY | constants.O_NONBLOCK));
      blocked = false;
      return;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENXIO') throw e;
      await new Promise((r) => setTimeout(r, 10));
    }
  }
}

/** A poller of `root` (10 s timeout, fake clock) listing through `listFolder`, with what it emitted and reported. */
function pollerOf(root: string, listFolder: PollFs['listFolder']) {
  const clock = new FakeClock(1_000);
  const events: RawEvent[] = [];
  const seen = { problems: [] as readonly PollProblem[] };
  const poller = new Poller({
    root,
    subtrees: [''],
    filter: () => true,
    emit: (e) => events.push(e),
    intervalMs: 10_000,
    budgetPercent: 100,
    callTimeoutMs: 10_000,
    fs: { ...nodeFs, listFolder },
    clock,
    cpuMs: () => 0,
    onProblems: (p) => (seen.problems = p),
  });
  return { poller, clock, events, seen };
}

describe('Poller over the worker lister', () => {
  it('a listing blocked in the kernel: hung at the deadline, nothing reported, nothing more listed meanwhile, polling resumes once it answers', async () => {
    const root = join(dir, 'tree');
    await mkdir(join(root, 'a'), { recursive: true });
    await mkdir(join(root, 'slow'));
    await writeFile(join(root, 'a', 'one.txt'), 'one');
    await writeFile(join(root, 'two.txt'), 'two');
    const armed = join(dir, '.armed');
    const blocking = join(dir, '.blocking');
    // While `armed` exists, the worker's listing of tree/slow blocks in open(2) on the FIFO.
    const hook = `const fs = require('node:fs'); if (path.endsWith('/slow') && fs.existsSync(${JSON.stringify(armed)})) { fs.writeFileSync(${JSON.stringify(blocking)}, ''); fs.openSync(${JSON.stringify(fifo)}, 'r'); }`;
    lister = new FolderLister({ workers: 1, testHook: hook });
    const l = lister;
    let listings = 0;
    const { poller, clock, events, seen } = pollerOf(root, (path, opts) => {
      listings++;
      return l.list(path, opts);
    });
    const kinds = (): string[] => events.splice(0).map((e) => `${e.kind} ${e.path}`).sort();

    await poller.cycleOnce(); // learns the tree
    expect(kinds()).toEqual([]);

    await writeFile(join(root, 'two.txt'), 'two, edited');
    await rm(join(root, 'a', 'one.txt'));
    await writeFile(armed, '');
    const cycle = poller.cycleOnce();
    await waitFor(() => existsSync(blocking), { what: 'the listing of tree/slow to block in the worker', timeout: 20_000 });
    blocked = true;
    // No progress for the timeout, noticed within a quarter more (a listing of tree/a before
    // it on the worker may have moved just before the deadline's first look).
    await clock.advance(12_500);
    await cycle;
    expect(seen.problems).toEqual([expect.objectContaining({ kind: 'hung', path: '' })]);
    expect(kinds()).toEqual([]); // neither the edit nor the deletion: nothing is reported while hung

    // Still blocked: a cycle lists nothing (nothing piles up on the stuck worker).
    const before = listings;
    await poller.cycleOnce();
    expect(listings).toBe(before);
    expect(seen.problems[0]!.message).toMatch(/hung.*nothing is deleted/);
    expect(lister.workerCount).toBe(1);

    // The mount answers again: the listing completes, and the next cycle reports what changed.
    await rm(armed);
    await release(fifo);
    await waitFor(
      async () => {
        await poller.cycleOnce();
        return seen.problems.length === 0;
      },
      { what: 'a cycle to run once the blocked listing answered', describe: () => JSON.stringify(seen.problems) },
    );
    expect(kinds()).toEqual(['change two.txt', 'unlink a/one.txt']);
  });

  it('a listing slow but moving (each lstat held 4 s, 24 s in all, the timeout 10 s): not hung, its changes reported', async () => {
    const root = join(dir, 'tree');
    const big = join(root, 'big');
    await mkdir(big, { recursive: true });
    for (let i = 0; i < 6; i++) await writeFile(join(big, `f${i}.txt`), 'x');
    const gates = join(dir, 'gates');
    await mkdir(gates);
    const armed = join(dir, '.armed');
    // While `armed` exists, each file's lstat in big/ is held until the test lets it go.
    const lstats = heldLstats(gates, armed, ['f0.txt', 'f1.txt', 'f2.txt', 'f3.txt', 'f4.txt', 'f5.txt']);
    lister = new FolderLister({ workers: 1, testEntryHook: lstats.hook });
    const l = lister;
    const { poller, clock, events, seen } = pollerOf(root, (path, opts) => l.list(path, opts));
    await poller.cycleOnce(); // learns the tree
    await writeFile(join(big, 'f5.txt'), 'x, edited');
    await writeFile(armed, '');
    let ended = false;
    const cycle = poller.cycleOnce().then(() => (ended = true));
    for (let i = 0; i < 6; i++) {
      const name = await lstats.next();
      await clock.advance(4_000); // under the timeout per file, over it in all
      expect(ended).toBe(false);
      lstats.release(name);
    }
    await cycle;
    expect(seen.problems).toEqual([]);
    expect(events.map((e) => `${e.kind} ${e.path}`)).toEqual(['change big/f5.txt']);
  });
});

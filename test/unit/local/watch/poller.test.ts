/**
 * The poller on the one fake filesystem (test/helpers/fake-local.ts) and a fake clock (issue 12): what a stat-only walk reports,
 * its CPU budget, and bad input (a hung mount, an unmounted share, a denied folder) never
 * read as deletions.
 */
import { describe, expect, it } from 'vitest';
import type { RawEvent } from '../../../../src/local/watch/aggregator.js';
import { Poller, type PollProblem } from '../../../../src/local/watch/poller.js';
import { realClock, type Clock, type TimerHandle } from '../../../../src/time/clock.js';
import { FakeClock as SharedFakeClock } from '../../../helpers/fake-clock.js';
import { FakeLocal } from '../../../helpers/fake-local.js';

/** A file of `size` bytes (the poller sees sizes, never content). */
const bytes = (size: number): string => 'x'.repeat(size);

/**
 * Time advances only through sleep() (the poller's CPU slices and intervals: a self-advancing
 * clock, which test/helpers/fake-clock.ts is not); each filesystem call costs `cpuPerCall` ms
 * of CPU. The hung-call deadline runs on a real unref'd timer of `callTimeoutMs` (50 ms): the
 * fake filesystem's hang (`FakeLocal.hang`) is a promise that never settles, so the deadline is the only way out.
 */
class FakeClock implements Clock {
  t = 0;
  slept = 0;
  constructor(private readonly fs: FakeLocal, private readonly cpuPerCall = 0) {}
  now(): number {
    return this.t;
  }
  monotonic(): number {
    return this.t;
  }
  setTimeout(fn: () => void, ms: number): TimerHandle {
    return realClock.setTimeout(fn, ms);
  }
  clearTimeout(handle: TimerHandle): void {
    realClock.clearTimeout(handle);
  }
  cpuMs(): number {
    return this.fs.calls * this.cpuPerCall;
  }
  async sleep(ms: number): Promise<void> {
    this.t += ms;
    this.slept += ms;
  }
}

const ROOT = '/srv/share';
function setup(o: { cpuPerCall?: number; wallPerCall?: number; budgetPercent?: number; callTimeoutMs?: number; subtrees?: string[] } = {}) {
  const fs = new FakeLocal({ root: ROOT }).mount(ROOT, 7); // the polled share, a filesystem of its own
  const clock = new FakeClock(fs, o.cpuPerCall);
  if (o.wallPerCall) fs.onCall = () => (clock.t += o.wallPerCall!);
  const events: RawEvent[] = [];
  let problems: readonly PollProblem[] = [];
  const poller = new Poller({
    root: ROOT,
    subtrees: o.subtrees ?? [''],
    filter: (rel) => !rel.split('/').some((s) => s.startsWith('.')),
    emit: (e) => events.push(e),
    intervalMs: 10_000,
    budgetPercent: o.budgetPercent ?? 5,
    callTimeoutMs: o.callTimeoutMs ?? 50,
    fs,
    clock,
    cpuMs: () => clock.cpuMs(),
    onProblems: (p) => (problems = p),
  });
  const kinds = (): string[] => events.splice(0).map((e) => `${e.kind} ${e.path}`).sort();
  return { fs, clock, poller, events, kinds, problems: () => problems };
}

describe('Poller: what a stat-only walk reports', () => {
  it('learns the tree at its first cycle (reports nothing), then reports adds, edits, deletes, renames and folders', async () => {
    const { fs, poller, kinds } = setup();
    fs.mkdir('a');
    fs.write('a/one.txt', bytes(10));
    fs.write('two.txt', bytes(20));
    fs.write('.hidden', bytes(1));
    await poller.cycleOnce();
    expect(kinds()).toEqual([]);

    fs.write('a/one.txt', bytes(11), 2000); // edit
    fs.write('three.txt', bytes(5)); // new
    fs.remove('two.txt'); // deleted
    fs.mkdir('b');
    fs.write('b/four.txt', bytes(4));
    fs.write('.hidden', bytes(2)); // filtered
    await poller.cycleOnce();
    expect(kinds()).toEqual(['add b/four.txt', 'add three.txt', 'addDir b', 'change a/one.txt', 'unlink two.txt']);

    fs.rename('b', 'c');
    await poller.cycleOnce();
    expect(kinds()).toEqual(['add c/four.txt', 'addDir c', 'unlink b/four.txt', 'unlinkDir b']);

    await poller.cycleOnce();
    expect(kinds()).toEqual([]);
    expect(poller.status()).toMatchObject({ cycles: 4, lastFiles: 3 });
  });

  it('sees a same-size rewrite with its mtime put back through the ctime, and a swap through the inode', async () => {
    const { fs, poller, kinds } = setup();
    fs.write('x.txt', bytes(10), 1000);
    fs.write('y.txt', bytes(10), 1000);
    await poller.cycleOnce();
    fs.rename('x.txt', 't');
    fs.rename('y.txt', 'x.txt');
    fs.rename('t', 'y.txt');
    await poller.cycleOnce();
    expect(kinds()).toEqual(['change x.txt', 'change y.txt']);
  });

  it('polls only its subtrees', async () => {
    const { fs, poller, kinds } = setup({ subtrees: ['nas'] });
    fs.mkdir('nas');
    fs.write('local.txt', bytes(1));
    await poller.cycleOnce();
    fs.write('nas/new.txt', bytes(1));
    fs.write('local2.txt', bytes(1));
    await poller.cycleOnce();
    expect(kinds()).toEqual(['add nas/new.txt']);
  });
});

describe('Poller: subtrees', () => {
  it('walks a mount nested in a polled mount once, on its own: figures per subtree, no event twice', async () => {
    const { fs, poller, kinds } = setup({ subtrees: ['', 'inner'] });
    fs.mkdir('inner');
    fs.mount('inner', 9);
    fs.write('top.txt', bytes(1));
    fs.write('inner/a.txt', bytes(1));
    fs.write('inner/b.txt', bytes(1));
    await poller.cycleOnce();
    expect(poller.status().bySubtree).toEqual({ '': { files: 1, ms: expect.any(Number) }, inner: { files: 2, ms: expect.any(Number) } });
    fs.write('inner/a.txt', bytes(2), 2000);
    fs.write('top.txt', bytes(2), 2000);
    await poller.cycleOnce();
    expect(kinds()).toEqual(['change inner/a.txt', 'change top.txt']);
    expect(poller.status().lastFiles).toBe(3);
  });

  it('an inner share unmounted under a polled outer one is an outage of its own, nothing under it deleted', async () => {
    const { fs, poller, kinds, problems } = setup({ subtrees: ['', 'inner'] });
    fs.mkdir('inner');
    fs.mount('inner', 9);
    fs.write('inner/a.txt', bytes(1));
    fs.write('top.txt', bytes(1));
    await poller.cycleOnce();
    fs.unmount('inner'); // the mount point, now an empty folder of the outer filesystem
    fs.write('top.txt', bytes(2), 2000);
    await poller.cycleOnce();
    expect(kinds()).toEqual(['change top.txt']);
    expect(problems()).toEqual([expect.objectContaining({ kind: 'unmounted', path: 'inner' })]);
  });

  it('a folder polled for the watch limit and then deleted is dropped (its watched parent reports it), not an outage', async () => {
    const { fs, poller, kinds, problems } = setup({ subtrees: [] });
    fs.mkdir('deep');
    fs.write('deep/x.txt', bytes(1));
    poller.addSubtree('deep');
    poller.addSubtree('deep/below'); // inside a polled subtree: nothing added
    await poller.cycleOnce();
    expect(poller.status().subtrees).toEqual(['deep']);
    fs.remove('deep');
    await poller.cycleOnce();
    expect(kinds()).toEqual([]);
    expect(problems()).toEqual([]);
    expect(poller.status().subtrees).toEqual([]);
  });
});

describe('Poller: what its first walk of a subtree learns is not lost', () => {
  it('a subtree learned after the first cycle (a folder past the watch limit found later) is reported whole once learned', async () => {
    const { fs, poller, kinds } = setup({ subtrees: [] });
    fs.mkdir('early');
    fs.write('early/e.txt', bytes(1));
    fs.mkdir('late');
    fs.write('late/l.txt', bytes(1));
    poller.addSubtree('early');
    await poller.cycleOnce(); // the first cycle: the caller's full pass follows it
    expect(kinds()).toEqual([]);
    // Edited after the full pass, before the walk that learns its folder: only the
    // look at the whole folder can find it (the walk's snapshot already holds the edit).
    fs.write('late/l.txt', bytes(2), 2000);
    poller.addSubtree('late');
    await poller.cycleOnce();
    expect(kinds()).toEqual(['addDir late']);
    fs.write('late/l.txt', bytes(3), 3000);
    await poller.cycleOnce();
    expect(kinds()).toEqual(['change late/l.txt']);
  });

  it('a first cycle cut short by a hang learns nothing; the cycle that learns the mapped folder later asks for a look at everything', async () => {
    const { fs, poller, events, kinds, problems } = setup({ callTimeoutMs: 20 });
    fs.write('one.txt', bytes(1));
    // The stat of one.txt hangs past the timeout, then answers.
    fs.hang('one.txt', 'lstat');
    const answer = (): void => fs.release('one.txt', 'lstat');
    await poller.cycleOnce();
    expect(problems()).toEqual([expect.objectContaining({ kind: 'hung' })]);
    expect(poller.status().cycles).toBe(0);
    answer();
    await new Promise((r) => setTimeout(r, 0));
    fs.write('one.txt', bytes(2), 2000); // edited before any walk learned the folder
    await poller.cycleOnce();
    expect(events.map((e) => e.reason)).toEqual([expect.stringMatching(/learned \/srv\/share after the start's full pass/)]);
    expect(kinds()).toEqual(['raw ']);
    expect(problems()).toEqual([]);
  });

  it('start() resolves once the first cycle ended, having learned every subtree given or added before it', async () => {
    const { fs, clock, poller, kinds } = setup({ subtrees: [] });
    // Its loop sleeps for real between cycles here (a macrotask), as it does in the daemon.
    clock.sleep = async (ms) => {
      clock.t += ms;
      await new Promise((r) => setImmediate(r));
    };
    fs.mkdir('a');
    fs.write('a/x.txt', bytes(1));
    poller.addSubtree('a');
    await poller.start();
    expect(poller.status()).toMatchObject({ cycles: 1, subtrees: ['a'], bySubtree: { a: { files: 1 } } });
    expect(kinds()).toEqual([]);
    await poller.stop();
  });
});

describe('Poller: cost', () => {
  it('keeps CPU under the budget by sleeping between slices: a big tree takes longer, not skipped', async () => {
    const { fs, clock, poller, kinds } = setup({ cpuPerCall: 0.05, budgetPercent: 5 });
    for (let d = 0; d < 20; d++) {
      fs.mkdir(`d${d}`);
      for (let f = 0; f < 500; f++) fs.write(`d${d}/f${f}.txt`, bytes(1));
    }
    await poller.cycleOnce();
    fs.write('d19/f499.txt', bytes(2), 5000);
    const t0 = clock.now();
    await poller.cycleOnce();
    expect(kinds()).toEqual(['change d19/f499.txt']);
    const s = poller.status();
    expect(s.lastFiles).toBe(10_000);
    // CPU over wall time of the cycle stays at the budget (5 %, within a slice's rounding).
    expect(s.lastCycleCpuMs! / (clock.now() - t0)).toBeLessThanOrEqual(0.055);
    expect(s.lastCycleMs).toBeGreaterThan(s.lastCycleCpuMs! * 18); // spread over time at the budget
    expect(s.lastCycleMs).toBeGreaterThan(5_000);
  });
});

describe('Poller: cost on a slow mount', () => {
  it('counts the time spent waiting on the mount towards the pause: the cycle is the slower of the two, not their sum', async () => {
    // 10,000 files: ~0.5 s of CPU (10 s at 5 %), and 2 ms of waiting per call (~20 s).
    const { fs, poller } = setup({ cpuPerCall: 0.05, wallPerCall: 2, budgetPercent: 5 });
    for (let d = 0; d < 20; d++) {
      fs.mkdir(`d${d}`);
      for (let f = 0; f < 500; f++) fs.write(`d${d}/f${f}.txt`, bytes(1));
    }
    await poller.cycleOnce();
    const s = poller.status();
    expect(s.lastFiles).toBe(10_000);
    expect(s.lastCycleCpuMs! / s.lastCycleMs!).toBeLessThanOrEqual(0.05);
    expect(s.lastCycleMs).toBeGreaterThanOrEqual(fs.calls * 2);
    expect(s.lastCycleMs).toBeLessThan(fs.calls * 2 + 1_000);
  });
});

/**
 * A listing's deadline measures progress (the lister's count, which the fake moves after the
 * readdir and each lstat), not the whole listing, on the one fake clock: each file's lstat
 * of `big` waits until the test lets it answer.
 */
function slowSetup() {
  const fs = new FakeLocal({ root: ROOT });
  const clock = new SharedFakeClock(0);
  fs.mkdir('big');
  for (let i = 0; i < 8; i++) fs.write(`big/f${i}.txt`, bytes(1));
  /** Every file's lstat in `big` held until the test lets it answer (each is asked once a cycle). */
  const slow = (): void => {
    for (let i = 0; i < 8; i++) fs.hang(`big/f${i}.txt`, 'lstat');
  };
  const events: RawEvent[] = [];
  let problems: readonly PollProblem[] = [];
  const poller = new Poller({
    root: ROOT,
    subtrees: [''],
    filter: () => true,
    emit: (e) => events.push(e),
    intervalMs: 10_000,
    budgetPercent: 100,
    callTimeoutMs: 10_000,
    fs,
    clock,
    cpuMs: () => 0,
    onProblems: (p) => (problems = p),
  });
  /** The one lstat waiting, once the listing has reached it. */
  const next = async (): Promise<() => void> => {
    await clock.settle();
    const waiting = fs.held();
    expect(waiting).toHaveLength(1);
    const { path, call } = waiting[0]!;
    return () => fs.release(path, call);
  };
  return { fs, clock, poller, next, slow, kinds: () => events.splice(0).map((e) => `${e.kind} ${e.path}`).sort(), problems: () => problems };
}

describe('Poller: a slow listing is not a hung one', () => {
  it('a folder whose listing takes over the timeout but keeps moving (an lstat every 4 s, 32 s in all) is listed, not reported hung', async () => {
    const { fs, clock, poller, next, slow, kinds, problems } = slowSetup();
    await poller.cycleOnce(); // learns the tree
    slow();
    fs.write('big/f7.txt', bytes(2), 2000);
    let ended = false;
    const cycle = poller.cycleOnce().then(() => (ended = true));
    for (let i = 0; i < 8; i++) {
      const answer = await next();
      await clock.advance(4_000);
      expect(ended).toBe(false);
      answer();
    }
    await cycle;
    expect(problems()).toEqual([]);
    expect(kinds()).toEqual(['change big/f7.txt']);
    expect(poller.status().cycles).toBe(2);
  });

  it('a listing that stops moving is hung once it has not moved for the timeout (noticed within a quarter more), nothing reported', async () => {
    const { fs, clock, poller, next, slow, kinds, problems } = slowSetup();
    await poller.cycleOnce();
    slow();
    fs.remove('big/f0.txt');
    let ended = false;
    const cycle = poller.cycleOnce().then(() => (ended = true));
    for (let i = 0; i < 3; i++) {
      const answer = await next();
      await clock.advance(4_000);
      answer();
    }
    await next(); // the fourth lstat never answers
    await clock.advance(9_999);
    expect(ended).toBe(false);
    await clock.advance(2_501);
    await cycle;
    expect(problems()).toEqual([expect.objectContaining({ kind: 'hung', message: expect.stringMatching(/no progress for 10 s: the mount looks hung/) })]);
    expect(kinds()).toEqual([]);
  });
});

describe('Poller: bad input is never read as deletion', () => {
  it('a stat that hangs: bounded wait, reported, nothing reported deleted, no new cycle while it hangs', async () => {
    const { fs, poller, kinds, problems } = setup({ callTimeoutMs: 20 });
    fs.mkdir('a');
    fs.write('a/one.txt', bytes(1));
    fs.write('two.txt', bytes(1));
    await poller.cycleOnce();
    fs.hang('a', 'readdir');
    await poller.cycleOnce();
    expect(kinds()).toEqual([]);
    expect(problems()).toEqual([expect.objectContaining({ kind: 'hung' })]);
    const calls = fs.calls;
    await poller.cycleOnce(); // still hanging: no new calls pile up behind it
    expect(fs.calls).toBe(calls);
    expect(problems()[0]!.message).toMatch(/hung.*nothing is deleted/);
  });

  it('a share unmounted under the poller (the mount point is an empty folder of another device): an outage', async () => {
    const { fs, poller, kinds, problems } = setup();
    fs.mkdir('a');
    fs.write('a/one.txt', bytes(1));
    fs.write('two.txt', bytes(1));
    await poller.cycleOnce();
    fs.unmount(ROOT); // what is left at the mount point is the parent filesystem's empty folder
    await poller.cycleOnce();
    expect(kinds()).toEqual([]);
    expect(problems()).toEqual([expect.objectContaining({ kind: 'unmounted', path: '' })]);
    // Mounted again with everything back: no event, the outage clears.
    fs.mount(ROOT, 7);
    await poller.cycleOnce();
    expect(kinds()).toEqual([]);
    expect(problems()).toEqual([]);
  });

  it('a mount point that vanished altogether is an outage too', async () => {
    const { fs, poller, kinds, problems } = setup();
    fs.write('two.txt', bytes(1));
    await poller.cycleOnce();
    fs.fail(ROOT, 'lstat', 'ENOENT');
    await poller.cycleOnce();
    expect(kinds()).toEqual([]);
    expect(problems()[0]).toMatchObject({ kind: 'unmounted' });
  });

  it("a file whose stat fails (EIO) in its folder's listing is kept as last seen, not reported deleted", async () => {
    const { fs, poller, kinds } = setup();
    fs.write('bad.txt', bytes(1));
    fs.write('ok.txt', bytes(1));
    await poller.cycleOnce();
    fs.fail('bad.txt', 'lstat', 'EIO');
    fs.write('ok.txt', bytes(2), 2000);
    await poller.cycleOnce();
    expect(kinds()).toEqual(['change ok.txt']);
    fs.heal('bad.txt', 'lstat');
    fs.write('bad.txt', bytes(3), 3000);
    await poller.cycleOnce();
    expect(kinds()).toEqual(['change bad.txt']);
  });

  it('a denied subfolder is reported, its content kept, the rest polled', async () => {
    const { fs, poller, kinds, problems } = setup();
    fs.mkdir('private');
    fs.write('private/p.txt', bytes(1));
    fs.write('pub.txt', bytes(1));
    await poller.cycleOnce();
    fs.fail('private', 'readdir', 'EACCES');
    fs.write('pub.txt', bytes(2), 3000);
    await poller.cycleOnce();
    expect(kinds()).toEqual(['change pub.txt']);
    expect(problems()).toEqual([expect.objectContaining({ kind: 'denied', path: 'private', message: expect.stringContaining('EACCES') })]);
  });
});

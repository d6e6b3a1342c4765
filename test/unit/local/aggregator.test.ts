import { describe, expect, it } from 'vitest';
import { EventAggregator, isEmptyBatch, type AggregatorOptions, type Batch, type RawEvent, type RawEventKind } from '../../../src/local/watch/aggregator.js';

const ev = (at: number, kind: RawEventKind, path: string, size?: number): RawEvent => ({ at, kind, path, ...(size !== undefined ? { size } : {}) });

interface Drained {
  at: number;
  batch: Batch;
}

/**
 * Drives the aggregator as the daemon does: events are pushed at their time, and drain() is
 * called only when nextDeadline() says so (one timer). Returns the non-empty batches with
 * the time they came out, and how many drains it took (to catch a busy loop).
 */
function simulate(agg: EventAggregator, events: RawEvent[], opts: { until?: number } = {}): { batches: Drained[]; drains: number } {
  const queue = [...events].sort((a, b) => a.at - b.at);
  const batches: Drained[] = [];
  let drains = 0;
  let i = 0;
  for (;;) {
    const deadline = agg.nextDeadline();
    const nextEvent = queue[i];
    if (nextEvent && (deadline === undefined || nextEvent.at < deadline)) {
      agg.push(nextEvent);
      i++;
      continue;
    }
    if (deadline === undefined || (opts.until !== undefined && deadline > opts.until)) break;
    drains++;
    if (drains > 10_000) throw new Error('aggregator keeps asking to be drained: busy loop');
    const batch = agg.drain(deadline);
    if (!isEmptyBatch(batch)) batches.push({ at: deadline, batch });
  }
  return { batches, drains };
}

/** The files of a batch, and its folders (walked whole). */
const filesOf = (b: Batch): string[] => b.items.filter((i) => !i.isDir).map((i) => i.path);
const dirsOf = (b: Batch): string[] => b.items.filter((i) => i.isDir).map((i) => i.path);

const make = (o: Partial<AggregatorOptions> = {}): EventAggregator => new EventAggregator({ quietMs: 1000, batchTickMs: 0, ...o });

describe('EventAggregator: per-path debounce', () => {
  it('reports a file changed 100 times within a second once, after quietMs of quiet', () => {
    const agg = make();
    const events = Array.from({ length: 100 }, (_, k) => ev(k * 10, 'change', 'notes.txt', 500));
    const { batches } = simulate(agg, events);
    expect(batches).toHaveLength(1);
    expect(batches[0]!.at).toBe(990 + 1000);
    expect(filesOf(batches[0]!.batch)).toEqual(['notes.txt']);
    expect(batches[0]!.batch.items[0]).toEqual({ path: 'notes.txt', isDir: false, firstEventAt: 0, gone: false });
    expect(agg.pendingCount()).toBe(0);
  });

  it('does not report a path before it has been quiet for quietMs', () => {
    const agg = make();
    agg.push(ev(0, 'change', 'a.txt', 1));
    agg.push(ev(600, 'change', 'a.txt', 1));
    expect(filesOf(agg.drain(1000))).toEqual([]);
    expect(filesOf(agg.drain(1599))).toEqual([]);
    expect(filesOf(agg.drain(1600))).toEqual(['a.txt']);
    expect(filesOf(agg.drain(5000))).toEqual([]);
  });

  it('coalesces add, change and change of one path into one entry', () => {
    const agg = make();
    const { batches } = simulate(agg, [ev(0, 'add', 'new.md', 10), ev(50, 'change', 'new.md', 10), ev(100, 'change', 'new.md', 10)]);
    expect(batches.map((b) => filesOf(b.batch))).toEqual([['new.md']]);
  });

  it('debounces each path on its own: a quiet path is not held back by a busy one', () => {
    const agg = make();
    const busy = Array.from({ length: 30 }, (_, k) => ev(k * 200, 'change', 'busy.log', 100));
    const { batches } = simulate(agg, [ev(0, 'change', 'quiet.txt', 5), ...busy], { until: 3000 });
    expect(batches[0]).toEqual(expect.objectContaining({ at: 1000 }));
    expect(filesOf(batches[0]!.batch)).toEqual(['quiet.txt']);
  });

  it('still reports a path that keeps changing (same size) after maxWaitMs', () => {
    const agg = make();
    const events = Array.from({ length: 60 }, (_, k) => ev(k * 500, 'change', 'touched.txt', 42));
    const { batches } = simulate(agg, events, { until: 12_000 });
    expect(batches).toHaveLength(1);
    expect(batches[0]!.at).toBe(10_000);
    expect(filesOf(batches[0]!.batch)).toEqual(['touched.txt']);
  });
});

describe('EventAggregator: files still being written', () => {
  it('waits for a growing file to stop growing, past maxWaitMs', () => {
    const agg = make();
    // A slow copy: the size grows every 500 ms for 30 s, then stops: stable for settleMs
    // plus a quarter of the 30 s it grew.
    const events = Array.from({ length: 61 }, (_, k) => ev(k * 500, 'change', 'big.iso', (k + 1) * 1_000_000));
    const { batches } = simulate(agg, events);
    expect(batches).toHaveLength(1);
    expect(batches[0]!.at).toBe(30_000 + 2000 + 7500);
    expect(filesOf(batches[0]!.batch)).toEqual(['big.iso']);
  });

  it('reports a file growing for longer than writeFinishMaxMs at that bound', () => {
    const agg = make({ writeFinishMaxMs: 20_000 });
    const events = Array.from({ length: 100 }, (_, k) => ev(k * 500, 'change', 'endless.log', (k + 1) * 100));
    const { batches } = simulate(agg, events, { until: 25_000 });
    expect(batches.map((b) => b.at)).toEqual([20_000]);
  });

  it('goes back to maxWaitMs once two events show the same size', () => {
    const agg = make();
    const growing = Array.from({ length: 6 }, (_, k) => ev(k * 500, 'change', 'f.bin', (k + 1) * 10));
    const stable = Array.from({ length: 30 }, (_, k) => ev(3000 + k * 500, 'change', 'f.bin', 60));
    const { batches } = simulate(agg, [...growing, ...stable], { until: 11_000 });
    expect(batches.map((b) => b.at)).toEqual([10_000]);
  });
});

describe('EventAggregator: editors and office programs', () => {
  it('reports an atomic save (temp file renamed over the file) as the real file only', () => {
    // chokidar with files watched: add tmp, change tmp, change real, unlink tmp (~100 ms later)
    const agg = make();
    const { batches } = simulate(agg, [
      ev(0, 'add', '.report.txt.tmp123', 0),
      ev(5, 'change', '.report.txt.tmp123', 2048),
      ev(10, 'change', 'report.txt', 2048),
      ev(110, 'unlink', '.report.txt.tmp123'),
    ]);
    expect(batches).toHaveLength(1);
    expect(filesOf(batches[0]!.batch)).toEqual(['report.txt']);
    expect(batches[0]!.batch.items[0]!.gone).toBe(false);
  });

  it('reports an atomic save seen as add of the real file (folder-level events) as the real file only', () => {
    const agg = make();
    const { batches } = simulate(agg, [ev(0, 'add', 'doc.md.sb-1234', 10), ev(2, 'unlink', 'doc.md.sb-1234'), ev(2, 'add', 'doc.md', 10)]);
    expect(batches.map((b) => filesOf(b.batch))).toEqual([['doc.md']]);
  });

  it("reports vim's backup-and-rename save as one change of the real file", () => {
    const agg = make();
    const { batches } = simulate(agg, [
      ev(0, 'add', '4913', 0), // vim's write probe
      ev(1, 'unlink', '4913'),
      ev(2, 'unlink', 'plan.txt'), // renamed to the backup...
      ev(2, 'add', 'plan.txt~', 300),
      ev(3, 'add', 'plan.txt', 0), // ...and the new content written
      ev(4, 'change', 'plan.txt', 320),
      ev(5, 'unlink', 'plan.txt~'), // backup removed after the write
    ]);
    expect(batches).toHaveLength(1);
    expect(filesOf(batches[0]!.batch)).toEqual(['plan.txt']);
    expect(batches[0]!.batch.items[0]).toMatchObject({ gone: false });
    // Nothing left to pair, but the new plan.txt was just created: it waits settleMs after
    // its last write (a quarter of its 1 ms of writing rounds to 0).
    expect(batches[0]!.at).toBe(4 + 2000);
  });

  it("reports Word's save (temp files and renames around the document) as one change of the document", () => {
    // The owner lock file lives as long as the document is open: it is a real file for a
    // while, so only the mapping's filter (which excludes "~$*", applied by the watcher) keeps it out.
    const agg = make();
    const { batches } = simulate(agg, [
      ev(0, 'add', '~$report.docx', 162), // the owner lock, while the document is open
      ev(1000, 'add', '~WRD0000.tmp', 0),
      ev(1010, 'change', '~WRD0000.tmp', 9000),
      ev(1020, 'unlink', 'report.docx'),
      ev(1020, 'add', '~WRL0001.tmp', 8000),
      ev(1030, 'unlink', '~WRD0000.tmp'),
      ev(1030, 'add', 'report.docx', 9000),
      ev(1040, 'unlink', '~WRL0001.tmp'),
      ev(5000, 'unlink', '~$report.docx'), // closed
    ].filter((e) => !e.path.startsWith('~$')));
    expect(batches.flatMap((b) => filesOf(b.batch))).toEqual(['report.docx']);
  });

  it('drops a LibreOffice lock file created and removed while pending', () => {
    const agg = make();
    const { batches } = simulate(agg, [ev(0, 'add', '.~lock.budget.ods#', 90), ev(400, 'change', 'budget.ods', 7000), ev(500, 'unlink', '.~lock.budget.ods#')]);
    expect(batches.flatMap((b) => filesOf(b.batch))).toEqual(['budget.ods']);
  });

  it('still reports a file that existed before and was deleted (not a temp file)', () => {
    const agg = make();
    const { batches } = simulate(agg, [ev(0, 'change', 'old.txt', 5), ev(100, 'unlink', 'old.txt')]);
    expect(batches.flatMap((b) => b.batch.items)).toEqual([expect.objectContaining({ path: 'old.txt', gone: true })]);
  });
});

describe('EventAggregator: removals and renames', () => {
  it('holds a removal alone until renameWindowMs has passed', () => {
    const agg = make();
    agg.push(ev(0, 'unlink', 'gone.txt'));
    expect(filesOf(agg.drain(1000))).toEqual([]);
    expect(filesOf(agg.drain(1499))).toEqual([]);
    const b = agg.drain(1500);
    expect(filesOf(b)).toEqual(['gone.txt']);
    expect(b.items[0]!.gone).toBe(true);
  });

  it('reports unlink + add of another path within the window in the same batch', () => {
    const agg = make();
    const { batches } = simulate(agg, [ev(0, 'unlink', 'a/old.pdf'), ev(100, 'add', 'b/new.pdf', 4096)]);
    expect(batches).toHaveLength(1);
    expect(filesOf(batches[0]!.batch)).toEqual(['a/old.pdf', 'b/new.pdf']);
  });

  it("pairs chokidar's order too: add of the new path, unlink of the old one ~100 ms later", () => {
    const agg = make();
    const { batches } = simulate(agg, [ev(0, 'add', 'new.txt', 12), ev(100, 'unlink', 'old.txt')]);
    expect(batches).toHaveLength(1);
    expect(filesOf(batches[0]!.batch)).toEqual(['new.txt', 'old.txt']);
  });

  it('never reports a deletion before an addition that may pair with it, even one still being written', () => {
    const agg = make();
    // Moved across file systems: the new copy grows for 4 s, the old one is removed first.
    const copy = Array.from({ length: 9 }, (_, k) => ev(k * 500, 'change', 'dst/video.mp4', (k + 1) * 1000));
    const { batches } = simulate(agg, [ev(0, 'unlink', 'src/video.mp4'), ...copy]);
    expect(batches).toHaveLength(1);
    expect(batches[0]!.at).toBe(4000 + 2000 + 1000);
    expect(filesOf(batches[0]!.batch)).toEqual(['dst/video.mp4', 'src/video.mp4']);
  });

  it('bounds how long a removal waits for busy neighbours: maxWaitMs after it', () => {
    const agg = make();
    const log = Array.from({ length: 80 }, (_, k) => ev(k * 250, 'change', 'app.log', (k + 1) * 10));
    const { batches } = simulate(agg, [ev(100, 'unlink', 'deleted.txt'), ...log], { until: 12_000 });
    expect(batches).toHaveLength(1);
    expect(batches[0]!.at).toBe(10_100);
    expect(filesOf(batches[0]!.batch)).toEqual(['deleted.txt']);
  });

  it('a file deleted and created again is one non-removal entry', () => {
    const agg = make();
    const { batches } = simulate(agg, [ev(0, 'unlink', 'x.txt'), ev(300, 'add', 'x.txt', 3)]);
    expect(batches.flatMap((b) => b.batch.items)).toEqual([expect.objectContaining({ path: 'x.txt', gone: false })]);
  });
});

describe('EventAggregator: folders', () => {
  it('reports a moved folder (unlinkDir + addDir, with the per-file events) as two dirs in one batch', () => {
    const agg = make();
    const events: RawEvent[] = [ev(0, 'unlinkDir', 'projects/old/sub'), ev(0, 'unlinkDir', 'projects/old'), ev(1, 'addDir', 'archive/old'), ev(1, 'addDir', 'archive/old/sub')];
    for (let k = 0; k < 50; k++) events.push(ev(2, 'add', `archive/old/sub/f${k}.txt`, k));
    for (let k = 0; k < 50; k++) events.push(ev(102, 'unlink', `projects/old/sub/f${k}.txt`));
    const { batches } = simulate(agg, events);
    expect(batches).toHaveLength(1);
    expect(dirsOf(batches[0]!.batch)).toEqual(['archive/old', 'projects/old']);
    expect(filesOf(batches[0]!.batch)).toEqual([]);
    expect(agg.pendingCount()).toBe(0);
  });

  it('reports a deleted folder as one dir entry, not one entry per file, whichever order the events come in', () => {
    for (const order of ['dir-first', 'files-first'] as const) {
      const agg = make();
      const files = Array.from({ length: 1000 }, (_, k) => ev(order === 'dir-first' ? 100 : 0, 'unlink', `big/d${k % 10}/f${k}.txt`));
      const dirs = [ev(50, 'unlinkDir', 'big'), ...Array.from({ length: 10 }, (_, k) => ev(50, 'unlinkDir', `big/d${k}`))];
      const { batches } = simulate(agg, [...files, ...dirs]);
      expect(batches).toHaveLength(1);
      expect(dirsOf(batches[0]!.batch)).toEqual(['big']);
      expect(filesOf(batches[0]!.batch)).toEqual([]);
      expect(batches[0]!.batch.items[0]).toMatchObject({ path: 'big', isDir: true, gone: true });
    }
  });

  it('folds a change made just before the folder moved into the folder', () => {
    const agg = make();
    const { batches } = simulate(agg, [ev(0, 'change', 'docs/a.txt', 4), ev(200, 'unlinkDir', 'docs'), ev(201, 'addDir', 'docs-2024')]);
    expect(batches.map((b) => [dirsOf(b.batch), filesOf(b.batch)])).toEqual([[['docs', 'docs-2024'], []]]);
  });

  it('drops a folder created and deleted while pending, with its files and late events', () => {
    const agg = make();
    const { batches } = simulate(agg, [
      ev(0, 'addDir', 'build-tmp'),
      ev(10, 'add', 'build-tmp/out.o', 100),
      ev(500, 'unlinkDir', 'build-tmp'),
      ev(600, 'unlink', 'build-tmp/out.o'),
      ev(600, 'unlink', 'build-tmp'), // a folder-level watcher cannot tell this was a folder
    ]);
    expect(batches).toEqual([]);
    expect(agg.pendingCount()).toBe(0);
  });

  it('a file created while pending but sent by a pass meanwhile is reported when deleted, not dropped (the simulation, seed 20261132)', () => {
    // Created (held, say, by a slow write) and deleted while pending: without a pass between,
    // nothing to tell. A full pass that started meanwhile may have uploaded it: its removal is told.
    const quiet = make();
    quiet.push(ev(0, 'add', 'a.txt', 5));
    quiet.push(ev(100, 'unlink', 'a.txt'));
    expect(quiet.pendingCount()).toBe(0);
    const full = make();
    full.push(ev(0, 'add', 'a.txt', 5));
    full.passStarted();
    full.push(ev(100, 'unlink', 'a.txt'));
    const batch = full.drain(60_000);
    expect(batch.items).toMatchObject([{ path: 'a.txt', gone: true }]);
    // An incremental pass sends what is under its scope only.
    const scoped = make();
    scoped.push(ev(0, 'add', 'sub/a.txt', 5));
    scoped.push(ev(0, 'add', 'other/b.txt', 5));
    scoped.passStarted({ files: [], dirs: ['sub'] });
    scoped.push(ev(100, 'unlink', 'sub/a.txt'));
    scoped.push(ev(100, 'unlink', 'other/b.txt'));
    expect(scoped.drain(60_000).items.map((i) => i.path)).toEqual(['sub/a.txt']);
  });

  it('a file created while a pass runs and deleted before it ends is reported (its walk may have sent it; issue 23, defect 11)', () => {
    const agg = make();
    agg.passStarted();
    agg.push(ev(0, 'add', 'a.txt', 5));
    agg.push(ev(100, 'unlink', 'a.txt'));
    agg.push(ev(0, 'addDir', 'dir'));
    agg.push(ev(100, 'unlinkDir', 'dir'));
    agg.passEnded();
    expect(agg.drain(60_000).items).toMatchObject([
      { path: 'a.txt', gone: true },
      { path: 'dir', isDir: true, gone: true },
    ]);
    // Once the pass has ended, a temp file created and deleted again is dropped as before.
    agg.push(ev(70_000, 'add', 'b.tmp', 5));
    agg.push(ev(70_100, 'unlink', 'b.tmp'));
    expect(agg.pendingCount()).toBe(0);
    // An incremental pass covers its scope only.
    agg.passStarted({ files: ['c.txt'], dirs: [] });
    agg.push(ev(80_000, 'add', 'c.txt', 5));
    agg.push(ev(80_000, 'add', 'd.tmp', 5));
    agg.push(ev(80_100, 'unlink', 'c.txt'));
    agg.push(ev(80_100, 'unlink', 'd.tmp'));
    agg.passEnded();
    expect(agg.drain(140_000).items.map((i) => i.path)).toEqual(['c.txt']);
  });

  it('a path the state tracks is never dropped as created and deleted while pending (its document exists)', () => {
    const agg = make({ syncedSize: (p) => (p === 'known.txt' ? 5 : undefined) });
    agg.push(ev(0, 'add', 'known.txt', 5));
    agg.push(ev(100, 'unlink', 'known.txt'));
    expect(agg.drain(60_000).items).toMatchObject([{ path: 'known.txt', gone: true }]);
  });

  it('reports a file that replaced a folder of the same name as a file', () => {
    const agg = make();
    const { batches } = simulate(agg, [ev(0, 'unlinkDir', 'thing'), ev(100, 'add', 'thing', 5)]);
    expect(batches).toHaveLength(1);
    expect(dirsOf(batches[0]!.batch)).toEqual(['thing']);
    expect(filesOf(batches[0]!.batch)).toEqual(['thing']);
  });

  it('reports a burst of 1,000 files moved at once in one batch', () => {
    const agg = make();
    const events: RawEvent[] = [];
    for (let k = 0; k < 1000; k++) {
      events.push(ev(k / 4, 'unlink', `inbox/scan-${k}.pdf`));
      events.push(ev(k / 4 + 0.1, 'add', `filed/scan-${k}.pdf`, 1000 + k));
    }
    const { batches, drains } = simulate(agg, events);
    expect(batches).toHaveLength(1);
    expect(filesOf(batches[0]!.batch)).toHaveLength(2000);
    expect(drains).toBeLessThan(5);
    expect(agg.pendingCount()).toBe(0);
  });
});

describe('EventAggregator: overflow and bounds', () => {
  it('asks for a rescan after an overflow, once', () => {
    const agg = make();
    agg.push(ev(0, 'change', 'a.txt', 1));
    agg.overflow('inotify queue overflow', 10);
    expect(agg.nextDeadline()).toBe(10);
    const b = agg.drain(10);
    expect(b.rescan).toBe(true);
    expect(b.reasons).toEqual(['inotify queue overflow']);
    expect(filesOf(b)).toEqual(['a.txt']);
    expect(agg.pendingCount()).toBe(0);
    expect(agg.drain(5000).rescan).toBe(false);
  });

  it('asks for a rescan when the mapped folder itself is reported', () => {
    const agg = make();
    agg.push(ev(0, 'unlinkDir', ''));
    expect(agg.drain(0)).toMatchObject({ rescan: true, reasons: ['unlinkDir of the mapped folder itself'] });
  });

  it('turns more than maxPending paths into one rescan and keeps no entries', () => {
    const agg = make({ maxPending: 100 });
    for (let k = 0; k < 250; k++) agg.push(ev(k, 'add', `f${k}`, 1));
    expect(agg.pendingCount()).toBeLessThanOrEqual(100);
    const b = agg.drain(250);
    expect(b.rescan).toBe(true);
    expect(b.reasons[0]).toMatch(/more than 100 paths pending/);
  });

  it('reports when the oldest event of a batch happened (lag metric)', () => {
    const agg = make();
    for (const e of [ev(1000, 'change', 'b.txt', 1), ev(1200, 'change', 'a.txt', 1), ev(1300, 'change', 'b.txt', 1)]) agg.push(e);
    const batch = agg.drain(2300);
    expect(batch.items.map((i) => [i.path, i.firstEventAt])).toEqual([
      ['a.txt', 1200],
      ['b.txt', 1000],
    ]);
  });

  it('normalises paths to NFC so that both forms of a name are one entry', () => {
    const agg = make();
    agg.push(ev(0, 'change', 'Re\u0301union.txt', 1)); // NFD
    agg.push(ev(1, 'change', 'R\u00e9union.txt', 1)); // NFC
    expect(filesOf(agg.drain(2000))).toEqual(['R\u00e9union.txt']);
  });

  it('nextDeadline is undefined when nothing is pending, rounds up to the batch tick, and never asks for a drain in the past', () => {
    const agg = new EventAggregator({ quietMs: 1000, batchTickMs: 200 });
    expect(agg.nextDeadline()).toBeUndefined();
    agg.push(ev(1050, 'change', 'a', 1));
    expect(agg.nextDeadline()).toBe(2200);
    agg.push(ev(1100, 'unlink', 'b'));
    expect(filesOf(agg.drain(2200))).toEqual([]); // a waits for b's rename window
    expect(agg.nextDeadline()).toBe(2600);
    expect(filesOf(agg.drain(2600))).toEqual(['a', 'b']);
    expect(agg.nextDeadline()).toBeUndefined();
  });

  it('rejects nonsensical options, naming them', () => {
    expect(() => new EventAggregator({ quietMs: -1 })).toThrow(/quietMs/);
  });
});

/**
 * Issue 9, defect 7: files written with pauses were uploaded as truncated copies. Each case
 * is a writer's history on the daemon's defaults (debounceMs 300, batch tick 200 ms); an
 * "upload" is a release of the path, and what it uploads is the file as it is on disk at
 * that moment (the size of the last write before it).
 */
describe('EventAggregator: files written with pauses (issue 9, defect 7)', () => {
  const daemonDefaults = (): EventAggregator => new EventAggregator({ quietMs: 300 });
  function uploads(events: RawEvent[], path: string, until?: number): { at: number; size: number | undefined }[] {
    const { batches } = simulate(daemonDefaults(), events, until === undefined ? {} : { until });
    const sizeAt = (t: number): number | undefined => {
      let size: number | undefined;
      for (const e of events) if (e.path === path && e.at <= t && e.size !== undefined) size = e.size;
      return size;
    };
    return batches.filter((b) => filesOf(b.batch).includes(path)).map((b) => ({ at: b.at, size: sizeAt(b.at) }));
  }
  const KB = 1024;

  const cases: { name: string; events: RawEvent[]; path: string; until?: number; expectUploads: (u: { at: number; size: number | undefined }[]) => void }[] = [
    {
      name: 'a new 2 MB file written 200 KB every 0.5 s: one upload, of the whole file',
      path: 'export.csv',
      events: [ev(0, 'add', 'export.csv', 200 * KB), ...Array.from({ length: 9 }, (_, k) => ev((k + 1) * 500, 'change', 'export.csv', (k + 2) * 200 * KB))],
      expectUploads: (u) => expect(u).toEqual([{ at: expect.any(Number), size: 2000 * KB }]),
    },
    {
      name: 'an existing file rewritten 200 KB every 0.5 s (folder events carry no "add"): never a prefix after the first write is seen',
      path: 'export.csv',
      events: Array.from({ length: 10 }, (_, k) => ev(k * 500, 'change', 'export.csv', (k + 1) * 200 * KB)),
      // The first event alone cannot tell a finished save from a first chunk; from the second
      // write on the file is known to be growing and is never released between two writes.
      expectUploads: (u) => {
        expect(u.map((x) => x.size)).toEqual([200 * KB, 2000 * KB]);
      },
    },
    {
      name: 'a file truncated to 0 and rewritten a second later: no empty upload',
      path: 'report.docx',
      events: [ev(0, 'change', 'report.docx', 0), ev(1000, 'change', 'report.docx', 48 * KB), ev(1010, 'change', 'report.docx', 96 * KB)],
      expectUploads: (u) => expect(u).toEqual([{ at: expect.any(Number), size: 96 * KB }]),
    },
    {
      name: 'a file truncated to 0 and rewritten 1.9 s later: still no empty upload',
      path: 'report.docx',
      events: [ev(0, 'change', 'report.docx', 0), ev(1900, 'change', 'report.docx', 10 * KB)],
      expectUploads: (u) => expect(u.map((x) => x.size)).toEqual([10 * KB]),
    },
    {
      name: 'a log appended every second for a minute: a bounded number of uploads, the last one complete',
      path: 'app.log',
      events: Array.from({ length: 60 }, (_, k) => ev(k * 1000, 'change', 'app.log', (k + 1) * 100)),
      expectUploads: (u) => {
        expect(u.length).toBeLessThanOrEqual(3);
        expect(u.at(-1)!.size).toBe(6000);
      },
    },
    {
      name: 'a log appended every second for ten minutes: released at most once a minute',
      path: 'app.log',
      events: Array.from({ length: 600 }, (_, k) => ev(k * 1000, 'change', 'app.log', (k + 1) * 100)),
      expectUploads: (u) => {
        expect(u.length).toBeLessThanOrEqual(12);
        for (let k = 2; k < u.length; k++) expect(u[k]!.at - u[k - 1]!.at).toBeGreaterThanOrEqual(60_000);
        expect(u.at(-1)!.size).toBe(60_000);
      },
    },
    {
      name: 'a save in one go (same size in every event) still goes after the debounce',
      path: 'notes.txt',
      events: [ev(0, 'change', 'notes.txt', 700), ev(3, 'change', 'notes.txt', 700)],
      expectUploads: (u) => expect(u).toEqual([{ at: 400, size: 700 }]),
    },
    {
      // writeFile over an existing file: open with O_TRUNC (an event whose stat may run before
      // the write and see 0 bytes), write, close. Whether the stat sees the empty file is a
      // race; either way the save goes after the debounce (issue 28.4's latency regression).
      name: 'an existing file saved in one go whose truncation the stat saw (0 bytes, then its size 2 ms later) goes after the debounce',
      path: 'notes.txt',
      events: [ev(0, 'change', 'notes.txt', 0), ev(2, 'change', 'notes.txt', 700)],
      expectUploads: (u) => expect(u).toEqual([{ at: 400, size: 700 }]),
    },
    {
      name: 'truncated, then written 200 ms later (a writer that pauses after truncating): waits the stability window',
      path: 'notes.txt',
      events: [ev(0, 'change', 'notes.txt', 0), ev(200, 'change', 'notes.txt', 700)],
      expectUploads: (u) => {
        expect(u.map((x) => x.size)).toEqual([700]);
        expect(u[0]!.at).toBeGreaterThanOrEqual(200 + 2000);
      },
    },
    {
      name: 'truncated and left empty past the debounce: waits (no empty upload while a rewrite may follow)',
      path: 'report.docx',
      events: [ev(0, 'change', 'report.docx', 0), ev(1, 'change', 'report.docx', 0)],
      expectUploads: (u) => {
        expect(u.map((x) => x.size)).toEqual([0]);
        expect(u[0]!.at).toBeGreaterThanOrEqual(2000);
      },
    },
    {
      // Issue 39.6: the steady-state rewrites that waited 2 s (and more, once in a chain) were
      // saves of a file saved some seconds before, at another size.
      name: 'saved again in one go at another size 5 s after its release (a pause longer than its window ended the write): goes after the debounce',
      path: 'notes.txt',
      events: [ev(0, 'change', 'notes.txt', 500), ev(5000, 'change', 'notes.txt', 0), ev(5002, 'change', 'notes.txt', 700)],
      expectUploads: (u) => expect(u).toEqual([{ at: 400, size: 500 }, { at: 5400, size: 700 }]),
    },
    {
      name: 'saved again at another size 10 s after its release, the empty moment unseen: goes after the debounce',
      path: 'notes.txt',
      events: [ev(0, 'change', 'notes.txt', 500), ev(10_000, 'change', 'notes.txt', 520)],
      expectUploads: (u) => expect(u).toEqual([{ at: 400, size: 500 }, { at: 10_400, size: 520 }]),
    },
    {
      name: 'a new file saved again at another size every 10 s: each save after the debounce, never a window growing with every save',
      path: 'new.md',
      events: [ev(0, 'add', 'new.md', 100), ...Array.from({ length: 6 }, (_, k) => ev((k + 1) * 10_000, 'change', 'new.md', 100 + (k + 1) * 7))],
      expectUploads: (u) => {
        expect(u.map((x) => x.size)).toEqual([100, 107, 114, 121, 128, 135, 142]);
        // The new file waits its window once; each later save goes after the debounce.
        expect(u[0]!.at).toBeGreaterThanOrEqual(2000);
        for (let k = 1; k < u.length; k++) expect(u[k]!.at).toBe(k * 10_000 + 400);
      },
    },
    {
      name: 'written again at another size within its window after its release (a writer resuming): waits, as when the stat misses the empty moment',
      path: 'notes.txt',
      events: [ev(0, 'change', 'notes.txt', 500), ev(1500, 'change', 'notes.txt', 0), ev(1502, 'change', 'notes.txt', 700)],
      expectUploads: (u) => {
        expect(u.map((x) => x.size)).toEqual([500, 700]);
        expect(u[1]!.at).toBeGreaterThanOrEqual(1502 + 2000);
      },
    },
    {
      name: 'saved again in one go within 30 s of its release at the same size: goes after the debounce',
      path: 'notes.txt',
      events: [ev(0, 'change', 'notes.txt', 700), ev(5000, 'change', 'notes.txt', 0), ev(5002, 'change', 'notes.txt', 700)],
      expectUploads: (u) => expect(u).toEqual([{ at: 400, size: 700 }, { at: 5400, size: 700 }]),
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      c.expectUploads(uploads(c.events, c.path, c.until));
    });
  }

  it('truncated and refilled at once, then written on with pauses: the same uploads as when the stat misses the empty moment (the first write into an existing file, docs/watch.md)', () => {
    const chunks = [ev(2, 'change', 'export.csv', 200 * KB), ev(500, 'change', 'export.csv', 400 * KB), ev(1000, 'change', 'export.csv', 600 * KB)];
    const seenEmpty = uploads([ev(0, 'change', 'export.csv', 0), ...chunks], 'export.csv');
    expect(seenEmpty).toEqual(uploads(chunks, 'export.csv'));
    // From the second write on the file is growing: never released between two writes.
    expect(seenEmpty.map((x) => x.size)).toEqual([200 * KB, 600 * KB]);
  });

  it('the stability window is bounded by maxStabilityMs however long the file grew', () => {
    const agg = new EventAggregator({ quietMs: 300, batchTickMs: 0, writeFinishMaxMs: 1_000_000 });
    const events = Array.from({ length: 400 }, (_, k) => ev(k * 1000, 'change', 'slow.bin', k + 1));
    const { batches } = simulate(agg, events);
    expect(batches.map((b) => b.at)).toEqual([0 + 300, 399_000 + 30_000]);
  });

  it('forgets a released size after its window (a later edit is an ordinary edit)', () => {
    const agg = new EventAggregator({ quietMs: 300, batchTickMs: 0 });
    const { batches } = simulate(agg, [ev(0, 'change', 'a.txt', 10), ev(60_000, 'change', 'a.txt', 20)]);
    expect(batches.map((b) => b.at)).toEqual([300, 60_300]);
  });
});

describe('EventAggregator: pausing writers the simulation found (issue 9)', () => {
  const at = (batches: Drained[], path: string): number[] => batches.filter((b) => filesOf(b.batch).includes(path) || dirsOf(b.batch).includes(path)).map((b) => b.at);

  it('a file written with pauses into a folder just created: the folder waits until the file is stable', () => {
    // mkdir sub; then a writer creates sub/a.txt and appends with 900 ms pauses: walking
    // `sub` between two writes would upload a prefix.
    const agg = new EventAggregator({ quietMs: 300, batchTickMs: 0 });
    const { batches } = simulate(agg, [ev(0, 'addDir', 'sub'), ev(10, 'add', 'sub/a.txt', 0), ev(900, 'change', 'sub/a.txt', 10), ev(1800, 'change', 'sub/a.txt', 20)]);
    const released = at(batches, 'sub');
    expect(released).toHaveLength(1);
    expect(released[0]).toBeGreaterThanOrEqual(1800 + 2000);
  });

  it("a file under a folder released before the file's window ended (a rescan): its next write is growth, not an ordinary edit", () => {
    const agg = new EventAggregator({ quietMs: 300, batchTickMs: 0 });
    const { batches } = simulate(agg, [ev(0, 'addDir', 'sub'), ev(10, 'add', 'sub/a.txt', 5), ev(500, 'raw', ''), ev(1500, 'change', 'sub/a.txt', 10)]);
    expect(batches[0]!.batch.rescan).toBe(true);
    // Without the remembered size this change would go 300 ms later, between two writes.
    expect(at(batches, 'sub/a.txt')[0]).toBeGreaterThanOrEqual(1500 + 2000);
  });

  it("a file under a released folder, written again after the file's window: a new write, as for any released file", () => {
    const agg = new EventAggregator({ quietMs: 300, batchTickMs: 0 });
    const { batches } = simulate(agg, [ev(0, 'addDir', 'sub'), ev(10, 'add', 'sub/a.txt', 5), ev(4000, 'change', 'sub/a.txt', 10)]);
    expect(at(batches, 'sub')).toEqual([2010]);
    expect(at(batches, 'sub/a.txt')).toEqual([4300]);
  });

  it('a file moved in with its folder and then written with pauses (the deploy pattern) is not released between two writes', () => {
    const agg = new EventAggregator({ quietMs: 300, batchTickMs: 0 });
    // rm -rf sub; mv staging sub; then a writer truncates sub/c.md and appends twice, 1.5 s apart.
    const events = [ev(0, 'unlinkDir', 'sub'), ev(5, 'addDir', 'sub'), ev(100, 'change', 'sub/c.md', 0), ev(1600, 'change', 'sub/c.md', 10), ev(3100, 'change', 'sub/c.md', 20)];
    const { batches } = simulate(agg, events);
    const carrying = batches.filter((b) => dirsOf(b.batch).includes('sub') || filesOf(b.batch).includes('sub/c.md')).map((b) => b.at);
    expect(carrying.length).toBeGreaterThan(0);
    // Whatever carries sub/c.md (the folder or the file) goes after its last write settled.
    for (const t of carrying) expect(t).toBeGreaterThanOrEqual(3100 + 2000);
  });

  it('right after a (re)start, a first change may be a write resuming: it waits for the stability window', () => {
    const agg = new EventAggregator({ quietMs: 300, batchTickMs: 0, startedAt: 0 });
    const { batches } = simulate(agg, [ev(100, 'change', 'a.txt', 10), ev(1000, 'change', 'a.txt', 20)]);
    const released = at(batches, 'a.txt');
    expect(released).toHaveLength(1);
    expect(released[0]).toBeGreaterThanOrEqual(1000 + 2000);
  });

  it('in the start window, a first change to the size last synced (a same-size save) still goes after the debounce', () => {
    const agg = new EventAggregator({ quietMs: 300, batchTickMs: 0, startedAt: 0, syncedSize: (p) => (p === 'a.txt' ? 10 : undefined) });
    const { batches } = simulate(agg, [ev(100, 'change', 'a.txt', 10), ev(100, 'change', 'b.txt', 10)]);
    expect(at(batches, 'a.txt')).toEqual([400]);
    expect(at(batches, 'b.txt')[0]).toBeGreaterThanOrEqual(2100);
  });

  it('the start window ends after maxStabilityMs: later first changes go after the debounce as before', () => {
    const agg = new EventAggregator({ quietMs: 300, batchTickMs: 0, startedAt: 0 });
    const { batches } = simulate(agg, [ev(40_000, 'change', 'a.txt', 10)]);
    expect(at(batches, 'a.txt')).toEqual([40_300]);
  });
});

import { describe, expect, it } from 'vitest';
import { RECLAIM_DELAY_MS, RECLAIM_DONE_MESSAGE, Reclaimer, SHRINK_DELAY_MS, SHRINK_TRIES, V8_THROUGHPUT_WINDOW_MS } from '../../../src/daemon/reclaim.js';
import { collectGarbage } from '../../../src/gc.js';
import { trimMalloc } from '../../../src/malloc-trim.js';
import { createLogger, silentLogger } from '../../../src/log.js';
import { FakeClock } from '../../helpers/fake-clock.js';

describe('collectGarbage', () => {
  it('returns the memory of objects no longer referenced, at once', () => {
    let garbage: { id: string; n: number }[] | undefined = Array.from({ length: 500_000 }, (_, n) => ({ id: `doc-${n}`, n }));
    const held = process.memoryUsage().heapUsed;
    expect(garbage.length).toBe(500_000);
    // Dropping the only reference is the point of the test.
    // eslint-disable-next-line no-useless-assignment
    garbage = undefined;
    expect(collectGarbage()).toBe(true);
    // ~40 MB of objects were dropped; a full collection frees them without waiting for allocations.
    expect(process.memoryUsage().heapUsed).toBeLessThan(held - 20 * 1024 * 1024);
    expect(collectGarbage()).toBe(true);
  });
});

describe('Reclaimer', () => {
  const MB = 1024 * 1024;

  /** `young`: the young generation's size after each collection (the last one repeats); 1 MB at start. */
  function setup(young: number[] = [MB]): { clock: FakeClock; collections: number[]; reclaimer: Reclaimer } {
    const clock = new FakeClock();
    const collections: number[] = [];
    const sizes = [MB, ...young];
    const youngBytes = (): number => sizes[Math.min(collections.length, sizes.length - 1)]!;
    const reclaimer = new Reclaimer({ clock, logger: silentLogger, rss: () => 0, youngBytes, collect: () => collections.push(clock.monotonic()) > 0, trim: () => undefined });
    return { clock, collections, reclaimer };
  }

  it('collects after a full pass, then again once V8 measures a low allocation rate over its whole window', async () => {
    const { clock, collections, reclaimer } = setup([32 * MB, MB]);
    reclaimer.afterFullPass();
    await clock.advance(RECLAIM_DELAY_MS + SHRINK_DELAY_MS * (SHRINK_TRIES + 2));
    expect(collections).toEqual([RECLAIM_DELAY_MS, RECLAIM_DELAY_MS + SHRINK_DELAY_MS]);
    // The young generation shrinks only in a collection whose allocation window holds no pass.
    expect(collections[1]! - collections[0]!).toBeGreaterThan(V8_THROUGHPUT_WINDOW_MS);
  });

  it('collects again while the young generation is larger than at start (allocations went on), at most SHRINK_TRIES times', async () => {
    const shrinksLate = setup([32 * MB, 32 * MB, 32 * MB, MB]);
    shrinksLate.reclaimer.afterFullPass();
    await shrinksLate.clock.advance(RECLAIM_DELAY_MS + SHRINK_DELAY_MS * (SHRINK_TRIES + 2));
    expect(shrinksLate.collections).toEqual([0, 1, 2, 3].map((i) => RECLAIM_DELAY_MS + i * SHRINK_DELAY_MS));

    const never = setup([32 * MB]);
    never.reclaimer.afterFullPass();
    await never.clock.advance(RECLAIM_DELAY_MS + SHRINK_DELAY_MS * (SHRINK_TRIES + 5));
    expect(never.collections).toHaveLength(1 + SHRINK_TRIES);
  });

  it('makes one reclaim of the full passes that end while one is due, and none once stopped', async () => {
    const { clock, collections, reclaimer } = setup();
    reclaimer.afterFullPass();
    await clock.advance(1_000);
    reclaimer.afterFullPass();
    await clock.advance(RECLAIM_DELAY_MS + SHRINK_DELAY_MS);
    expect(collections).toHaveLength(2);
    reclaimer.afterFullPass();
    await clock.advance(RECLAIM_DELAY_MS);
    expect(collections).toHaveLength(3);
    reclaimer.stop();
    await clock.advance(SHRINK_DELAY_MS * 2);
    reclaimer.afterFullPass();
    await clock.advance(RECLAIM_DELAY_MS * 2);
    expect(collections).toHaveLength(3);
  });

  it('says at info level when its last collection is done (what the bench waits for to sample the memory at rest), once', async () => {
    const clock = new FakeClock();
    const lines: { level: number; msg: string; rssMB?: number }[] = [];
    const logger = createLogger({ destination: { write: (l: string) => void lines.push(JSON.parse(l) as (typeof lines)[number]) } });
    const young = [MB, 32 * MB, MB];
    let collected = 0;
    const reclaimer = new Reclaimer({ clock, logger, rss: () => 190 * MB, youngBytes: () => young[Math.min(collected, young.length - 1)]!, collect: () => ++collected > 0, trim: () => undefined });
    reclaimer.afterFullPass();
    await clock.advance(RECLAIM_DELAY_MS + SHRINK_DELAY_MS - 1);
    expect(lines).toEqual([]);
    await clock.advance(1 + SHRINK_DELAY_MS * (SHRINK_TRIES + 2));
    expect(lines).toEqual([expect.objectContaining({ level: 30, msg: RECLAIM_DONE_MESSAGE, rssMB: 190 })]);
  });

  it("gives malloc's free pages back once, after the last collection, and says what that gave", async () => {
    const clock = new FakeClock();
    const lines: { msg: string; rssMB?: number; collectedMB?: number; trimmed?: boolean }[] = [];
    const logger = createLogger({ destination: { write: (l: string) => void lines.push(JSON.parse(l) as (typeof lines)[number]) } });
    const events: string[] = [];
    let rss = 180 * MB;
    const reclaimer = new Reclaimer({
      clock,
      logger,
      rss: () => rss,
      youngBytes: () => MB,
      collect: () => events.push('collect') > 0,
      trim: () => {
        events.push('trim');
        rss -= 13 * MB;
        return true;
      },
    });
    reclaimer.afterFullPass();
    await clock.advance(RECLAIM_DELAY_MS + SHRINK_DELAY_MS * (SHRINK_TRIES + 2));
    expect(events).toEqual(['collect', 'collect', 'trim']);
    expect(lines).toEqual([expect.objectContaining({ msg: RECLAIM_DONE_MESSAGE, collectedMB: 180, rssMB: 167, trimmed: true })]);
  });
});

describe('trimMalloc', () => {
  it('gives back the free pages glibc kept below blocks in use: the resident size falls', () => {
    const loaded = trimMalloc();
    if (loaded === undefined) return; // the module is not built here (docs/watch.md): nothing to give back
    // Free runs below a block still in use: many blocks, every other one freed, one kept at the top.
    const blocks = Array.from({ length: 4000 }, () => Buffer.allocUnsafeSlow(16 * 1024).fill(1));
    const keep = blocks.filter((_, i) => i % 8 === 0);
    blocks.length = 0;
    collectGarbage();
    collectGarbage();
    const before = process.memoryUsage.rss();
    expect(trimMalloc()).toBe(true);
    // 56 MB were freed below blocks still in use; at least some of it leaves the resident set.
    expect(process.memoryUsage.rss()).toBeLessThan(before - 8 * 1024 * 1024);
    expect(keep.every((b) => b[0] === 1)).toBe(true);
  });
});

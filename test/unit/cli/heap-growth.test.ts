import { afterEach, describe, expect, it } from 'vitest';
import type { PerformanceObserver } from 'node:perf_hooks';
import { growingPercentFor, HEAP_GROWING_PERCENT, LARGE_HEAP_BYTES, limitHeapGrowth, SMALL_HEAP_GROWING_PERCENT } from '../../../src/cli/heap-growth.js';
import { collectGarbage } from '../../../src/gc.js';

describe('growingPercentFor: the heap held only once it is large', () => {
  it('lets a small heap double and holds a large one at 50 %', () => {
    expect(growingPercentFor(25 * 1024 * 1024)).toBe(SMALL_HEAP_GROWING_PERCENT);
    expect(SMALL_HEAP_GROWING_PERCENT).toBe(100);
    expect(growingPercentFor(LARGE_HEAP_BYTES - 1)).toBe(100);
    expect(growingPercentFor(LARGE_HEAP_BYTES)).toBe(HEAP_GROWING_PERCENT);
    expect(growingPercentFor(600 * 1024 * 1024)).toBe(50);
  });
});

describe('limitHeapGrowth: the rule applied after each full collection', () => {
  let observer: PerformanceObserver | undefined;
  afterEach(() => observer?.disconnect());

  /** A fake heap: its size, the flags set, and a way to wait for the observer's next look. */
  function fakeHeap() {
    const flags: string[] = [];
    let live = 0;
    let looked: (() => void) | undefined;
    const deps = {
      setFlags: (f: string) => void flags.push(f),
      liveHeapBytes: () => {
        looked?.();
        return live;
      },
    };
    return {
      flags,
      deps,
      set: (bytes: number) => void (live = bytes),
      /** A full collection, and the observer's look at the heap after it. */
      async collect(): Promise<void> {
        let seen = false;
        looked = () => void (seen = true);
        expect(collectGarbage()).toBe(true);
        // Node hands the collection's entry over from a native immediate, which runs when the
        // event loop turns: keep it turning until the observer has looked (a few turns).
        while (!seen) await new Promise((r) => setImmediate(r));
        // The flag, when it changes, is set right after the look.
        await new Promise((r) => setImmediate(r));
      },
    };
  }

  it("starts at a small heap's growth, holds it at 50 % when a full collection leaves a large heap and lets it double again when the heap is small; sets nothing while the answer stays", async () => {
    const heap = fakeHeap();
    observer = limitHeapGrowth([], heap.deps);
    expect(heap.flags).toEqual(['--heap-growing-percent=100']);
    heap.set(20 * 1024 * 1024);
    await heap.collect();
    expect(heap.flags).toEqual(['--heap-growing-percent=100']);
    heap.set(LARGE_HEAP_BYTES + 1);
    await heap.collect();
    await heap.collect();
    expect(heap.flags).toEqual(['--heap-growing-percent=100', '--heap-growing-percent=50']);
    heap.set(10 * 1024 * 1024);
    await heap.collect();
    expect(heap.flags).toEqual(['--heap-growing-percent=100', '--heap-growing-percent=50', '--heap-growing-percent=100']);
  });

  it("watches nothing when the operator gave node the flag (theirs wins)", () => {
    const heap = fakeHeap();
    expect(limitHeapGrowth(['--heap-growing-percent=80'], heap.deps)).toBeUndefined();
    expect(limitHeapGrowth(['--heap_growing_percent=80'], heap.deps)).toBeUndefined();
    expect(heap.flags).toEqual([]);
  });
});

/**
 * How far V8 lets the JS heap grow past what survived its last full collection, by the size
 * of that heap.
 *
 * V8 picks that factor itself (1.1 to 4), high when most of a fast allocation survives, as a
 * walk's records do until the plan: hundreds of MB kept for nothing. A daemon sizes its heap to
 * its state, not to the speed of its last walk, so dssync sets the factor: 1.5 once a full
 * collection leaves LARGE_HEAP_BYTES or more alive (docs/performance.md, "A million files"),
 * 2 below that. Held at 1.5, a heap of 20–30 MB is collected in full every half second of a
 * first mirror (23 times for 10,000 files against 2), V8's collector threads working ~15 % more,
 * to save a few MB; at 2, a first mirror of 100,000 files peaks 20 MB higher, and at V8's own
 * choice 120 MB higher (docs/performance.md, "Session 35"). The
 * rule is looked at after each full collection (a `gc` performance entry): V8 reads the flag
 * each time it sizes the heap, so setting it there has the effect of the command-line flag.
 * An operator's own `--heap-growing-percent` on node's command line wins, and then nothing is
 * watched.
 */
import { constants, PerformanceObserver } from 'node:perf_hooks';
import { getHeapStatistics, setFlagsFromString } from 'node:v8';

/** The heap may grow to (1 + this / 100) times what its last full collection kept, once that is large. */
export const HEAP_GROWING_PERCENT = 50;
/** The same while it is small, and at start. */
export const SMALL_HEAP_GROWING_PERCENT = 100;
/** What a full collection leaves alive from which the heap is large (a first mirror of 10,000 or 100,000 files keeps ~25 MB). */
export const LARGE_HEAP_BYTES = 64 * 1024 * 1024;

/** The growth for a heap of which `liveBytes` survived the last full collection. */
export function growingPercentFor(liveBytes: number): number {
  return liveBytes >= LARGE_HEAP_BYTES ? HEAP_GROWING_PERCENT : SMALL_HEAP_GROWING_PERCENT;
}

export interface HeapGrowthDeps {
  setFlags(flags: string): void;
  /** The heap in use now (read right after a full collection). */
  liveHeapBytes(): number;
}

const realDeps: HeapGrowthDeps = { setFlags: setFlagsFromString, liveHeapBytes: () => getHeapStatistics().used_heap_size };

/** Sets the growth for a small heap, then applies growingPercentFor after every full collection; undefined when the operator set the flag. */
export function limitHeapGrowth(execArgv: readonly string[] = process.execArgv, deps: HeapGrowthDeps = realDeps): PerformanceObserver | undefined {
  if (execArgv.some((a) => a.startsWith('--heap-growing-percent') || a.startsWith('--heap_growing_percent'))) return undefined;
  let current = SMALL_HEAP_GROWING_PERCENT;
  deps.setFlags(`--heap-growing-percent=${current}`);
  const observer = new PerformanceObserver((list) => {
    if (!list.getEntries().some((e) => (e as { detail?: { kind?: number } | null }).detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR)) return;
    const wanted = growingPercentFor(deps.liveHeapBytes());
    if (wanted === current) return;
    current = wanted;
    deps.setFlags(`--heap-growing-percent=${wanted}`);
  });
  observer.observe({ entryTypes: ['gc'] });
  return observer;
}

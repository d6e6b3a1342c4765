/**
 * How far V8 lets the JS heap grow past what survived its last full collection.
 *
 * V8 picks that factor itself, between 1.1 and 4, and picks it high when the program
 * allocates fast and most of it survives: exactly a walk of a million files, whose records
 * all stay until the plan. Measured on the first mirror of 1,000,000 files
 * (docs/performance.md, "A million files"): the faster walk of session 6 let the heap reach
 * a peak RSS of 1.81 GB for ~0.75 GB of live data; with the factor held at 1.5 the same
 * mirror peaked at 1.24 GB. A daemon that holds a drive's state should size its heap to
 * that state, not to the speed of its last walk, so dssync holds it at 1.5 — more frequent
 * full collections (incremental, concurrent: the event loop barely sees them) for a third
 * less memory at the peak.
 *
 * Set at start, before anything large is allocated; V8 reads the flag each time it sizes
 * the heap, so setting it here has the effect of the command-line flag. An operator's own
 * `--heap-growing-percent` on node's command line wins.
 */
import { setFlagsFromString } from 'node:v8';

/** The heap may grow to (1 + this / 100) times what its last full collection kept. */
export const HEAP_GROWING_PERCENT = 50;

export function limitHeapGrowth(execArgv: readonly string[] = process.execArgv): void {
  if (execArgv.some((a) => a.startsWith('--heap-growing-percent') || a.startsWith('--heap_growing_percent'))) return;
  setFlagsFromString(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`);
}

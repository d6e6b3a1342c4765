/**
 * How far V8 lets the JS heap grow past what survived its last full collection.
 *
 * V8 picks that factor itself (1.1 to 4), high when most of a fast allocation survives, as
 * a walk's records do until the plan. A daemon sizes its heap to its state, not to the speed
 * of its last walk: dssync holds the factor at 1.5 (docs/performance.md, "A million files").
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

/**
 * A full garbage collection on demand. V8 collects when the program allocates, and sizes its
 * heap from what the last full collection found alive, so a phase that leaves hundreds of MB
 * of garbage behind it is paid for twice: the pages it filled, then a heap grown from them.
 * The daemon collects after a full pass (daemon/reclaim.ts); a pass with a large plan
 * collects between its steps (engine/mirror.ts).
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

let collect: (() => void) | null | undefined;

/** Runs a full garbage collection now; false when the runtime does not offer one. */
export function collectGarbage(): boolean {
  if (collect === undefined) collect = findGc();
  if (!collect) return false;
  collect();
  return true;
}

function findGc(): (() => void) | null {
  const exposed = (globalThis as { gc?: unknown }).gc;
  if (typeof exposed === 'function') return exposed as () => void;
  try {
    // --expose-gc applies to the contexts created afterwards: a new one hands out gc().
    setFlagsFromString('--expose-gc');
    const gc: unknown = runInNewContext('gc');
    return typeof gc === 'function' ? (gc as () => void) : null;
  } catch {
    return null;
  }
}

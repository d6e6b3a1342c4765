/**
 * Gives back the memory of a full pass. A pass over 100,000 files builds a few hundred MB
 * of short-lived objects (the listing, the walk, the plan); V8 collects garbage only when
 * the program allocates, so an idle daemon would hold that memory until its next pass, an
 * hour later (docs/performance.md: 820 MB resident at idle, 150 MB after one collection).
 * One full collection after a full pass returns it, for a pause of a few tens of ms.
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

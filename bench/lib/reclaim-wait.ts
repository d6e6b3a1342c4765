/**
 * The daemon's memory "at rest" is what it holds once the reclaim after its full pass is
 * done (src/daemon/reclaim.ts): its collections come RECLAIM_DELAY_MS after the pass, then
 * every SHRINK_DELAY_MS while the young generation stays large. A sample taken at a fixed
 * time after the pass may precede the last one; the footprint waits for the line the reclaim
 * logs when it is done, within a bound.
 */
import { RECLAIM_DELAY_MS, RECLAIM_DONE_MESSAGE, SHRINK_DELAY_MS, SHRINK_TRIES } from '../../src/daemon/reclaim.js';
import type { DaemonHandle } from './dssync.js';

/** The reclaim's last collection is due this long after the pass, on a free event loop. */
export const RECLAIM_SCHEDULE_MS = RECLAIM_DELAY_MS + SHRINK_TRIES * SHRINK_DELAY_MS;
/** The wait's bound: the schedule, and a minute more for a loop busy setting up the watch of a large tree. */
export const RECLAIM_WAIT_MS = RECLAIM_SCHEDULE_MS + 60_000;

export interface Reclaimed {
  /** From the end of the pass to the reclaim's line (s). */
  afterPassSeconds: number;
  /** The resident size the daemon measured once done (MB), when it could. */
  rssMB: number | undefined;
}

/**
 * Waits for the reclaim that follows the pass ended at `passEndedAt` (a log line's time, ms
 * since the epoch): the first reclaim line logged at or after it. Undefined when none came
 * within `boundMs` (a runtime without a collector to call, or a loop busier than the bound).
 */
export async function waitForReclaim(waitForLog: DaemonHandle['waitForLog'], passEndedAt: number, boundMs = RECLAIM_WAIT_MS): Promise<Reclaimed | undefined> {
  const line = await waitForLog('the reclaim after the first pass', (l) => l.msg === RECLAIM_DONE_MESSAGE && l.time >= passEndedAt, boundMs).catch(() => undefined);
  if (line === undefined) return undefined;
  return { afterPassSeconds: (line.time - passEndedAt) / 1000, rssMB: typeof line.rssMB === 'number' ? line.rssMB : undefined };
}

/**
 * `dssync sync` and files being written: its pass applies the daemon's stability window
 * (build-mirror.ts passStabilityMs), so a file changed within it is set aside, never sent
 * half-written. When to look again and when to give up is the daemon's schedule
 * (schedule.ts `setAside`), with `waitMs` as its deadline; each look is a full pass (the
 * mirror remembers what it set aside). What is still changing then is reported ("changing",
 * not in sync: exit 1) and sent by the next run. One summary for the whole: the writes of
 * every pass, the rest from the last.
 */
import { initialSchedule, step } from '../../daemon/mapping/schedule.js';
import type { Mirror, PassOptions, PassReport } from '../../engine/mirror.js';
import type { Logger } from '../../log.js';
import type { Clock } from '../../time/clock.js';

export interface SettleOptions {
  windowMs: number;
  /** The longest the sync waits for files being written (0: not at all). */
  waitMs: number;
  clock: Pick<Clock, 'monotonic' | 'sleep'>;
  logger: Logger;
  signal: AbortSignal;
}

/** Counts of a pass that are writes done (kept across passes); the others are the last pass's. */
const WRITES = ['uploaded', 'replaced', 'renamed', 'updated', 'deleted', 'adopted', 'forgotten'] as const;

export async function fullPassSettled(mirror: Pick<Mirror, 'fullPass'>, passOpts: PassOptions, o: SettleOptions): Promise<PassReport> {
  let sched = initialSchedule({ rescanIntervalMs: 0, settleMs: o.windowMs, giveUpAt: o.clock.monotonic() + o.waitMs });
  const earlier = Object.fromEntries(WRITES.map((k) => [k, 0])) as Record<(typeof WRITES)[number], number>;
  let report = await mirror.fullPass(passOpts);
  while (report.settling?.length && !report.blocked && !o.signal.aborted) {
    const next = step(sched, { type: 'setAside' }, o.clock.monotonic());
    if (next.nextDeadline === undefined) break; // past the deadline
    o.logger.info(
      { files: report.settling.length, first: report.settling[0], waitMs: o.windowMs },
      `${report.settling.length} file(s) changed within the last ${o.windowMs / 1000} s (being written?): looking again in ${o.windowMs / 1000} s`,
    );
    try {
      await o.clock.sleep(next.nextDeadline - o.clock.monotonic(), o.signal);
    } catch {
      break; // interrupted: report what was done
    }
    sched = step(next.state, { type: 'tick' }, o.clock.monotonic()).state;
    for (const k of WRITES) earlier[k] += report.counts[k];
    report = await mirror.fullPass(passOpts);
  }
  const counts = { ...report.counts };
  for (const k of WRITES) counts[k] += earlier[k];
  // What an earlier pass wrote the last one found unchanged: counted once, as written.
  counts.unchanged = Math.max(0, counts.unchanged - (earlier.uploaded + earlier.replaced + earlier.renamed + earlier.updated + earlier.adopted));
  return { ...report, counts, ok: report.ok && !report.settling?.length };
}

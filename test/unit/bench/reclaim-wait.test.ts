/**
 * The footprint "at rest" is sampled once the daemon's reclaim after the pass is done
 * (bench/lib/reclaim-wait.ts, issue 39): its last collection can come 26 s after the pass,
 * later than a sample at a fixed 25 s. The wait takes the reclaim's line of this pass, within
 * a bound past the reclaim's whole schedule.
 */
import { describe, expect, it } from 'vitest';
import type { LogLine } from '../../../bench/lib/dssync.js';
import { RECLAIM_SCHEDULE_MS, RECLAIM_WAIT_MS, waitForReclaim } from '../../../bench/lib/reclaim-wait.js';
import { RECLAIM_DONE_MESSAGE } from '../../../src/daemon/reclaim.js';

/** The daemon handle's waitForLog over lines already logged: the first match, or the timeout's rejection. */
function logOf(lines: LogLine[]): { waitForLog: (what: string, match: (l: LogLine) => boolean, timeoutMs: number) => Promise<LogLine>; bounds: number[] } {
  const bounds: number[] = [];
  return {
    bounds,
    waitForLog: (what, match, timeoutMs) => {
      bounds.push(timeoutMs);
      const hit = lines.find(match);
      return hit ? Promise.resolve(hit) : Promise.reject(new Error(`benchmark: timed out after ${timeoutMs} ms waiting for ${what}`));
    },
  };
}

const line = (time: number, msg: string, extra: Record<string, unknown> = {}): LogLine => ({ level: 30, time, msg, ...extra });

describe('waitForReclaim', () => {
  const passEnded = 1_000_000;

  it("takes the reclaim's line of this pass, not an earlier pass's, and says when it came and at what size", async () => {
    const log = logOf([line(passEnded - 5_000, RECLAIM_DONE_MESSAGE, { rssMB: 900 }), line(passEnded + 100, 'watching'), line(passEnded + 26_000, RECLAIM_DONE_MESSAGE, { rssMB: 190 })]);
    expect(await waitForReclaim(log.waitForLog, passEnded)).toEqual({ afterPassSeconds: 26, rssMB: 190 });
    expect(log.bounds).toEqual([RECLAIM_WAIT_MS]);
  });

  it('gives undefined once the bound passed without the line (the caller samples and says so)', async () => {
    const log = logOf([line(passEnded + 100, 'watching')]);
    expect(await waitForReclaim(log.waitForLog, passEnded, 5)).toBeUndefined();
    expect(log.bounds).toEqual([5]);
  });

  it("waits past the reclaim's whole schedule (26 s after the pass)", () => {
    expect(RECLAIM_SCHEDULE_MS).toBe(26_000);
    expect(RECLAIM_WAIT_MS).toBeGreaterThan(RECLAIM_SCHEDULE_MS);
  });
});

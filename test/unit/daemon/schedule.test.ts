/**
 * The runner's schedule as a table: each row is a history of (time, event) and what the
 * schedule must do. A fake clock is just the `now` of each step. `dssync sync`'s settle loop
 * runs the same schedule: its cases are here too.
 */
import { describe, expect, it } from 'vitest';
import { initialSchedule, MAX_RETRY_DELAY_MS, retryDelayMs, step, type ScheduleAction, type ScheduleConfig, type ScheduleEvent, type ScheduleState } from '../../../src/daemon/mapping/schedule.js';
import { fullPassSettled } from '../../../src/cli/commands/sync.js';
import type { PassReport } from '../../../src/engine/pass-report.js';
import { silentLogger } from '../../../src/log.js';
import { FakeClock } from '../../helpers/fake-clock.js';

type Row = [at: number, event: ScheduleEvent, actions: ScheduleAction['type'][], deadline?: number | undefined];

function run(config: ScheduleConfig, rows: Row[]): ScheduleState {
  let s = initialSchedule(config);
  for (const [at, event, want, deadline] of rows) {
    const r = step(s, event, at, () => 0.5);
    expect({ at, event: event.type, actions: r.actions.map((a) => a.type) }).toEqual({ at, event: event.type, actions: want });
    if (deadline !== undefined) expect(r.nextDeadline).toBe(deadline === -1 ? undefined : deadline);
    s = r.state;
  }
  return s;
}

const hourly: ScheduleConfig = { rescanIntervalMs: 3_600_000, retryBaseMs: 5_000, settleMs: 2_000 };
const ok = (kind: 'full' | 'changes'): ScheduleEvent => ({ type: 'passFinished', kind, ok: true });
const failed: ScheduleEvent = { type: 'passFinished', kind: 'full', ok: false, reason: '503' };

describe('schedule', () => {
  it('a full pass at start, then the periodic rescan one interval later', () => {
    run(hourly, [
      [0, { type: 'started' }, ['runFullPass'], -1],
      [100, ok('full'), ['leaveDegraded', 'scheduleRescan'], 3_600_100],
      [3_600_100, { type: 'tick' }, ['runFullPass'], -1],
    ]);
  });

  it('rescanIntervalSeconds 0: a full pass at start only, never passes back to back', () => {
    const s = run({ rescanIntervalMs: 0, settleMs: 2_000 }, [
      [0, { type: 'started' }, ['runFullPass'], -1],
      [100, ok('full'), ['leaveDegraded'], -1],
      [200, { type: 'tick' }, [], -1],
      [300, { type: 'batchReady' }, ['runChangesPass'], -1],
      [400, ok('changes'), ['leaveDegraded'], -1],
    ]);
    expect(s.running).toBeUndefined();
    expect(s.rescanAt).toBeUndefined();
  });

  it('nothing runs before started; events before it are kept', () => {
    run(hourly, [
      [0, { type: 'batchReady' }, []],
      [1, { type: 'started' }, ['runFullPass']], // the full pass covers the waiting changes
      [2, ok('full'), ['leaveDegraded', 'scheduleRescan']],
    ]);
  });

  it('one pass at a time: changes seen during a pass run after it, together', () => {
    run(hourly, [
      [0, { type: 'started' }, ['runFullPass']],
      [10, { type: 'batchReady' }, []],
      [20, { type: 'batchReady' }, []],
      [30, ok('full'), ['leaveDegraded', 'scheduleRescan', 'runChangesPass']],
      [40, ok('changes'), ['leaveDegraded']],
    ]);
  });

  it('a failed pass backs off exponentially, holds changes meanwhile, and the retry is a full pass', () => {
    run(hourly, [
      [0, { type: 'started' }, ['runFullPass']],
      [0, failed, ['retryAt', 'enterDegraded'], 5_000],
      [1_000, { type: 'batchReady' }, [], 5_000],
      [4_999, { type: 'tick' }, [], 5_000],
      [5_000, { type: 'tick' }, ['runFullPass'], -1],
      [5_000, failed, ['retryAt', 'enterDegraded'], 15_000],
      [15_000, { type: 'tick' }, ['runFullPass']],
      [15_000, ok('full'), ['leaveDegraded', 'scheduleRescan'], 15_000 + 3_600_000],
    ]);
  });

  it('lost events ask for a full pass; a request cancels the back-off', () => {
    run(hourly, [
      [0, { type: 'started' }, ['runFullPass']],
      [0, ok('full'), ['leaveDegraded', 'scheduleRescan']],
      [10, { type: 'batchReady', rescan: true }, ['runFullPass']],
      [20, failed, ['retryAt', 'enterDegraded'], 5_020],
      [40, { type: 'fullPassRequested' }, ['runFullPass']],
    ]);
  });

  it('config changes: a new interval re-arms the rescan; 0 drops it; each reload runs a full pass', () => {
    run(hourly, [
      [0, { type: 'started' }, ['runFullPass']],
      [0, ok('full'), ['leaveDegraded', 'scheduleRescan'], 3_600_000],
      [10, { type: 'configChanged', config: { rescanIntervalMs: 60_000, settleMs: 2_000 } }, ['scheduleRescan', 'runFullPass'], 60_010],
      // During that pass: wanted again once it ends.
      [20, { type: 'configChanged', config: { rescanIntervalMs: 0, settleMs: 2_000 } }, [], -1],
      [30, ok('full'), ['leaveDegraded', 'runFullPass'], -1],
    ]);
  });

  it('a reload with unchanged settings (SIGHUP) runs a full pass at once, also during a back-off', () => {
    run(hourly, [
      [0, { type: 'started' }, ['runFullPass']],
      [0, ok('full'), ['leaveDegraded', 'scheduleRescan'], 3_600_000],
      [10, { type: 'configChanged', config: hourly }, ['runFullPass']],
      [20, failed, ['retryAt', 'enterDegraded'], 5_020],
      [30, { type: 'configChanged', config: hourly }, ['runFullPass']],
    ]);
  });

  it('stop: nothing runs or is timed afterwards', () => {
    const s = run(hourly, [
      [0, { type: 'started' }, ['runFullPass']],
      [1, { type: 'stop' }, [], -1],
      [2, ok('full'), [], -1],
      [3, { type: 'batchReady', rescan: true }, [], -1],
    ]);
    expect(s.stopped).toBe(true);
  });
});

// Issue 23, defect 6: a file changed within the stability window is set aside, never sent
// half-written; the one settle rule of the daemon and of `dssync sync` (issue 38.3).
describe('schedule: files set aside', () => {
  it('looked at again one window later by a changes pass, as long as they keep changing', () => {
    run(hourly, [
      [0, { type: 'started' }, ['runFullPass']],
      [100, { type: 'setAside' }, [], 2_100],
      [200, ok('full'), ['leaveDegraded', 'scheduleRescan'], 2_100],
      [2_100, { type: 'tick' }, ['lookAgain', 'runChangesPass'], 3_600_200],
      [2_150, { type: 'setAside' }, [], 4_150],
      [2_200, ok('changes'), ['leaveDegraded'], 4_150],
      [4_150, { type: 'tick' }, ['lookAgain', 'runChangesPass']],
    ]);
  });

  it('set aside while waiting for a decision: the look again is a full pass (the files may be back)', () => {
    run(hourly, [
      [0, { type: 'started' }, ['runFullPass']],
      [50, { type: 'setAside' }, []],
      [100, { type: 'passFinished', kind: 'full', ok: false, awaitDecision: true }, [], 2_050],
      [2_050, { type: 'tick' }, ['lookAgain', 'runFullPass']],
    ]);
  });

  it('with a deadline (`dssync sync`): no look that would begin after it', () => {
    const s = run({ rescanIntervalMs: 0, settleMs: 2_000, giveUpAt: 5_000 }, [
      [0, { type: 'setAside' }, [], 2_000],
      [2_000, { type: 'tick' }, ['lookAgain']],
      [2_000, { type: 'setAside' }, [], 4_000],
      [4_000, { type: 'tick' }, ['lookAgain']],
      [4_000, { type: 'setAside' }, [], -1],
    ]);
    expect(s.settleAt).toBeUndefined();
  });
});

const ZERO = { uploaded: 0, replaced: 0, renamed: 0, updated: 0, deleted: 0, adopted: 0, forgotten: 0, unchanged: 0, skipped: 0, failed: 0 };

function report(counts: Partial<typeof ZERO>, settling?: string[]): PassReport {
  return { mappingId: 'm', ok: true, dryRun: false, ops: [], counts: { ...ZERO, ...counts }, failures: [], skipped: [], conflicts: [], settling, startedAt: '', finishedAt: '' } as unknown as PassReport;
}

/** A mirror whose passes answer these reports in turn, counting the passes. */
function mirror(...reports: PassReport[]) {
  let n = 0;
  return { passes: () => n, fullPass: () => Promise.resolve(reports[Math.min(n++, reports.length - 1)]!) };
}

async function settle(m: ReturnType<typeof mirror>, waitMs: number, clock = new FakeClock()) {
  const done = fullPassSettled(m, {}, { windowMs: 2_000, waitMs, clock, logger: silentLogger, signal: new AbortController().signal });
  for (let i = 0; i < 20; i++) await clock.advance(1_000);
  return done;
}

describe('dssync sync: the same rule, full passes until settled or --wait-changing is over (cli/commands/sync.ts)', () => {
  it('nothing settling: one pass, its report', async () => {
    const m = mirror(report({ uploaded: 2 }));
    const r = await settle(m, 30_000);
    expect(m.passes()).toBe(1);
    expect(r.ok).toBe(true);
    expect(r.counts.uploaded).toBe(2);
  });

  it('a file settling: looks again after the window; one summary (writes of both passes, unchanged not counted twice)', async () => {
    const m = mirror(report({ uploaded: 3, unchanged: 10 }, ['big.bin']), report({ uploaded: 1, unchanged: 13 }));
    const r = await settle(m, 30_000);
    expect(m.passes()).toBe(2);
    expect(r.ok).toBe(true);
    expect(r.counts).toMatchObject({ uploaded: 4, unchanged: 10 });
  });

  it('still changing when the wait is over: not ok, the last settling named', async () => {
    const m = mirror(report({}, ['app.log']));
    const r = await settle(m, 5_000);
    // At 0, 2 and 4 s: a third look would end after the 5 s bound.
    expect(m.passes()).toBe(3);
    expect(r.ok).toBe(false);
    expect(r.settling).toEqual(['app.log']);
  });

  it('a wait of 0: one pass, the file reported', async () => {
    const m = mirror(report({}, ['a.txt']));
    const r = await settle(m, 0);
    expect(m.passes()).toBe(1);
    expect(r.ok).toBe(false);
  });
});

describe('retry delays', () => {
  it('double from the first delay up to 5 minutes, with ±20 % jitter', () => {
    const mid = (): number => 0.5;
    expect([1, 2, 3, 4].map((n) => retryDelayMs(n, mid))).toEqual([5_000, 10_000, 20_000, 40_000]);
    expect(retryDelayMs(30, mid)).toBe(MAX_RETRY_DELAY_MS);
    expect(retryDelayMs(1, () => 0)).toBe(4_000);
    expect(retryDelayMs(1, () => 1)).toBe(6_000);
    // A configured first delay (DSSYNC_RETRY_DELAY_MS).
    expect([1, 2, 3].map((n) => retryDelayMs(n, mid, 1_000))).toEqual([1_000, 2_000, 4_000]);
  });
});

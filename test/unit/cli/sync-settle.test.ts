/** `dssync sync` waits for files being written (cli/commands/sync-settle.ts), with the fake clock. */
import { describe, expect, it } from 'vitest';
import { fullPassSettled } from '../../../src/cli/commands/sync-settle.js';
import type { PassReport } from '../../../src/engine/pass-report.js';
import { silentLogger } from '../../../src/log.js';
import { FakeClock } from '../../helpers/fake-clock.js';

const ZERO = { uploaded: 0, replaced: 0, renamed: 0, updated: 0, deleted: 0, adopted: 0, forgotten: 0, unchanged: 0, skipped: 0, failed: 0 };

function report(counts: Partial<typeof ZERO>, settling?: string[]): PassReport {
  return { mappingId: 'm', ok: true, dryRun: false, ops: [], counts: { ...ZERO, ...counts }, failures: [], skipped: [], conflicts: [], settling, startedAt: '', finishedAt: '' } as unknown as PassReport;
}

/** A mirror whose passes answer these reports in turn, counting the passes. */
function mirror(...reports: PassReport[]) {
  let n = 0;
  return { passes: () => n, fullPass: () => Promise.resolve(reports[Math.min(n++, reports.length - 1)]!) };
}

async function run(m: ReturnType<typeof mirror>, waitMs: number, clock = new FakeClock()) {
  const done = fullPassSettled(m, {}, { windowMs: 2_000, waitMs, clock, logger: silentLogger, signal: new AbortController().signal });
  for (let i = 0; i < 20; i++) await clock.advance(1_000);
  return done;
}

describe('fullPassSettled', () => {
  it('nothing settling: one pass, its report', async () => {
    const m = mirror(report({ uploaded: 2 }));
    const r = await run(m, 30_000);
    expect(m.passes()).toBe(1);
    expect(r.ok).toBe(true);
    expect(r.counts.uploaded).toBe(2);
  });

  it('a file settling: looks again after the window; one summary (writes of both passes, unchanged not counted twice)', async () => {
    const m = mirror(report({ uploaded: 3, unchanged: 10 }, ['big.bin']), report({ uploaded: 1, unchanged: 13 }));
    const r = await run(m, 30_000);
    expect(m.passes()).toBe(2);
    expect(r.ok).toBe(true);
    expect(r.counts).toMatchObject({ uploaded: 4, unchanged: 10 });
  });

  it('still changing when the wait is over: not ok, the last settling named', async () => {
    const m = mirror(report({}, ['app.log']));
    const r = await run(m, 5_000);
    // At 0, 2 and 4 s: a third look would end after the 5 s bound.
    expect(m.passes()).toBe(3);
    expect(r.ok).toBe(false);
    expect(r.settling).toEqual(['app.log']);
  });

  it('a wait of 0: one pass, the file reported', async () => {
    const m = mirror(report({}, ['a.txt']));
    const r = await run(m, 0);
    expect(m.passes()).toBe(1);
    expect(r.ok).toBe(false);
  });
});

/**
 * A smoke test of the benchmark harness (`npm run bench`): the scenarios run end to end at
 * a tiny size against the built binary, and the report holds the figures the issue names.
 * The figures themselves are not judged here (timing on a shared machine): the benchmark
 * does that.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { runBench } from '../../../bench/run.js';
import { toMarkdown } from '../../../bench/lib/report.js';
import { requireBuiltBinary } from '../cli/run-cli.js';

beforeAll(() => requireBuiltBinary());

describe('npm run bench (smoke size)', () => {
  it('mirrors, restarts and idles dssync against the emulator, and reports every figure', { timeout: 120_000 }, async () => {
    const report = await runBench('smoke', ['initialMirror', 'restart', 'footprint']);
    const { initialMirror, restart, footprint } = report.scenarios;
    expect(initialMirror).toMatchObject({ files: 60, minimumRequests: 3 + 60 });
    expect(initialMirror!.requests).toBeGreaterThanOrEqual(63);
    for (const k of ['seconds', 'filesPerSecond', 'baselineSeconds', 'speedup']) expect(initialMirror![k]).toBeGreaterThan(0);
    // A restart over an unchanged tree writes nothing and reads no content; its lease's claim
    // (the setup's sync made the marker and kept its id: no listing but the pass's) is reported apart.
    expect(restart).toMatchObject({ files: 200, writes: 0, leaseWrites: 1, listings: 1, contentBytesRead: 0 });
    expect(restart!.seconds).toBeGreaterThan(0);
    // The memory at rest is sampled once the reclaim after the pass is done.
    expect(footprint!.reclaimSeconds).toBeGreaterThan(0);
    expect(footprint!.rssMB).toBeGreaterThan(0);
    expect(footprint!.stateWriteMs).toBeGreaterThan(0);
    expect(footprint!.watchedFolders).toBe(11);
    // At rest the daemon sends the service nothing but its lease's renewals.
    expect(footprint!.restRequests).toBe(footprint!.restLeaseWrites);
    expect(footprint!.restRequestsPerHour).toBeGreaterThanOrEqual(0);
    // Targets are evaluated for the scenarios that ran; the Markdown names machine and figures.
    expect(report.targets.find((t) => t.figure === 'writes')).toMatchObject({ actual: 0, met: true });
    const md = toMarkdown(report);
    expect(md).toContain(`Node.js: ${process.version}`);
    expect(md).toMatch(/\| speedup ≥ 20 \| [0-9.]+ \| (yes|\*\*no\*\*) \|/);
  });
});

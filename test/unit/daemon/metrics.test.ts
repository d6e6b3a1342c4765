/**
 * The daemon's Prometheus text and its back-off arithmetic: what a monitoring setup and an
 * operator waiting for a retry rely on.
 */
import { describe, expect, it } from 'vitest';
import { DaemonMetrics } from '../../../src/daemon/metrics.js';
import type { MappingStatus } from '../../../src/daemon/mapping-runner.js';
import { jittered, MAX_RETRY_DELAY_MS, retryDelayMs } from '../../../src/daemon/timers.js';

const status = (over: Partial<MappingStatus> = {}): MappingStatus => ({
  id: 'm1',
  path: '/srv/share',
  phase: 'watching',
  degraded: [],
  filesTracked: 12,
  pending: 3,
  recentErrors: [],
  skipped: [],
  notIngested: [],
  watchedDirs: 4,
  ...over,
});

describe('DaemonMetrics', () => {
  it('labels request latencies by HTTP status: 2xx for successes, the status or error code for failures', async () => {
    const m = new DaemonMetrics(() => []);
    m.onPacer({ type: 'response', method: 'GET', path: '/x', attempt: 1, ms: 12, ok: true });
    m.onPacer({ type: 'response', method: 'POST', path: '/x', attempt: 1, ms: 30, ok: false, status: 503, code: 'E_SERVER' });
    m.onPacer({ type: 'response', method: 'PUT', path: '/x', attempt: 1, ms: 5, ok: false, code: 'E_CONNECTION' });
    const text = await m.text();
    expect(text).toMatch(/^dssync_request_duration_seconds_count\{method="GET",status="2xx"\} 1$/m);
    expect(text).toMatch(/^dssync_request_duration_seconds_count\{method="POST",status="503"\} 1$/m);
    expect(text).toMatch(/^dssync_request_duration_seconds_count\{method="PUT",status="E_CONNECTION"\} 1$/m);
  });

  it('counts operations and lag per mapping, and reads the gauges from the runners at scrape time', async () => {
    let statuses = [status()];
    const m = new DaemonMetrics(() => statuses);
    m.onOp('m1', { kind: 'upload', path: 'a.txt', outcome: 'done' }, 1500);
    m.onOp('m1', { kind: 'upload', path: 'b.txt', outcome: 'failed' }, undefined);
    let text = await m.text();
    expect(text).toMatch(/^dssync_operations_total\{mapping="m1",kind="upload",outcome="done"\} 1$/m);
    expect(text).toMatch(/^dssync_operations_total\{mapping="m1",kind="upload",outcome="failed"\} 1$/m);
    expect(text).toMatch(/^dssync_sync_lag_seconds_sum\{mapping="m1"\} 1.5$/m);
    expect(text).toMatch(/^dssync_sync_lag_seconds_count\{mapping="m1"\} 1$/m);
    expect(text).toMatch(/^dssync_files_tracked\{mapping="m1"\} 12$/m);
    expect(text).toMatch(/^dssync_queue_depth\{mapping="m1"\} 3$/m);
    expect(text).toMatch(/^dssync_mapping_degraded\{mapping="m1"\} 0$/m);

    statuses = [status({ degraded: ['the mapped folder is gone'], filesTracked: 13 })];
    text = await m.text();
    expect(text).toMatch(/^dssync_mapping_degraded\{mapping="m1"\} 1$/m);
    expect(text).toMatch(/^dssync_files_tracked\{mapping="m1"\} 13$/m);
    // A mapping removed by a reload disappears from the gauges.
    statuses = [];
    expect(await m.text()).not.toMatch(/^dssync_files_tracked\{/m);
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

  it('spread periodic rescans by ±10 %', () => {
    expect(jittered(3_600_000, () => 0)).toBe(3_240_000);
    expect(jittered(3_600_000, () => 1)).toBe(3_960_000);
  });
});

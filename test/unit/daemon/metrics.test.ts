/**
 * The daemon's Prometheus text: what a monitoring setup relies on.
 */
import { describe, expect, it } from 'vitest';
import { DaemonMetrics, MOUNT_SERIES } from '../../../src/daemon/status/metrics.js';
import type { MappingStatus } from '../../../src/daemon/status/schema.js';

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
  it('dssync_mapping_phase: one series per mapping, 1 for its phase now (alerts on standby or conflict read it)', async () => {
    let statuses = [status(), status({ id: 'm2', phase: 'paused' })];
    const m = new DaemonMetrics(() => statuses);
    let text = await m.text();
    expect(text).toMatch(/^dssync_mapping_phase\{mapping="m1",phase="watching"\} 1$/m);
    expect(text).toMatch(/^dssync_mapping_phase\{mapping="m2",phase="paused"\} 1$/m);
    statuses = [status({ phase: 'degraded' })];
    text = await m.text();
    expect(text.match(/^dssync_mapping_phase\{.*$/gm)).toEqual(['dssync_mapping_phase{mapping="m1",phase="degraded"} 1']);
  });

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

describe('DaemonMetrics: the watch per mount (issue 12)', () => {
  const cifs = { mountPoint: '/srv/share', rel: '', fsType: 'cifs', source: '//fs/Public', kind: 'poll' as const, why: 'network', files: 48_000, lastCycleMs: 2_100 };
  const ext4 = { mountPoint: '/srv/share/local', rel: 'local', fsType: 'ext4', source: '/dev/sda1', kind: 'events' as const, why: 'local' };
  const poll = { subtrees: [''], cycles: 7, lastEntries: 48_100, lastFiles: 48_000, achievedIntervalMs: 10_250, targetIntervalMs: 10_000, budgetPercent: 5, problems: [] };

  it('says per mount (by its place and type, never its path) whether it is polled, its files, its last cycle and the interval achieved; the watch limit per mapping', async () => {
    const m = new DaemonMetrics(() => [
      status({ watch: { mode: 'auto', mounts: [cifs, ext4], overLimit: ['deep', 'deeper'], limitFix: 'sysctl …', poll, problems: ['the inotify watch limit is reached'] } }),
    ]);
    const text = await m.text();
    expect(text).toMatch(/^dssync_watch_polled\{mapping="m1",mount="0:cifs"\} 1$/m);
    expect(text).toMatch(/^dssync_watch_polled\{mapping="m1",mount="1:ext4"\} 0$/m);
    expect(text).toMatch(/^dssync_poll_files\{mapping="m1",mount="0:cifs"\} 48000$/m);
    expect(text).toMatch(/^dssync_poll_last_cycle_seconds\{mapping="m1",mount="0:cifs"\} 2.1$/m);
    expect(text).toMatch(/^dssync_poll_interval_seconds\{mapping="m1",mount="0:cifs"\} 10.25$/m);
    expect(text).not.toMatch(/^dssync_poll_files\{mapping="m1",mount="1:ext4"\}/m);
    expect(text).toMatch(/^dssync_poll_cycles\{mapping="m1"\} 7$/m);
    expect(text).toMatch(/^dssync_watch_folders_over_limit\{mapping="m1"\} 2$/m);
    expect(text).toMatch(/^dssync_watch_problems\{mapping="m1"\} 1$/m);
    expect(text).not.toContain('/srv/share'); // /metrics answers other machines without a token
  });

  it('keeps the series bounded: past MOUNT_SERIES mounts, the rest share mount="other"', async () => {
    const mounts = Array.from({ length: MOUNT_SERIES + 5 }, (_, i) => ({ ...cifs, mountPoint: `/data/m${i}`, rel: `m${i}`, files: 10 }));
    const m = new DaemonMetrics(() => [status({ watch: { mode: 'auto', mounts, overLimit: [], poll, problems: [] } })]);
    const text = await m.text();
    expect(text.match(/^dssync_poll_files\{/gm)).toHaveLength(MOUNT_SERIES + 1);
    expect(text).toMatch(/^dssync_poll_files\{mapping="m1",mount="other"\} 50$/m);
    expect(text).toMatch(/^dssync_watch_polled\{mapping="m1",mount="other"\} 1$/m);
  });
});

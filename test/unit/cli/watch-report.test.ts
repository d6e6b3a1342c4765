/**
 * How `dssync status` and `config check` put a mapping's watch in words (issue 12): one line
 * per mount with the interval achieved, files and last cycle; the watch limit with its fix.
 */
import { describe, expect, it } from 'vitest';
import type { WatchStatusView } from '../../../src/daemon/status/schema.js';
import type { MappingStatus } from '../../../src/daemon/status/schema.js';
import { formatDaemonStatus } from '../../../src/cli/commands/status.js';
import { formatCount, formatSeconds, formatWatchLines } from '../../../src/cli/watch-report.js';

const cifs = { mountPoint: '/srv/share', rel: '', fsType: 'cifs', source: '//fileserver/Public', kind: 'poll' as const, why: 'cifs is a network filesystem' };
const ext4 = { mountPoint: '/srv/share/local', rel: 'local', fsType: 'ext4', source: '/dev/sda1', kind: 'events' as const, why: 'ext4 is a local filesystem' };

function poll(over: Partial<NonNullable<WatchStatusView['poll']>> = {}): NonNullable<WatchStatusView['poll']> {
  return {
    subtrees: [''],
    bySubtree: { '': { files: 48_000, ms: 2_100 } },
    cycles: 12,
    lastEntries: 49_000,
    lastFiles: 48_000,
    lastCycleMs: 2_100,
    achievedIntervalMs: 10_004,
    targetIntervalMs: 10_000,
    budgetPercent: 5,
    problems: [],
    ...over,
  };
}

describe('formatSeconds and formatCount', () => {
  it('rounds as an operator reads an interval', () => {
    expect(formatSeconds(2_100)).toBe('2.1 s');
    expect(formatSeconds(340)).toBe('0.3 s');
    expect(formatSeconds(40)).toBe('40 ms');
    expect(formatSeconds(10_004)).toBe('10 s');
    expect(formatSeconds(15_400)).toBe('15 s');
    expect(formatSeconds(158_000)).toBe('2 min 38 s');
    expect(formatSeconds(120_000)).toBe('2 min');
    expect(formatCount(48_000)).toBe('48,000');
    expect(formatCount(7)).toBe('7');
  });
});

describe('formatWatchLines', () => {
  it('a CIFS share: polling every 10 s, its files and its last cycle, events kept for this host', () => {
    const w: WatchStatusView = { mode: 'auto', mounts: [{ ...cifs, files: 48_000, lastCycleMs: 2_100 }], overLimit: [], poll: poll(), problems: [] };
    expect(formatWatchLines(w, '/srv/share')).toEqual([
      "/srv/share is cifs (//fileserver/Public): polling every 10 s, 48,000 files, last cycle 2.1 s; events for this host's writes",
    ]);
  });

  it('a local folder with a share inside: events for the folder, polling for the share, each on its line', () => {
    const w: WatchStatusView = {
      mode: 'auto',
      mounts: [{ ...ext4, mountPoint: '/data', rel: '' }, { ...cifs, mountPoint: '/data/share', rel: 'share', files: 1, lastCycleMs: 40 }],
      overLimit: [],
      poll: poll(),
      problems: [],
    };
    expect(formatWatchLines(w, '/data/')).toEqual([
      '/data/ is ext4 (/dev/sda1): events',
      "/data/share is cifs (//fileserver/Public): polling every 10 s, 1 file, last cycle 40 ms; events for this host's writes",
    ]);
  });

  it('before two cycles have run: the target, and no figure invented', () => {
    const w: WatchStatusView = { mode: 'poll', mounts: [{ ...cifs, why: 'watch.mode is "poll"' }], overLimit: [], poll: poll({ cycles: 0, achievedIntervalMs: undefined, bySubtree: {} }), problems: [] };
    expect(formatWatchLines(w, '/srv/share')).toEqual(['/srv/share is cifs (//fileserver/Public): polling every 10 s (target), first cycle not finished yet; no events (watch.mode "poll")']);
  });

  it('an interval stretched by the CPU budget says against which target', () => {
    const w: WatchStatusView = { mode: 'auto', mounts: [{ ...cifs, files: 100_000, lastCycleMs: 158_000 }], overLimit: [], poll: poll({ achievedIntervalMs: 158_400 }), problems: [] };
    expect(formatWatchLines(w, '/srv/share')[0]).toBe(
      "/srv/share is cifs (//fileserver/Public): polling every 2 min 38 s (target 10 s; the walk takes longer at 5 % of a core), 100,000 files, last cycle 2 min 38 s; events for this host's writes",
    );
  });

  it('folders past the inotify watch limit: how many, polled how often, files, and the command that raises it', () => {
    const names = ['a', 'b', 'c', 'd', 'e'];
    const w: WatchStatusView = {
      mode: 'auto',
      mounts: [{ ...ext4, mountPoint: '/data', rel: '' }],
      overLimit: names,
      limitFix: 'sysctl fs.inotify.max_user_watches=524288 (and in /etc/sysctl.d/ to keep it)',
      poll: poll({ subtrees: names, bySubtree: Object.fromEntries(names.map((n) => [n, { files: 10, ms: 5 }])) }),
      problems: [],
    };
    expect(formatWatchLines(w, '/data')).toEqual([
      '/data is ext4 (/dev/sda1): events',
      '5 folders past the inotify watch limit, polled every 10 s instead (a, b, c, … 2 more; 50 files); raise the limit: sysctl fs.inotify.max_user_watches=524288 (and in /etc/sysctl.d/ to keep it)',
    ]);
  });

  it('the inotify queue: nothing while it never overflowed; then how often, when, how many events at once, and the fix', () => {
    const base: WatchStatusView = { mode: 'auto', mounts: [{ ...ext4, mountPoint: '/data', rel: '' }], overLimit: [], problems: [] };
    expect(formatWatchLines({ ...base, queue: { queueSize: 16_384, overflows: 0 } }, '/data')).toEqual(['/data is ext4 (/dev/sda1): events']);
    expect(formatWatchLines({ ...base, queue: { queueSize: 16_384, overflows: 1, lastOverflowAt: '2026-11-24T05:20:11.512Z', lastBurst: 16_384 } }, '/data')[1]).toBe(
      'the inotify queue (16,384 events) may have overflowed once, last at 2026-11-24 05:20:11 UTC (16,384 events at once): everything was looked at again; if it repeats, raise it: sysctl fs.inotify.max_queued_events=65536 (and in /etc/sysctl.d/ to keep it), then restart dssync',
    );
    expect(formatWatchLines({ ...base, queue: { queueSize: 16_384, overflows: 3, lastOverflowAt: '2026-11-24T05:20:11.512Z', lastBurst: 15_002 } }, '/data')[1]).toMatch(/^the inotify queue \(16,384 events\) may have overflowed 3 times, last at .* \(15,002 events at once\)/);
  });

  it("the kernel's own report is said as such; dssync's watch goes unsaid, fs.watch is named with why", () => {
    const base: WatchStatusView = { mode: 'auto', mounts: [{ ...ext4, mountPoint: '/data', rel: '' }], overLimit: [], problems: [] };
    expect(formatWatchLines({ ...base, backend: { name: 'inotify' }, queue: { reported: true, queueSize: 16_384, overflows: 1, lastOverflowAt: '2026-11-24T05:20:11.512Z' } }, '/data')).toEqual([
      '/data is ext4 (/dev/sda1): events',
      'the inotify queue (16,384 events) overflowed once, last at 2026-11-24 05:20:11 UTC: everything was looked at again; if it repeats, raise it: sysctl fs.inotify.max_queued_events=65536 (and in /etc/sysctl.d/ to keep it), then restart dssync',
    ]);
    expect(formatWatchLines({ ...base, backend: { name: 'fs.watch', why: '/opt/dssync/dist/src/native/inotify.node is not built (npm run build needs a C compiler: cc)' } }, '/data')).toEqual([
      '/data is ext4 (/dev/sda1): events',
      "events through Node's fs.watch, not dssync's inotify watch (/opt/dssync/dist/src/native/inotify.node is not built (npm run build needs a C compiler: cc)): about 1.3 KB more memory a folder, and a queue overflow is only inferred",
    ]);
  });

  it('many mounts below a folder: ten lines, then how many more', () => {
    const mounts = Array.from({ length: 13 }, (_, i) => ({ ...ext4, mountPoint: `/data/m${i}`, rel: `m${i}` }));
    const lines = formatWatchLines({ mode: 'auto', mounts, overLimit: [], problems: [] }, '/data');
    expect(lines).toHaveLength(11);
    expect(lines[10]).toBe('… and 3 more mounts');
  });
});

describe('dssync status shows the watch block', () => {
  it('under the mapping, one line per mount, aligned', () => {
    const m = {
      id: 'share',
      path: '/srv/share',
      phase: 'watching',
      degraded: [],
      filesTracked: 48_000,
      pending: 0,
      recentErrors: [],
      skipped: [],
      notIngested: [],
      watchedDirs: 480,
      watch: { mode: 'auto', mounts: [{ ...cifs, files: 48_000, lastCycleMs: 2_100 }, { ...ext4, mountPoint: '/srv/share/local', rel: 'local' }], overLimit: [], poll: poll(), problems: [] },
    } satisfies MappingStatus;
    const text = formatDaemonStatus(
      {
        version: '0.1.0', pid: 1, startedAt: new Date(0).toISOString(), statePath: '/s', baseUrl: 'http://x', organizationId: 'o', stopping: false,
        requests: { total: 0, retries: 0, throttled: 0, inFlight: 0, queued: 0 },
        mappings: [m],
      },
      'http://127.0.0.1:8787',
      Date.now(),
    );
    expect(text).toMatch(/\n {2}watch: +\/srv\/share is cifs \(\/\/fileserver\/Public\): polling every 10 s, 48,000 files, last cycle 2\.1 s; events for this host's writes\n {2}\s+\/srv\/share\/local is ext4 \(\/dev\/sda1\): events\n/);
  });
});

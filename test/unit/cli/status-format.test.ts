/**
 * What `dssync status` prints and which exit code it chooses, from a daemon's answer or a
 * state file: pure functions with a fixed clock, plus runStatus with injected readers.
 */
import { STATE_VERSION } from '../../../src/state/schema.js';
import { describe, expect, it } from 'vitest';
import type { DaemonStatus } from '../../../src/daemon/status/schema.js';
import type { MappingStatus } from '../../../src/daemon/status/schema.js';
import { StateCorruptError } from '../../../src/state/errors.js';
import { describeFailure } from '../../../src/cli/exit.js';
import type { StateFile } from '../../../src/state/schema.js';
import { FileTable } from '../../../src/state/file-table.js';
import { FakeClock } from '../../helpers/fake-clock.js';
import {
  daemonExitCode,
  formatCounts,
  formatDaemonStatus,
  formatDuration,
  formatStateReport,
  formatWhen,
  limitedLines,
  runStatus,
  stateExitCode,
  stateFileReport,
  type DaemonProbe,
} from '../../../src/cli/commands/status.js';
import { statusUrl } from '../../../src/cli/daemon-link.js';

const NOW = Date.parse('2026-03-01T12:00:00.000Z');
const ago = (ms: number): string => new Date(NOW - ms).toISOString();

function mapping(over: Partial<MappingStatus> = {}): MappingStatus {
  return {
    id: 'handbook',
    path: '/srv/share/handbook',
    dataSourceId: 'ds-1',
    phase: 'watching',
    degraded: [],
    filesTracked: 120,
    pending: 0,
    lastPass: {
      uploaded: 2, replaced: 0, renamed: 1, updated: 0, deleted: 0, adopted: 0, forgotten: 0, unchanged: 117, skipped: 0, failed: 0,
      ok: true, finishedAt: ago(5 * 60_000), kind: 'full',
    },
    lastFullPassOkAt: ago(5 * 60_000),
    nextRescanAt: new Date(NOW + 55 * 60_000).toISOString(),
    recentErrors: [],
    skipped: [],
    notIngested: [],
    watchedDirs: 14,
    ...over,
  };
}

function daemon(mappings: MappingStatus[]): DaemonStatus {
  return {
    version: '0.1.0',
    pid: 4242,
    startedAt: ago(2 * 3600_000 + 3 * 60_000),
    configFile: '/etc/dssync/config.json',
    statePath: '/var/lib/dssync/state.json',
    baseUrl: 'https://service.example.com',
    organizationId: 'org-1',
    stopping: false,
    requests: { total: 1234, retries: 5, throttled: 2, inFlight: 1, queued: 3 },
    mappings,
  };
}

describe('time and list helpers', () => {
  it('says how long ago or how soon, with the exact time', () => {
    expect(formatWhen(ago(5 * 60_000), NOW)).toBe('2026-03-01T11:55:00Z (5m ago)');
    expect(formatWhen(new Date(NOW + 90_000).toISOString(), NOW)).toBe('2026-03-01T12:01:30Z (in 1m 30s)');
    expect(formatWhen(undefined, NOW)).toBe('-');
    expect(formatDuration(0)).toBe('0s');
    expect(formatDuration(45_000)).toBe('45s');
    expect(formatDuration(2 * 3600_000 + 3 * 60_000 + 9_000)).toBe('2h 3m');
    expect(formatDuration(3 * 86_400_000 + 5_000)).toBe('3d');
  });

  it('prints at most ten items, then how many more', () => {
    const lines = limitedLines(Array.from({ length: 25 }, (_, i) => i), (i) => `item ${i}`);
    expect(lines).toHaveLength(11);
    expect(lines[9]).toBe('item 9');
    expect(lines[10]).toBe('… and 15 more');
    expect(limitedLines([1, 2], String)).toEqual(['1', '2']);
  });

  it('shows the non-zero counts of a pass in a fixed order', () => {
    expect(formatCounts({ unchanged: 9, uploaded: 3, deleted: 0, failed: 1 })).toBe('3 uploaded, 9 unchanged, 1 failed');
    expect(formatCounts({ uploaded: 0 })).toBe('no files');
  });

  it('reaches a wildcard bind over loopback', () => {
    expect(statusUrl({ host: '0.0.0.0', port: 8787 })).toBe('http://127.0.0.1:8787');
    expect(statusUrl({ host: '::', port: 8787 })).toBe('http://[::1]:8787');
    expect(statusUrl({ host: '127.0.0.1', port: 9 })).toBe('http://127.0.0.1:9');
  });
});

describe('the daemon view', () => {
  it('shows the daemon line and each mapping with aligned fields', () => {
    const text = formatDaemonStatus(daemon([mapping()]), 'http://127.0.0.1:8787', NOW);
    expect(text).toContain('daemon: running, pid 4242, dssync 0.1.0, up 2h 3m');
    expect(text).toMatch(/^ {2}requests: +1234 total, 5 retries, 2 throttled, 1 in flight, 3 queued$/m);
    expect(text).toMatch(/^mapping handbook: watching$/m);
    expect(text).toMatch(/^ {2}data source: +ds-1$/m);
    expect(text).toMatch(/^ {2}files tracked: 120$/m);
    expect(text).toMatch(/^ {2}last pass: +full, ok, 2026-03-01T11:55:00Z \(5m ago\): 2 uploaded, 1 renamed, 117 unchanged$/m);
    expect(text).toMatch(/^ {2}next rescan: +2026-03-01T12:55:00Z \(in 55m\)$/m);
    expect(text.trimEnd().endsWith('All mappings ok.')).toBe(true);
    expect(daemonExitCode(daemon([mapping()]))).toBe(0);
  });

  it('shows degraded reasons, newest errors first, truncated lists, and exits 1', () => {
    const errors = Array.from({ length: 14 }, (_, i) => ({ at: ago((20 - i) * 1000), path: `f${i}.pdf`, message: `upload failed: HTTP 500 #${i}` }));
    const m = mapping({
      phase: 'degraded',
      degraded: ['the mapped folder /srv/share/handbook is missing (not mounted?)', 'watch: ENOSPC'],
      recentErrors: errors,
      skipped: [{ path: 'big.pdf', reason: 'too-large' }],
      notIngested: [{ path: 'scan.pdf', documentId: 'doc-9', uploadedAt: ago(600_000) }],
    });
    const text = formatDaemonStatus(daemon([m, mapping({ id: 'ok-one' })]), 'http://127.0.0.1:8787', NOW);
    expect(text).toMatch(/^mapping handbook: degraded$/m);
    expect(text).toMatch(/^ {2}degraded: +the mapped folder \/srv\/share\/handbook is missing \(not mounted\?\)\n {2}\s+watch: ENOSPC$/m);
    expect(text).toContain('  recent errors (14):\n    2026-03-01T11:59:53Z (7s ago) f13.pdf: upload failed: HTTP 500 #13');
    expect(text).toContain('    … and 4 more');
    expect(text).not.toContain('#3\n');
    expect(text).toContain('  skipped (1):\n    big.pdf: too-large');
    expect(text).toContain('scan.pdf: document doc-9');
    expect(text.trimEnd().endsWith('Needs attention: handbook.')).toBe(true);
    expect(daemonExitCode(daemon([m]))).toBe(1);
  });

  it('counts a last pass that did not complete cleanly as needing attention', () => {
    const base = mapping();
    const failed = mapping({ lastPass: { ...base.lastPass!, ok: false, failed: 2 } });
    expect(daemonExitCode(daemon([base, failed]))).toBe(1);
    expect(formatDaemonStatus(daemon([failed]), 'u', NOW)).toMatch(/last pass: +full, NOT OK, .*2 failed/);
  });

  it('says when the state was lost or its journal damaged at this start (docs/reliability.md, "Damage and torn tails")', () => {
    const at = (stateRebuilt: NonNullable<DaemonStatus['installation']>['stateRebuilt']) =>
      formatDaemonStatus({ ...daemon([mapping()]), installation: { id: 'a1b2c3d4', origin: 'drawn', formerIds: 0, stateRebuilt } }, 'u', NOW);
    expect(at({ kind: 'empty', identity: 'recovered' })).toMatch(/state rebuilt: +the state file was lost \(no snapshot and an empty journal\); identity kept from the identity file/);
    expect(at({ kind: 'damaged', identity: 'recovered', movedTo: '/var/lib/dssync/state.json.journal.damaged-X' })).toMatch(
      /state rebuilt: +the state file had a damaged journal \(a copy is at \/var\/lib\/dssync\/state.json.journal.damaged-X; every valid record recovered\)/,
    );
  });
});

function stateWith(): StateFile {
  return {
    version: STATE_VERSION,
    journalSeq: 0,
    mappings: {
      handbook: {
        dataSourceId: 'ds-1',
        root: '/srv/share/handbook',
        files: FileTable.of({
          'a.txt': { documentId: 'd1', size: 1, mtimeMs: 1, sha256: 'x', syncedAt: ago(1000) },
          'b.txt': { documentId: 'd2', size: 1, mtimeMs: 1, sha256: 'y', syncedAt: ago(1000) },
        }),
        intents: {
          i1: { kind: 'upload', id: 'i1', startedAt: ago(60_000), files: [{ path: 'new.txt', size: 3, mtimeMs: 1, sha256: 'z' }] },
          i2: { kind: 'upload', id: 'i2', startedAt: ago(30_000), files: [{ path: 'b.txt', size: 1, mtimeMs: 2, sha256: 'y2' }, { path: 'c.txt', size: 1, mtimeMs: 2, sha256: 'c' }] },
        },
        rejected: { 'huge.pdf': { size: 9, mtimeMs: 1, status: 413, reason: 'payload too large', at: ago(100_000) } },
        lastPass: { startedAt: ago(200_000), finishedAt: ago(120_000), ok: false, summary: { uploaded: 2, skipped: 1 } },
      },
      retired: { dataSourceId: 'ds-old', root: '/srv/old', files: new FileTable(), intents: {}, rejected: {} },
    },
  };
}

const settings = {
  file: '/etc/dssync/config.json',
  statePath: '/var/lib/dssync/state.json',
  mappings: [
    { id: 'handbook', path: '/srv/share/handbook', dataSourceId: 'ds-1' },
    { id: 'policies', path: '/srv/share/policies', dataSourceId: undefined },
  ],
} as unknown as Parameters<typeof stateFileReport>[0];

describe('the state file view', () => {
  const daemonDown = { url: 'http://127.0.0.1:8787', reason: 'daemon not running (no answer at http://127.0.0.1:8787: connection refused)' };

  it('shows files tracked, open intents, rejected files and the last pass of each mapping', () => {
    const report = stateFileReport(settings, stateWith(), daemonDown);
    expect(report.mappings.map((m) => [m.id, m.inConfig, m.synced, m.filesTracked, m.unfinishedWrites])).toEqual([
      ['handbook', true, true, 2, 2],
      ['policies', true, false, 0, 0],
      ['retired', false, true, 0, 0],
    ]);
    const text = formatStateReport(report, NOW, ago(10_000));
    expect(text.startsWith('daemon not running (no answer at http://127.0.0.1:8787: connection refused).\n')).toBe(true);
    expect(text).toContain('From the state file /var/lib/dssync/state.json, written 2026-03-01T11:59:50Z (10s ago):');
    expect(text).toMatch(/^ {2}files tracked: +2$/m);
    expect(text).toMatch(/^ {2}unfinished writes: +2 remote write\(s\) begun and not recorded as done, settled at the next start$/m);
    expect(text).toContain('    upload new.txt (since 2026-03-01T11:59:00Z (1m ago))');
    expect(text).toContain('    upload b.txt, c.txt');
    expect(text).toContain('    huge.pdf: payload too large (HTTP 413)');
    expect(text).toMatch(/last pass: +NOT OK, .*: 2 uploaded, 1 skipped/);
    expect(text).toMatch(/^mapping policies\n.*\n.*\n {2}not synced yet$/m);
    expect(text).toContain('mapping retired (in the state file, no longer in the config)');
    expect(text.trimEnd().endsWith('Needs attention (last pass not ok, or files not mirrored): handbook.')).toBe(true);
    expect(stateExitCode(report)).toBe(1);
  });

  it('says plainly when there is no state yet, and exits 0', () => {
    const report = stateFileReport(settings, undefined, daemonDown);
    expect(report.stateFile).toBe('missing');
    expect(formatStateReport(report, NOW)).toContain('no state yet: dssync has not synced with this config');
    expect(stateExitCode(report)).toBe(0);
  });
});

describe('runStatus', () => {
  const env = { DSSYNC_STATE_PATH: '/nonexistent-dssync-test/state.json', HOME: '/nonexistent-home' };
  const collect = () => {
    let text = '';
    return { out: (t: string) => void (text += t), text: () => text };
  };

  it('prints the daemon answer as JSON with its source, and exits by its health', async () => {
    const o = collect();
    const probe = async (): Promise<DaemonProbe> => ({ kind: 'answered', url: 'http://127.0.0.1:8787', status: daemon([mapping({ phase: 'degraded', degraded: ['x'] })]) });
    const code = await runStatus({ json: true }, { env, out: o.out, clock: new FakeClock(NOW), probe, readState: () => Promise.reject(new Error('must not read')) });
    expect(code).toBe(1);
    const json = JSON.parse(o.text()) as { source: string; pid: number; mappings: MappingStatus[] };
    expect(json.source).toBe('daemon');
    expect(json.pid).toBe(4242);
    expect(json.mappings[0]?.phase).toBe('degraded');
  });

  it('falls back to the state file when nothing answers', async () => {
    const o = collect();
    const probe = async (): Promise<DaemonProbe> => ({ kind: 'no-answer', url: 'http://127.0.0.1:8787', reason: 'connection refused' });
    const code = await runStatus({ json: true }, { env, out: o.out, clock: new FakeClock(NOW), probe, readState: async () => stateWith() });
    expect(code).toBe(1);
    const json = JSON.parse(o.text()) as { source: string; mappings: { id: string; filesTracked: number }[]; daemon: { reason: string } };
    expect(json.source).toBe('state-file');
    expect(json.daemon.reason).toContain('daemon not running (no answer at http://127.0.0.1:8787');
    expect(json.mappings.find((m) => m.id === 'handbook')?.filesTracked).toBe(2);
  });

  it('names the corrupt state file and exits 2, as every command does (the registry), saying that the next sync rebuilds it', async () => {
    const probe = async (): Promise<DaemonProbe> => ({ kind: 'off' });
    const readState = () => Promise.reject(new StateCorruptError('/var/lib/dssync/state.json', 'not valid JSON'));
    const e = await runStatus({ json: false }, { env, out: () => undefined, probe, readState }).then(() => undefined, (err: unknown) => err);
    expect(describeFailure(e)).toEqual({ exitCode: 2, message: expect.stringMatching(/state file \/var\/lib\/dssync\/state.json is corrupt \(not valid JSON\); the next "dssync sync" or "dssync run" moves it aside/) });
  });
});

import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { DaemonStatusSchema, parseDaemonStatus, type DaemonStatus } from '../../../src/daemon/status/schema.js';

const status: DaemonStatus = {
  version: '0.1.0',
  pid: 42,
  startedAt: '2026-03-01T10:00:00.000Z',
  configFile: '/etc/dssync/config.json',
  statePath: '/var/lib/dssync/state.json',
  baseUrl: 'https://service.example.com',
  organizationId: 'org-1',
  stopping: false,
  requests: { total: 3, retries: 1, throttled: 0, inFlight: 0, queued: 0 },
  mappings: [
    {
      id: 'handbook',
      path: '/srv/share/handbook',
      dataSourceId: 'ds-1',
      phase: 'watching',
      degraded: [],
      filesTracked: 2,
      pending: 0,
      lastPass: { uploaded: 2, replaced: 0, renamed: 0, updated: 0, deleted: 0, adopted: 0, forgotten: 0, unchanged: 0, skipped: 0, failed: 0, ok: true, finishedAt: '2026-03-01T10:00:01.000Z', kind: 'full' },
      recentErrors: [{ at: '2026-03-01T10:00:00.500Z', path: 'a.bin', message: 'upload rejected: 415' }],
      skipped: [],
      notIngested: [],
      watchedDirs: 1,
    },
  ],
};

describe('the /status schema', () => {
  it('accepts what the daemon produces, through a JSON round trip', () => {
    const r = parseDaemonStatus(JSON.parse(JSON.stringify(status)));
    expect(r).toEqual({ ok: true, status });
  });

  it('keeps fields it does not know (a newer daemon read by an older CLI)', () => {
    const newer = { ...status, future: { x: 1 }, mappings: [{ ...status.mappings[0], watchMode: 'poll' }] };
    const r = parseDaemonStatus(newer);
    expect(r.ok && r.status).toEqual(newer);
  });

  it('names the first field that does not fit (another program on the port)', () => {
    expect(parseDaemonStatus({ status: 'ok' })).toEqual({ ok: false, reason: expect.stringMatching(/^version: /) });
    expect(parseDaemonStatus({ ...status, mappings: [{ ...status.mappings[0], phase: 'dancing' }] })).toEqual({
      ok: false,
      reason: expect.stringMatching(/^mappings\.0\.phase: /),
    });
    expect(parseDaemonStatus('hello').ok).toBe(false);
  });

  it('has no field that could carry a credential', () => {
    const keys = JSON.stringify(z.toJSONSchema(DaemonStatusSchema));
    expect(keys).toContain('filesTracked');
    expect(keys).not.toMatch(/token|password|secret/i);
  });
});

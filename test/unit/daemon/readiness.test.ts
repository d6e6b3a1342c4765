/**
 * `/readyz` (daemon/status/readiness.ts): ready only when every mapping holds its lease and
 * mirrors; a standby names the holder, a paused, stopped or unresolved mapping says so.
 */
import { describe, expect, it } from 'vitest';
import { readiness } from '../../../src/daemon/status/readiness.js';
import type { DaemonStatus, MappingStatus } from '../../../src/daemon/status/schema.js';

const held = { state: 'held' as const, since: '2026-01-01T00:00:00.000Z' };

function daemon(...mappings: Partial<MappingStatus>[]): DaemonStatus {
  return { stopping: false, mappings: mappings.map((m, i) => ({ id: `m${i}`, phase: 'watching', degraded: [], ...m })) } as unknown as DaemonStatus;
}

describe('readiness', () => {
  it('is ready when every mapping holds its lease, degraded or not', () => {
    expect(readiness(daemon({ lease: held }, { lease: held, phase: 'degraded', degraded: ['a failure'] }))).toEqual({ ready: true, reasons: [] });
  });

  it('is not ready for a standby, naming the holder, nor for a paused, stopped or unresolved mapping', () => {
    const r = readiness(
      daemon(
        { phase: 'standby', lease: { state: 'standby', holder: { host: 'pod-0', session: 's1', installationId: 'i', since: '2026-01-01T00:00:00.000Z' } } },
        { phase: 'paused', paused: { since: '2026-01-02T00:00:00.000Z' }, lease: { state: 'released' } },
        { phase: 'degraded', halted: true, lease: held },
        { phase: 'starting' },
        { lease: { state: 'at-risk' } },
      ),
    );
    expect(r.ready).toBe(false);
    expect(r.reasons).toEqual([
      'm0: standby: the lease is held by pod-0 (session s1, since 2026-01-01T00:00:00.000Z)',
      'm1: paused since 2026-01-02T00:00:00.000Z',
      'm2: stopped until the configuration is fixed',
      'm3: starting (data source not resolved yet)',
      'm4: lease at-risk',
    ]);
  });

  it('is not ready while stopping', () => {
    expect(readiness({ ...daemon({ lease: held }), stopping: true })).toEqual({ ready: false, reasons: ['stopping'] });
  });
});

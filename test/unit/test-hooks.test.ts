/**
 * The test-only lease settle (src/test-hooks.ts `lease-settle-ms`, engine/lease.ts
 * leaseTimingSettling): inert without DSSYNC_TEST_HOOKS, and when set the lease's rule is kept:
 * a claim is trusted only when written well within the settle wait that confirms it.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { LEASE, leaseTimingSettling } from '../../src/engine/lease.js';

afterEach(() => {
  vi.unstubAllEnvs();
  vi.resetModules();
});

async function settleMs(hooks: string | undefined): Promise<number | undefined> {
  vi.stubEnv('DSSYNC_TEST_HOOKS', hooks);
  vi.resetModules();
  const { testLeaseSettleMs } = await import('../../src/test-hooks.js');
  return testLeaseSettleMs();
}

describe('the test-only lease settle (lease-settle-ms)', () => {
  it('is inert without the variable, or without the entry: the real timing is used', async () => {
    expect(await settleMs(undefined)).toBeUndefined();
    expect(await settleMs('wall-offset-file=/tmp/x')).toBeUndefined();
    expect(await settleMs('lease-settle-ms=0')).toBeUndefined();
    expect(await settleMs('pause:before-hash=/tmp/p, lease-settle-ms=600')).toBe(600);
  });

  it('shortens the settle and the trusted claim latency together (settle > latency), nothing else', () => {
    const t = leaseTimingSettling(600);
    expect(t.settleMs).toBe(600);
    expect(t.claimLatencyMs).toBe(400);
    expect(LEASE.settleMs).toBeGreaterThan(LEASE.claimLatencyMs);
    expect({ durationMs: t.durationMs, renewMs: t.renewMs, checkMs: t.checkMs, atRiskMs: t.atRiskMs }).toEqual({ durationMs: LEASE.durationMs, renewMs: LEASE.renewMs, checkMs: LEASE.checkMs, atRiskMs: LEASE.atRiskMs });
  });
});

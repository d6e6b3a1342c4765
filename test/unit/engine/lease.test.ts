/**
 * The lease's pure core (engine/lease.ts) on a fake clock: what each read of the marker means
 * (free, ours, a live holder), expiry judged on the observer's own monotonic clock, a dead
 * predecessor on this host taken at once, the creation race's one marker, and a holder that
 * cannot renew stopping its writes before anyone can judge the lease expired.
 */
import { describe, expect, it } from 'vitest';
import type { DocumentRecord } from '../../../src/api/records.js';
import { LEASE, LeaseCore, isDeadPredecessor, leaseMarkersOf, leaseMetadata, leaseRecordOf, pickMarker, type HostProbe, type LeaseMarker, type LeaseRecord } from '../../../src/engine/lease.js';
import { isLeaseDocument } from '../../../src/engine/lease-view.js';
import { FakeClock } from '../../helpers/fake-clock.js';

const probe = (alive: Set<number>, host = 'node-a', bootId = 'boot-1'): HostProbe => ({ hostname: host, bootId, alive: (pid) => alive.has(pid), procStart: () => undefined });

function core(session: string, p: HostProbe = probe(new Set([1, 2])), pid = 1): LeaseCore {
  return new LeaseCore({ mappingId: 'docs', installationId: 'inst', session, host: p.hostname, boot: p.bootId, pid }, p);
}

function marker(r: LeaseRecord, documentId = 'doc1'): LeaseMarker {
  return { documentId, record: leaseRecordOf({ metadata: leaseMetadata(r) }) };
}

describe('the lease record', () => {
  it('round-trips through string metadata, and its document is a lease document', () => {
    const r: LeaseRecord = { mappingId: 'docs', installationId: 'inst', session: 's1', host: 'h', boot: 'b', pid: 42, procStart: '77', renew: 3, durationMs: 60_000, acquiredAt: '2026-01-01T00:00:00.000Z', released: false };
    const meta = leaseMetadata(r);
    expect(Object.values(meta).every((v) => typeof v === 'string')).toBe(true);
    expect(leaseRecordOf({ metadata: meta })).toEqual(r);
    expect(isLeaseDocument({ name: 'x', metadata: meta })).toBe(true);
    expect(leaseRecordOf({ metadata: { ...meta, dssync_lease_renew: 'x' } })).toBeUndefined();
  });

  it("keeps this mapping's markers of a listing, not another mapping's nor a file's", () => {
    const ours = leaseMetadata({ mappingId: 'docs', installationId: 'i', session: 's', host: 'h', pid: 1, renew: 1, durationMs: 1, acquiredAt: '', released: false });
    const theirs = { ...ours, dssync_lease: 'other' };
    const docs = [
      { id: 'a', name: 'x', metadata: ours, raw: {} },
      { id: 'b', name: 'y', metadata: theirs, raw: {} },
      { id: 'c', name: 'notes.txt', metadata: {}, raw: {} },
      { id: 'd', name: '.dssync-lease-docs.txt', metadata: {}, raw: {} },
    ];
    expect(leaseMarkersOf(docs, 'docs').map((m) => m.documentId)).toEqual(['a', 'd']);
  });

  it("finds a just-made marker (no record yet) under the name a service that rewrites or cuts names stored, not another mapping's", () => {
    const bare = (id: string, name: string): DocumentRecord => ({ id, name, metadata: {}, raw: {} });
    const stored = ['.dssync-lease-name_share.txt', '.dssync-lease-name_Share', '.dssync-lease-name_Share.txt (1)', '.dssync-lease-name_share (1)', '.dssync-lease-name_Sh'];
    const docs = stored.map((n, i) => bare(`s${i}`, n));
    expect(leaseMarkersOf(docs, 'name:Share').map((m) => m.documentId)).toEqual(['s0', 's1', 's2', 's3', 's4']);
    // Another mapping's marker, as sent or with its extension dropped, is not this one's.
    const others = [bare('o1', '.dssync-lease-name_Share2.txt'), bare('o2', '.dssync-lease-name_Share2'), bare('o3', '.dssync-lease-docs.txt')];
    expect(leaseMarkersOf(others, 'name:Share')).toEqual([]);
  });

  it('a creation race resolves to one marker for every process: the lowest id with a record', () => {
    const r = marker({ mappingId: 'docs', installationId: 'i', session: 's', host: 'h', pid: 1, renew: 1, durationMs: 1, acquiredAt: '', released: false }, 'doc7');
    const bare: LeaseMarker = { documentId: 'doc2', record: undefined };
    const other = { ...r, documentId: 'doc9' };
    expect(pickMarker([other, bare, r])?.documentId).toBe('doc7');
    expect(pickMarker([r, other, bare])?.documentId).toBe('doc7');
    expect(pickMarker([bare])?.documentId).toBe('doc2');
    expect(pickMarker([])).toBeUndefined();
  });
});

describe('judging a read', () => {
  it('a live holder expires only after its record stayed unchanged for the duration on the observer’s clock', () => {
    const clock = new FakeClock(1_000_000);
    const a = core('sa');
    const b = core('sb');
    let rec = a.nextRecord(clock.now());
    expect(b.judge(marker(rec), clock.monotonic()).kind).toBe('live');
    clock.tick(LEASE.durationMs - 1);
    expect(b.judge(marker(rec), clock.monotonic())).toMatchObject({ kind: 'live', expiresInMs: 1 });
    // Renewed: the observer's count starts again from its sighting of the new record.
    rec = a.nextRecord(clock.now());
    expect(b.judge(marker(rec), clock.monotonic()).kind).toBe('live');
    clock.tick(LEASE.durationMs - 1);
    expect(b.judge(marker(rec), clock.monotonic()).kind).toBe('live');
    clock.tick(1);
    expect(b.judge(marker(rec), clock.monotonic()).kind).toBe('free');
  });

  it('compares no wall clocks: a holder whose wall clock is days off expires as observed, no sooner', () => {
    const clock = new FakeClock(5_000);
    const b = core('sb');
    const far = { ...core('sa').nextRecord(clock.now() + 9e9), acquiredAt: '1999-01-01T00:00:00.000Z' };
    expect(b.judge(marker(far), clock.monotonic()).kind).toBe('live');
    clock.tick(LEASE.durationMs);
    expect(b.judge(marker(far), clock.monotonic()).kind).toBe('free');
  });

  it('a released record, no record and no marker are free at once; our own record is ours', () => {
    const clock = new FakeClock();
    const a = core('sa');
    const b = core('sb');
    expect(b.judge(marker(a.releasedRecord(clock.now())), 0).kind).toBe('free');
    expect(b.judge({ documentId: 'doc1', record: undefined }, 0).kind).toBe('free');
    expect(b.judge(undefined, 0).kind).toBe('free');
    expect(a.judge(marker(a.nextRecord(clock.now())), 0).kind).toBe('ours');
  });

  it('a dead predecessor on this host and boot is free at once; a live process or another host is not', () => {
    const alive = new Set([2]);
    const here = probe(alive);
    const me = core('sb', here, 2);
    const dead = core('sa', here, 1).nextRecord(0);
    expect(isDeadPredecessor(dead, here)).toBe(true);
    expect(me.judge(marker(dead), 0)).toMatchObject({ kind: 'free' });
    alive.add(1);
    expect(me.judge(marker(dead), 0).kind).toBe('live');
    // Same pid, other host (another pod): its processes cannot be seen from here.
    alive.delete(1);
    const elsewhere = core('sc', probe(new Set(), 'node-b'), 1).nextRecord(0);
    expect(me.judge(marker(elsewhere), 0).kind).toBe('live');
    // Same host name, another boot id (two containers named alike on two kernels): not judged by pid either.
    const otherBoot = core('sd', probe(new Set(), 'node-a', 'boot-2'), 1).nextRecord(0);
    expect(me.judge(marker(otherBoot), 0).kind).toBe('live');
  });
});

describe('holding', () => {
  it('a claim holds once the read after it still shows it; a rival’s claim shown instead loses', () => {
    const a = core('sa');
    const b = core('sb');
    const claimA = a.nextRecord(0);
    const claimB = b.nextRecord(0);
    // B wrote last: both reads show B's claim.
    expect(a.confirm(marker(claimB), claimA, 0, 3_000)).toBe(false);
    expect(b.confirm(marker(claimB), claimB, 0, 3_000)).toBe(true);
    expect(a.holds(3_000)).toBe(false);
    expect(b.holds(3_000)).toBe(true);
    expect(a.view(3_000)).toEqual({ held: false, liveSession: 'sb' });
    expect(b.view(3_000)).toEqual({ held: true, liveSession: undefined });
  });

  it('a claim written later than the claim bound after its read is not trusted', () => {
    const a = core('sa');
    expect(a.claimInTime(0, LEASE.claimLatencyMs)).toBe(true);
    expect(a.claimInTime(0, LEASE.claimLatencyMs + 1)).toBe(false);
    expect(LEASE.settleMs).toBeGreaterThan(LEASE.claimLatencyMs);
  });

  it('a holder that cannot renew stops writing before any observer can judge its lease expired', () => {
    const clock = new FakeClock(0);
    const a = core('sa');
    const b = core('sb');
    const claim = a.nextRecord(clock.now());
    expect(a.confirm(marker(claim), claim, clock.monotonic(), clock.monotonic())).toBe(true);
    // B first sees the record the moment its write began (the earliest possible).
    b.judge(marker(claim), clock.monotonic());
    let stoppedAt: number | undefined;
    let freeAt: number | undefined;
    for (let t = 0; t <= 2 * LEASE.durationMs; t += 100) {
      if (stoppedAt === undefined && !a.holds(t)) stoppedAt = t;
      if (freeAt === undefined && b.judge(marker(claim), t).kind === 'free') freeAt = t;
    }
    expect(stoppedAt).toBe(LEASE.atRiskMs);
    expect(freeAt).toBe(LEASE.durationMs);
    expect(freeAt! - stoppedAt!).toBe(LEASE.renewMs);
    expect(a.atRisk(LEASE.atRiskMs)).toBe(true);
  });

  it('each renewal that succeeds keeps the hold from its start', () => {
    const a = core('sa');
    const claim = a.nextRecord(0);
    a.confirm(marker(claim), claim, 0, 10);
    a.renewed(LEASE.renewMs);
    expect(a.holds(LEASE.renewMs + LEASE.atRiskMs - 1)).toBe(true);
    expect(a.holds(LEASE.renewMs + LEASE.atRiskMs)).toBe(false);
    const next = a.nextRecord(0);
    expect(next.renew).toBe(claim.renew + 1);
    expect(next.acquiredAt).toBe(claim.acquiredAt);
  });
});

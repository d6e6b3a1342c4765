/**
 * A mapping's lease at run time (daemon/mapping/lease.ts) over the fake service and a fake
 * clock: two processes of one installation on one data source. One holds, the other is a
 * standby naming it; a graceful stop hands over at the standby's next read, also when it
 * came while a claim was in flight (never over a rival's record); a crash hands
 * over once the record went unchanged for the duration as the standby saw it; a creation
 * race leaves one holder and one marker; a dead predecessor on this host is replaced at
 * once; a holder that cannot renew stops writing before the other takes over. Never do two
 * hold the lease at once. Writes of a mirror are refused while the lease is not held.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { DatastoreApi } from '../../../src/api/api.js';
import { LEASE, leaseDocumentName, leaseMetadata, leaseRecordOf, type HostProbe } from '../../../src/engine/lease.js';
import { isLeaseDocument } from '../../../src/engine/lease-view.js';
import { leaseGated } from '../../../src/daemon/mapping/lease-gate.js';
import { MappingLease, type LeaseBirth, type MarkerMemo } from '../../../src/daemon/mapping/lease.js';
import { provisionalName } from '../../../src/engine/data-source.js';
import { silentLogger } from '../../../src/log.js';
import { apiError, FakeApi } from '../../helpers/fake-api.js';
import { FakeClock } from '../../helpers/fake-clock.js';

const dir = '/nonexistent';

const alive = new Set<number>();
const probe = (host: string): HostProbe => ({ hostname: host, bootId: `boot-${host}`, alive: (pid) => alive.has(pid), procStart: () => undefined });

/** A process's view of the service: `down` makes every request of it fail (a crash, a partition). */
function link(api: FakeApi): { api: DatastoreApi; down: { on: boolean } } {
  const down = { on: false };
  const proxied = new Proxy(api, {
    get(target, key, receiver) {
      const value: unknown = Reflect.get(target, key, receiver);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => (down.on ? Promise.reject(apiError('E_CONNECTION', undefined, { retryable: true })) : (value as (...a: unknown[]) => unknown).apply(target, args));
    },
  });
  return { api: proxied, down };
}

function processOf(api: DatastoreApi, clock: FakeClock, name: string, pid: number, host = 'node-a', memo?: MarkerMemo, birth?: LeaseBirth): MappingLease {
  alive.add(pid);
  return new MappingLease({
    memo,
    birth,
    api,
    dataSourceId: 'ds1',
    mappingId: 'docs',
    holder: { installationId: 'pinned', session: `session-${name}`, host, boot: `boot-${host}`, pid },
    probe: probe(host),
    clock,
    logger: silentLogger,
    bodyFile: join(dir, `${name}.txt`),
    url: 'file:///share/.dssync-lease-docs.txt',
    // In memory: the fake service does not read it, and real I/O would race the fake clock.
    files: { write: () => Promise.resolve(), remove: () => Promise.resolve() },
  });
}

const markers = (api: FakeApi) => api.list().filter((d) => isLeaseDocument(d));

/** Advances in small steps, asserting at each that at most one process holds the lease; returns when `until` holds. */
async function run(clock: FakeClock, leases: MappingLease[], maxMs: number, until: () => boolean = () => false): Promise<number> {
  const start = clock.monotonic();
  while (clock.monotonic() - start < maxMs) {
    await clock.advance(250);
    expect(leases.filter((l) => l.holds()).length).toBeLessThanOrEqual(1);
    if (until()) break;
  }
  return clock.monotonic() - start;
}

/** A holder (a, on node-a, whose link can go down) and a standby (b, on node-b), b started once a holds. */
async function holderAndStandby(pids: [number, number], settleMs: number) {
  const api = new FakeApi();
  const clock = new FakeClock(1_000);
  const la = link(api);
  const a = processOf(la.api, clock, 'a', pids[0]);
  const b = processOf(link(api).api, clock, 'b', pids[1], 'node-b');
  a.start();
  await run(clock, [a], 10_000, () => a.holds());
  b.start();
  await run(clock, [a, b], settleMs);
  expect(a.holds()).toBe(true);
  return { api, clock, la, a, b };
}

/** A process (a, on node-a) whose first claim is written and waits out its settle time: the marker names it, it does not hold yet. */
async function claimInFlight(pid: number) {
  const api = new FakeApi();
  const clock = new FakeClock(1_000);
  const a = processOf(link(api).api, clock, 'a', pid);
  a.start();
  await run(clock, [a], 10_000, () => leaseRecordOf(markers(api)[0] ?? { metadata: {} })?.session === 'session-a');
  expect(a.holds()).toBe(false);
  return { api, clock, a };
}

/** Stops `lease` while the clock moves on (what it has sent ends first). */
async function stopOnClock(clock: FakeClock, lease: MappingLease): Promise<void> {
  let stopped = false;
  const stopping = lease.stop().then(() => void (stopped = true));
  await run(clock, [lease], LEASE.settleMs * 2, () => stopped);
  await stopping;
}

describe('the lease of one mapping, two processes', () => {
  it('one holds, renews at its interval and releases on stop; the other is a standby naming it', async () => {
    const api = new FakeApi();
    const clock = new FakeClock(1_000);
    const a = processOf(link(api).api, clock, 'a', 101);
    a.start();
    await run(clock, [a], 10_000, () => a.holds());
    expect(a.holds()).toBe(true);
    expect(markers(api)).toHaveLength(1);
    const doc = markers(api)[0]!;
    expect(doc.name).toBe('.dssync-lease-docs.txt');
    expect(leaseRecordOf(doc)).toMatchObject({ mappingId: 'docs', session: 'session-a', host: 'node-a', pid: 101, released: false });

    const b = processOf(link(api).api, clock, 'b', 102, 'node-b');
    b.start();
    const updates = api.count('updateDocument');
    const restMs = 10 * 60_000;
    await run(clock, [a, b], restMs);
    expect(b.holds()).toBe(false);
    expect(b.status()).toMatchObject({ state: 'standby', holder: { host: 'node-a', session: 'session-a' } });
    expect(b.view()).toEqual({ held: false, liveSession: 'session-a' });
    // At rest: the holder's one update per renewal, the standby's one read per check.
    expect(api.count('updateDocument') - updates).toBe(restMs / LEASE.renewMs);
    expect(markers(api)).toHaveLength(1);

    await a.stop();
    expect(leaseRecordOf(markers(api)[0]!)?.released).toBe(true);
    const took = await run(clock, [a, b], 60_000, () => b.holds());
    // Released: taken at the standby's next read, no waiting for expiry.
    expect(b.holds()).toBe(true);
    expect(took).toBeLessThanOrEqual(LEASE.checkMs + LEASE.settleMs + 500);
    await b.stop();
  });

  it('a stop while its claim is in flight confirms the claim and releases it: the next process takes over at once, not at expiry', async () => {
    const { api, clock, a } = await claimInFlight(111);
    await stopOnClock(clock, a);
    expect(a.holds()).toBe(false);
    expect(leaseRecordOf(markers(api)[0]!)).toMatchObject({ session: 'session-a', released: true });
    // Another host (no dead predecessor to see): free at its first read.
    const b = processOf(link(api).api, clock, 'b', 112, 'node-b');
    b.start();
    const took = await run(clock, [a, b], LEASE.durationMs, () => b.holds());
    expect(b.holds()).toBe(true);
    expect(took).toBeLessThanOrEqual(LEASE.settleMs + 500);
    await b.stop();
  });

  it('a stop while its claim is in flight, a rival having written over it, releases nothing: the rival keeps its record', async () => {
    const { api, clock, a } = await claimInFlight(121);
    // A rival that read the lease free before a's claim landed: its own claim lands after a's.
    const rival = { mappingId: 'docs', installationId: 'pinned', session: 'session-r', host: 'node-r', pid: 7, renew: 1, durationMs: LEASE.durationMs, acquiredAt: '', released: false };
    markers(api)[0]!.metadata = leaseMetadata(rival);
    const updates = api.count('updateDocument');
    await stopOnClock(clock, a);
    expect(a.holds()).toBe(false);
    expect(api.count('updateDocument')).toBe(updates);
    expect(leaseRecordOf(markers(api)[0]!)).toEqual(rival);
  });

  it('a crashed holder is replaced once its record went unchanged for the duration, as the standby saw it', async () => {
    const { clock, la, a, b } = await holderAndStandby([201, 202], 30_000);
    la.down.on = true; // the holder's machine is gone
    const took = await run(clock, [a, b], 5 * 60_000, () => b.holds());
    expect(b.holds()).toBe(true);
    expect(took).toBeGreaterThanOrEqual(LEASE.durationMs - LEASE.renewMs);
    expect(took).toBeLessThanOrEqual(LEASE.durationMs + LEASE.checkMs + LEASE.settleMs + 500);
    await b.stop();
  });

  it('a holder cut off from the service stops writing before the other takes over, and never writes over its claim', async () => {
    const { clock, la, a, b } = await holderAndStandby([301, 302], 20_000);
    la.down.on = true;
    let aStopped: number | undefined;
    const t0 = clock.monotonic();
    await run(clock, [a, b], 5 * 60_000, () => {
      if (aStopped === undefined && !a.holds()) aStopped = clock.monotonic() - t0;
      return b.holds();
    });
    const bTook = clock.monotonic() - t0;
    expect(aStopped).toBeDefined();
    expect(aStopped!).toBeLessThan(bTook);
    expect(a.status().state).toBe('at-risk');
    // Back online: the old holder finds the new one and becomes its standby.
    la.down.on = false;
    await run(clock, [a, b], 60_000);
    expect(b.holds()).toBe(true);
    expect(a.holds()).toBe(false);
    expect(a.status()).toMatchObject({ state: 'standby', holder: { session: 'session-b' } });
    await a.stop();
    await b.stop();
  });

  it('two processes creating the marker at once: one holds, one marker stays', async () => {
    const api = new FakeApi();
    const clock = new FakeClock(1_000);
    const a = processOf(link(api).api, clock, 'a', 401);
    const b = processOf(link(api).api, clock, 'b', 402, 'node-b');
    a.start();
    b.start();
    await run(clock, [a, b], 60_000);
    expect(api.count('uploadDocuments')).toBe(2);
    expect([a.holds(), b.holds()].filter(Boolean)).toHaveLength(1);
    expect(markers(api)).toHaveLength(1);
    await a.stop();
    await b.stop();
  });

  it("a dead predecessor on this host is replaced at once, without waiting for the lease's duration", async () => {
    const api = new FakeApi();
    const clock = new FakeClock(1_000);
    const la = link(api);
    const old = processOf(la.api, clock, 'old', 501);
    old.start();
    await run(clock, [old], 10_000, () => old.holds());
    la.down.on = true;
    alive.delete(501); // killed: same host, same boot, its pid gone
    const next = processOf(link(api).api, clock, 'new', 502);
    next.start();
    const took = await run(clock, [next], 60_000, () => next.holds());
    expect(next.holds()).toBe(true);
    expect(took).toBeLessThanOrEqual(LEASE.settleMs + 500);
    await next.stop();
  });

  it('the marker deleted in the App is made again', async () => {
    const api = new FakeApi();
    const clock = new FakeClock(1_000);
    const a = processOf(link(api).api, clock, 'a', 601);
    a.start();
    await run(clock, [a], 10_000, () => a.holds());
    api.docs.delete(markers(api)[0]!.id);
    await run(clock, [a], 60_000, () => markers(api).length === 1 && a.holds());
    expect(markers(api)).toHaveLength(1);
    expect(a.holds()).toBe(true);
    await a.stop();
  });
});

describe("the marker's id kept between starts (a restart does not list the data source)", () => {
  const memoOf = (): MarkerMemo & { id: string | undefined } => {
    const m = { id: undefined as string | undefined, load: () => Promise.resolve(m.id), save: (id: string) => void (m.id = id) };
    return m;
  };

  it('a restart reads the remembered marker and lists nothing; the first start listed and remembered it', async () => {
    const api = new FakeApi();
    const clock = new FakeClock(1_000);
    const memo = memoOf();
    const first = processOf(link(api).api, clock, 'first', 701, 'node-a', memo);
    first.start();
    await run(clock, [first], 10_000, () => first.holds());
    expect(memo.id).toBe(markers(api)[0]!.id);
    await first.stop();
    api.calls = [];
    const again = processOf(link(api).api, clock, 'again', 702, 'node-a', memo);
    again.start();
    await run(clock, [again], 10_000, () => again.holds());
    expect(again.holds()).toBe(true);
    expect(api.count('listDocuments')).toBe(0);
    expect(markers(api)).toHaveLength(1);
    await again.stop();
  });

  it("a remembered marker deleted since, or another mapping's document, is not used: the data source is listed", async () => {
    const api = new FakeApi();
    const clock = new FakeClock(1_000);
    const memo = memoOf();
    const first = processOf(link(api).api, clock, 'first', 711, 'node-a', memo);
    first.start();
    await run(clock, [first], 10_000, () => first.holds());
    await first.stop();
    const gone = memo.id!;
    api.docs.delete(gone);
    const person = api.add({ name: 'notes.txt', metadata: {}, size: 1 });
    for (const id of [gone, person.id]) {
      memo.id = id;
      api.calls = [];
      const next = processOf(link(api).api, clock, `next-${id}`, 712, 'node-a', memo);
      next.start();
      await run(clock, [next], 20_000, () => next.holds());
      expect(next.holds()).toBe(true);
      expect(api.count('listDocuments')).toBeGreaterThan(0);
      expect(markers(api)).toHaveLength(1);
      expect(memo.id).toBe(markers(api)[0]!.id);
      expect(api.docs.has(person.id)).toBe(true);
      await next.stop();
    }
  });
});

describe('a data source this process created, under its provisional name', () => {
  /** ds1 as just created under its provisional name, and the lease that names it. */
  function born(fresh: boolean, others: [string, string][] = [], byId?: true) {
    const api = new FakeApi();
    api.addDataSource('ds1', provisionalName('Docs'));
    for (const [id, name] of others) api.addDataSource(id, name);
    const clock = new FakeClock(1_000);
    const gaveWay: string[] = [];
    const a = processOf(link(api).api, clock, 'a', 801, 'node-a', undefined, { name: 'Docs', fresh, byId, gaveWay: (to) => void gaveWay.push(to) });
    return { api, clock, a, gaveWay };
  }

  it('fresh: held from its first claim without the settle wait; named once the service\'s answer time has passed', async () => {
    const { api, clock, a } = born(true);
    const startedAt = clock.monotonic();
    expect(await a.acquire()).toBe(true);
    // Nobody else can know it: the claim holds at once, no second listing, no wait on the clock.
    expect(clock.monotonic()).toBe(startedAt);
    expect(api.count('listDocuments')).toBe(1);
    expect(leaseRecordOf(markers(api)[0]!)).toMatchObject({ session: 'session-a' });
    // Not named before whoever finds it by that name can read the claim.
    await clock.advance(LEASE.answerMs - 1);
    expect(api.dataSources.get('ds1')!.name).toBe(provisionalName('Docs'));
    expect(api.count('updateDataSource')).toBe(0);
    await clock.advance(1);
    expect(api.dataSources.get('ds1')!.name).toBe('Docs');
    expect(await a.named()).toBe(true);
    expect(a.holds()).toBe(true);
    await a.stop();
  });

  it('gives way to a data source another process named so meanwhile: its own is deleted and nothing more is written', async () => {
    const { api, clock, a, gaveWay } = born(true, [['ds9', 'Docs']]);
    expect(await a.acquire()).toBe(true);
    a.start();
    await clock.advance(LEASE.answerMs);
    expect(api.dataSources.has('ds1')).toBe(false);
    expect(api.dataSources.get('ds9')!.name).toBe('Docs');
    expect(api.count('updateDataSource')).toBe(0);
    expect(a.holds()).toBe(false);
    expect(a.gaveWay).toBe('ds9');
    expect(gaveWay).toEqual(['ds9']);
    expect(await a.named()).toBe(false);
    // Its loop claims nothing more in the deleted data source.
    const calls = api.calls.length;
    await clock.advance(LEASE.renewMs * 2);
    expect(api.calls.length).toBe(calls);
    await a.stop();
  });

  it('named by id in the config, with another data source already named so: held, never deleted nor given way, left under its provisional name', async () => {
    const { api, clock, a, gaveWay } = born(false, [['ds9', 'Docs']], true);
    a.start();
    await run(clock, [a], LEASE.durationMs + LEASE.checkMs + LEASE.settleMs + 1_000, () => a.holds());
    expect(a.holds()).toBe(true);
    await clock.advance(LEASE.renewMs * 2);
    expect(a.holds()).toBe(true);
    expect(api.dataSources.get('ds1')!.name).toBe(provisionalName('Docs'));
    expect(api.dataSources.has('ds9')).toBe(true);
    expect(api.count('deleteDataSource') + api.count('updateDataSource')).toBe(0);
    expect(gaveWay).toEqual([]);
    expect(a.gaveWay).toBeUndefined();
    await a.stop();
  });

  it('left unnamed and unclaimed by an earlier run: its creator\'s claim is awaited for the lease\'s duration, then it is claimed with the settle, and named', async () => {
    const { api, clock, a } = born(false);
    a.start();
    await run(clock, [a], LEASE.durationMs - 1_000);
    expect(a.holds()).toBe(false);
    expect(markers(api)).toHaveLength(0);
    expect(a.status().error).toMatch(/being set up/);
    await run(clock, [a], LEASE.checkMs + LEASE.settleMs + 1_000, () => a.holds());
    expect(a.holds()).toBe(true);
    expect(await a.named()).toBe(true);
    expect(api.dataSources.get('ds1')!.name).toBe('Docs');
    await a.stop();
  });

  it('a marker without a record left by an earlier run (its claim never written): claimed after one settle wait, not the lease\'s duration', async () => {
    const { api, clock, a } = born(false);
    api.add({ name: leaseDocumentName('docs'), metadata: {}, size: 1 });
    a.start();
    const waited = await run(clock, [a], LEASE.durationMs, () => a.holds());
    expect(a.holds()).toBe(true);
    // The settle before trusting that no creator's claim is in flight, and the claim's own.
    expect(waited).toBeGreaterThanOrEqual(LEASE.settleMs * 2);
    expect(waited).toBeLessThan(LEASE.durationMs / 2);
    expect(markers(api)).toHaveLength(1);
    expect(await a.named()).toBe(true);
    await a.stop();
  });

  it('a marker without a record whose creator writes its claim within the settle wait: stood by, its claim never overwritten', async () => {
    const { api, clock, a } = born(false);
    const marker = api.add({ name: leaseDocumentName('docs'), metadata: {}, size: 1 });
    alive.add(901);
    const creator = { mappingId: 'docs', installationId: 'pinned', session: 'session-creator', host: 'node-c', boot: 'boot-node-c', pid: 901, renew: 1, durationMs: LEASE.durationMs, acquiredAt: new Date(clock.now()).toISOString(), released: false };
    // The creator's claim lands 250 ms after this process first read the marker, or just before a claim of its own would.
    let claimed = false;
    const creatorClaims = (): void => {
      if (claimed) return;
      claimed = true;
      api.docs.get(marker.id)!.metadata = leaseMetadata(creator);
    };
    api.failBefore = (op) => (op === 'updateDocument' ? void creatorClaims() : undefined);
    a.start();
    await clock.advance(250);
    creatorClaims();
    await run(clock, [a], LEASE.settleMs * 3);
    expect(a.holds()).toBe(false);
    expect(a.status()).toMatchObject({ state: 'standby', holder: { session: 'session-creator' } });
    expect(leaseRecordOf(api.docs.get(marker.id)!)).toMatchObject({ session: 'session-creator', renew: 1 });
    expect(api.dataSources.get('ds1')!.name).toBe(provisionalName('Docs'));
    await a.stop();
  });

  it('reached by a second process (by id, a copied state) before its creator claimed it: that one stands by', async () => {
    const { api, clock, a } = born(true);
    const b = processOf(link(api).api, clock, 'b', 802, 'node-b', undefined, { name: 'Docs', fresh: false, gaveWay: () => undefined });
    b.start();
    await clock.advance(250);
    expect(await a.acquire()).toBe(true);
    a.start();
    await run(clock, [a, b], LEASE.durationMs + 10_000);
    expect(a.holds()).toBe(true);
    expect(b.holds()).toBe(false);
    expect(b.status()).toMatchObject({ state: 'standby', holder: { session: 'session-a' } });
    // It found no claim at first, and made no marker nor claim of its own: it waited for the creator's.
    expect(markers(api)).toHaveLength(1);
    expect(leaseRecordOf(markers(api)[0]!)).toMatchObject({ session: 'session-a' });
    expect(api.dataSources.get('ds1')!.name).toBe('Docs');
    await a.stop();
    await b.stop();
  });

  it('a refused renaming is tried again and said: named() answers false after its attempts', async () => {
    const { api, clock, a } = born(true);
    api.failBefore = (op) => (op === 'updateDataSource' ? apiError('E_FORBIDDEN', 403) : undefined);
    expect(await a.acquire()).toBe(true);
    const naming = a.named(2);
    await clock.advance(LEASE.answerMs + LEASE.checkMs + LEASE.answerMs);
    expect(await naming).toBe(false);
    expect(a.unnamed).toMatch(/E_FORBIDDEN/);
    expect(a.holds()).toBe(true);
    await a.stop();
  });
});

describe('the write gate', () => {
  it("refuses a mirror's writes while the lease is not held, and lets reads through", async () => {
    const api = new FakeApi();
    let held = false;
    const gated = leaseGated(api, () => held, 'docs');
    await expect(gated.deleteDocument('ds1', 'x')).rejects.toMatchObject({ code: 'E_LEASE_NOT_HELD' });
    await expect(gated.uploadDocuments('ds1', [])).rejects.toMatchObject({ code: 'E_LEASE_NOT_HELD' });
    await expect(gated.listDocuments('ds1')).resolves.toEqual([]);
    expect(api.count('deleteDocument')).toBe(0);
    held = true;
    await expect(gated.uploadDocuments('ds1', [])).resolves.toEqual([]);
  });
});

/**
 * The lease's settle wait off the critical path (issue 39.2), through a mapping's runner on a
 * fake clock: the real lease (mapping/lease.ts) over the fake service, the real mirror wired
 * to it as buildMirror does (leaseDeps), a folder in memory. The start's full pass walks and
 * lists while the claim settles, and writes nothing before the claim is confirmed; a claim
 * lost to a rival drops the pass's reads, writes nothing and leaves a standby; a new marker
 * carries the first claim, and two processes making the first marker at once end with one
 * holder.
 */
import { describe, expect, it } from 'vitest';
import type { DatastoreApi, ListDocumentsOptions } from '../../../src/api/api.js';
import { PageChain } from '../../../src/api/list-pages.js';
import type { EarlyListing } from '../../../src/daemon/early-listing.js';
import type { Config, MappingConfig } from '../../../src/config/types.js';
import { LEASE, leaseDocumentName, leaseMetadata, leaseRecordOf, type HostProbe, type LeaseRecord } from '../../../src/engine/lease.js';
import { isLeaseDocument } from '../../../src/engine/lease-view.js';
import { Mirror, type MirrorState } from '../../../src/engine/mirror.js';
import type { PassReport } from '../../../src/engine/pass-report.js';
import type { Watcher } from '../../../src/local/watch/watcher.js';
import { silentLogger } from '../../../src/log.js';
import type { MappingState, PassRecord } from '../../../src/state/schema.js';
import type { StateStore } from '../../../src/state/store.js';
import { leaseDeps } from '../../../src/daemon/mapping/build-mirror.js';
import { MappingRunner } from '../../../src/daemon/mapping/runner.js';
import { FakeDisk } from '../../sim/fake-disk.js';
import { FakeApi } from '../../helpers/fake-api.js';
import { FakeClock } from '../../helpers/fake-clock.js';
import { HashedLocal } from '../../helpers/hashed-local.js';
import { MemoryState } from '../../helpers/memory-state.js';

class State extends MemoryState implements MirrorState {
  ensureMapping(): MappingState {
    return this.m;
  }
  setLastPass(_id: string, _p: PassRecord): void {}
  async flush(): Promise<void> {}
}

const probe = (host: string): HostProbe => ({ hostname: host, bootId: `boot-${host}`, alive: () => true, procStart: () => undefined });
const isMarker = (d: { name?: string | null; metadata?: unknown }): boolean => isLeaseDocument(d as never);

interface Seen {
  op: string;
  at: number;
}

/** The service both processes reach, and what each process's mirror did on it (its lease's requests apart). */
function world() {
  const clock = new FakeClock(Date.parse('2026-11-29T00:00:00Z'));
  const api = new FakeApi();
  const local = new HashedLocal();
  local.write('a.txt', 'alpha', clock.now() - 60_000);
  local.write('b.txt', 'beta', clock.now() - 60_000);
  return { clock, api, local };
}

/** A daemon's runner of mapping m1 (data source ds1), its lease on `host`; `seen` logs its mirror's walks, listings and writes. */
function daemon(w: ReturnType<typeof world>, host: string, pid: number, watchSetUpMs = 0, leaseReadMs = 0, startListing?: Promise<EarlyListing | undefined>) {
  const { clock, api, local } = w;
  const seen: Seen[] = [];
  const reports: PassReport[] = [];
  const log = (op: string): void => void seen.push({ op, at: clock.monotonic() });
  const mirrorApi = new Proxy(api, {
    get(target, key, receiver) {
      const value: unknown = Reflect.get(target, key, receiver);
      if (typeof value !== 'function' || typeof key !== 'string') return value;
      return (...args: unknown[]) => {
        log(key);
        if (key === 'listDocuments' && (args[1] as ListDocumentsOptions | undefined)?.pages !== undefined) log('listDocuments with the early pages');
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  }) as DatastoreApi;
  // The lease's requests (the runner's client): its reads of the marker take leaseReadMs.
  const leaseApi = new Proxy(api, {
    get(target, key, receiver) {
      const value: unknown = Reflect.get(target, key, receiver);
      if (typeof value !== 'function') return value;
      const fn = value as (...a: unknown[]) => Promise<unknown>;
      if (key !== 'getDocument' && key !== 'listDocuments') return fn.bind(target);
      return async (...args: unknown[]) => {
        await clock.sleep(leaseReadMs);
        const out = await fn.apply(target, args);
        log('lease read');
        return out;
      };
    },
  }) as DatastoreApi;
  const walked = new HashedLocal();
  walked.files = local.files;
  walked.scan = () => {
    log('walk');
    return local.scan();
  };
  const config = { debounceMs: 300, rescanIntervalSeconds: 3600, ingestionCheck: { enabled: false, delaySeconds: 0 }, statePath: '/state/state.json' } as unknown as Config;
  const mapping = { id: 'm1', path: '/srv/share', dataSourceId: 'ds1', include: ['**'], exclude: [], ignoreFile: '', watch: { mode: 'events', pollIntervalSeconds: 10, pollBudgetPercent: 5 } } as unknown as MappingConfig;
  const store = { mapping: () => undefined, fileCount: () => 0 } as unknown as StateStore;
  const spec = { mappingId: 'm1', installationId: 'inst-A', root: '/srv/share', dataSourceId: 'ds1', prune: 'ours', maxDeletePercent: 100, massDeleteMinimum: 100, batchFiles: 10, batchBytes: 1e9, concurrency: 2 } as const;
  const files = new Map<string, string>();
  let holds = (): boolean => false;
  const runner = new MappingRunner({
    config,
    mapping,
    index: 0,
    api: leaseApi,
    state: store,
    logger: silentLogger,
    clock,
    random: () => 0.5,
    events: { onPass: (_id, _kind, r) => void reports.push(r) },
    startListing,
    watch: async (opts) => {
      await clock.sleep(watchSetUpMs);
      log('watching');
      return { root: opts.root, close: async () => undefined, watchedDirs: () => 1 } as Watcher;
    },
    lease: { statePath: config.statePath, stateFs: new FakeDisk().fs(), probe: probe(host), timing: LEASE, pid, files: { write: async (p, t) => void files.set(p, t), remove: async (p) => void files.delete(p) } },
    buildMirror: async (_c, _m, _i, deps) => {
      const lease = deps.lease!('ds1', 'inst-A');
      holds = () => lease.holds();
      return new Mirror({ spec, ...leaseDeps(lease, mirrorApi, 'm1'), state: new State(), local: walked, logger: silentLogger, now: () => clock.now(), monotonic: () => clock.monotonic() });
    },
  });
  /** When this process first held the lease (monotonic), as the steps of `run` saw it. */
  let heldAt: number | undefined;
  const step = async (ms: number): Promise<void> => {
    await clock.advance(ms);
    if (heldAt === undefined && holds()) heldAt = clock.monotonic();
  };
  const writes = (): Seen[] => seen.filter((s) => ['uploadDocuments', 'updateDocument', 'deleteDocument'].includes(s.op));
  return { runner, seen, reports, writes, step, heldAt: () => heldAt, holds: () => holds() };
}

/** The marker's record, if any. */
function record(api: FakeApi): LeaseRecord | undefined {
  const marker = api.list().find(isMarker);
  return marker && leaseRecordOf(marker);
}

describe("the lease's settle wait, off the start's critical path", () => {
  it('the first full pass walks and lists while the claim settles, and writes only once the claim is confirmed', async () => {
    const w = world();
    const a = daemon(w, 'node-a', 101);
    a.runner.start();
    const startedAt = w.clock.monotonic();
    for (let i = 0; i < 100 && a.reports.length === 0; i++) await a.step(100);

    expect(a.reports[0]).toMatchObject({ ok: true, counts: { uploaded: 2 } });
    const heldAt = a.heldAt()!;
    // Taken after one settle (the marker made with the claim in it: one wait, not two).
    expect(heldAt - startedAt).toBeGreaterThanOrEqual(LEASE.settleMs);
    expect(heldAt - startedAt).toBeLessThan(2 * LEASE.settleMs);
    // The walk and the listing began before the claim settled.
    const walk = a.seen.find((s) => s.op === 'walk')!;
    const listing = a.seen.find((s) => s.op === 'listDocuments')!;
    expect(walk.at).toBeLessThan(heldAt);
    expect(listing.at).toBeLessThan(heldAt);
    // Nothing written before the confirmation.
    expect(a.writes().length).toBeGreaterThan(0);
    for (const s of a.writes()) expect(s.at).toBeGreaterThanOrEqual(heldAt);
    // One pass: the confirmation does not start a second one.
    await a.step(10_000);
    expect(a.reports).toHaveLength(1);
    await a.runner.stop(1_000);
  });

  it("the start's listing begins once the claim has read the marker, while the watcher is set up; the walk once it is ready; the files are sent once", async () => {
    const w = world();
    const a = daemon(w, 'node-a', 101, 2_000);
    a.runner.start();
    for (let i = 0; i < 100 && a.reports.length === 0; i++) await a.step(100);
    expect(a.reports[0]).toMatchObject({ ok: true, counts: { uploaded: 2 } });
    const at = (op: string): number => a.seen.find((s) => s.op === op)!.at;
    const marker = w.api.list().find(isMarker)!;
    // The marker the claim made (its listing found none) was read before the mirror's listing began.
    expect(marker).toBeDefined();
    expect(at('listDocuments')).toBeLessThan(at('watching'));
    expect(at('walk')).toBeGreaterThanOrEqual(at('watching'));
    expect(a.seen.filter((s) => s.op === 'listDocuments')).toHaveLength(1);
    for (const s of a.writes()) expect(s.at).toBeGreaterThanOrEqual(a.heldAt()!);
    await a.runner.stop(1_000);
  });

  it("the pass's listing never begins before the claim has read the marker: a former holder's last writes are in it", async () => {
    const w = world();
    // A holder that released the lease after its last pass: its marker says so.
    const other: LeaseRecord = { installationId: 'inst-A', session: 'session-b', host: 'node-b', boot: 'boot-node-b', pid: 7, mappingId: 'm1', renew: 3, durationMs: LEASE.durationMs, acquiredAt: new Date(w.clock.now()).toISOString(), released: true };
    w.api.add({ name: leaseDocumentName('m1'), metadata: leaseMetadata(other) });
    const a = daemon(w, 'node-a', 101, 0, 1_000);
    a.runner.start();
    for (let i = 0; i < 100 && a.reports.length === 0; i++) await a.step(100);
    expect(a.reports[0]).toMatchObject({ ok: true, counts: { uploaded: 2 } });
    const reads = a.seen.filter((s) => s.op === 'lease read');
    const listing = a.seen.find((s) => s.op === 'listDocuments')!;
    // The marker found (a listing of the lease's), then read: the mirror lists after that read.
    expect(reads.length).toBeGreaterThanOrEqual(2);
    expect(listing.at).toBeGreaterThanOrEqual(reads[1]!.at);
    await a.runner.stop(1_000);
  });

  it('a start beside a live holder lists nothing (neither ahead nor in a pass) and writes nothing: a standby', async () => {
    const w = world();
    const holder: LeaseRecord = { installationId: 'inst-A', session: 'session-b', host: 'node-b', boot: 'boot-node-b', pid: 7, mappingId: 'm1', renew: 1, durationMs: LEASE.durationMs, acquiredAt: new Date(w.clock.now()).toISOString(), released: false };
    const marker = w.api.add({ name: leaseDocumentName('m1'), metadata: leaseMetadata(holder) });
    const a = daemon(w, 'node-a', 101, 0, 500);
    a.runner.start();
    for (let t = 0; t < 40_000; t += 1_000) {
      await a.step(1_000);
      if (t % LEASE.renewMs === 0) marker.metadata = leaseMetadata({ ...holder, renew: ++holder.renew });
    }
    expect(a.seen.filter((s) => s.op === 'listDocuments')).toEqual([]);
    expect(a.writes()).toEqual([]);
    expect(a.runner.status().phase).toBe('standby');
    await a.runner.stop(1_000);
  });

  it('a claim lost to a rival during its settle drops the pass: nothing is written, and the process is a standby', async () => {
    const w = world();
    const a = daemon(w, 'node-a', 101);
    a.runner.start();
    // Our claim is written; a rival's record lands over it before the confirming read.
    for (let i = 0; i < 100 && record(w.api)?.host !== 'node-a'; i++) await a.step(10);
    expect(a.holds()).toBe(false);
    const rival: LeaseRecord = { installationId: 'inst-A', session: 'session-rival', host: 'node-b', boot: 'boot-node-b', pid: 7, mappingId: 'm1', renew: 1, durationMs: LEASE.durationMs, acquiredAt: new Date(w.clock.now()).toISOString(), released: false };
    const marker = w.api.list().find(isMarker)!;
    const update = (r: LeaseRecord) => w.api.updateDocument('ds1', marker.id, { name: marker.name, url: marker.url ?? '', metadata: leaseMetadata(r) });
    await update(rival);
    // The rival renews as a live holder does.
    for (let t = 0; t < 40_000; t += 1_000) {
      await a.step(1_000);
      if (t % LEASE.renewMs === 0) await update({ ...rival, renew: ++rival.renew });
    }

    expect(a.seen.some((s) => s.op === 'walk')).toBe(true);
    expect(a.seen.some((s) => s.op === 'listDocuments')).toBe(true);
    expect(a.writes()).toEqual([]);
    expect(a.reports).toEqual([]);
    expect(w.api.list().filter((d) => !isMarker(d))).toEqual([]);
    const status = a.runner.status();
    expect(status.lease).toMatchObject({ state: 'standby', holder: { host: 'node-b', session: 'session-rival' } });
    expect(status.phase).toBe('standby');
    expect(status.degraded ?? []).toEqual([]);
    await a.runner.stop(1_000);
  });

  it('a pause while the first pass waits for the claim drops that pass: status says paused at once, nothing is written, the lease is released; resume mirrors', async () => {
    const w = world();
    const a = daemon(w, 'node-a', 101);
    a.runner.start();
    // The walk and the listing done, the claim still settling.
    for (let i = 0; i < 100 && !a.seen.some((s) => s.op === 'listDocuments'); i++) await a.step(10);
    expect(a.holds()).toBe(false);
    expect(a.runner.pause()).toBe(true);
    expect(a.runner.status().phase).toBe('paused');
    await a.step(10_000);
    expect(a.writes()).toEqual([]);
    expect(a.reports).toEqual([]);
    const status = a.runner.status();
    expect(status.phase).toBe('paused');
    expect(status.degraded ?? []).toEqual([]);
    expect(record(w.api)).toMatchObject({ host: 'node-a', released: true });
    expect(a.runner.resume()).toBe(true);
    for (let i = 0; i < 200 && a.reports.length === 0; i++) await a.step(100);
    expect(a.reports[0]).toMatchObject({ ok: true, counts: { uploaded: 2 } });
    await a.runner.stop(1_000);
  });

  it('two processes making the first marker at once end with one holder, one marker, and each file sent once', async () => {
    const w = world();
    const a = daemon(w, 'node-a', 101);
    const b = daemon(w, 'node-b', 102);
    a.runner.start();
    b.runner.start();
    for (let i = 0; i < 600; i++) {
      await a.step(100);
      expect([a.holds(), b.holds()].filter(Boolean).length).toBeLessThanOrEqual(1);
    }
    expect([a.holds(), b.holds()].filter(Boolean)).toHaveLength(1);
    expect(w.api.list().filter(isMarker)).toHaveLength(1);
    const docs = w.api.list().filter((d) => !isMarker(d));
    expect(docs.map((d) => d.name).sort()).toEqual(['a.txt', 'b.txt']);
    const standby = a.holds() ? b : a;
    expect(standby.writes()).toEqual([]);
    await a.runner.stop(1_000);
    await b.runner.stop(1_000);
  });
});

describe('the listing begun while the state loaded (early-listing.ts)', () => {
  /** A marker released by the last process of this installation, as a graceful stop leaves it. */
  function released(w: ReturnType<typeof world>): { record: LeaseRecord; documentId: string } {
    const record: LeaseRecord = { installationId: 'inst-A', session: 'session-old', host: 'node-a', boot: 'boot-node-a', pid: 7, mappingId: 'm1', renew: 9, durationMs: LEASE.durationMs, acquiredAt: new Date(w.clock.now()).toISOString(), released: true };
    const doc = w.api.add({ name: leaseDocumentName('m1'), metadata: leaseMetadata(record) });
    return { record, documentId: doc.id };
  }
  /** Pages that never come: whether the start's listing took them, or dropped them (their request aborted), is what is asked. */
  function early(marker: { record: LeaseRecord; documentId: string }, dataSourceId = 'ds1') {
    let aborted = false;
    const pages = new PageChain(
      (_url, signal) =>
        new Promise((_resolve, reject) => {
          signal?.addEventListener('abort', () => {
            aborted = true;
            reject(new Error('aborted'));
          });
        }),
      new URL('https://svc.test/documents'),
      { maxPages: 10, maxBytes: 1 << 20 },
    );
    const listing: EarlyListing = { dataSourceId, documentId: marker.documentId, record: marker.record, pages, listedAt: 0, listedAtMono: 0 };
    return { listing, dropped: () => aborted };
  }
  async function firstPass(a: ReturnType<typeof daemon>): Promise<void> {
    a.runner.start();
    for (let i = 0; i < 100 && a.reports.length === 0; i++) await a.step(100);
    expect(a.reports[0]).toMatchObject({ ok: true, counts: { uploaded: 2 } });
  }

  it("is the start's listing when the claim's read shows the record it read; the lease reads that marker without a listing of its own", async () => {
    const w = world();
    const e = early(released(w));
    const a = daemon(w, 'node-a', 101, 0, 0, Promise.resolve(e.listing));
    await firstPass(a);
    expect(a.seen.filter((s) => s.op === 'listDocuments with the early pages')).toHaveLength(1);
    // The mirror's one listing; the lease found its marker by the early read's id, not by a listing.
    expect(w.api.count('listDocuments')).toBe(1);
    expect(e.dropped()).toBe(false);
    await a.runner.stop(1_000);
  });

  it('is dropped when the marker changed between its read and the claim\'s (another process claimed, wrote and released): the pass lists anew', async () => {
    const w = world();
    const first = released(w);
    const e = early(first);
    // Between the two reads another process took the lease and released it: a new record.
    const after: LeaseRecord = { ...first.record, session: 'session-between', renew: 2 };
    w.api.docs.get(first.documentId)!.metadata = leaseMetadata(after);
    const a = daemon(w, 'node-a', 101, 0, 0, Promise.resolve(e.listing));
    await firstPass(a);
    expect(e.dropped()).toBe(true);
    expect(a.seen.some((s) => s.op === 'listDocuments with the early pages')).toBe(false);
    expect(a.seen.some((s) => s.op === 'listDocuments')).toBe(true);
    await a.runner.stop(1_000);
  });

  it('is dropped beside a live holder (nothing listed, nothing written), and when it lists another data source', async () => {
    const w = world();
    const first = released(w);
    const e = early(first);
    const holder: LeaseRecord = { ...first.record, session: 'session-live', host: 'node-b', boot: 'boot-node-b', renew: 1, released: false };
    w.api.docs.get(first.documentId)!.metadata = leaseMetadata(holder);
    const a = daemon(w, 'node-a', 101, 0, 0, Promise.resolve(e.listing));
    a.runner.start();
    for (let i = 0; i < 50; i++) await a.step(100);
    expect(e.dropped()).toBe(true);
    expect(a.seen.some((s) => s.op === 'listDocuments')).toBe(false);
    expect(a.writes()).toEqual([]);
    await a.runner.stop(1_000);

    const w2 = world();
    const other = early(released(w2), 'ds-other');
    const b = daemon(w2, 'node-a', 102, 0, 0, Promise.resolve(other.listing));
    await firstPass(b);
    expect(other.dropped()).toBe(true);
    expect(b.seen.some((s) => s.op === 'listDocuments with the early pages')).toBe(false);
    await b.runner.stop(1_000);
  });
});

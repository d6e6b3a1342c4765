/**
 * The emulator as the benchmarks use it: in this process, on loopback, with the latency
 * and rate limit of a scenario; plus what the benchmarks observe on the service's side
 * (request windows, document updates as they are applied, convergence).
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { startEmulator, type FaultOptions, type RunningEmulator } from '@dssync/emulator';
import { isLeaseDocument } from '../../src/engine/lease-view.js';
import { ORG, TOKEN } from './dssync.js';
import { mapLimit } from './util.js';

export async function startService(faults: FaultOptions = {}): Promise<RunningEmulator> {
  return startEmulator({ token: TOKEN, orgs: [ORG], faults });
}

export function dataSourceId(emu: RunningEmulator, name = 'Bench'): string {
  const ds = emu.store.listDataSources(ORG).find((d) => d.name === name);
  if (!ds) throw new Error(`benchmark: the data source ${name} does not exist`);
  return ds.data_source_id;
}

/** Requests that change something (POST/PUT/DELETE) since the last resetStats(). */
export function writeRequests(emu: RunningEmulator): number {
  let n = 0;
  for (const [route, count] of Object.entries(emu.stats().byRoute)) if (/^(POST|PUT|DELETE) /.test(route)) n += count;
  return n;
}

/**
 * Counts the writes the service applies to lease marker documents (docs/reliability.md, "The
 * lease"): the upload that makes one, its claims, renewals and release, a deletion. They are
 * among writeRequests(); the benchmarks report them apart from the mirror's own writes.
 * The emulator's store is patched in place (as onDocumentUpdate does); `stop` undoes it.
 */
export function countLeaseWrites(emu: RunningEmulator): { count(): number; made(): number; times(): number[]; stop(): void } {
  type Doc = { name?: string | null; metadata?: Record<string, unknown> | null };
  const store = emu.store as unknown as {
    addDocuments: (ds: unknown, files: { name: string }[]) => unknown;
    updateDocument: (doc: Doc, patch: Doc) => void;
    deleteDocument: (ds: unknown, doc: Doc) => void;
  };
  const lease = (d: Doc): boolean => isLeaseDocument({ name: d.name ?? '', metadata: d.metadata ?? undefined });
  const original = { addDocuments: store.addDocuments, updateDocument: store.updateDocument, deleteDocument: store.deleteDocument };
  let n = 0;
  let made = 0;
  const at: number[] = [];
  const seen = (): void => {
    n++;
    at.push(performance.now());
  };
  store.addDocuments = function (this: unknown, ds, files) {
    if (files.some((f) => lease(f))) {
      seen();
      made++;
    }
    return original.addDocuments.call(this, ds, files);
  };
  store.updateDocument = function (this: unknown, doc, patch) {
    if (lease(doc) || lease(patch)) seen();
    original.updateDocument.call(this, doc, patch);
  };
  store.deleteDocument = function (this: unknown, ds, doc) {
    if (lease(doc)) seen();
    original.deleteDocument.call(this, ds, doc);
  };
  return {
    count: () => n,
    /** The uploads that made a marker. */
    made: () => made,
    /** When each was applied (performance.now(), ms). */
    times: () => at,
    stop: () => Object.assign(store, original),
  };
}

/**
 * Counts the listings of a data source's documents the service begins (first pages: a
 * listing's later pages carry a cursor). The emulator's store is patched in place; `stop`
 * undoes it.
 */
export function countListings(emu: RunningEmulator): { begun(): number; stop(): void } {
  const store = emu.store as unknown as { pageDocuments: (ds: unknown, afterSeq: number, limit: number) => unknown };
  const original = store.pageDocuments;
  let n = 0;
  store.pageDocuments = function (this: unknown, ds, afterSeq, limit) {
    if (afterSeq === 0) n++;
    return original.call(this, ds, afterSeq, limit);
  };
  return {
    begun: () => n,
    stop: () => {
      store.pageDocuments = original;
    },
  };
}

/** Requests of one kind of route (e.g. the ingestion check's chunk listings). */
export function routeRequests(emu: RunningEmulator, pattern: RegExp): number {
  let n = 0;
  for (const [route, count] of Object.entries(emu.stats().byRoute)) if (pattern.test(route)) n += count;
  return n;
}

/**
 * Calls `onUpdate` the moment the service applies a document update (the service's answer
 * follows at once), with the metadata's dssync_path and dssync_sha256. Returns the undo.
 * The emulator's store is patched in place: the benchmark needs the exact time, which
 * polling a 10,000-document store could not give without disturbing what it measures.
 */
export function onDocumentUpdate(emu: RunningEmulator, onUpdate: (path: string, sha256: string) => void): () => void {
  const store = emu.store as unknown as { updateDocument: (doc: unknown, patch: { metadata?: Record<string, unknown> }) => void };
  const original = store.updateDocument;
  store.updateDocument = function (this: unknown, doc, patch) {
    original.call(this, doc, patch);
    const p = patch.metadata?.dssync_path;
    const s = patch.metadata?.dssync_sha256;
    if (typeof p === 'string' && typeof s === 'string') onUpdate(p, s);
  };
  return () => {
    store.updateDocument = original;
  };
}

/**
 * Samples the emulator's request counters every `everyMs` to find the window in which
 * requests flowed: from the first sample where `started(stats)` holds to the last sample
 * in which the request count changed.
 */
export class RequestWindow {
  private timer: NodeJS.Timeout;
  private firstAt: number | undefined;
  private lastAt: number | undefined;
  private lastCount = 0;

  constructor(
    private readonly emu: RunningEmulator,
    private readonly started: (s: ReturnType<RunningEmulator['stats']>) => boolean,
    everyMs = 25,
  ) {
    this.timer = setInterval(() => this.sample(), everyMs);
  }

  private sample(): void {
    const s = this.emu.stats();
    const now = performance.now();
    if (this.firstAt === undefined && this.started(s)) this.firstAt = now;
    if (s.requests !== this.lastCount) {
      this.lastCount = s.requests;
      this.lastAt = now;
    }
  }

  /** Stops sampling; the window's length in seconds (0 when nothing started). */
  stop(): number {
    clearInterval(this.timer);
    this.sample();
    if (this.firstAt === undefined || this.lastAt === undefined) return 0;
    return Math.max(0, this.lastAt - this.firstAt) / 1000;
  }
}

export interface ConvergenceReport {
  ok: boolean;
  documents: number;
  files: number;
  problems: string[];
}

/**
 * The data source holds exactly the folder's files: one document per file, carrying the
 * file's current SHA-256 in its metadata, and nothing else but the mapping's lease marker
 * (docs/reliability.md, "The lease"), which is no file's document.
 */
export async function checkMirror(emu: RunningEmulator, share: string, rels: readonly string[], dsName = 'Bench'): Promise<ConvergenceReport> {
  const docs = emu.store.listDocuments(dataSourceId(emu, dsName));
  const byPath = new Map<string, string[]>();
  const problems: string[] = [];
  for (const d of docs) {
    if (isLeaseDocument(d)) continue;
    const p = d.metadata?.dssync_path;
    const s = d.metadata?.dssync_sha256;
    if (typeof p !== 'string' || typeof s !== 'string') {
      problems.push(`document ${d.document_id} (${d.name}) has no dssync metadata`);
      continue;
    }
    byPath.set(p, [...(byPath.get(p) ?? []), s]);
  }
  const expected = new Map<string, string>();
  await mapLimit(rels, 32, async (rel) => {
    expected.set(rel, createHash('sha256').update(await readFile(join(share, rel))).digest('hex'));
  });
  for (const [rel, sha] of expected) {
    const got = byPath.get(rel);
    if (!got) problems.push(`missing: ${rel}`);
    else if (got.length > 1) problems.push(`duplicate: ${rel}`);
    else if (got[0] !== sha) problems.push(`stale: ${rel}`);
  }
  for (const p of byPath.keys()) if (!expected.has(p)) problems.push(`orphan: ${p}`);
  return { ok: problems.length === 0, documents: docs.filter((d) => !isLeaseDocument(d)).length, files: rels.length, problems: problems.slice(0, 20) };
}

/**
 * scaleMemory (issue 16): what the restart path holds per file, structure by structure, in
 * this process (no setup mirror: the data source and the state are made to match a tree
 * written on disk, as a finished first mirror leaves them). For one size: the walk's
 * result, the service's listing, the loaded state, then a whole full pass of the mirror
 * (walk and listing side by side, plan, no operation) with the heap sampled for its peak.
 * Bytes per file are heap bytes (after a full collection) above what was there before;
 * the emulator's own heap is part of the baseline and does not count.
 */
import { mkdir, rm, writeFile, lstat } from 'node:fs/promises';
import { join } from 'node:path';
import { DatastoreClient } from '../../src/api/client.js';
import { Pacer } from '../../src/api/pacer.js';
import { fixedToken } from '../../src/api/token-provider.js';
import { DEFAULT_INCLUDE, DEFAULTS } from '../../src/config/schema.js';
import { Mirror } from '../../src/engine/mirror.js';
import { RACY_MARGIN_MS } from '../../src/engine/racy.js';
import { loadFilter } from '../../src/local/filters.js';
import { createLocalSide } from '../../src/local/side.js';
import { walkTree } from '../../src/local/walk.js';
import type { Logger } from '../../src/log.js';
import { StateCodec } from '../../src/state/encoder.js';
import { StateStore } from '../../src/state/store.js';
import { newMappingState, newState } from '../../src/state/validate.js';
import { startEmulator } from '@dssync/emulator';
import type { StoreSnapshot } from '@dssync/emulator';
import type { BenchContext } from '../lib/context.js';
import { syncedFile } from '../lib/seed.js';
import { log, mapLimit, round } from '../lib/util.js';
import { DEFAULT_ORGANIZATION_HEADER } from '../../src/config/connection.js';

export interface MemoryPoint {
  files: number;
  folders: number;
  /** Heap bytes per file held by each structure (after a collection). */
  walkBytesPerFile: number;
  listingBytesPerFile: number;
  stateBytesPerFile: number;
  /**
   * A full pass (walk and listing side by side, plan, nothing to do): the most heap it held
   * above the loaded state, per file (sampled after a forced full collection every second).
   */
  passPeakBytesPerFile: number;
  passSeconds: number;
}

const ORG = 'mem-org';
const TOKEN = 'mem-token';
const MAPPING = 'm';
const INSTALLATION = 'inst-0000';

const silent: Logger = {
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
  child: () => silent,
} as unknown as Logger;

/** The heap in use and ArrayBuffers' memory (outside the heap: the state's files table keeps its columns there). */
function heap(): number {
  global.gc?.();
  global.gc?.();
  const u = process.memoryUsage();
  return u.heapUsed + u.arrayBuffers;
}

/** `p<k>/f<j>/doc-<i>.txt`, ~sqrt(folders) parents, as the bench trees. */
function layout(files: number, folders: number): string[] {
  const parents = Math.max(1, Math.round(Math.sqrt(folders)));
  const leaves = Math.max(1, folders - parents);
  const out: string[] = [];
  for (let i = 0; i < files; i++) {
    const leaf = i % leaves;
    out.push(`p${String(leaf % parents).padStart(3, '0')}/f${String(leaf).padStart(5, '0')}/doc-${String(i).padStart(7, '0')}.txt`);
  }
  return out;
}

export async function runScaleMemory(ctx: BenchContext, files: number): Promise<MemoryPoint> {
  if (!global.gc) throw new Error('scaleMemory needs node --expose-gc (npm run bench passes it)');
  const folders = Math.max(1, Math.round(files / 20));
  const dir = join(ctx.tmp, `memory-${files}`);
  const share = join(dir, 'share');
  const rels = layout(files, folders);
  let t0 = performance.now();
  await mapLimit([...new Set(rels.map((r) => r.slice(0, r.lastIndexOf('/'))))], 32, (d) => mkdir(join(share, d), { recursive: true }).then(() => undefined));
  await mapLimit(rels, 64, (r) => writeFile(join(share, r), r));
  log(`scaleMemory: tree of ${files} files written in ${((performance.now() - t0) / 1000).toFixed(1)} s`);

  // The state and the data source a finished mirror leaves (hashed long after the writes).
  const spec = { mappingId: MAPPING, installationId: INSTALLATION, root: share };
  // Hashed safely after the last write (racy.ts): the restart then reads no content.
  await new Promise((r) => setTimeout(r, RACY_MARGIN_MS + 100));
  const hashedAt = Date.now();
  const state = newState();
  const m = newMappingState('ds-placeholder', share);
  const snap: StoreSnapshot = { format: 'dssync-emulator-store', version: 1, seq: 0, dataSources: [], documents: [], apps: [] };
  const now = new Date().toISOString();
  let seq = 1;
  await mapLimit(rels, 64, async (rel, i) => {
    const st = await lstat(join(share, rel));
    const sha256 = i.toString(16).padStart(64, '0');
    const id = `doc-${String(i).padStart(12, '0')}`;
    const synced = syncedFile(spec, { path: rel, sha256, documentId: id, dataSourceId: 'ds-mem', now, seq: ++seq, hashedAt }, st);
    m.files.set(rel, synced.entry);
    snap.documents.push(synced.document);
  });
  snap.dataSources.push({ data_source_id: 'ds-mem', name: 'Mem', llm_connector_ids: ['c'], created_at: now, updated_at: now, org_id: ORG, seq: 1 });
  m.dataSourceId = 'ds-mem';
  state.mappings[MAPPING] = m;
  const statePath = join(dir, 'state.json');
  await writeFile(statePath, Buffer.concat(new StateCodec().encode(state)), { mode: 0o600 });
  delete state.mappings[MAPPING];

  const emu = await startEmulator({ token: TOKEN, orgs: [ORG] });
  (emu.store as unknown as { restore(s: StoreSnapshot): void }).restore(snap);
  snap.documents.length = 0;
  const api = new DatastoreClient({
    baseUrl: emu.url,
    organizationId: ORG,
    organizationHeader: DEFAULT_ORGANIZATION_HEADER,
    tokens: fixedToken(TOKEN),
    requestsPerSecond: 0,
    concurrency: 8,
    maxAttempts: 3,
    timeouts: DEFAULTS.queue.timeouts,
    pacer: new Pacer({ requestsPerSecond: 0, concurrency: 8, maxAttempts: 3, backoffBaseMs: 10, backoffMaxMs: 100 }),
  });
  try {
    const filter = await loadFilter({ path: share, include: [...DEFAULT_INCLUDE], exclude: [] });
    let h0 = heap();
    const walk = await walkTree(share, filter);
    const walkBytesPerFile = (heap() - h0) / walk.files.size;
    walk.files.clear();

    h0 = heap();
    const remote = await api.listDocuments('ds-mem', { form: 'sync' });
    const listingBytesPerFile = (heap() - h0) / remote.length;
    remote.length = 0;

    h0 = heap();
    const store = await StateStore.open(statePath, { writeDelayMs: 50 });
    const stateBytesPerFile = (heap() - h0) / files;

    const mirror = new Mirror({
      spec: { ...spec, dataSourceId: 'ds-mem', prune: 'ours', maxDeletePercent: 50, massDeleteMinimum: 10, batchFiles: 20, batchBytes: 1 << 24, concurrency: 8 },
      api,
      state: store,
      local: createLocalSide({ path: share, include: [...DEFAULT_INCLUDE], exclude: [], maxFileBytes: Infinity, followSymlinks: false }),
      logger: silent,
      now: Date.now,
      monotonic: () => performance.now(),
    });
    h0 = heap();
    const heapOnly0 = process.memoryUsage().heapUsed;
    let peak = 0;
    let peakHeapOnly = 0;
    // What the pass holds, not when the collector happens to run: a full collection every
    // second, then the heap in use (the pass runs slower for it; its time is not the point).
    const sampler = setInterval(() => {
      global.gc?.();
      const u = process.memoryUsage();
      peak = Math.max(peak, u.heapUsed + u.arrayBuffers);
      peakHeapOnly = Math.max(peakHeapOnly, u.heapUsed);
    }, 1000);
    t0 = performance.now();
    const report = await mirror.fullPass();
    const passSeconds = (performance.now() - t0) / 1000;
    clearInterval(sampler);
    if (!report.ok || report.ops.length > 0) throw new Error(`scaleMemory: the pass was not a no-op: ${JSON.stringify(report.counts)} ${JSON.stringify(report.ops.slice(0, 3))} ${JSON.stringify(report.skipped.slice(0, 3))}`);
    await store.close();
    const p: MemoryPoint = {
      files,
      folders,
      walkBytesPerFile: round(walkBytesPerFile, 0),
      listingBytesPerFile: round(listingBytesPerFile, 0),
      stateBytesPerFile: round(stateBytesPerFile, 0),
      passPeakBytesPerFile: round((peak - h0) / files, 0),
      passSeconds: round(passSeconds, 1),
    };
    log(`scaleMemory: ${files} files: walk ${p.walkBytesPerFile} B/file, listing ${p.listingBytesPerFile} B/file, state ${p.stateBytesPerFile} B/file, full pass peak ${p.passPeakBytesPerFile} B/file above the state (heap alone: ${round((peakHeapOnly - heapOnly0) / files, 0)} B/file; ${p.passSeconds} s)`);
    return p;
  } finally {
    await api.close();
    await emu.close();
    await rm(dir, { recursive: true, force: true });
  }
}

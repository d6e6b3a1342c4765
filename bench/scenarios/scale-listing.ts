/**
 * scaleListing (issue 16): the listing of a data source of N documents, as a restart makes
 * it, alone. The emulator runs in this process, filled with N documents as a finished
 * first mirror leaves them (bench/lib/seed.ts's `syncedFile` over the scale tree's paths,
 * `bench/lib/tree.ts`), with the measured latency fault (20 ms per request); the client is
 * a process of its own (bench/listing-client.ts) listing in the mirror's sync form with the
 * restart's `keep`. Figures per size: wall, pages per second, the client's CPU per page,
 * the emulator's CPU per page (this process, over the same window), peak RSS and heap of
 * the client, and the load average around the run (the machine is shared).
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { startEmulator } from '@dssync/emulator';
import type { StoreSnapshot } from '@dssync/emulator';
import type { BenchContext } from '../lib/context.js';
import { syncedFile } from '../lib/seed.js';
import { treeLayout } from '../lib/tree.js';
import { log, round } from '../lib/util.js';
import type { ListingClientFigures, ListingClientInput } from '../listing-client.js';

const ORG = 'listing-org';
const TOKEN = 'listing-token';
const DS = 'ds_1157146000000000000000000000000';

export interface ListingPoint {
  documents: number;
  pages: number;
  seconds: number;
  pagesPerSecond: number;
  clientCpuMsPerPage: number;
  /**
   * The wall not spent in a request, per page: when the client alone held the listing up
   * (wall − the requests' time, from each attempt's start to its answer read; at most one
   * listing request is in flight at a time, sequential or one ahead).
   */
  clientOnPathMsPerPage: number;
  /** The requests' time per page (latency, the emulator, the transfer). */
  requestMsPerPage: number;
  clientCpuSeconds: number;
  emulatorCpuMsPerPage: number;
  clientPeakRssMB: number;
  clientPeakHeapMB: number;
  /** Documents the client's `keep` kept (0: every seeded document is confirmed). */
  kept: number;
  loadAverage: [number, number];
}

const CLIENT = join(fileURLToPath(new URL('.', import.meta.url)), '..', 'listing-client.js');

export async function runScaleListing(ctx: BenchContext, documents: number): Promise<ListingPoint> {
  if (!import.meta.url.includes('/dist/bench/')) throw new Error('scaleListing runs from the build (node dist/bench/run.js): its client is dist/bench/listing-client.js');
  const spec = { mappingId: 'm-listing', installationId: 'inst-listing', root: '/srv/share' };
  const files = treeLayout({ files: documents, folders: Math.max(1, Math.round(documents / 20)), minBytes: 64, maxBytes: 256, seed: 3 });
  const now = new Date(Date.now() - 7 * 86_400_000).toISOString();
  const mtimeMs = Date.parse(now);
  const snap: StoreSnapshot = {
    format: 'dssync-emulator-store',
    version: 1,
    seq: documents + 2,
    dataSources: [{ data_source_id: DS, name: 'Listing', llm_connector_ids: ['conn-1'], created_at: now, updated_at: now, org_id: ORG, seq: 1 }],
    documents: [],
    apps: [],
  };
  let t0 = performance.now();
  for (let i = 0; i < files.length; i++) {
    const f = files[i]!;
    const sha256 = (i * 2654435761).toString(16).padStart(64, '0');
    const st = { size: f.size, mtimeMs, ctimeMs: mtimeMs, dev: 2049, ino: 1000 + i };
    const d = syncedFile(spec, { path: f.rel, sha256, documentId: `doc_${i.toString(16).padStart(32, '0')}`, dataSourceId: DS, now, seq: i + 2, hashedAt: mtimeMs }, st).document;
    d.org_id = ORG;
    snap.documents.push(d);
  }
  files.length = 0;
  const emu = await startEmulator({ token: TOKEN, orgs: [ORG] });
  try {
    (emu.store as unknown as { restore(s: StoreSnapshot): void }).restore(snap);
    snap.documents.length = 0;
    log(`scaleListing: ${documents} documents in the emulator in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    emu.setFaults({ latencyMs: ctx.sizes.latencyMs });
    emu.resetStats();
    const input: ListingClientInput = { url: emu.url, token: TOKEN, org: ORG, dataSourceId: DS, spec };
    const load0 = os.loadavg()[0]!;
    const cpu0 = process.cpuUsage();
    t0 = performance.now();
    const figures = await runClient(input);
    const emuCpu = process.cpuUsage(cpu0);
    const load1 = os.loadavg()[0]!;
    let pages = 0;
    for (const [route, count] of Object.entries(emu.stats().byRoute)) if (/^GET .*documents$/.test(route)) pages += count;
    if (figures.documents !== documents || figures.kept !== 0) throw new Error(`scaleListing: the client saw ${figures.documents} documents (${figures.kept} not confirmed), expected ${documents} (0)`);
    const cpuMs = figures.cpuUserMs + figures.cpuSystemMs;
    const p: ListingPoint = {
      documents,
      pages,
      seconds: round(figures.wallMs / 1000, 2),
      pagesPerSecond: round(pages / (figures.wallMs / 1000), 1),
      clientCpuMsPerPage: round(cpuMs / pages, 2),
      clientOnPathMsPerPage: round((figures.wallMs - figures.requestMs) / pages, 2),
      requestMsPerPage: round(figures.requestMs / pages, 2),
      clientCpuSeconds: round(cpuMs / 1000, 2),
      emulatorCpuMsPerPage: round((emuCpu.user + emuCpu.system) / 1000 / pages, 2),
      clientPeakRssMB: round(figures.maxRssMB, 0),
      clientPeakHeapMB: round(figures.peakHeapMB, 0),
      kept: figures.kept,
      loadAverage: [round(load0, 1), round(load1, 1)],
    };
    log(
      `scaleListing: ${documents} documents, ${pages} pages in ${p.seconds} s (${p.pagesPerSecond} pages/s; wall ${((performance.now() - t0) / 1000).toFixed(1)} s with the client's start): client ${p.clientCpuMsPerPage} ms CPU/page and ${p.clientOnPathMsPerPage} ms/page on the path (requests ${p.requestMsPerPage} ms/page), emulator ${p.emulatorCpuMsPerPage} ms CPU/page, client peak RSS ${p.clientPeakRssMB} MB, heap ${p.clientPeakHeapMB} MB; load ${p.loadAverage.join(' → ')}`,
    );
    return p;
  } finally {
    await emu.close();
  }
}

function runClient(input: ListingClientInput): Promise<ListingClientFigures> {
  const nodeArgs = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const child = spawn(process.execPath, [...nodeArgs, CLIENT, JSON.stringify(input)], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (s: string) => (out += s));
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('exit', (code) => {
      if (code !== 0) reject(new Error(`scaleListing: the listing client exited with ${String(code)}`));
      else resolve(JSON.parse(out.trim().split('\n').pop() ?? '{}') as ListingClientFigures);
    });
  });
}

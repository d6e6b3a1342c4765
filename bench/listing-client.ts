/**
 * The client side of `BENCH_ONLY=scaleListing` (issue 16), run as a process of its own:
 * lists one data source in the mirror's sync form, with the restart's `keep` (a document
 * whose metadata, name and url are exactly what its path and hash ask for is confirmed and
 * dropped, as `confirmedPath` does against the state), and prints one JSON line of figures:
 * wall, CPU, peak RSS and heap of this process while listing.
 *
 *   node dist/bench/listing-client.js '{"url":…,"token":…,"org":…,"dataSourceId":…,"spec":{…}}'
 */
import diagnostics from 'node:diagnostics_channel';
import { writeFileSync } from 'node:fs';
import { getHeapStatistics } from 'node:v8';
import { DatastoreClient } from '../src/api/client.js';
import type { DocumentRecord } from '../src/api/records.js';
import { fixedToken } from '../src/api/token-provider.js';
import { DEFAULTS } from '../src/config/schema.js';
import { documentFields, type DocumentFieldsSpec } from '../src/engine/document-fields.js';
import { fieldsMatch, readMeta } from '../src/engine/metadata.js';
import { DEFAULT_ORGANIZATION_HEADER } from '../src/config/connection.js';

export interface ListingClientInput {
  url: string;
  token: string;
  org: string;
  dataSourceId: string;
  spec: DocumentFieldsSpec;
}

export interface ListingClientFigures {
  documents: number;
  kept: number;
  wallMs: number;
  cpuUserMs: number;
  cpuSystemMs: number;
  /** VmHWM of this process (start-up included). */
  maxRssMB: number;
  /** Largest heap in use seen (sampled every 10 ms and at every 50th document). */
  peakHeapMB: number;
  /** Heap in use before the listing (the process's own baseline). */
  baseHeapMB: number;
  /** Requests' time, from the start of each attempt to its answer read (the pacer's events): the service's share of the wall. */
  requestMs: number;
  requests: number;
}

async function main(): Promise<void> {
  const input = JSON.parse(process.argv[2] ?? '{}') as ListingClientInput;
  const q = DEFAULTS.queue;
  // BENCH_LISTING_TRACE=FILE: the pacer's events and each page's decoding, timed, into FILE.
  const tracePath = process.env.BENCH_LISTING_TRACE;
  const trace: string[] | undefined = tracePath ? [] : undefined;
  let t0 = performance.now();
  if (trace) {
    for (const name of ['undici:client:sendHeaders', 'undici:request:headers', 'undici:client:connected']) {
      diagnostics.subscribe(name, () => trace.push(`${(performance.now() - t0).toFixed(2)} ${name.slice(7)}`));
    }
  }
  let requestMs = 0;
  let requests = 0;
  const api = new DatastoreClient({
    baseUrl: input.url,
    organizationId: input.org,
    organizationHeader: DEFAULT_ORGANIZATION_HEADER,
    tokens: fixedToken(input.token),
    requestsPerSecond: q.requestsPerSecond,
    concurrency: q.concurrency,
    maxAttempts: q.maxAttempts,
    timeouts: q.timeouts,
    onEvent: (e) => {
      trace?.push(`${(performance.now() - t0).toFixed(2)} ${e.type}`);
      if (e.type !== 'response') return;
      requestMs += e.ms;
      requests++;
    },
  });
  const spec = input.spec;
  // The restart's confirmation without the state: the state's entry is what the document's
  // own metadata names (path, size, mtime, hash), so every seeded document is confirmed.
  const confirmed = (doc: DocumentRecord): boolean => {
    const meta = readMeta(doc);
    if (meta === undefined || meta.mappingId !== spec.mappingId || meta.installationId !== spec.installationId) return false;
    return fieldsMatch(doc, documentFields(spec, { path: meta.path, size: meta.size ?? 0, mtimeMs: meta.mtimeMs ?? 0, sha256: meta.sha256 }));
  };
  let peak = 0;
  const sample = (): void => {
    peak = Math.max(peak, getHeapStatistics().used_heap_size);
  };
  const base = getHeapStatistics().used_heap_size;
  const timer = setInterval(sample, 10);
  let documents = 0;
  const cpu0 = process.cpuUsage();
  t0 = performance.now();
  const kept = await api.listDocuments(input.dataSourceId, {
    form: 'sync',
    keep: (doc) => {
      if (trace && documents % 1000 === 0) trace.push(`${(performance.now() - t0).toFixed(2)} keep-first`);
      if (trace && documents % 1000 === 999) trace.push(`${(performance.now() - t0).toFixed(2)} keep-last`);
      if (++documents % 50 === 0) sample();
      return !confirmed(doc);
    },
  });
  const wallMs = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  clearInterval(timer);
  sample();
  await api.close();
  if (tracePath && trace) writeFileSync(tracePath, `${trace.join('\n')}\n`);
  const figures: ListingClientFigures = {
    documents,
    kept: kept.length,
    wallMs,
    cpuUserMs: cpu.user / 1000,
    cpuSystemMs: cpu.system / 1000,
    maxRssMB: process.resourceUsage().maxRSS / 1024,
    peakHeapMB: peak / 2 ** 20,
    baseHeapMB: base / 2 ** 20,
    requestMs,
    requests,
  };
  process.stdout.write(`${JSON.stringify(figures)}\n`);
}

main().catch((e: unknown) => {
  process.stderr.write(`listing client failed: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exit(1);
});

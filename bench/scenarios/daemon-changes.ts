/**
 * latency and burst: `dssync run` (default settings) over the tree initialMirror left
 * mirrored. latency: one file changed at a time, spaced; each sample is the time from the
 * save to the moment the service applies the document's new metadata (the document with
 * the new content is complete then). burst: many files changed at once; the time until the
 * data source holds exactly the new versions (old ones deleted).
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { BenchContext } from '../lib/context.js';
import { startDaemon, type DaemonHandle } from '../lib/dssync.js';
import { checkMirror, onDocumentUpdate, routeRequests } from '../lib/service.js';
import { contentFor, sha256 } from '../lib/tree.js';
import { log, mapLimit, quantile, round, seeded, waitFor } from '../lib/util.js';
import type { MirroredTree } from './initial-mirror.js';
import { DEFAULTS } from '../../src/config/schema.js';
import { runSteadyLatency, type SteadyLatencyFigures } from './steady-latency.js';

export interface LatencyFigures {
  files: number;
  samples: number;
  p50Ms: number;
  p95Ms: number;
  p99Ms: number;
  maxMs: number;
}

export interface BurstFigures {
  files: number;
  changed: number;
  seconds: number;
  requests: number;
  /** Uploads in batches + one update per new document + one delete per old version. */
  minimumRequests: number;
  /** The daemon's ingestion check (chunk listings of earlier uploads), not counted above. */
  ingestionChecks: number;
}

const CHUNK_ROUTE = /^GET .*\/chunks$/;

/** Waits for the daemon's first full pass and for its watcher to cover every folder. */
export async function waitForWatching(d: DaemonHandle, folders: number, timeoutMs: number): Promise<void> {
  await waitFor(
    'the first full pass and the watcher',
    async () => {
      const m = (await d.status()).mappings[0];
      return m?.lastPass?.kind === 'full' && m.phase === 'watching' && m.watchedDirs >= folders + 1 ? true : undefined;
    },
    timeoutMs,
    100,
  );
}

/** `steady`: also the steady-state latency after the burst (steady-latency.ts). */
export async function runDaemonChanges(ctx: BenchContext, tree: MirroredTree, steady = false): Promise<{ latency: LatencyFigures; burst: BurstFigures; steady?: SteadyLatencyFigures }> {
  const { sizes } = ctx;
  const rels = tree.files.map((f) => f.rel);
  const sizeOf = new Map(tree.files.map((f) => [f.rel, f.size]));
  const versions = new Map<string, number>();
  const waiting = new Map<string, (at: number) => void>();
  const undo = onDocumentUpdate(tree.emu, (path, sha) => {
    const key = `${path}\n${sha}`;
    const done = waiting.get(key);
    if (done) {
      waiting.delete(key);
      done(performance.now());
    }
  });
  /** Writes a new version of `rel` (`fresh`: a new file); `seen` resolves when the service has it. */
  const change = async (rel: string, fresh = false): Promise<{ seen: Promise<number> }> => {
    const v = (versions.get(rel) ?? 0) + 1;
    versions.set(rel, v);
    const body = contentFor(rel, sizeOf.get(rel) ?? 4096, v);
    const seen = new Promise<number>((resolve) => waiting.set(`${rel}\n${sha256(body)}`, resolve));
    await writeFile(join(tree.share, rel), body, { flag: fresh ? 'wx' : 'w' });
    return { seen };
  };

  const daemon = await startDaemon(tree.configPath);
  try {
    await waitForWatching(daemon, tree.folders, 120_000);
    const watchingSince = performance.now();
    await sleep(500);
    tree.emu.resetStats();

    // latency
    log(`latency: ${sizes.latencySamples} single-file changes...`);
    const rnd = seeded(7);
    const samples: number[] = [];
    for (let i = 0; i < sizes.latencySamples; i++) {
      const rel = rels[Math.floor(rnd() * rels.length)]!;
      const t0 = performance.now();
      const { seen } = await change(rel);
      const t1 = await Promise.race([seen, sleep(30_000, undefined, { ref: false }).then(() => -1)]);
      if (t1 < 0) throw new Error(`latency: ${rel} did not reach the service within 30 s`);
      samples.push(t1 - t0);
      await sleep(sizes.latencySpacingMs);
    }
    const latency: LatencyFigures = {
      files: rels.length,
      samples: samples.length,
      p50Ms: round(quantile(samples, 0.5), 0),
      p95Ms: round(quantile(samples, 0.95), 0),
      p99Ms: round(quantile(samples, 0.99), 0),
      maxMs: round(Math.max(...samples), 0),
    };
    log(`latency: p50 ${latency.p50Ms} ms, p95 ${latency.p95Ms} ms, p99 ${latency.p99Ms} ms`);

    // burst
    await waitFor('an idle daemon', async () => ((await daemon.status()).mappings[0]?.pending === 0 ? true : undefined), 30_000, 100);
    await sleep(1500);
    tree.emu.resetStats();
    const picked = new Set<string>();
    const brnd = seeded(11);
    while (picked.size < Math.min(sizes.burstFiles, rels.length)) picked.add(rels[Math.floor(brnd() * rels.length)]!);
    log(`burst: ${picked.size} files changed at once...`);
    // The mirror's documents and the lease's marker.
    const documentsBefore = tree.emu.stats().store.documents;
    const t0 = performance.now();
    const seen: Promise<number>[] = [];
    await mapLimit([...picked], 64, async (rel) => {
      seen.push((await change(rel)).seen);
    });
    await Promise.race([Promise.all(seen), sleep(300_000, undefined, { ref: false }).then(() => Promise.reject(new Error('burst: not converged within 300 s')))]);
    // Converged once the old versions are gone too.
    await waitFor('the old versions to be deleted', () => (tree.emu.stats().store.documents === documentsBefore ? true : undefined), 120_000, 10);
    const seconds = (performance.now() - t0) / 1000;
    await sleep(500);
    const s = tree.emu.stats();
    const ingestionChecks = routeRequests(tree.emu, CHUNK_ROUTE);
    const burst: BurstFigures = {
      files: rels.length,
      changed: picked.size,
      seconds: round(seconds),
      requests: s.requests - ingestionChecks,
      minimumRequests: Math.ceil(picked.size / DEFAULTS.queue.uploadBatchFiles) + 2 * picked.size,
      ingestionChecks,
    };
    log(`burst: ${burst.seconds} s, ${burst.requests} requests (minimum ${burst.minimumRequests})`);
    const check = await checkMirror(tree.emu, tree.share, rels);
    if (!check.ok) throw new Error(`after the burst the data source is not in sync: ${check.problems.join('; ')}`);
    if (!steady) return { latency, burst };
    const documents = (): number => tree.emu.stats().store.documents;
    return { latency, burst, steady: await runSteadyLatency(ctx, daemon, tree.share, rels, change, documents, watchingSince) };
  } finally {
    undo();
    log('stopping the daemon...');
    await daemon.stop();
    log('daemon stopped');
  }
}

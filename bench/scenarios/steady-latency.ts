/**
 * steadyLatency (issue 39.6): save-to-service latency in steady state, on the daemon the
 * latency and burst scenarios ran, once its start window (the aggregator's first
 * `maxStabilityMs`, which holds a first change on purpose) is over. Two series, apart:
 * rewrites of existing files (`writeFile`: truncate, then write), and new files, which wait
 * the stability window (`settleMs`, 2 s) by design. The new files are removed afterwards and
 * the daemon left idle, so the tree is as the other scenarios left it.
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { DEFAULT_AGGREGATOR_OPTIONS } from '../../src/local/watch/aggregator.js';
import type { BenchContext } from '../lib/context.js';
import type { DaemonHandle } from '../lib/dssync.js';
import { log, quantile, round, seeded, waitFor } from '../lib/util.js';

/** Each series: samples, p50Ms, p99Ms, maxMs, prefixed `rewrite` or `newFile`. */
export type SteadyLatencyFigures = {
  /** Seconds between the watcher's start and the first steady sample. */
  afterStartSeconds: number;
} & Record<`${'rewrite' | 'newFile'}${'Samples' | 'P50Ms' | 'P99Ms' | 'MaxMs'}`, number>;

/** Writes `rel` (a new version, or a new file when `fresh`); resolves when written, with when the service had it. */
export type Save = (rel: string, fresh: boolean) => Promise<{ seen: Promise<number> }>;

const SEEN_TIMEOUT_MS = 30_000;

/**
 * A sample slower than this is logged with its path and time, to find in the daemon's log
 * (BENCH_DAEMON_LOG); BENCH_SLOW_MS sets it (0: every sample).
 */
const SLOW_MS = Number(process.env.BENCH_SLOW_MS ?? 2_500);

async function sample(save: Save, rel: string, fresh: boolean): Promise<number> {
  const t0 = performance.now();
  const writtenAt = new Date().toISOString();
  const { seen } = await save(rel, fresh);
  const t1 = await Promise.race([seen, sleep(SEEN_TIMEOUT_MS, undefined, { ref: false }).then(() => -1)]);
  if (t1 < 0) throw new Error(`steadyLatency: ${rel} did not reach the service within ${SEEN_TIMEOUT_MS / 1000} s`);
  if (t1 - t0 > SLOW_MS) log(`steadyLatency: slow sample: ${rel} written at ${writtenAt}, at the service ${Math.round(t1 - t0)} ms later`);
  return t1 - t0;
}

function series<P extends 'rewrite' | 'newFile'>(p: P, ms: number[]): Record<`${P}${'Samples' | 'P50Ms' | 'P99Ms' | 'MaxMs'}`, number> {
  const r = (q: number): number => round(quantile(ms, q), 0);
  return { [`${p}Samples`]: ms.length, [`${p}P50Ms`]: r(0.5), [`${p}P99Ms`]: r(0.99), [`${p}MaxMs`]: round(Math.max(...ms), 0) } as Record<`${P}${'Samples' | 'P50Ms' | 'P99Ms' | 'MaxMs'}`, number>;
}

/**
 * `documents`: how many documents the data source holds (back to what it was once the new
 * files are deleted). `watchingSince`: performance.now() when the daemon was first seen watching (its
 * aggregator, whose start window this waits out, started before).
 */
export async function runSteadyLatency(ctx: BenchContext, daemon: DaemonHandle, share: string, rels: readonly string[], save: Save, documents: () => number, watchingSince: number): Promise<SteadyLatencyFigures> {
  const { sizes } = ctx;
  const steadyAt = watchingSince + DEFAULT_AGGREGATOR_OPTIONS.maxStabilityMs + 1000;
  const idle = (): Promise<true> => waitFor('an idle daemon', async () => ((await daemon.status()).mappings[0]?.pending === 0 ? true : undefined), 60_000, 100);
  await idle();
  if (performance.now() < steadyAt) await sleep(steadyAt - performance.now());
  const afterStartSeconds = round((performance.now() - watchingSince) / 1000, 1);

  log(`steadyLatency: ${sizes.latencySamples} rewrites, then ${sizes.latencySamples} new files, ${afterStartSeconds} s after the start...`);
  const rnd = seeded(13);
  const rewrites: number[] = [];
  for (let i = 0; i < sizes.latencySamples; i++) {
    rewrites.push(await sample(save, rels[Math.floor(rnd() * rels.length)]!, false));
    await sleep(sizes.latencySpacingMs);
  }
  const documentsBefore = documents();
  const created: string[] = [];
  const fresh: number[] = [];
  for (let i = 0; i < sizes.latencySamples; i++) {
    const rel = `${rels[Math.floor(rnd() * rels.length)]!.replace(/[^/]*$/, '')}steady-new-${i}.txt`;
    created.push(rel);
    fresh.push(await sample(save, rel, true));
    await sleep(sizes.latencySpacingMs);
  }
  const figures: SteadyLatencyFigures = { afterStartSeconds, ...series('rewrite', rewrites), ...series('newFile', fresh) };
  log(`steadyLatency: rewrite p50 ${figures.rewriteP50Ms} ms, p99 ${figures.rewriteP99Ms} ms; new file p50 ${figures.newFileP50Ms} ms, p99 ${figures.newFileP99Ms} ms`);

  await Promise.all(created.map((rel) => rm(join(share, rel), { force: true })));
  await waitFor('the new files to be deleted', () => (documents() === documentsBefore ? true : undefined), 60_000, 100);
  await idle();
  return figures;
}

/**
 * initialMirror: a first mirror of a tree of small files at ~20 ms per request, dssync
 * (`dssync sync`, default settings) against the naive client, side by side in this run.
 * Also the rateCap scenario: the same mirror with the service limited to R requests/s.
 */
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { RunningEmulator } from '@dssync/emulator';
import type { BenchContext } from '../lib/context.js';
import { runSync, writeConfig } from '../lib/dssync.js';
import type { CpuByThread } from '../lib/thread-cpu.js';
import { naiveMirror } from '../lib/naive.js';
import { checkMirror, RequestWindow, startService } from '../lib/service.js';
import { writeTree, type TreeFile } from '../lib/tree.js';
import { log, median, round } from '../lib/util.js';
import { DEFAULTS } from '../../src/config/schema.js';

export interface InitialMirrorFigures {
  files: number;
  seconds: number;
  filesPerSecond: number;
  baselineSeconds: number;
  /** Files the naive client actually mirrored (its time is scaled when fewer than `files`). */
  baselineFilesMeasured: number;
  speedup: number;
  requests: number;
  minimumRequests: number;
  requestsRatio: number;
  peakRssMB: number;
  cpuSeconds: number;
  /** CPU (user + system) of the dssync process per file mirrored, in ms: cpuSeconds × 1000 / files (issue 28.1). */
  cpuMsPerFile: number;
  /** cpuMsPerFile by kind of thread (lib/thread-cpu.ts), medians: where the CPU goes. */
  cpuMsPerFileByThread: CpuByThread;
  runs: { seconds: number; requests: number }[];
}

export interface RateCapFigures {
  files: number;
  capRps: number;
  achievedRps: number;
  utilization: number;
  responses429: number;
  seconds: number;
  windowSeconds: number;
  requests: number;
}

/** A tree mirrored by dssync, with its service still running (for the daemon scenarios). */
export interface MirroredTree {
  dir: string;
  share: string;
  files: TreeFile[];
  folders: number;
  emu: RunningEmulator;
  configPath: string;
}

export async function buildInitialTree(ctx: BenchContext): Promise<{ share: string; files: TreeFile[] }> {
  const share = join(ctx.tmp, 'initial', 'share');
  const t0 = performance.now();
  const files = await writeTree(share, { files: ctx.sizes.initialFiles, folders: ctx.sizes.initialFolders, minBytes: 1024, maxBytes: 16 * 1024, seed: 1 });
  log(`initial tree: ${files.length} files in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  return { share, files };
}

export function minimumRequests(files: number): number {
  return Math.ceil(files / DEFAULTS.queue.uploadBatchFiles) + files;
}

export async function runInitialMirror(ctx: BenchContext, share: string, files: TreeFile[]): Promise<{ figures: InitialMirrorFigures; tree: MirroredTree }> {
  const { sizes } = ctx;
  const rels = files.map((f) => f.rel);

  // The naive client first, on its own service.
  const naiveEmu = await startService({ latencyMs: sizes.latencyMs });
  const subset = rels.slice(0, Math.min(rels.length, sizes.baselineFiles));
  log(`initialMirror: naive client over ${subset.length} files...`);
  const naive = await naiveMirror(naiveEmu.url, share, subset);
  const naiveCheck = await checkMirror(naiveEmu, share, subset, 'Naive');
  await naiveEmu.close();
  if (!naiveCheck.ok) throw new Error(`naive client did not converge: ${naiveCheck.problems.join('; ')}`);
  const baselineSeconds = (naive.seconds * rels.length) / subset.length;
  log(`initialMirror: naive ${naive.seconds.toFixed(1)} s (${naive.requests} requests)`);

  const runs: { seconds: number; requests: number; peakRssMB: number; cpuSeconds: number; cpuByThread: CpuByThread }[] = [];
  let kept: MirroredTree | undefined;
  for (let r = 0; r < sizes.repeat; r++) {
    const dir = join(ctx.tmp, 'initial', `run-${r}`);
    await mkdir(dir, { recursive: true });
    const emu = await startService({ latencyMs: sizes.latencyMs });
    const configPath = await writeConfig({ dir, baseUrl: emu.url, share });
    const run = await runSync(configPath);
    if (run.code !== 0) throw new Error(`dssync sync exited ${run.code}:\n${run.stderr.slice(-3000)}`);
    const check = await checkMirror(emu, share, rels);
    if (!check.ok) throw new Error(`dssync did not converge: ${check.problems.join('; ')}`);
    runs.push({ seconds: run.seconds, requests: emu.stats().requests, peakRssMB: run.peakRssMB, cpuSeconds: run.cpuSeconds, cpuByThread: run.cpuByThread });
    log(`initialMirror: dssync run ${r + 1}/${sizes.repeat}: ${run.seconds.toFixed(2)} s, ${emu.stats().requests} requests, peak RSS ${run.peakRssMB.toFixed(0)} MB, CPU ${run.cpuSeconds.toFixed(1)} s (main ${run.cpuByThread.main.toFixed(2)}, V8's helpers ${run.cpuByThread.v8.toFixed(2)}, workers ${run.cpuByThread.workers.toFixed(2)}, libuv's pool ${run.cpuByThread.pool.toFixed(2)})`);
    if (r === sizes.repeat - 1) kept = { dir, share, files, folders: sizes.initialFolders, emu, configPath };
    else await emu.close();
  }
  const seconds = median(runs.map((r) => r.seconds));
  const requests = Math.max(...runs.map((r) => r.requests));
  const minimum = minimumRequests(rels.length);
  return {
    figures: {
      files: rels.length,
      seconds: round(seconds),
      filesPerSecond: round(rels.length / seconds, 1),
      baselineSeconds: round(baselineSeconds, 1),
      baselineFilesMeasured: subset.length,
      speedup: round(baselineSeconds / seconds, 1),
      requests,
      minimumRequests: minimum,
      requestsRatio: round(requests / minimum, 4),
      peakRssMB: round(median(runs.map((r) => r.peakRssMB)), 0),
      cpuSeconds: round(median(runs.map((r) => r.cpuSeconds)), 1),
      cpuMsPerFile: round((median(runs.map((r) => r.cpuSeconds)) * 1000) / rels.length, 2),
      cpuMsPerFileByThread: byThread(runs.map((r) => r.cpuByThread), rels.length),
      runs: runs.map((r) => ({ seconds: round(r.seconds), requests: r.requests })),
    },
    tree: kept!,
  };
}

/** The median CPU of each kind of thread over the runs, in ms per file. */
function byThread(runs: CpuByThread[], files: number): CpuByThread {
  const per = (k: keyof CpuByThread): number => round((median(runs.map((r) => r[k])) * 1000) / files, 3);
  return { main: per('main'), v8: per('v8'), pool: per('pool'), workers: per('workers') };
}

const UPLOAD_ROUTE = 'POST /datastore/v1/data-sources/:data_source_id/documents/upload';

export async function runRateCap(ctx: BenchContext, share: string, files: TreeFile[]): Promise<RateCapFigures> {
  const cap = ctx.sizes.rateCapRps;
  const dir = join(ctx.tmp, 'ratecap');
  await mkdir(dir, { recursive: true });
  const emu = await startService({ latencyMs: ctx.sizes.latencyMs, rateLimitRps: cap });
  try {
    const configPath = await writeConfig({ dir, baseUrl: emu.url, share });
    let atStart: { requests: number; limited: number } | undefined;
    const window = new RequestWindow(emu, (s) => {
      const started = (s.byRoute[UPLOAD_ROUTE] ?? 0) > 0;
      if (started) atStart ??= { requests: s.requests, limited: s.rateLimited };
      return started;
    });
    log(`rateCap: dssync over ${files.length} files, service capped at ${cap} requests/s...`);
    const run = await runSync(configPath);
    const windowSeconds = window.stop();
    if (run.code !== 0) throw new Error(`dssync sync exited ${run.code}:\n${run.stderr.slice(-3000)}`);
    const check = await checkMirror(emu, share, files.map((f) => f.rel));
    if (!check.ok) throw new Error(`dssync did not converge under the rate cap: ${check.problems.join('; ')}`);
    const s = emu.stats();
    const start = atStart ?? { requests: 0, limited: 0 };
    // The window opens at the first upload: the data source lookup, the listing and the
    // hashing before it are not rate-bound work.
    const accepted = s.requests - s.rateLimited - (start.requests - start.limited);
    const achieved = windowSeconds > 0 ? accepted / windowSeconds : 0;
    log(`rateCap: ${run.seconds.toFixed(1)} s, window ${windowSeconds.toFixed(1)} s, ${achieved.toFixed(1)} accepted/s, ${s.rateLimited} answers 429`);
    return {
      files: files.length,
      capRps: cap,
      achievedRps: round(achieved, 1),
      utilization: round(achieved / cap, 3),
      responses429: s.rateLimited,
      seconds: round(run.seconds),
      windowSeconds: round(windowSeconds),
      requests: s.requests,
    };
  } finally {
    await emu.close();
  }
}

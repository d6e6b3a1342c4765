/**
 * `npm run bench`: dssync's performance scenarios against the emulator on loopback
 * (DESIGN §5). Writes bench/results/latest.json and latest.md (and <mode>.json/.md).
 *
 *   BENCH_QUICK=1   smaller sizes (under 3 minutes)
 *   BENCH_ONLY=a,b  only these scenarios (initialMirror, rateCap, restart, latency, burst, steadyLatency,
 *                   footprint, pollLatency); results then go to <mode>-partial.json/.md only.
 *                   `scale` (a million files, issue 16) runs ONLY when named here:
 *                   BENCH_ONLY=scale (curve + memory + daemon), scaleCurve, scaleMemory or scaleDaemon; its
 *                   results go to scale-<mode>.json/.md. scaleWalk (walkTree alone over the
 *                   scale tree, BENCH_SCALE_DIR's when kept) runs only when named itself;
 *                   scaleListing (the listing of 100,000 and 1,000,000 documents by a client
 *                   process) too, and alone its results go to scale-listing-<mode>.json/.md
 *                   office (issue 35.8: conversion of a mixed share of office files) runs
 *                   only when named too, and alone its results go to office-<mode>.json/.md
 *   npm run bench -- NAME...  the same as BENCH_ONLY=NAME,... (e.g. `npm run bench -- office`)
 *   BENCH_OUT=DIR   where to write the results (default bench/results)
 *   BENCH_KEEP=1    keep the temp folder (trees, state files, configs)
 *   BENCH_SIZES=J   sizes to change (a JSON object of lib/context.ts Sizes), e.g.
 *                   {"baselineFiles":1000}: the naive client's time is then scaled
 *   BENCH_CONFIG=J  config keys (a JSON object) for the measured dssync runs, to try
 *                   other settings than the defaults (the report says so)
 *   BENCH_NODE_ARGS=...  node options of the dssync processes, e.g.
 *                   "--cpu-prof --cpu-prof-dir=/tmp/prof" to profile them
 *   BENCH_SCALE_DIR=DIR  scaleDaemon: build the tree, seeded state and documents once in DIR
 *                   and reuse them in the next runs (lib/kept-set.ts)
 *   BENCH_DAEMON_LOG=FILE  append the `dssync run` processes' log (JSON lines) to FILE
 *   BENCH_SAMPLES=PREFIX  with BENCH_NODE_ARGS="--import <repo>/bench/sampler.mjs": each dssync
 *                   process's memory and event-loop delay, once a second, in PREFIX-<pid>.txt
 *   BENCH_SLOW_MS=N  steadyLatency logs each sample slower than N ms (default 2500; 0: all)
 *   DSSYNC_WATCHDOG_SECONDS=N  passed to the dssync processes (0: watchdog off)
 *   MALLOC_ARENA_MAX=N  passed to the dssync processes (unset: `dssync run` sets 2 itself, as
 *                   the image and the systemd units do; src/cli/malloc-env.ts)
 *   MALLOC_MMAP_THRESHOLD_=N, GLIBC_TUNABLES=...  passed to the dssync processes (the threshold
 *                   unset: `dssync run` sets 131072 itself)
 *   LD_PRELOAD=LIB, MALLOC_CONF=...  passed to the dssync processes (another allocator)
 *   BENCH_BEFORE_START=CMD  run by /bin/sh right before each restart's daemon starts (e.g. the
 *                   kept set's filesystem mounted again: a cold cache)
 *
 * dssync runs as real processes (the built binary); the service emulator runs in this
 * process. Build first: npm run build.
 */
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os, { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SIZES, type BenchContext, type BenchMode, type Sizes } from './lib/context.js';
import { BIN } from './lib/dssync.js';
import { evaluate, machine, runInfo, toMarkdown, type Figures, type Report } from './lib/report.js';
import { log } from './lib/util.js';
import { runDaemonChanges } from './scenarios/daemon-changes.js';
import { buildInitialTree, runInitialMirror, runRateCap } from './scenarios/initial-mirror.js';
import { runRestart } from './scenarios/restart.js';
import { runScale } from './scenarios/scale.js';
import { runScaleWalk } from './scenarios/scale-walk.js';
import { runScaleListing } from './scenarios/scale-listing.js';
import { runOffice } from './scenarios/office.js';
import { runPollLatency } from './scenarios/watch-fuse.js';
import { DEFAULTS } from '../src/config/schema.js';
import { RECLAIM_DONE_MESSAGE } from '../src/daemon/reclaim.js';
import { RECLAIM_WAIT_MS } from './lib/reclaim-wait.js';

const ALL = ['initialMirror', 'rateCap', 'restart', 'latency', 'burst', 'steadyLatency', 'footprint', 'pollLatency'] as const;
/** Run only when named in BENCH_ONLY (the full size takes about an hour and 2 GB of disk). */
const ON_DEMAND = ['scale', 'scaleCurve', 'scaleMemory', 'scaleDaemon', 'scaleWalk', 'scaleListing', 'office'] as const;
type Scenario = (typeof ALL)[number] | (typeof ON_DEMAND)[number];

export async function runBench(mode: BenchMode, only: readonly Scenario[] = ALL, tmpRoot = tmpdir()): Promise<Report> {
  if (!existsSync(BIN)) throw new Error(`${BIN} is missing: run npm run build first`);
  const started = performance.now();
  const repo = fileURLToPath(new URL(import.meta.url.includes('/dist/bench/') ? '../../' : '../', import.meta.url));
  const report: Report = { run: runInfo(mode, repo), machine: machine(), scenarios: {}, targets: [], notes: [] };
  const tmp = await mkdtemp(join(tmpRoot, 'dssync-bench-'));
  const sizes = { ...SIZES[mode], ...(process.env.BENCH_SIZES ? (JSON.parse(process.env.BENCH_SIZES) as Partial<Sizes>) : {}) };
  const ctx: BenchContext = { mode, sizes, tmp };
  const want = (s: Scenario): boolean => only.includes(s);
  const scenarios: Record<string, Figures> = {};
  try {
    if (want('initialMirror') || want('rateCap') || want('latency') || want('burst') || want('steadyLatency')) {
      const { share, files } = await buildInitialTree(ctx);
      if (want('initialMirror') || want('latency') || want('burst') || want('steadyLatency')) {
        const { figures, tree } = await runInitialMirror(ctx, share, files);
        if (want('initialMirror')) scenarios.initialMirror = { ...figures };
        try {
          if (want('latency') || want('burst') || want('steadyLatency')) {
            const { latency, burst, steady } = await runDaemonChanges(ctx, tree, want('steadyLatency'));
            if (want('latency')) scenarios.latency = { ...latency };
            if (want('burst')) scenarios.burst = { ...burst };
            if (steady) scenarios.steadyLatency = { ...steady };
          }
        } finally {
          await tree.emu.close();
          log('service closed');
        }
      }
      if (want('rateCap')) scenarios.rateCap = { ...(await runRateCap(ctx, share, files)) };
      await rm(join(tmp, 'initial'), { recursive: true, force: true });
    }
    if (want('restart') || want('footprint')) {
      const { restart, footprint } = await runRestart(ctx);
      if (want('restart')) scenarios.restart = { ...restart };
      if (want('footprint')) scenarios.footprint = { ...footprint };
    }
    if (want('scale') || want('scaleCurve') || want('scaleMemory') || want('scaleDaemon')) {
      const s = await runScale(ctx, {
        curve: want('scale') || want('scaleCurve'),
        memory: want('scale') || want('scaleMemory'),
        daemon: want('scale') || want('scaleDaemon'),
      });
      if (s.curve.length) scenarios.scaleCurve = { points: s.curve } as unknown as Figures;
      if (s.memory.length) scenarios.scaleMemory = { points: s.memory } as unknown as Figures;
      if (s.restart) scenarios.scaleRestart = { ...s.restart };
      if (s.footprint) scenarios.scaleFootprint = { ...s.footprint };
    }
    if (want('scaleWalk')) scenarios.scaleWalk = { ...(await runScaleWalk(ctx)) } as unknown as Figures;
    if (want('scaleListing')) {
      const points = [];
      for (const n of sizes.scaleListing) points.push(await runScaleListing(ctx, n));
      scenarios.scaleListing = { points } as unknown as Figures;
    }
    if (want('pollLatency')) scenarios.pollLatency = { ...(await runPollLatency(ctx)) };
    if (want('office')) scenarios.office = { ...(await runOffice(ctx)) } as unknown as Figures;
  } finally {
    if (process.env.BENCH_KEEP === '1') log(`kept ${tmp}`);
    else await rm(tmp, { recursive: true, force: true });
  }
  report.scenarios = scenarios;
  report.targets = evaluate(scenarios);
  report.machine.loadAverageEnd = os.loadavg().map((l) => Math.round(l * 100) / 100);
  report.run.totalSeconds = (performance.now() - started) / 1000;
  report.notes = notes(ctx, scenarios);
  return report;
}

function notes(ctx: BenchContext, s: Record<string, Figures>): string[] {
  const n: string[] = [];
  const z = ctx.sizes;
  n.push(`Every measured request pays ${z.latencyMs} ms of service latency (emulator fault latencyMs); setups run without it.`);
  if (process.env.BENCH_SIZES) n.push(`Sizes changed with BENCH_SIZES=${process.env.BENCH_SIZES}.`);
  if (process.env.DSSYNC_WATCHDOG_SECONDS !== undefined) n.push(`NOT the default watchdog: the dssync processes ran with DSSYNC_WATCHDOG_SECONDS=${process.env.DSSYNC_WATCHDOG_SECONDS}.`);
  if (process.env.LD_PRELOAD !== undefined) n.push(`The dssync processes ran with LD_PRELOAD=${process.env.LD_PRELOAD}${process.env.MALLOC_CONF === undefined ? '' : ` and MALLOC_CONF=${process.env.MALLOC_CONF}`}.`);
  if (process.env.MALLOC_ARENA_MAX !== undefined) n.push(`The dssync processes ran with MALLOC_ARENA_MAX=${process.env.MALLOC_ARENA_MAX} (dssync run, the image and the systemd units set 2).`);
  if (process.env.MALLOC_MMAP_THRESHOLD_ !== undefined) n.push(`The dssync processes ran with MALLOC_MMAP_THRESHOLD_=${process.env.MALLOC_MMAP_THRESHOLD_} (dssync run, the image and the systemd units set 131072).`);
  if (process.env.BENCH_BEFORE_START) n.push(`Each restart's daemon started right after BENCH_BEFORE_START=${process.env.BENCH_BEFORE_START} ran.`);
  if (process.env.GLIBC_TUNABLES !== undefined) n.push(`The dssync processes ran with GLIBC_TUNABLES=${process.env.GLIBC_TUNABLES}.`);
  if (s.scaleRestart?.keptSet) n.push(`scaleRestart: the tree, seeded state and documents were reused from BENCH_SCALE_DIR=${process.env.BENCH_SCALE_DIR ?? ''} (bench/lib/kept-set.ts): setupSeconds is putting them back.`);
  if (s.scaleRestart?.seeded) n.push('scaleRestart: the first mirror was seeded (its state file and documents written directly, bench/lib/seed.ts), not run, then its lease left by a real `dssync sync` over it (the marker document, released, and its id kept beside the state): setupSeconds is the seeding and that sync, setupRssMB is not measured.');
  const override = process.env.BENCH_CONFIG;
  if (override) n.push(`NOT the default settings: the measured runs used BENCH_CONFIG=${override}.`);
  else n.push('dssync runs with its default settings (the config names only the service, the state file, the status endpoint on a free port and the mapping).');
  if (s.initialMirror) {
    const im = s.initialMirror;
    n.push(
      `initialMirror: seconds is the median of ${z.repeat} dssync run(s), wall time of the \`dssync sync\` process (start-up, walk, hashing and requests). requests counts every request that reached the service (data source lookup and creation, listing, uploads, updates); minimumRequests = ⌈files / ${DEFAULTS.queue.uploadBatchFiles}⌉ uploads + one update per document.`,
    );
    if (im.baselineFilesMeasured !== im.files) n.push(`initialMirror: the naive client mirrored ${String(im.baselineFilesMeasured)} files; baselineSeconds is scaled linearly to ${String(im.files)}.`);
  }
  if (s.rateCap) n.push('rateCap: achievedRps = requests accepted by the service (not answered 429) per second, between the first upload and the last request of the pass.');
  if (s.latency) n.push('latency: from just before the file is written to the moment the service applies the new version\'s metadata (upload, then metadata update, are both done then).');
  if (s.steadyLatency) n.push('steadyLatency: the same daemon after the burst, once its start window (the first 30 s of its watcher, which hold a first change on purpose) is over; measured as latency, apart for rewrites of existing files (`writeFile`: truncate, then write) and new files (which wait the 2 s stability window by design); the new files are deleted afterwards.');
  if (s.burst) n.push('burst: from the first write to the moment the data source holds exactly the new versions (old ones deleted); requests exclude the ingestion check\'s chunk listings, shown apart.');
  if (s.restart) n.push('restart: from the spawn of `dssync run` to the end of its first full pass (the time of the daemon\'s "full pass done" log line); writes = POST/PUT/DELETE requests the service received for the mirror, leaseWrites = those for the mapping\'s lease (the claim), reported apart; listings = listings of the data source begun by then (1: the pass\'s own); a run that made a lease marker or searched for one (a first start under the lease, not a restart: bench/lib/restart-proof.ts) fails; rssMB = peak (VmHWM) of the dssync process.');
  if (s.footprint) n.push(`footprint: the same daemon, idle after its first pass, the watch set up, the reclaim's collections done (reclaimSeconds after the pass: its "${RECLAIM_DONE_MESSAGE}" log line, waited for at most ${RECLAIM_WAIT_MS / 1000} s) and ${z.settleSeconds} s of settling; rssMB = VmRSS; cpuPercent over ${z.cpuWindowSeconds} s; restRequests = the requests the service received from the idle daemon over the ${z.restWindowSeconds} s that begin with that window (restLeaseWrites: its lease's renewals; restRequestsPerHour: the rate, the hourly rescan's listing not included); stateWriteMs = wall time of the state file's last write (at the end of the restart's pass: the whole file, fsync included), from /status.`);
  if (s.scaleWalk) n.push('scaleWalk: walkTree alone, each run in a process of its own (bench/walk-alone.ts), every file vouched for as in a restart; lister = folders listed and files lstat-ed in the folder lister\'s worker, none = the same walk with LocalFs.listFolder answered on the main thread (readdir, then an asynchronous lstat per file, as the fakes answer it); CPU of every thread, split into the main thread, the threads started during the walk (the workers) and the others (libuv\'s pool, the collector\'s helpers); loopMaxBlockMs includes the time the process waited for a core (the machine\'s load).');
  if (s.office) n.push(`office: ${z.officePerFormat} files of each format (.xlsx, .pptx, .docx made by exceljs, pptxgenjs and docx; .csv, .tsv, .txt written; .odt, .ods, .odp, .rtf, .doc, .epub, .eml, .pdf copied from test/fixtures/office). throughput: one warm conversion worker, files one after another (one core), MB of the originals. large: each file converted alone in a process of its own (bench/convert-alone.ts), peak RSS = VmHWM of that process (main thread and worker), baseline = a small .csv. mirror and plain: \`dssync sync\` on its own service, conversion on (defaults) and off (every converted format skipped); plain is a share of .txt and .pdf only.`);
  if (s.pollLatency) n.push('pollLatency: a file changed in the backing folder of a bindfs (FUSE) mount, as a file server would; from just before the write to the service applying the new version\'s metadata (seen by polling: no event reaches the mount). daemonCpuPercent: the daemon over the sampling window, one core = 100. throughMount*: files written through the mount by this host afterwards (seen by events, as on a local disk).');
  return n;
}

async function main(): Promise<void> {
  const mode: BenchMode = process.env.BENCH_QUICK === '1' ? 'quick' : 'full';
  const named = process.argv.slice(2);
  const onlyEnv = named.length > 0 ? named : process.env.BENCH_ONLY?.split(',').map((s) => s.trim()).filter(Boolean);
  const known: readonly string[] = [...ALL, ...ON_DEMAND];
  for (const s of onlyEnv ?? []) if (!known.includes(s)) throw new Error(`BENCH_ONLY: unknown scenario "${s}" (known: ${known.join(', ')})`);
  const only = (onlyEnv ?? ALL) as Scenario[];
  const scaleRun = only.some((s) => (ON_DEMAND as readonly string[]).includes(s));
  const partial = only.length < ALL.length;
  const repo = fileURLToPath(new URL(import.meta.url.includes('/dist/bench/') ? '../../' : '../', import.meta.url));
  const out = process.env.BENCH_OUT ?? join(repo, 'bench', 'results');
  log(`mode ${mode}${partial ? `, only ${only.join(', ')}` : ''}; results to ${out}`);
  const report = await runBench(mode, only);
  await mkdir(out, { recursive: true });
  const md = toMarkdown(report);
  const json = `${JSON.stringify(report, null, 2)}\n`;
  const base = only.length === 1 && only[0] === 'scaleListing' ? `scale-listing-${mode}` : only.length === 1 && only[0] === 'office' ? `office-${mode}` : scaleRun ? `scale-${mode}` : partial ? `${mode}-partial` : mode;
  await writeFile(join(out, `${base}.json`), json);
  await writeFile(join(out, `${base}.md`), md);
  if (!partial && !scaleRun) {
    await writeFile(join(out, 'latest.json'), json);
    await writeFile(join(out, 'latest.md'), md);
  }
  process.stdout.write(md);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  main().catch((e: unknown) => {
    process.stderr.write(`bench failed: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
    process.exit(1);
  });
}

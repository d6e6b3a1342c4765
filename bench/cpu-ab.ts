/**
 * The CPU of a first mirror, per file and marginal, of this build against another, alternated
 * on one machine (issue 39.1; docs/performance.md, "Session 35"):
 *
 *   node dist/bench/cpu-ab.js [--base DIR] [--base-node-args "ARGS"] [--rounds N] [--small N] [--large N]
 *
 * Each round runs, for each build, `dssync sync` (default settings) of SMALL files in
 * SMALL/50 folders and of LARGE files in LARGE/100 folders (the bench's trees of seed 1,
 * 1–16 KiB a file, written once and left 3 s to age past the racy-timestamp window) to a new
 * data source with a new state, each run against an emulator of its own (20 ms a request) in a
 * child process apart, so that dssync's CPU is its own. The builds' order alternates from one
 * round to the next. A run's user and system CPU are the process's own (`process.cpuUsage()`
 * at its exit, all threads, read by a preload); its split by thread is sampled from /proc.
 * Marginal CPU per file = (CPU at LARGE − CPU at SMALL) / (LARGE − SMALL), per round; the
 * medians are printed as a Markdown table, the rounds as JSON lines before it.
 *
 * DIR: another checkout, built (`npm ci && npm run build` there); its `dist/src/cli/main.js`
 * runs with this checkout's node. Without it, this build alone. `--base-node-args`: node
 * options for the base's runs only (e.g. "--heap-growing-percent=50": this build with the
 * flag that wins over its own rule). BENCH_NODE_ARGS applies to both.
 *
 * Where the per-file cost goes, by two more measures (each distorts the CPU figures it runs
 * with, so run it apart from an A/B of CPU):
 * - `--strace`: each run under `strace -f -c` (every thread); then the marginal system calls
 *   per file by call, medians of the rounds (needs strace);
 * - `--alloc`: each run with V8's sampling heap profiler (every 4 KiB, the objects collected
 *   since counted too) on the main thread; then the marginal bytes allocated per file by part
 *   (profile-summary.ts's parts), medians of the rounds: what makes the collector's work.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runAlone } from './lib/alone.js';
import { BIN, runSync, writeConfig } from './lib/dssync.js';
import { startService } from './lib/service.js';
import type { CpuByThread, ThreadKind } from './lib/thread-cpu.js';
import { writeTree } from './lib/tree.js';
import { marginalPerFile, median } from './lib/util.js';
import { parseStraceSummary } from './lib/strace.js';
import { heapParts, type HeapNode } from './profile-summary.js';

const LATENCY_MS = 20;
/** What `/usr/bin/time` would say: the process's own CPU, every thread, at its exit. */
const CPU_AT_EXIT = `data:text/javascript,${encodeURIComponent(
  "import{writeFileSync}from'node:fs';import{isMainThread}from'node:worker_threads';const f=process.env.BENCH_CPU_AT_EXIT;if(isMainThread&&f)process.on('exit',()=>writeFileSync(f,JSON.stringify(process.cpuUsage())));",
)}`;
/** The main thread's allocations, sampled from the start with the collected ones kept, written at exit. */
const ALLOC_AT_EXIT = `data:text/javascript,${encodeURIComponent(
  "import{Session}from'node:inspector';import{writeFileSync}from'node:fs';import{isMainThread}from'node:worker_threads';const f=process.env.BENCH_ALLOC_AT_EXIT;if(isMainThread&&f){const s=new Session();s.connect();s.post('HeapProfiler.startSampling',{samplingInterval:4096,includeObjectsCollectedByMajorGC:true,includeObjectsCollectedByMinorGC:true});process.on('exit',()=>s.post('HeapProfiler.stopSampling',(e,r)=>{if(!e)writeFileSync(f,JSON.stringify(r.profile.head))}))}",
)}`;

interface Build {
  name: string;
  bin: string;
  nodeArgs: string[];
}

interface Run {
  userS: number;
  systemS: number;
  wallS: number;
  peakRssMB: number;
  byThread: CpuByThread;
  /** `--strace`: calls per system call. */
  calls?: Map<string, number>;
  /** `--alloc`: bytes allocated on the main thread, by part. */
  alloc?: Map<string, number>;
}

interface Probes {
  strace: boolean;
  alloc: boolean;
}

/** The child: an emulator at LATENCY_MS, until its parent says stop. */
async function serve(): Promise<void> {
  const emu = await startService({ latencyMs: LATENCY_MS });
  process.send?.({ url: emu.url });
  await new Promise((r) => process.once('message', r));
  await emu.close();
}

async function mirror(build: Build, share: string, dir: string, probes: Probes): Promise<Run> {
  const child: ChildProcess = fork(fileURLToPath(import.meta.url), ['serve'], { stdio: 'inherit' });
  try {
    const { url } = await new Promise<{ url: string }>((r) => child.once('message', (m) => r(m as { url: string })));
    await mkdir(dir, { recursive: true });
    const [cpuFile, straceFile, allocFile] = [join(dir, 'cpu.json'), join(dir, 'strace.txt'), join(dir, 'alloc.json')];
    const config = await writeConfig({ dir, baseUrl: url, share });
    const run = await runSync(config, { BENCH_CPU_AT_EXIT: cpuFile, ...(probes.alloc ? { BENCH_ALLOC_AT_EXIT: allocFile } : {}) }, [], {
      bin: build.bin,
      extraNodeArgs: ['--import', CPU_AT_EXIT, ...(probes.alloc ? ['--import', ALLOC_AT_EXIT] : []), ...build.nodeArgs],
      ...(probes.strace ? { wrap: ['strace', '-f', '-c', '-o', straceFile] } : {}),
    });
    if (run.code !== 0) throw new Error(`${build.name}: dssync sync exited ${String(run.code)}: ${run.stderr.slice(-2000)}`);
    const cpu = JSON.parse(readFileSync(cpuFile, 'utf8')) as NodeJS.CpuUsage;
    return {
      userS: cpu.user / 1e6,
      systemS: cpu.system / 1e6,
      wallS: run.seconds,
      peakRssMB: run.peakRssMB,
      byThread: run.cpuByThread,
      ...(probes.strace ? { calls: parseStraceSummary(readFileSync(straceFile, 'utf8')) } : {}),
      ...(probes.alloc ? { alloc: heapParts(JSON.parse(readFileSync(allocFile, 'utf8')) as HeapNode) } : {}),
    };
  } finally {
    child.send('stop');
  }
}

function option(name: string): string | undefined {
  const at = process.argv.indexOf(name);
  return at < 0 ? undefined : process.argv[at + 1];
}

const r3 = (x: number): number => Math.round(x * 1000) / 1000;

async function measure(): Promise<void> {
  const rounds = Number(option('--rounds') ?? 5);
  const small = Number(option('--small') ?? 2000);
  const large = Number(option('--large') ?? 10000);
  if (!(small > 0 && large > small && rounds > 0)) throw new Error('--small, --large and --rounds must be positive, --large above --small');
  const probes: Probes = { strace: process.argv.includes('--strace'), alloc: process.argv.includes('--alloc') };
  const builds: Build[] = [{ name: 'this', bin: BIN, nodeArgs: [] }];
  const base = option('--base');
  if (base !== undefined) {
    const bin = resolve(base, 'dist', 'src', 'cli', 'main.js');
    if (!existsSync(bin)) throw new Error(`--base: ${bin} is missing (build that checkout first)`);
    builds.push({ name: 'base', bin, nodeArgs: (option('--base-node-args') ?? '').split(' ').filter(Boolean) });
  }
  const tmp = mkdtempSync(join(tmpdir(), 'dssync-cpu-ab-'));
  try {
    const trees = { small: join(tmp, 'small'), large: join(tmp, 'large') };
    await writeTree(trees.small, { files: small, folders: Math.max(1, Math.round(small / 50)), minBytes: 1024, maxBytes: 16 * 1024, seed: 1 });
    await writeTree(trees.large, { files: large, folders: Math.max(1, Math.round(large / 100)), minBytes: 1024, maxBytes: 16 * 1024, seed: 1 });
    // Past the racy-timestamp rule's 2 s: no file is looked at twice for being new.
    await new Promise((r) => setTimeout(r, 3000));
    process.stderr.write(`cpu-ab: ${rounds} round(s) of ${small} and ${large} files, load ${loadavg().map((l) => l.toFixed(2)).join(' ')}\n`);
    const results = new Map<
      string,
      { marginalMs: number[]; userMarginalMs: number[]; smallMsPerFile: number[]; threadMarginalMs: Record<ThreadKind, number[]>; peakRssMB: number[]; calls: Array<Map<string, number>>; alloc: Array<Map<string, number>> }
    >();
    for (const b of builds) results.set(b.name, { marginalMs: [], userMarginalMs: [], smallMsPerFile: [], threadMarginalMs: { main: [], v8: [], pool: [], workers: [] }, peakRssMB: [], calls: [], alloc: [] });
    let n = 0;
    for (let round = 1; round <= rounds; round++) {
      for (const b of round % 2 === 1 ? builds : [...builds].reverse()) {
        const s = await mirror(b, trees.small, join(tmp, `run${++n}`), probes);
        const l = await mirror(b, trees.large, join(tmp, `run${++n}`), probes);
        const per = (x: number): number => (x * 1000) / (large - small);
        const res = results.get(b.name)!;
        res.marginalMs.push(per(l.userS + l.systemS - s.userS - s.systemS));
        res.userMarginalMs.push(per(l.userS - s.userS));
        res.smallMsPerFile.push(((s.userS + s.systemS) * 1000) / small);
        for (const k of Object.keys(res.threadMarginalMs) as ThreadKind[]) res.threadMarginalMs[k].push(per(l.byThread[k] - s.byThread[k]));
        res.peakRssMB.push(l.peakRssMB);
        if (s.calls && l.calls) res.calls.push(marginalPerFile(s.calls, l.calls, large - small));
        if (s.alloc && l.alloc) res.alloc.push(marginalPerFile(s.alloc, l.alloc, large - small));
        const view = (x: Run): Record<string, number> => ({ userS: r3(x.userS), systemS: r3(x.systemS), wallS: r3(x.wallS), peakRssMB: Math.round(x.peakRssMB) });
        process.stdout.write(`${JSON.stringify({ round, build: b.name, small: view(s), large: view(l), marginalMs: r3(res.marginalMs.at(-1)!) })}\n`);
      }
    }
    process.stdout.write(`\n| build | marginal CPU ms/file (user + system), median (rounds) | user only | main / V8's helpers / workers / libuv's pool | whole ${small}-file run ms/file | peak RSS at ${large}, MB |\n|---|---|---|---|---|---|\n`);
    for (const [name, r] of results) {
      const t = r.threadMarginalMs;
      process.stdout.write(
        `| ${name} | **${r3(median(r.marginalMs))}** (${r.marginalMs.map(r3).join(' / ')}) | ${r3(median(r.userMarginalMs))} | ${[t.main, t.v8, t.workers, t.pool].map((v) => r3(median(v))).join(' / ')} | ${r3(median(r.smallMsPerFile))} | ${Math.round(median(r.peakRssMB))} |\n`,
      );
    }
    if (probes.strace || probes.alloc) process.stdout.write('\n(with --strace or --alloc, the CPU above is the probes\' too; under --strace the threads and the peak are strace\'s)\n');
    if (probes.strace) process.stdout.write(medianTable('system calls per file (`strace -f -c`, every thread), marginal', 'calls', results, (r) => r.calls, 20));
    if (probes.alloc) process.stdout.write(medianTable("bytes allocated per file on the main thread (V8's sampling heap profiler, collected objects included), marginal", 'bytes', results, (r) => r.alloc, 20));
    process.stdout.write(`\nload at the end: ${loadavg().map((l) => l.toFixed(2)).join(' ')}\n`);
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

/** Medians of the rounds' per-file figures, by row, one column per build: the top rows by the first build's, then the rounds' totals. */
function medianTable<R>(title: string, unit: string, results: Map<string, R>, rounds: (r: R) => Array<Map<string, number>>, top: number): string {
  const sum = (m: Map<string, number>): number => [...m.values()].reduce((a, b) => a + b, 0);
  const medians = new Map<string, { rows: Map<string, number>; total: number }>();
  for (const [build, r] of results) {
    const names = new Set(rounds(r).flatMap((m) => [...m.keys()]));
    medians.set(build, { rows: new Map([...names].map((k) => [k, median(rounds(r).map((m) => m.get(k) ?? 0))])), total: median(rounds(r).map(sum)) });
  }
  const builds = [...medians.keys()];
  const first = medians.get(builds[0]!)?.rows ?? new Map<string, number>();
  const rows = [...first].sort((a, b) => b[1] - a[1]).slice(0, top).map(([k]) => k);
  const fmt = (x: number): string => (Math.abs(x) >= 100 ? x.toFixed(0) : x.toFixed(2));
  return [
    '',
    `### ${title}, ${unit} per file, medians`,
    '',
    `| | ${builds.join(' | ')} |`,
    `|---|${builds.map(() => '---:').join('|')}|`,
    ...rows.map((k) => `| ${k.replace(/\|/g, '\\|')} | ${builds.map((b) => fmt(medians.get(b)!.rows.get(k) ?? 0)).join(' | ')} |`),
    `| **all** | ${builds.map((b) => `**${fmt(medians.get(b)!.total)}**`).join(' | ')} |`,
    '',
  ].join('\n');
}

runAlone(() => (process.argv[2] === 'serve' ? serve() : measure()));

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
import { median } from './lib/util.js';

const LATENCY_MS = 20;
/** What `/usr/bin/time` would say: the process's own CPU, every thread, at its exit. */
const CPU_AT_EXIT = `data:text/javascript,${encodeURIComponent(
  "import{writeFileSync}from'node:fs';import{isMainThread}from'node:worker_threads';const f=process.env.BENCH_CPU_AT_EXIT;if(isMainThread&&f)process.on('exit',()=>writeFileSync(f,JSON.stringify(process.cpuUsage())));",
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
}

/** The child: an emulator at LATENCY_MS, until its parent says stop. */
async function serve(): Promise<void> {
  const emu = await startService({ latencyMs: LATENCY_MS });
  process.send?.({ url: emu.url });
  await new Promise((r) => process.once('message', r));
  await emu.close();
}

async function mirror(build: Build, share: string, dir: string): Promise<Run> {
  const child: ChildProcess = fork(fileURLToPath(import.meta.url), ['serve'], { stdio: 'inherit' });
  try {
    const { url } = await new Promise<{ url: string }>((r) => child.once('message', (m) => r(m as { url: string })));
    await mkdir(dir, { recursive: true });
    const cpuFile = join(dir, 'cpu.json');
    const config = await writeConfig({ dir, baseUrl: url, share });
    const run = await runSync(config, { BENCH_CPU_AT_EXIT: cpuFile }, [], { bin: build.bin, extraNodeArgs: ['--import', CPU_AT_EXIT, ...build.nodeArgs] });
    if (run.code !== 0) throw new Error(`${build.name}: dssync sync exited ${String(run.code)}: ${run.stderr.slice(-2000)}`);
    const cpu = JSON.parse(readFileSync(cpuFile, 'utf8')) as NodeJS.CpuUsage;
    return { userS: cpu.user / 1e6, systemS: cpu.system / 1e6, wallS: run.seconds, peakRssMB: run.peakRssMB, byThread: run.cpuByThread };
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
    const results = new Map<string, { marginalMs: number[]; userMarginalMs: number[]; smallMsPerFile: number[]; threadMarginalMs: Record<ThreadKind, number[]>; peakRssMB: number[] }>();
    for (const b of builds) results.set(b.name, { marginalMs: [], userMarginalMs: [], smallMsPerFile: [], threadMarginalMs: { main: [], v8: [], pool: [], workers: [] }, peakRssMB: [] });
    let n = 0;
    for (let round = 1; round <= rounds; round++) {
      for (const b of round % 2 === 1 ? builds : [...builds].reverse()) {
        const s = await mirror(b, trees.small, join(tmp, `run${++n}`));
        const l = await mirror(b, trees.large, join(tmp, `run${++n}`));
        const per = (x: number): number => (x * 1000) / (large - small);
        const res = results.get(b.name)!;
        res.marginalMs.push(per(l.userS + l.systemS - s.userS - s.systemS));
        res.userMarginalMs.push(per(l.userS - s.userS));
        res.smallMsPerFile.push(((s.userS + s.systemS) * 1000) / small);
        for (const k of Object.keys(res.threadMarginalMs) as ThreadKind[]) res.threadMarginalMs[k].push(per(l.byThread[k] - s.byThread[k]));
        res.peakRssMB.push(l.peakRssMB);
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
    process.stdout.write(`\nload at the end: ${loadavg().map((l) => l.toFixed(2)).join(' ')}\n`);
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

runAlone(() => (process.argv[2] === 'serve' ? serve() : measure()));

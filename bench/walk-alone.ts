/**
 * `walkTree` alone over a folder, in a process of its own (the scaleWalk scenario spawns it):
 *
 *   node dist/bench/walk-alone.js ROOT [--no-vouch] [--workers N] [--no-lister] [--ballast N]
 *
 * Prints one JSON line: wall, CPU of the process (every thread), CPU of the main thread,
 * of the threads started meanwhile (the folder listers' workers) and of the others (libuv's
 * pool, V8's helpers) from /proc/self/task, the longest event-loop block (monitorEventLoopDelay, 10 ms resolution), peak
 * RSS, files and folders seen, load average. With vouching on (the default), every file is
 * vouched for as in a restart over an unchanged tree: the walk keeps only its path.
 * `--workers N`: a folder lister of N workers instead of the default; `--no-lister`: each
 * folder listed on the main thread, as the fakes answer listFolder (local/fs.ts listFolderWith:
 * the worker's steps with asynchronous calls, one at a time; before issue 27.4 the walk's own
 * fallback stat-ed 8 at a time, so figures recorded before then are not comparable).
 */
import { loadavg } from 'node:os';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { createFilter } from '../src/local/filters.js';
import { FolderLister } from '../src/local/folder-lister.js';
import { listFolderWith, nodeFs, type LocalFs } from '../src/local/fs.js';
import { walkTree } from '../src/local/walk.js';
import { DEFAULT_INCLUDE } from '../src/config/schema.js';
import { ballast, runAlone, threadCpu } from './lib/alone.js';

function heapAfterMB(keep: unknown): number | undefined {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc === undefined) return undefined;
  gc();
  void keep;
  return Math.round(process.memoryUsage().heapUsed / 1e6);
}

async function main(): Promise<void> {
  const root = process.argv[2];
  const held = ballast();
  if (!root) throw new Error('usage: walk-alone ROOT [--no-vouch]');
  const vouchAll = !process.argv.includes('--no-vouch');
  const at = process.argv.indexOf('--workers');
  const workers = at > 0 ? Number(process.argv[at + 1]) : undefined;
  let fs: LocalFs = nodeFs;
  if (process.argv.includes('--no-lister')) fs = { ...nodeFs, listFolder: (path, o) => listFolderWith(nodeFs, path, o) };
  else if (workers !== undefined) {
    const lister = new FolderLister({ workers });
    fs = { ...nodeFs, listFolder: (path, o) => lister.list(path, o) };
  }
  const filter = createFilter({ include: DEFAULT_INCLUDE, exclude: [] });
  const loadStart = loadavg();
  const before = threadCpu();
  const cpu0 = process.cpuUsage();
  const loop = monitorEventLoopDelay({ resolution: 10 });
  loop.enable();
  const t0 = performance.now();
  // The main thread's heap at its largest (sampled every 100 ms), beside the process's peak RSS.
  let heapPeak = 0;
  const sampler = setInterval(() => {
    heapPeak = Math.max(heapPeak, process.memoryUsage().heapTotal);
  }, 100);
  const w = await walkTree(root, filter, { fs, vouch: vouchAll ? () => true : undefined });
  const wallMs = performance.now() - t0;
  clearInterval(sampler);
  loop.disable();
  const cpu = process.cpuUsage(cpu0);
  const after = threadCpu();
  // Threads started during the walk are the folder listers' workers; the others are
  // libuv's pool (the asynchronous lstats) and V8's helpers (the collector).
  let mainMs = 0;
  let newMs = 0;
  let oldMs = 0;
  for (const [tid, t] of after) {
    const was = before.get(tid);
    const ms = t.ms - (was?.ms ?? 0);
    if (tid === process.pid) mainMs = ms;
    else if (was === undefined) newMs += ms;
    else oldMs += ms;
  }
  const out = {
    root,
    vouch: vouchAll,
    lister: fs.listFolder === undefined ? 'none' : `${workers ?? 'default'} worker(s)`,
    files: w.files.size + w.vouched.size,
    folders: w.dirCount,
    errors: w.errors.length,
    wallS: +(wallMs / 1000).toFixed(2),
    cpuS: +((cpu.user + cpu.system) / 1e6).toFixed(2),
    userS: +(cpu.user / 1e6).toFixed(2),
    systemS: +(cpu.system / 1e6).toFixed(2),
    mainThreadS: +(mainMs / 1000).toFixed(2),
    workerThreadsS: +(newMs / 1000).toFixed(2),
    poolAndGcThreadsS: +(oldMs / 1000).toFixed(2),
    loopMaxBlockMs: +(loop.max / 1e6).toFixed(1),
    peakRssMB: Math.round(process.resourceUsage().maxRSS / 1024),
    mainHeapPeakMB: Math.round(heapPeak / 1e6),
    /** Heap held after a full collection (with --expose-gc), the walk's result still referenced. */
    heapAfterMB: heapAfterMB(w),
    loadAvg: [loadStart[0] ?? 0, loadavg()[0] ?? 0].map((l) => +l.toFixed(2)),
  };
  process.stdout.write(`${JSON.stringify({ ...out, ballast: held?.size ?? 0 })}\n`);
}

runAlone(main);

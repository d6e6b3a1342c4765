/**
 * The watcher's set-up alone (`watchFolders`, local/watch/folder-watch.ts) over a folder, in a
 * process of its own: the part of a daemon's start that watches every folder before the
 * first pass.
 *
 *   node --expose-gc dist/bench/watch-alone.js ROOT [--ballast N]
 *
 * Prints one JSON line: folders watched, wall, CPU of the process and of its main thread,
 * the longest event-loop block, RSS and heap (after a full collection) before and after.
 * Takes one inotify watch per folder: mind fs.inotify.max_user_watches (shared by every
 * process of the user).
 */
import { loadavg } from 'node:os';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { DEFAULT_INCLUDE } from '../src/config/schema.js';
import { createFilter } from '../src/local/filters.js';
import { watchFolders } from '../src/local/watch/folder-watch.js';
import { realClock } from '../src/time/clock.js';
import { ballast, mainThreadCpuMs, runAlone } from './lib/alone.js';

function heapMB(): number {
  (globalThis as { gc?: () => void }).gc?.();
  return Math.round(process.memoryUsage().heapUsed / 1e6);
}

async function main(): Promise<void> {
  const root = process.argv[2];
  const held = ballast();
  if (!root) throw new Error('usage: watch-alone ROOT');
  const filter = createFilter({ include: DEFAULT_INCLUDE, exclude: [] });
  const load0 = loadavg()[0] ?? 0;
  const heap0 = heapMB();
  const rss0 = process.memoryUsage().rss;
  const main0 = mainThreadCpuMs();
  const cpu0 = process.cpuUsage();
  const loop = monitorEventLoopDelay({ resolution: 10 });
  loop.enable();
  const t0 = performance.now();
  let errors = 0;
  const w = await watchFolders({
    root,
    filter: (p, d) => filter.includes(p, d),
    emit: () => undefined,
    checkRoot: () => undefined,
    onWatchError: () => errors++,
    clock: realClock,
  });
  const wallMs = performance.now() - t0;
  loop.disable();
  const cpu = process.cpuUsage(cpu0);
  const mainMs = mainThreadCpuMs() - main0;
  const out = {
    root,
    folders: w.watchedDirs(),
    errors,
    wallS: +(wallMs / 1000).toFixed(2),
    cpuS: +((cpu.user + cpu.system) / 1e6).toFixed(2),
    userS: +(cpu.user / 1e6).toFixed(2),
    systemS: +(cpu.system / 1e6).toFixed(2),
    mainThreadS: +(mainMs / 1000).toFixed(2),
    loopMaxBlockMs: +(loop.max / 1e6).toFixed(1),
    rssAddedMB: Math.round((process.memoryUsage().rss - rss0) / 1e6),
    heapAddedMB: heapMB() - heap0,
    peakRssMB: Math.round(process.resourceUsage().maxRSS / 1024),
    loadAvg: [load0, loadavg()[0] ?? 0].map((l) => +l.toFixed(2)),
  };
  w.close();
  process.stdout.write(`${JSON.stringify({ ...out, ballast: held?.size ?? 0 })}\n`);
}

runAlone(main);

/**
 * `node dist/bench/poll-compare.js [files...]`: chokidar's polling mode against dssync's
 * stat-walk poller on a real FUSE mount (bindfs over a backing folder), at each size given
 * (default 10000 100000). Changes are made in the backing folder, as a file server would.
 * Figures: time to be ready, CPU per second while polling (one core = 100 %), and the time
 * a change in the backing folder takes to be seen. Needs bindfs and /dev/fuse (root).
 * The figures and the choice made from them are in docs/performance.md.
 */
import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { watch } from 'chokidar';
import { Poller } from '../src/local/watch/poller.js';
import { nodeFs } from '../src/local/fs.js';
import { realClock } from '../src/time/clock.js';

const cpuMs = (): number => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

async function makeTree(back: string, files: number): Promise<void> {
  const perDir = 100;
  for (let d = 0; d * perDir < files; d++) {
    const dir = join(back, `d${Math.floor(d / 50)}`, `s${d}`);
    await mkdir(dir, { recursive: true });
    const n = Math.min(perDir, files - d * perDir);
    await Promise.all(Array.from({ length: n }, (_, k) => writeFile(join(dir, `f${k}.txt`), `file ${d}/${k}\n`)));
  }
}

async function measureChokidar(mnt: string, back: string, intervalMs: number, budgetS: number): Promise<Record<string, number | string>> {
  const t0 = Date.now();
  const c0 = cpuMs();
  const w = watch(mnt, { ignoreInitial: true, usePolling: true, interval: intervalMs, binaryInterval: intervalMs, alwaysStat: true });
  const ready = await Promise.race([new Promise<boolean>((r) => w.once('ready', () => r(true))), sleep(budgetS * 1000).then(() => false)]);
  if (!ready) {
    await w.close();
    return { readyS: `not ready after ${budgetS} s`, cpuDuringStartS: (cpuMs() - c0) / 1000 };
  }
  const readyMs = Date.now() - t0;
  const startCpu = cpuMs() - c0;
  // Idle polling CPU over two intervals.
  const c1 = cpuMs();
  const t1 = Date.now();
  await sleep(2 * intervalMs);
  const idleCpuPct = ((cpuMs() - c1) / (Date.now() - t1)) * 100;
  // A change in the backing folder: how long until seen.
  const target = join(back, 'd0', 's0', 'f0.txt');
  let seenAt = 0;
  w.on('change', (p: string) => {
    if (p.endsWith('/d0/s0/f0.txt')) seenAt = Date.now();
  });
  const changedAt = Date.now();
  await writeFile(target, 'changed on the server side, a longer content\n');
  for (let i = 0; i < 600 && !seenAt; i++) await sleep(100);
  await w.close();
  return { readyS: readyMs / 1000, startCpuS: startCpu / 1000, idleCpuPct: Math.round(idleCpuPct * 10) / 10, changeSeenS: seenAt ? (seenAt - changedAt) / 1000 : 'not within 60 s' };
}

async function measurePoller(mnt: string, back: string, intervalMs: number, budgetPercent: number): Promise<Record<string, number | string>> {
  let seenAt = 0;
  const poller = new Poller({
    root: mnt,
    subtrees: [''],
    filter: () => true,
    emit: (e) => {
      if (e.path === 'd0/s0/f0.txt') seenAt = Date.now();
    },
    intervalMs,
    budgetPercent,
    fs: nodeFs,
    clock: realClock,
    cpuMs,
  });
  const t0 = Date.now();
  const c0 = cpuMs();
  await poller.cycleOnce(); // the baseline
  const baselineMs = Date.now() - t0;
  const baselineCpu = cpuMs() - c0;
  poller.start();
  const changedAt = Date.now();
  await writeFile(join(back, 'd0', 's0', 'f0.txt'), 'changed on the server side, a longer content\n');
  for (let i = 0; i < 1200 && !seenAt; i++) await sleep(100);
  // Steady state: CPU over the next cycles.
  const c1 = cpuMs();
  const t1 = Date.now();
  await sleep(3 * intervalMs);
  const steadyCpuPct = ((cpuMs() - c1) / (Date.now() - t1)) * 100;
  const s = poller.status();
  await poller.stop();
  return {
    baselineS: baselineMs / 1000,
    baselineCpuS: baselineCpu / 1000,
    cycleS: (s.lastCycleMs ?? 0) / 1000,
    cycleCpuS: (s.lastCycleCpuMs ?? 0) / 1000,
    achievedIntervalS: (s.achievedIntervalMs ?? 0) / 1000,
    steadyCpuPct: Math.round(steadyCpuPct * 10) / 10,
    changeSeenS: seenAt ? (seenAt - changedAt) / 1000 : 'not within 120 s',
    files: s.lastFiles,
  };
}

async function main(): Promise<void> {
  const sizes = process.argv.slice(2).map(Number).filter((n) => n > 0);
  const intervalMs = 10_000;
  for (const files of sizes.length ? sizes : [10_000, 100_000]) {
    const dir = await mkdtemp(join(tmpdir(), 'dssync-pollcmp-'));
    const back = join(dir, 'back');
    const mnt = join(dir, 'mnt');
    await mkdir(back);
    await mkdir(mnt);
    await makeTree(back, files);
    execFileSync('bindfs', [back, mnt]);
    try {
      const poller = await measurePoller(mnt, back, intervalMs, 5);
      console.log(JSON.stringify({ files, tool: 'dssync stat walk (budget 5 %)', intervalS: intervalMs / 1000, ...poller }));
      const chok = await measureChokidar(mnt, back, intervalMs, 300);
      console.log(JSON.stringify({ files, tool: 'chokidar usePolling', intervalS: intervalMs / 1000, ...chok }));
    } finally {
      execFileSync('fusermount', ['-uz', mnt]); // lazy: chokidar's last stat may still hold it
      await rm(dir, { recursive: true, force: true });
    }
  }
}

await main();

/**
 * scaleWalk (issue 16): `walkTree` alone over the scale tree (sizes.scaleFiles in
 * sizes.scaleFolders), each run in a process of its own (bench/walk-alone.ts), every file
 * vouched for as in a restart over the unchanged tree. Two ways of walking, alternated
 * `sizes.repeat` times (at least twice):
 *
 * - `lister`: the real disk's LocalFs, folders listed and files `lstat`ed in the folder
 *   lister's worker (local/folder-lister.ts);
 * - `noLister`: the same walk with listFolder answered on the main thread as the fakes answer
 *   it (local/fs.ts listFolderWith: the worker's steps with asynchronous calls, one at a
 *   time, on libuv's pool); before issue 27.4 the walk's own fallback (8 at a time).
 *
 * The tree is BENCH_SCALE_DIR's (its share/, never written) when that folder holds a kept
 * set, else one written in the bench's temp folder. The second and later runs find the
 * tree's inodes in the kernel's cache; the first may not.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { BenchContext } from '../lib/context.js';
import { keptSetPaths } from '../lib/kept-set.js';
import { writeTree } from '../lib/tree.js';
import { log, median, round } from '../lib/util.js';

/** One run's line from walk-alone.js. */
export interface WalkRun {
  lister: string;
  files: number;
  folders: number;
  wallS: number;
  cpuS: number;
  userS: number;
  systemS: number;
  mainThreadS: number;
  workerThreadsS: number;
  poolAndGcThreadsS: number;
  loopMaxBlockMs: number;
  peakRssMB: number;
  mainHeapPeakMB: number;
  loadAvg: number[];
}

export interface ScaleWalkFigures {
  tree: string;
  files: number;
  folders: number;
  runs: WalkRun[];
  /** Medians per way of walking. */
  listerWallS: number;
  listerCpuS: number;
  listerMainThreadS: number;
  listerPeakRssMB: number;
  noListerWallS: number;
  noListerCpuS: number;
  noListerMainThreadS: number;
  noListerPeakRssMB: number;
}

const WALK_ALONE = fileURLToPath(new URL('../walk-alone.js', import.meta.url));

function walkAlone(root: string, args: readonly string[]): Promise<WalkRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [WALK_ALONE, root, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.on('error', reject);
    child.on('exit', (code) => {
      if (code !== 0) reject(new Error(`walk-alone ${args.join(' ')} exited with ${String(code)}`));
      else {
        const { root: _root, vouch: _vouch, ...run } = JSON.parse(out) as WalkRun & { root: string; vouch: boolean };
        resolve(run);
      }
    });
  });
}

export async function runScaleWalk(ctx: BenchContext): Promise<ScaleWalkFigures> {
  const { sizes } = ctx;
  const kept = process.env.BENCH_SCALE_DIR;
  let tree: string;
  if (kept && existsSync(keptSetPaths(kept).marker)) {
    tree = keptSetPaths(kept).share;
  } else {
    tree = join(ctx.tmp, 'scale-walk');
    log(`scaleWalk: writing a tree of ${sizes.scaleFiles} files in ${sizes.scaleFolders} folders`);
    await writeTree(tree, { files: sizes.scaleFiles, folders: sizes.scaleFolders, minBytes: 64, maxBytes: 256, seed: 2 });
  }
  const runs: WalkRun[] = [];
  for (let i = 0; i < Math.max(2, sizes.repeat); i++) {
    for (const args of [[], ['--no-lister']]) {
      const r = await walkAlone(tree, args);
      log(`scaleWalk ${r.lister}: ${r.files} files, wall ${r.wallS} s, CPU ${r.cpuS} s (main thread ${r.mainThreadS} s, workers ${r.workerThreadsS} s, pool and GC ${r.poolAndGcThreadsS} s), loop block ${r.loopMaxBlockMs} ms, peak RSS ${r.peakRssMB} MB, load ${r.loadAvg.join(' → ')}`);
      runs.push(r);
    }
  }
  const pick = (lister: boolean, f: (r: WalkRun) => number): number => round(median(runs.filter((r) => (r.lister === 'none') !== lister).map(f)), 2);
  return {
    tree,
    files: runs[0]?.files ?? 0,
    folders: runs[0]?.folders ?? 0,
    runs,
    listerWallS: pick(true, (r) => r.wallS),
    listerCpuS: pick(true, (r) => r.cpuS),
    listerMainThreadS: pick(true, (r) => r.mainThreadS),
    listerPeakRssMB: pick(true, (r) => r.peakRssMB),
    noListerWallS: pick(false, (r) => r.wallS),
    noListerCpuS: pick(false, (r) => r.cpuS),
    noListerMainThreadS: pick(false, (r) => r.mainThreadS),
    noListerPeakRssMB: pick(false, (r) => r.peakRssMB),
  };
}

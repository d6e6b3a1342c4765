/**
 * scale (issue 16): a drive of a million files.
 *
 * 1. The cost curve of the state (in this process, on the real file system): for each size
 *    of sizes.scaleCurve, a state of that many files is written as a snapshot and loaded
 *    (loadMs), then durable writes are made as the engine makes them (an upload's changes and
 *    its intent, then beginIntent waits for the fsync): p50/p99/max of a durable write, and
 *    the longest event-loop block seen meanwhile; then one fold (a new snapshot, in the
 *    background) with durable writes going on during it.
 * 2. The daemon over a tree of sizes.scaleFiles in sizes.scaleFolders (the restart
 *    scenario's machinery): the first mirror completes (setup, no latency: its time and peak
 *    RSS), then `dssync run` restarts over the unchanged tree: seconds, writes, content read,
 *    peak RSS; then idle RSS and the state's load time.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { StateCodec } from '../../src/state/encoder.js';
import { newMappingState, newState } from '../../src/state/validate.js';
import type { FileEntry } from '../../src/state/schema.js';
import { StateStore } from '../../src/state/store.js';
import type { BenchContext } from '../lib/context.js';
import { log, quantile, round } from '../lib/util.js';
import { runScaleMemory, type MemoryPoint } from './scale-memory.js';
import { runRestart, type FootprintFigures, type RestartFigures } from './restart.js';

export interface CurvePoint {
  files: number;
  snapshotMB: number;
  loadMs: number;
  /** CPU time (user + system) of that load: what it costs on an idle machine. */
  loadCpuMs: number;
  /** Longest event-loop delay during the load (ms). */
  loadMaxBlockMs: number;
  /** Durable writes measured (each: 3 file changes + an intent, fsync'd). */
  writes: number;
  writeP50Ms: number;
  writeP99Ms: number;
  writeMaxMs: number;
  /** Longest event-loop delay seen during those writes (ms). */
  loopMaxBlockMs: number;
  /** A fold (a new snapshot written in the background): the mean of FOLDS. */
  foldMs: number;
  foldMaxBlockMs: number;
  /** CPU time of the fold (and of the writes made meanwhile) (ms). */
  foldCpuMs: number;
  /** The longest stretch of the fold's own encoding between two yields, as the store measures it (ms). */
  foldEncodeMaxBlockMs: number;
  /** Durable writes made while the folds ran (FOLDS of them, one after the other). */
  writesDuringFold: number;
  writeDuringFoldP50Ms: number;
  writeDuringFoldP99Ms: number;
  writeDuringFoldMaxMs: number;
  /** Heap used by the loaded state, per file (bytes). */
  heapBytesPerFile: number;
}

export interface ScaleFigures {
  curve: CurvePoint[];
  memory: MemoryPoint[];
  restart?: RestartFigures;
  footprint?: FootprintFigures;
}

const WRITES = 200;
/** Folds measured per size, back to back: the writes made during them are pooled. */
const FOLDS = 5;

/**
 * A file's entry as a pass records it (executor.ts entryFor): with the racy check's stat
 * fields, and the syncedAt of its batch (the 20 files of an upload are recorded together).
 */
function entry(i: number, v = 0): FileEntry {
  const syncedAtMs = 1_700_000_000_000 + Math.floor(i / 20) * 1000 + v;
  const mtimeMs = 1_700_000_000_000.123 + i * 1000 + v;
  return {
    documentId: `0f8e4c1a-7b2d-4e5f-9a6b-${String(i).padStart(12, '0')}`,
    size: 512 + (i % 1536),
    mtimeMs,
    sha256: (i + v).toString(16).padStart(64, 'c'),
    syncedAt: new Date(syncedAtMs).toISOString(),
    hashedAt: syncedAtMs - 2_000,
    ctimeMs: mtimeMs + 0.5,
    dev: 2049,
    ino: 100_000 + i,
  };
}

/** The same layout as the bench trees: `folder-<k>/…/file-<i>.txt`. */
function pathOf(i: number, folders: number): string {
  const f = i % folders;
  return `dept-${f % 50}/folder-${f}/document-${i}.txt`;
}

/**
 * Writes the state of `files` files directly as a snapshot: the curve is about the store at
 * that size, not how it got there. A function of its own, so that nothing of the state
 * written is still referenced (by a suspended frame) when the loaded one is weighed.
 */
async function writeSnapshot(statePath: string, files: number, folders: number): Promise<void> {
  const s = newState();
  const m = newMappingState('ds-bench', '/srv/share');
  for (let i = 0; i < files; i++) m.files.set(pathOf(i, folders), entry(i));
  s.mappings['m'] = m;
  await writeFile(statePath, Buffer.concat(new StateCodec().encode(s)), { mode: 0o600 });
}

/**
 * The JavaScript heap in use and the memory of ArrayBuffers (typed arrays, Buffers), which
 * lies outside the heap: the state's files table keeps its columns there (file-table.ts).
 */
function heapAndBuffers(): number {
  const u = process.memoryUsage();
  return u.heapUsed + u.arrayBuffers;
}

async function curvePoint(tmp: string, files: number): Promise<CurvePoint> {
  const dir = await mkdtemp(join(tmp, `curve-${files}-`));
  const statePath = join(dir, 'state.json');
  const folders = Math.max(1, Math.round(files / 20));
  await writeSnapshot(statePath, files, folders);
  global.gc?.();
  global.gc?.();
  const heap0 = heapAndBuffers();
  const cpu0 = process.cpuUsage();
  const loadLoop = monitorEventLoopDelay({ resolution: 5 });
  loadLoop.enable();
  const store = await StateStore.open(statePath, { writeDelayMs: 5 });
  loadLoop.disable();
  const cpu = process.cpuUsage(cpu0);
  const loadCpuMs = (cpu.user + cpu.system) / 1000;
  global.gc?.();
  global.gc?.();
  const heapBytesPerFile = (heapAndBuffers() - heap0) / files;
  const loadMs = store.readStats?.loadMs ?? NaN;
  const snapshotMB = (store.readStats?.bytes ?? 0) / 1024 / 1024;

  let v = 1;
  const oneWrite = async (): Promise<number> => {
    const i = (v * 7919) % files;
    for (let k = 0; k < 3; k++) store.setFile('m', pathOf((i + k) % files, folders), entry((i + k) % files, v));
    const t0 = performance.now();
    const id = await store.beginIntent('m', { kind: 'upload', files: [{ path: pathOf(i, folders), size: 1, mtimeMs: v, sha256: 'ab'.repeat(32) }] });
    const ms = performance.now() - t0;
    store.endIntent('m', id);
    v++;
    return ms;
  };

  for (let k = 0; k < 20; k++) await oneWrite(); // warm-up: compiled code, settled heap
  global.gc?.();
  const loop = monitorEventLoopDelay({ resolution: 5 });
  loop.enable();
  const times: number[] = [];
  for (let k = 0; k < WRITES; k++) times.push(await oneWrite());
  loop.disable();
  const loopMaxBlockMs = loop.max / 1e6;

  // Folds, with durable writes going on meanwhile (forced: the journal is small here).
  const foldLoop = monitorEventLoopDelay({ resolution: 5 });
  foldLoop.enable();
  const fcpu0 = process.cpuUsage();
  const f0 = performance.now();
  const during: number[] = [];
  for (let k = 0; k < FOLDS; k++) {
    let folded = false;
    const fold = store.fold().then(() => (folded = true));
    while (!folded) during.push(await oneWrite());
    await fold;
  }
  const foldMs = (performance.now() - f0) / FOLDS;
  const fcpu = process.cpuUsage(fcpu0);
  foldLoop.disable();
  const foldEncodeMaxBlockMs = store.writeStats.snapshot.lastMaxBlockMs;
  await store.close();
  await rm(dir, { recursive: true, force: true });
  const p: CurvePoint = {
    files,
    snapshotMB: round(snapshotMB, 1),
    loadMs: round(loadMs, 0),
    loadCpuMs: round(loadCpuMs, 0),
    loadMaxBlockMs: round(loadLoop.max / 1e6, 1),
    writes: times.length,
    writeP50Ms: round(quantile(times, 0.5), 1),
    writeP99Ms: round(quantile(times, 0.99), 1),
    writeMaxMs: round(Math.max(...times), 1),
    loopMaxBlockMs: round(loopMaxBlockMs, 1),
    foldMs: round(foldMs, 0),
    foldMaxBlockMs: round(foldLoop.max / 1e6, 1),
    foldCpuMs: round((fcpu.user + fcpu.system) / 1000 / FOLDS, 0),
    foldEncodeMaxBlockMs: round(foldEncodeMaxBlockMs, 1),
    writesDuringFold: during.length,
    writeDuringFoldP50Ms: during.length ? round(quantile(during, 0.5), 1) : 0,
    writeDuringFoldP99Ms: during.length ? round(quantile(during, 0.99), 1) : 0,
    writeDuringFoldMaxMs: during.length ? round(Math.max(...during), 1) : 0,
    heapBytesPerFile: round(heapBytesPerFile, 0),
  };
  log(`scale: state of ${files} files: load ${p.loadMs} ms (CPU ${p.loadCpuMs} ms, loop block ${p.loadMaxBlockMs} ms), durable write p50/p99/max ${p.writeP50Ms}/${p.writeP99Ms}/${p.writeMaxMs} ms, loop block ${p.loopMaxBlockMs} ms, fold ${p.foldMs} ms (CPU ${p.foldCpuMs} ms, loop block ${p.foldMaxBlockMs} ms, encoding slice max ${p.foldEncodeMaxBlockMs} ms, ${p.writesDuringFold} writes during ${FOLDS} folds, p50/p99/max ${p.writeDuringFoldP50Ms}/${p.writeDuringFoldP99Ms}/${p.writeDuringFoldMaxMs} ms), heap ${p.heapBytesPerFile} B/file`);
  return p;
}

export async function runScale(ctx: BenchContext, parts: { curve: boolean; memory: boolean; daemon: boolean }): Promise<ScaleFigures> {
  const { sizes } = ctx;
  const out: ScaleFigures = { curve: [], memory: [] };
  if (parts.curve) for (const n of sizes.scaleCurve) out.curve.push(await curvePoint(ctx.tmp, n));
  if (parts.memory) for (const n of sizes.scaleMemory) out.memory.push(await runScaleMemory(ctx, n));
  if (parts.daemon) {
    const { restart, footprint } = await runRestart(ctx, { name: 'scale', files: sizes.scaleFiles, folders: sizes.scaleFolders, minBytes: 64, maxBytes: 256, seeded: sizes.scaleSeeded, setupCapRps: sizes.scaleSetupCapRps, keptDir: process.env.BENCH_SCALE_DIR || undefined });
    out.restart = restart;
    out.footprint = footprint;
  }
  return out;
}

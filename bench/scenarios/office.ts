/**
 * office (issue 35.8): a mixed share of real office files (bench/lib/office-share.ts).
 *
 * - throughput: each converted format's files through one warm conversion worker, one after
 *   another (one core): files/s and MB/s of the originals;
 * - large: a workbook of `officeLargeXlsxMB` MB and a deck of `officeLargeSlides` slides,
 *   each converted alone in a process of its own (bench/convert-alone.ts): peak RSS of the
 *   process (main thread and worker), against a small file's;
 * - mirror: `dssync sync` of the mixed share, conversion on (the defaults) and off (every
 *   converted format skipped: what the service reads alone), each on its own service;
 * - plain: the same for a share of .txt and .pdf only, which conversion must not slow.
 * The mirrors run `repeat` times, on and off in turn; the median run is reported.
 */
import { spawn } from 'node:child_process';
import { mkdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { FORMATS } from '../../src/convert/formats.js';
import { convertIsolated } from '../../src/convert/isolated.js';
import { DEFAULT_LIMITS } from '../../src/convert/limits.js';
import { conversionOf } from '../../src/convert/policy.js';
import type { BenchContext } from '../lib/context.js';
import { runSync, writeConfig } from '../lib/dssync.js';
import { writeLargeXlsx, writeOfficeShare, writePptx } from '../lib/office-share.js';
import { dataSourceId, startService } from '../lib/service.js';
import { log, round } from '../lib/util.js';

const CONVERT_ALONE = fileURLToPath(new URL('../convert-alone.js', import.meta.url));

export interface Throughput {
  files: number;
  MB: number;
  seconds: number;
  filesPerSecond: number;
  MBPerSecond: number;
  failed: number;
}

export interface AloneRun {
  file: string;
  inputMB: number;
  ok: boolean;
  reason?: string;
  notes?: string[];
  seconds: number;
  markdownMB: number;
  peakRssMB: number;
}

export interface MirrorRun {
  files: number;
  sent: number;
  seconds: number;
  msPerFileSent: number;
  cpuSeconds: number;
  peakRssMB: number;
  documents: number;
  /** Every run's wall seconds (the median run's figures are shown). */
  runsSeconds?: number[];
}

export interface OfficeFigures {
  perFormat: number;
  shareMB: number;
  generateSeconds: number;
  throughput: Record<string, Throughput>;
  large: { baseline: AloneRun; xlsx: AloneRun; pptx: AloneRun };
  mirror: { on: MirrorRun; off: MirrorRun };
  plain: { on: MirrorRun; off: MirrorRun };
}

/** Every extension converted by default, skipped: conversion off. */
const CONVERSION_OFF = Object.fromEntries(Object.entries(FORMATS).filter(([, f]) => f.policy === 'convert').map(([ext]) => [ext, 'skip']));

export async function runOffice(ctx: BenchContext): Promise<OfficeFigures> {
  const { sizes } = ctx;
  const root = join(ctx.tmp, 'office');
  const mixed = join(root, 'mixed');
  const t0 = performance.now();
  const byExt = await writeOfficeShare(mixed, sizes.officePerFormat);
  const plain = join(root, 'plain');
  await writeOfficeShare(plain, sizes.officePerFormat * 7, ['.txt', '.pdf']);
  const largeXlsx = join(root, 'large', 'large.xlsx');
  const largePptx = join(root, 'large', 'large.pptx');
  await mkdir(join(root, 'large'), { recursive: true });
  await writeLargeXlsx(largeXlsx, sizes.officeLargeXlsxMB * 1e6, 7);
  await writePptx(largePptx, 8, sizes.officeLargeSlides);
  const generateSeconds = (performance.now() - t0) / 1000;
  let shareBytes = 0;
  for (const rels of byExt.values()) for (const rel of rels) shareBytes += (await stat(join(mixed, rel))).size;
  log(`office: mixed share of ${[...byExt.values()].flat().length} files (${(shareBytes / 1e6).toFixed(1)} MB) and the large files made in ${generateSeconds.toFixed(1)} s`);

  const throughput: Record<string, Throughput> = {};
  for (const [ext, rels] of byExt) {
    const conversion = conversionOf(rels[0]!, undefined);
    if (conversion === undefined) continue;
    const files = await Promise.all(rels.map((rel) => readFile(join(mixed, rel))));
    await convertIsolated(conversion.converter, files[0]!, DEFAULT_LIMITS); // the worker warm, as in a pass
    let failed = 0;
    const t = performance.now();
    for (const bytes of files) if (!(await convertIsolated(conversion.converter, bytes, DEFAULT_LIMITS)).ok) failed++;
    const seconds = (performance.now() - t) / 1000;
    const MB = files.reduce((n, b) => n + b.length, 0) / 1e6;
    throughput[ext] = { files: files.length, MB: round(MB, 3), seconds: round(seconds, 3), filesPerSecond: round(files.length / seconds, 1), MBPerSecond: round(MB / seconds, 2), failed };
    log(`office: ${ext} ${files.length} files, ${(files.length / seconds).toFixed(1)} files/s, ${(MB / seconds).toFixed(2)} MB/s${failed ? `, ${failed} failed` : ''}`);
  }

  const large = {
    baseline: await convertAlone(join(mixed, byExt.get('.csv')![0]!)),
    xlsx: await convertAlone(largeXlsx),
    pptx: await convertAlone(largePptx),
  };
  for (const [k, r] of Object.entries(large)) log(`office: ${k} ${r.inputMB.toFixed(1)} MB alone: ${r.ok ? 'converted' : r.reason}, ${r.seconds.toFixed(1)} s, peak RSS ${r.peakRssMB} MB`);

  const files = [...byExt.values()].flat().length;
  const plainFiles = sizes.officePerFormat * 7 * 2;
  const runs: Record<'mixed-on' | 'mixed-off' | 'plain-on' | 'plain-off', MirrorRun[]> = { 'mixed-on': [], 'mixed-off': [], 'plain-on': [], 'plain-off': [] };
  // On and off in turn, each `repeat` times: the median of each (a shared machine's load moves).
  for (let r = 0; r < sizes.repeat; r++) {
    const order = r % 2 === 0 ? (['on', 'off'] as const) : (['off', 'on'] as const);
    for (const k of order) runs[`mixed-${k}`].push(await mirrorRun(ctx, `mixed-${k}-${r}`, mixed, files, k === 'on' ? {} : { formats: CONVERSION_OFF }));
    for (const k of order) runs[`plain-${k}`].push(await mirrorRun(ctx, `plain-${k}-${r}`, plain, plainFiles, k === 'on' ? {} : { formats: CONVERSION_OFF }));
  }
  return {
    perFormat: sizes.officePerFormat,
    shareMB: round(shareBytes / 1e6, 1),
    generateSeconds: round(generateSeconds, 1),
    throughput,
    large,
    mirror: { on: medianRun(runs['mixed-on']), off: medianRun(runs['mixed-off']) },
    plain: { on: medianRun(runs['plain-on']), off: medianRun(runs['plain-off']) },
  };
}

/** The run of median wall time, with every run's seconds. */
function medianRun(runs: MirrorRun[]): MirrorRun {
  const sorted = [...runs].sort((a, b) => a.seconds - b.seconds);
  return { ...sorted[Math.floor((sorted.length - 1) / 2)]!, runsSeconds: runs.map((r) => r.seconds) };
}

async function convertAlone(file: string): Promise<AloneRun> {
  const out = await new Promise<string>((resolve, reject) => {
    const child = spawn(process.execPath, [CONVERT_ALONE, file], { stdio: ['ignore', 'pipe', 'inherit'] });
    let text = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (text += d));
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 ? resolve(text) : reject(new Error(`convert-alone ${file} exited with ${String(code)}`))));
  });
  const r = JSON.parse(out) as Omit<AloneRun, 'file'>;
  return { file: file.split('/').pop()!, ...r, inputMB: round(r.inputMB, 1), seconds: round(r.seconds, 2), markdownMB: round(r.markdownMB, 2) };
}

async function mirrorRun(ctx: BenchContext, name: string, share: string, files: number, mapping: Record<string, unknown>): Promise<MirrorRun> {
  const dir = join(ctx.tmp, 'office', name);
  await mkdir(dir, { recursive: true });
  const emu = await startService({ latencyMs: ctx.sizes.latencyMs });
  try {
    const run = await runSync(await writeConfig({ dir, baseUrl: emu.url, share, mapping }));
    if (run.code !== 0) throw new Error(`office ${name}: dssync sync exited ${String(run.code)}:\n${run.stderr.slice(-3000)}`);
    const report = JSON.parse(run.stdout) as { mappings: { counts: Record<string, number> }[] };
    const counts = report.mappings[0]!.counts;
    if ((counts.failed ?? 0) > 0) throw new Error(`office ${name}: ${counts.failed} file(s) failed`);
    const sent = (counts.uploaded ?? 0) + (counts.replaced ?? 0);
    const documents = emu.store.listDocuments(dataSourceId(emu)).length;
    log(`office: ${name} ${sent} of ${files} files sent in ${run.seconds.toFixed(1)} s, CPU ${run.cpuSeconds.toFixed(1)} s, peak RSS ${run.peakRssMB.toFixed(0)} MB`);
    return { files, sent, seconds: round(run.seconds), msPerFileSent: round((run.seconds * 1000) / Math.max(sent, 1), 1), cpuSeconds: round(run.cpuSeconds, 1), peakRssMB: round(run.peakRssMB, 0), documents };
  } finally {
    await emu.close();
  }
}

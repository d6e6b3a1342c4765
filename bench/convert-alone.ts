/**
 * One file converted alone, in a process of its own (the office scenario spawns it), through
 * the daemon's path: read whole, then `convertIsolated` (a worker thread under the default
 * limits, src/convert/limits.ts):
 *
 *   node dist/bench/convert-alone.js FILE
 *
 * Prints one JSON line: whether it converted (or the limit's reason), wall seconds, the
 * Markdown's size, and the process's peak RSS (VmHWM: the main thread and the worker).
 */
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { conversionOf } from '../src/convert/policy.js';
import { DEFAULT_LIMITS } from '../src/convert/limits.js';
import { convertIsolated } from '../src/convert/isolated.js';
import { runAlone } from './lib/alone.js';

function peakRssMB(): number {
  const kb = /^VmHWM:\s+(\d+)/m.exec(readFileSync('/proc/self/status', 'utf8'))?.[1];
  return Math.round(Number(kb) / 1024);
}

async function main(): Promise<void> {
  const file = process.argv[2];
  if (file === undefined) throw new Error('usage: convert-alone FILE');
  const conversion = conversionOf(file, undefined);
  if (conversion === undefined) throw new Error(`${file}: not a format dssync converts`);
  const bytes = await readFile(file);
  const t0 = performance.now();
  const r = await convertIsolated(conversion.converter, bytes, DEFAULT_LIMITS);
  const seconds = (performance.now() - t0) / 1000;
  process.stdout.write(`${JSON.stringify({ ok: r.ok, reason: r.ok ? undefined : r.reason, notes: r.ok ? r.notes : undefined, seconds, inputMB: bytes.length / 1e6, markdownMB: r.ok ? Buffer.byteLength(r.markdown) / 1e6 : 0, peakRssMB: peakRssMB() })}\n`);
}

runAlone(main);

/**
 * Conversion off the daemon's main thread: each file in a worker thread (one file at a time
 * per worker; a worker that answered is kept for the next file), with a heap limit (V8
 * resourceLimits), a wall-time limit (the worker is terminated), and the output bound
 * checked again on this side. Whatever the file does to its converter (throws,
 * hangs, exhausts the heap, crashes the worker), the answer is an outcome with its reason,
 * never an exception, and no other file waits on it.
 */
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import PQueue from 'p-queue';
import type { ConverterId } from './formats.js';
import type { ConvertLimits } from './limits.js';
import type { TextLayer } from './pdf-text.js';
import type { ConvertAnswer, ConvertRequest } from './worker.js';

export type ConvertOutcome = { ok: true; markdown: string; notes: string[] } | { ok: false; reason: string };
export type TextLayerOutcome = { ok: true; layer: TextLayer } | { ok: false; reason: string };

/**
 * The worker's module: the built worker.js beside this file. Run from the TypeScript sources
 * (the tests), the build's copy is used: `npm run build` first.
 */
export function defaultWorkerUrl(): URL {
  const here = import.meta.url;
  return here.endsWith('.ts') ? new URL('../../dist/src/convert/worker.js', here) : new URL('./worker.js', here);
}

/**
 * Conversions at once, at most: they are CPU-bound (more than the cores gain nothing), and
 * each may use its memory limit (memoryMb), so the mirror's request concurrency must not
 * multiply it. As many workers are kept idle for the next files (their readers loaded):
 * starting one costs far more than converting a small file.
 */
const WORKERS = Math.max(1, Math.min(4, availableParallelism()));
const IDLE_WORKERS = WORKERS;
const running = new PQueue({ concurrency: WORKERS });
/** An idle worker is ended after this long without work. */
const IDLE_MS = 30_000;

/** What a worker's events go to: the file it converts, or nothing while it is idle. */
interface Job {
  message(a: ConvertAnswer): void;
  failed(e: Error & { code?: string }): void;
  exited(code: number): void;
}

interface Pooled {
  worker: Worker;
  key: string;
  job?: Job | undefined;
  timer?: NodeJS.Timeout | undefined;
}
const idle: Pooled[] = [];

function spawn(workerUrl: URL, memoryMb: number, key: string): Pooled {
  const worker = new Worker(workerUrl, {
    resourceLimits: { maxOldGenerationSizeMb: memoryMb, maxYoungGenerationSizeMb: Math.min(64, Math.max(8, memoryMb / 8)) },
    stdout: true,
    stderr: true,
  });
  const p: Pooled = { worker, key };
  worker.on('message', (a: ConvertAnswer) => p.job?.message(a));
  worker.on('error', (e: Error & { code?: string }) => (p.job ? p.job.failed(e) : retire(p)));
  worker.on('exit', (code) => (p.job ? p.job.exited(code) : retire(p)));
  return p;
}

function take(workerUrl: URL, memoryMb: number): Pooled {
  const key = `${workerUrl.href} ${memoryMb}`;
  const i = idle.findIndex((p) => p.key === key);
  if (i < 0) return spawn(workerUrl, memoryMb, key);
  const [p] = idle.splice(i, 1) as [Pooled];
  clearTimeout(p.timer);
  p.worker.ref();
  return p;
}

/** A worker that answered waits for the next file (unreferenced: it never keeps the process alive), or ends. */
function release(p: Pooled): void {
  p.job = undefined;
  if (idle.length >= IDLE_WORKERS) return retire(p);
  p.worker.unref();
  p.timer = setTimeout(() => retire(p), IDLE_MS);
  p.timer.unref();
  idle.push(p);
}

function retire(p: Pooled): void {
  p.job = undefined;
  const i = idle.indexOf(p);
  if (i >= 0) idle.splice(i, 1);
  clearTimeout(p.timer);
  void p.worker.terminate();
}

let nextId = 1;

export function convertIsolated(converter: ConverterId, bytes: Uint8Array, limits: ConvertLimits, workerUrl: URL = defaultWorkerUrl()): Promise<ConvertOutcome> {
  return inWorker<ConvertOutcome>(converter, bytes, limits, workerUrl, (a) => {
    if (!('markdown' in a)) return { ok: false, reason: 'the converter answered without Markdown' };
    const size = Buffer.byteLength(a.markdown);
    // MarkdownOut cuts at the bound; a converter that did not is refused here.
    if (size > limits.outputBytes + 4096) return { ok: false, reason: `the Markdown is ${size} bytes (limit outputBytes, ${limits.outputBytes})` };
    return { ok: true, markdown: a.markdown, notes: a.notes };
  });
}

/** Does the PDF have a text layer (pdf-text.ts), checked in a worker under the same limits? */
export function pdfTextLayerIsolated(bytes: Uint8Array, limits: ConvertLimits, workerUrl: URL = defaultWorkerUrl()): Promise<TextLayerOutcome> {
  return inWorker<TextLayerOutcome>('pdf-text', bytes, limits, workerUrl, (a) => ('layer' in a ? { ok: true, layer: a.layer } : { ok: false, reason: 'the check answered without a result' }));
}

function inWorker<T>(converter: ConvertRequest['converter'], bytes: Uint8Array, limits: ConvertLimits, workerUrl: URL, answered: (a: Exclude<ConvertAnswer, { error: unknown }>) => T | { ok: false; reason: string }): Promise<T | { ok: false; reason: string }> {
  type Outcome = T | { ok: false; reason: string };
  // The time limit runs from the worker's start on this file, not from its wait in line.
  return running.add(() => new Promise<Outcome>((resolve) => {
    const id = nextId++;
    const p = take(workerUrl, limits.memoryMb);
    // A worker that answered is reused; one stopped by a limit, or that failed, is ended.
    const done = (outcome: Outcome, reusable = false): void => {
      if (p.job !== job) return;
      clearTimeout(timer);
      if (reusable) release(p);
      else retire(p);
      resolve(outcome);
    };
    const job: Job = {
      message(a) {
        if (a.id !== id) return;
        done('error' in a ? { ok: false, reason: a.error.message } : answered(a), true);
      },
      failed(e) {
        done({ ok: false, reason: e.code === 'ERR_WORKER_OUT_OF_MEMORY' ? `conversion needed more than ${limits.memoryMb} MB of memory (limit memoryMb): stopped` : `the converter failed: ${e.message}` });
      },
      exited(code) {
        done({ ok: false, reason: `the converter's worker exited (code ${code}) without an answer` });
      },
    };
    p.job = job;
    const timer = setTimeout(() => done({ ok: false, reason: `conversion took longer than ${limits.timeMs} ms (limit timeMs): stopped` }), limits.timeMs);
    const copy = new Uint8Array(bytes); // its own buffer, moved to the worker
    const request: ConvertRequest = { id, converter, bytes: copy, limits };
    p.worker.postMessage(request, [copy.buffer]);
  }));
}

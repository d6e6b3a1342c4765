/**
 * Conversion off the daemon's main thread: each file in a worker thread of its own, with a
 * heap limit (V8 resourceLimits), a wall-time limit (the worker is terminated), and the
 * output bound checked again on this side. Whatever the file does to its converter (throws,
 * hangs, exhausts the heap, crashes the worker), the answer is an outcome with its reason,
 * never an exception, and no other file waits on it.
 */
import { Worker } from 'node:worker_threads';
import type { ConverterId } from './formats.js';
import type { ConvertLimits } from './limits.js';
import type { ConvertAnswer, ConvertRequest } from './worker.js';

export type ConvertOutcome = { ok: true; markdown: string; notes: string[] } | { ok: false; reason: string };

/**
 * The worker's module: the built worker.js beside this file. Run from the TypeScript sources
 * (the tests), the build's copy is used: `npm run build` first.
 */
export function defaultWorkerUrl(): URL {
  const here = import.meta.url;
  return here.endsWith('.ts') ? new URL('../../dist/src/convert/worker.js', here) : new URL('./worker.js', here);
}

export function convertIsolated(converter: ConverterId, bytes: Uint8Array, limits: ConvertLimits, workerUrl: URL = defaultWorkerUrl()): Promise<ConvertOutcome> {
  return new Promise((resolve) => {
    let settled = false;
    const worker = new Worker(workerUrl, {
      resourceLimits: { maxOldGenerationSizeMb: limits.memoryMb, maxYoungGenerationSizeMb: Math.min(64, Math.max(8, limits.memoryMb / 8)) },
      stdout: true,
      stderr: true,
    });
    const done = (outcome: ConvertOutcome): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      void worker.terminate();
      resolve(outcome);
    };
    const timer = setTimeout(() => done({ ok: false, reason: `conversion took longer than ${limits.timeMs} ms (limit timeMs): stopped` }), limits.timeMs);
    worker.on('message', (a: ConvertAnswer) => {
      if ('error' in a) return done({ ok: false, reason: a.error.message });
      const size = Buffer.byteLength(a.markdown);
      // MarkdownOut cuts at the bound; a converter that did not is refused here.
      if (size > limits.outputBytes + 4096) return done({ ok: false, reason: `the Markdown is ${size} bytes (limit outputBytes, ${limits.outputBytes})` });
      done({ ok: true, markdown: a.markdown, notes: a.notes });
    });
    worker.on('error', (e: Error & { code?: string }) =>
      done({ ok: false, reason: e.code === 'ERR_WORKER_OUT_OF_MEMORY' ? `conversion needed more than ${limits.memoryMb} MB of memory (limit memoryMb): stopped` : `the converter failed: ${e.message}` }),
    );
    worker.on('exit', (code) => done({ ok: false, reason: `the converter's worker exited (code ${code}) without an answer` }));
    const copy = new Uint8Array(bytes); // its own buffer, moved to the worker
    const request: ConvertRequest = { id: 1, converter, bytes: copy, limits };
    worker.postMessage(request, [copy.buffer]);
  });
}

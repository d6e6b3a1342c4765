/**
 * Where a snapshot's rows are turned into lines (encoder.ts EncodePlan.run): in a worker
 * thread (snapshot-worker.ts), one per snapshot. The main thread only copies each chunk of
 * rows out of the table (file-table.ts takePinned) and writes the bytes that come back.
 */
import { Worker } from 'node:worker_threads';
import type { RowsData } from './row-lines.js';
import type { EncodeRequest, WorkerMessage } from './snapshot-worker.js';

export interface EncodedBatch {
  bytes: Buffer;
  lines: number;
}

export interface RowsEncoder {
  /** The lines of `rows`, in order. Batches are answered in the order they were sent. */
  encode(rows: RowsData[]): Promise<EncodedBatch>;
  /** Ends the worker; a batch not yet answered is rejected. */
  close(): Promise<void>;
}

/**
 * The worker's module: the built snapshot-worker.js beside this file. Run from the
 * TypeScript sources (the tests), the build's copy is used: `npm run build` first.
 */
function workerUrl(): URL {
  const here = import.meta.url;
  return here.endsWith('.ts') ? new URL('../../dist/src/state/snapshot-worker.js', here) : new URL('./snapshot-worker.js', here);
}

interface Waiting<T = EncodedBatch> {
  resolve: (value: T) => void;
  reject: (err: Error) => void;
}

/**
 * A worker thread that encodes rows, once it has started (its module loaded and listening).
 * Rejects when it cannot start: no thread (`ERR_WORKER_INIT_FAILED`, resource limits) or no
 * module (a broken install). Once started, its failure (it crashed, it ended) rejects every
 * batch waiting and every batch after.
 */
export async function startRowsEncoder(url: URL = workerUrl()): Promise<RowsEncoder> {
  const worker = new Worker(url, {
    // None of the process's flags: it needs none, and a V8 flag (--expose-gc) is refused in a worker.
    execArgv: [],
    stdout: false,
    stderr: false,
  });
  const waiting = new Map<number, Waiting>();
  let nextId = 0;
  let failure: Error | undefined;
  let started: Waiting<RowsEncoder> | undefined;
  const fail = (err: Error): void => {
    failure ??= err;
    for (const w of waiting.values()) w.reject(failure);
    waiting.clear();
  };
  const encoder: RowsEncoder = {
    encode(rows) {
      if (failure) return Promise.reject(failure);
      const id = nextId++;
      return new Promise<EncodedBatch>((resolve, reject) => {
        waiting.set(id, { resolve, reject });
        const req: EncodeRequest = { id, rows };
        worker.postMessage(req, rows.flatMap((r) => [r.nums.buffer, r.sha.buffer, r.synced.buffer, r.idShape.buffer, r.idDigits.buffer] as ArrayBuffer[]));
      });
    },
    async close() {
      await worker.terminate();
    },
  };
  worker.on('message', (a: WorkerMessage) => {
    if ('ready' in a) {
      started?.resolve(encoder);
      started = undefined;
      return;
    }
    const w = waiting.get(a.id);
    waiting.delete(a.id);
    w?.resolve({ bytes: Buffer.from(a.bytes.buffer, a.bytes.byteOffset, a.bytes.byteLength), lines: a.lines });
  });
  const ended = (err: Error): void => {
    started?.reject(err);
    started = undefined;
    fail(err);
  };
  worker.on('error', (e) => ended(new Error(`the snapshot's worker failed: ${e.message}`)));
  worker.on('exit', (code) => ended(new Error(`the snapshot's worker ended (exit code ${code})`)));
  return new Promise<RowsEncoder>((resolve, reject) => {
    started = { resolve, reject };
  });
}

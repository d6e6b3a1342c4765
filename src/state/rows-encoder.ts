/**
 * Where a snapshot's rows are turned into lines (encoder.ts EncodePlan.run): in a worker
 * thread (snapshot-worker.ts), one per snapshot. The main thread only copies each chunk of
 * rows out of the table (file-table.ts takePinned) and writes the bytes that come back.
 */
import { Worker } from 'node:worker_threads';
import type { RowsData } from './row-lines.js';
import type { EncodeAnswer, EncodeRequest } from './snapshot-worker.js';

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

interface Waiting {
  resolve: (b: EncodedBatch) => void;
  reject: (err: Error) => void;
}

/** A worker thread that encodes rows; its failure (it could not start, it crashed) rejects every batch waiting. */
export function workerRowsEncoder(url: URL = workerUrl()): RowsEncoder {
  const worker = new Worker(url, {
    // None of the process's flags: it needs none, and a V8 flag (--expose-gc) is refused in a worker.
    execArgv: [],
    stdout: false,
    stderr: false,
  });
  const waiting = new Map<number, Waiting>();
  let nextId = 0;
  let failure: Error | undefined;
  const fail = (err: Error): void => {
    failure ??= err;
    for (const w of waiting.values()) w.reject(failure);
    waiting.clear();
  };
  worker.on('message', (a: EncodeAnswer) => {
    const w = waiting.get(a.id);
    waiting.delete(a.id);
    w?.resolve({ bytes: Buffer.from(a.bytes.buffer, a.bytes.byteOffset, a.bytes.byteLength), lines: a.lines });
  });
  worker.on('error', (e) => fail(new Error(`the snapshot's worker failed: ${e.message}`)));
  worker.on('exit', (code) => fail(new Error(`the snapshot's worker ended (exit code ${code})`)));
  return {
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
}

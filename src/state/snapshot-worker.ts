/**
 * The snapshot's worker thread (rows-encoder.ts): turns chunks of a files table's rows into
 * snapshot lines, so that a large snapshot's encoding does not run on the main thread,
 * where every durable write would wait for it.
 */
import { parentPort } from 'node:worker_threads';
import { encodeRows, type RowsData } from './row-lines.js';

/** Rows to encode, in the snapshot's order. */
export interface EncodeRequest {
  id: number;
  rows: RowsData[];
}

/** Their lines, UTF-8. */
export interface EncodeAnswer {
  id: number;
  bytes: Uint8Array;
  lines: number;
}

/** What the worker sends: `ready` once, when it listens (rows-encoder.ts waits for it), then answers. */
export type WorkerMessage = { ready: true } | EncodeAnswer;

const port = parentPort;
if (!port) throw new Error('snapshot-worker.js runs as a worker thread');
const utf8 = new TextEncoder();
port.on('message', (req: EncodeRequest) => {
  let text = '';
  let lines = 0;
  for (const r of req.rows) {
    const e = encodeRows(r);
    text += e.text;
    lines += e.lines;
  }
  const bytes = utf8.encode(text);
  const answer: EncodeAnswer = { id: req.id, bytes, lines };
  port.postMessage(answer, [bytes.buffer]);
});
const ready: WorkerMessage = { ready: true };
port.postMessage(ready);

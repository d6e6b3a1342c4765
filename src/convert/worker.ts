/** The conversion worker (isolated.ts): one file per message, answered with its Markdown or the reason it failed. */
import { parentPort } from 'node:worker_threads';
import { convertBytes } from './convert.js';
import type { ConverterId } from './formats.js';
import type { ConvertLimits } from './limits.js';

export interface ConvertRequest {
  id: number;
  converter: ConverterId;
  bytes: Uint8Array;
  limits: ConvertLimits;
}

export type ConvertAnswer = { id: number; markdown: string; notes: string[] } | { id: number; error: { code: string; message: string } };

parentPort?.on('message', (req: ConvertRequest) => {
  void (async (): Promise<ConvertAnswer> => {
    try {
      const r = await convertBytes(req.converter, req.bytes, req.limits);
      return { id: req.id, markdown: r.markdown, notes: r.notes };
    } catch (e) {
      const err = e as { code?: unknown; message?: unknown };
      return { id: req.id, error: { code: typeof err.code === 'string' ? err.code : 'E_CONVERT', message: String(err.message ?? e) } };
    }
  })().then((a) => parentPort?.postMessage(a));
});

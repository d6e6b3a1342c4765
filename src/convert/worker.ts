/**
 * The conversion worker (isolated.ts): one file per message, answered with its Markdown (or,
 * for a PDF's check, whether it has a text layer) or the reason it failed.
 */
import { parentPort } from 'node:worker_threads';
import { convertBytes } from './convert.js';
import type { ConverterId } from './formats.js';
import type { ConvertLimits } from './limits.js';
import { pdfTextLayer, type TextLayer } from './pdf-text.js';

export interface ConvertRequest {
  id: number;
  /** A converter, or `pdf-text`: does the PDF have a text layer (pdf-text.ts)? */
  converter: ConverterId | 'pdf-text';
  bytes: Uint8Array;
  limits: ConvertLimits;
}

export type ConvertAnswer = { id: number; markdown: string; notes: string[] } | { id: number; layer: TextLayer } | { id: number; error: { code: string; message: string } };

parentPort?.on('message', (req: ConvertRequest) => {
  void (async (): Promise<ConvertAnswer> => {
    try {
      if (req.converter === 'pdf-text') return { id: req.id, layer: pdfTextLayer(req.bytes, req.limits) };
      const r = await convertBytes(req.converter, req.bytes, req.limits);
      return { id: req.id, markdown: r.markdown, notes: r.notes };
    } catch (e) {
      const err = e as { code?: unknown; message?: unknown };
      return { id: req.id, error: { code: typeof err.code === 'string' ? err.code : 'E_CONVERT', message: String(err.message ?? e) } };
    }
  })().then((a) => parentPort?.postMessage(a));
});

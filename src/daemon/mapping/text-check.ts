/**
 * Scanned PDFs named (docs/formats.md, "Scanned PDFs"): a PDF sent as it is is checked for a
 * text layer once it was sent (convert/pdf-text.ts, in a conversion worker under its limits).
 * One without is a `no-text` problem, one that could not be checked (damaged, or past a
 * limit) an `unchecked` one; both stay sent, since the service may run OCR. The file is read
 * from its descriptor, confined to the mapped folder like an upload; a file gone or changed
 * meanwhile is left to the pass that sees it.
 */
import { join } from 'node:path';
import { pdfTextLayerIsolated } from '../../convert/isolated.js';
import { DEFAULT_LIMITS, type ConvertLimits } from '../../convert/limits.js';
import { policyOf, type Formats } from '../../convert/policy.js';
import type { MappingConfig } from '../../config/types.js';
import type { OpEvent } from '../../engine/executor.js';
import { confinementOf, openRegularFile } from '../../local/fs.js';
import type { ProblemList } from './problem-list.js';

export const NO_TEXT_REASON = 'no text: the App cannot read it (scanned?)';

/** Larger PDFs are not read whole to be checked: `unchecked`, naming this bound. */
export const TEXT_CHECK_MAX_BYTES = 64 * 1024 * 1024;

export type TextCheckResult = { kind: 'text' } | { kind: 'no-text' | 'unchecked'; reason: string };

/** Is `path` a file whose text layer is checked: a PDF sent as it is? */
export function checksText(path: string, formats: Formats | undefined): boolean {
  return path.toLowerCase().endsWith('.pdf') && policyOf(path, formats) === 'as-is';
}

/** The text layer of the PDF at `path` below `root` (undefined: the file is gone or not a regular file in the folder). */
export async function checkTextLayer(root: string, path: string, followSymlinks: boolean, limits: ConvertLimits = DEFAULT_LIMITS): Promise<TextCheckResult | undefined> {
  let bytes: Buffer;
  try {
    const within = await confinementOf(root, { followSymlinks });
    const opened = await openRegularFile(join(root, path), { within, noFollow: !followSymlinks });
    try {
      if (opened.stat.size > TEXT_CHECK_MAX_BYTES) return { kind: 'unchecked', reason: `could not be checked for text: ${opened.stat.size} bytes, over ${TEXT_CHECK_MAX_BYTES}` };
      bytes = Buffer.allocUnsafe(opened.stat.size);
      let at = 0;
      for (let n = -1; n !== 0 && at < bytes.length; at += n) ({ bytesRead: n } = await opened.handle.read(bytes, at, bytes.length - at, at));
      bytes = bytes.subarray(0, at);
    } finally {
      await opened.handle.close().catch(() => undefined);
    }
  } catch {
    return undefined;
  }
  const outcome = await pdfTextLayerIsolated(bytes, limits);
  if (!outcome.ok) return { kind: 'unchecked', reason: outcome.reason.startsWith('the PDF could not be checked') ? outcome.reason : `the PDF could not be checked: ${outcome.reason}` };
  return outcome.layer === 'text' ? { kind: 'text' } : { kind: 'no-text', reason: NO_TEXT_REASON };
}

/**
 * The checks of one mapping: each PDF sent is checked in the background, and its result
 * goes to the problem list unless the file was sent, renamed or deleted again meanwhile.
 */
export class TextChecks {
  private readonly latest = new Map<string, number>();
  private seq = 0;

  constructor(
    private readonly d: {
      mapping: Pick<MappingConfig, 'path' | 'formats' | 'followSymlinks'>;
      problems: ProblemList;
      onChanged: () => void;
      isStopped: () => boolean;
    },
  ) {}

  /** An operation on `path` was done: a PDF just sent is checked; an older check of it is dropped. */
  afterOp(kind: OpEvent['kind'], path: string): Promise<void> {
    if ((kind !== 'upload' && kind !== 'replace') || !checksText(path, this.d.mapping.formats)) {
      this.latest.delete(path);
      return Promise.resolve();
    }
    const token = ++this.seq;
    this.latest.set(path, token);
    return checkTextLayer(this.d.mapping.path, path, this.d.mapping.followSymlinks).then((r) => {
      if (this.latest.get(path) !== token) return;
      this.latest.delete(path);
      if (r === undefined || r.kind === 'text' || this.d.isStopped()) return;
      if (this.d.problems.textLayer(path, r.kind, r.reason)) this.d.onChanged();
    });
  }
}

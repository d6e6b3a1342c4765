/** One file's bytes to Markdown by its converter (in the calling thread: isolated.ts runs it in a worker). */
import { delimitedToMarkdown } from './delimited.js';
import { epubToMarkdown } from './epub.js';
import type { ConverterId } from './formats.js';
import { docToMarkdown } from './legacy.js';
import type { ConvertLimits } from './limits.js';
import { emlToMarkdown, msgToMarkdown } from './mail.js';
import { odfToMarkdown } from './odf.js';
import { pptxToMarkdown, xlsxToMarkdown } from './ooxml.js';
import { rtfToMarkdown } from './rtf.js';

export interface Converted {
  markdown: string;
  /** What was cut (a bound named), for the problem list. */
  notes: string[];
}

type Converter = (bytes: Uint8Array, limits: ConvertLimits) => Converted | Promise<Converted>;

const CONVERTERS: Record<ConverterId, Converter> = {
  pptx: pptxToMarkdown, xlsx: xlsxToMarkdown, odf: odfToMarkdown, epub: epubToMarkdown, rtf: rtfToMarkdown,
  doc: docToMarkdown, eml: emlToMarkdown, msg: msgToMarkdown,
  csv: (bytes, limits) => delimitedToMarkdown(bytes, ',', limits),
  tsv: (bytes, limits) => delimitedToMarkdown(bytes, '\t', limits),
};

export async function convertBytes(id: ConverterId, bytes: Uint8Array, limits: ConvertLimits): Promise<Converted> {
  return CONVERTERS[id](bytes, limits);
}

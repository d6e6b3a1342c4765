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

export async function convertBytes(id: ConverterId, bytes: Uint8Array, limits: ConvertLimits): Promise<Converted> {
  switch (id) {
    case 'pptx':
      return pptxToMarkdown(bytes, limits);
    case 'xlsx':
      return xlsxToMarkdown(bytes, limits);
    case 'odf':
      return odfToMarkdown(bytes, limits);
    case 'epub':
      return epubToMarkdown(bytes, limits);
    case 'csv':
      return delimitedToMarkdown(bytes, ',', limits);
    case 'tsv':
      return delimitedToMarkdown(bytes, '\t', limits);
    case 'rtf':
      return rtfToMarkdown(bytes, limits);
    case 'doc':
      return docToMarkdown(bytes, limits);
    case 'eml':
      return emlToMarkdown(bytes, limits);
    case 'msg':
      return msgToMarkdown(bytes, limits);
  }
}

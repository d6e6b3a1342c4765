/**
 * Turns an uploaded file into chunks: extract the text by type, then cut it by paragraphs
 * into chunks of at most MAX_CHUNK_CHARS characters. Markdown is first cut at its headings
 * (a chunk never spans two sections); the service's pre-chunked JSON gives one chunk per
 * part. Extraction never throws: a file with
 * no extractable text (an image-only PDF, a corrupt file, an empty file) becomes a
 * `failed` document with a reason and no chunks.
 */
import type { FileKind } from './file-types.js';
import { htmlToText, odtXmlToText, rtfToText, tidy } from './text-formats.js';
import { readZipEntry } from './zip.js';

export const MAX_CHUNK_CHARS = 1000;

export interface Extraction {
  status: 'ready' | 'failed';
  failureReason: string | null;
  chunks: string[];
}

export async function extractChunks(kind: FileKind, data: Buffer): Promise<Extraction> {
  let chunks: string[];
  try {
    if (kind === 'json') chunks = preChunkedParts(decodeUtf8(data));
    else if (kind === 'markdown') chunks = chunkMarkdown(tidyKeepingLines(decodeUtf8(data)));
    else chunks = chunkText(await extractText(kind, data));
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    return { status: 'failed', failureReason: `text extraction failed: ${why.slice(0, 300)}`, chunks: [] };
  }
  if (chunks.length === 0) return { status: 'failed', failureReason: 'no text found in the file', chunks: [] };
  return { status: 'ready', failureReason: null, chunks };
}

export async function extractText(kind: FileKind, data: Buffer): Promise<string> {
  switch (kind) {
    case 'text':
    case 'markdown':
      return tidyKeepingLines(decodeUtf8(data));
    case 'json':
      return preChunkedParts(decodeUtf8(data)).join('\n\n');
    case 'html':
      return htmlToText(decodeUtf8(data));
    case 'rtf':
      return rtfToText(data.toString('latin1'));
    case 'odt':
      return odtXmlToText(readZipEntry(data, 'content.xml').toString('utf8'));
    case 'docx':
      return tidy(await docxText(data));
    case 'pdf':
      return tidy(await pdfText(data));
    case 'doc':
      throw new Error('legacy .doc (Word 97-2003) files are stored but their text is not extracted by the emulator');
  }
}

/**
 * The service's pre-chunked JSON: an object with `identifier`, `title`, `url` and
 * `hasPart`, a list of parts each with a `text`; each part with text is one chunk, as given.
 */
export function preChunkedParts(json: string): string[] {
  let doc: unknown;
  try {
    doc = JSON.parse(json);
  } catch (err) {
    throw new Error(`the JSON file does not parse: ${(err as Error).message}`, { cause: err });
  }
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) {
    throw new Error('the JSON file is not an object with identifier, title, url and hasPart');
  }
  const { hasPart } = doc as { hasPart?: unknown };
  if (!Array.isArray(hasPart)) throw new Error('the JSON file has no hasPart list of parts');
  return hasPart.map((part: unknown, i) => {
    const text = (part as { text?: unknown } | null)?.text;
    if (typeof text !== 'string') throw new Error(`hasPart[${i}] has no text`);
    return text.trim();
  }).filter((t) => t !== '');
}

/** A heading line (ATX, `#` to `######`) starts a section; fenced code is never cut. */
const HEADING = /^ {0,3}#{1,6}(?:[ \t]|$)/;
const FENCE = /^ {0,3}(```|~~~)/;

/** Markdown cut at its headings, each section then cut by size like plain text. */
export function chunkMarkdown(text: string, max = MAX_CHUNK_CHARS): string[] {
  const sections: string[][] = [[]];
  let fence: string | null = null;
  for (const line of text.split('\n')) {
    const f = FENCE.exec(line)?.[1];
    if (f !== undefined) fence = fence === null ? f : fence === f ? null : fence;
    else if (fence === null && HEADING.test(line) && (sections.at(-1) as string[]).length > 0) sections.push([]);
    (sections.at(-1) as string[]).push(line);
  }
  return sections.flatMap((lines) => chunkText(lines.join('\n'), max));
}

function decodeUtf8(data: Buffer): string {
  const text = data.toString('utf8');
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
}

/** Plain text keeps its own line structure; only line ends and trailing blanks change. */
function tidyKeepingLines(text: string): string {
  return text
    .replace(/\r\n?/g, '\n')
    .replace(/[ \t]+$/gm, '')
    .trim();
}

async function docxText(data: Buffer): Promise<string> {
  const mammoth = (await import('mammoth')).default;
  const result = await mammoth.extractRawText({ buffer: data });
  return result.value;
}

async function pdfText(data: Buffer): Promise<string> {
  const pdfjs = await import('pdfjs-dist/legacy/build/pdf.mjs');
  // pdf.js takes ownership of (and detaches) the array it is given: pass a copy.
  const task = pdfjs.getDocument({
    data: new Uint8Array(data),
    useSystemFonts: false,
    disableFontFace: true,
    isEvalSupported: false,
    verbosity: pdfjs.VerbosityLevel.ERRORS,
  });
  try {
    const doc = await task.promise;
    const pages: string[] = [];
    for (let n = 1; n <= doc.numPages; n++) {
      const page = await doc.getPage(n);
      const content = await page.getTextContent();
      let text = '';
      for (const item of content.items) {
        if ('str' in item) {
          text += item.str;
          if (item.hasEOL) text += '\n';
        }
      }
      pages.push(text);
      page.cleanup();
    }
    return pages.join('\n\n');
  } finally {
    await task.destroy();
  }
}

/**
 * Cuts text into chunks of at most `max` characters: whole paragraphs are packed together
 * (joined by a blank line); a paragraph longer than `max` is cut at line ends, then
 * sentence ends, then spaces, and only as a last resort in the middle of a word.
 */
export function chunkText(text: string, max = MAX_CHUNK_CHARS): string[] {
  const pieces: string[] = [];
  for (const paragraph of text.split(/\n[ \t]*\n+/)) {
    const p = paragraph.trim();
    if (p === '') continue;
    if (p.length <= max) pieces.push(p);
    else pieces.push(...splitLong(p, max));
  }
  const chunks: string[] = [];
  let current = '';
  for (const piece of pieces) {
    if (current === '') current = piece;
    else if (current.length + 2 + piece.length <= max) current += `\n\n${piece}`;
    else {
      chunks.push(current);
      current = piece;
    }
  }
  if (current !== '') chunks.push(current);
  return chunks;
}

function splitLong(text: string, max: number): string[] {
  const out: string[] = [];
  let rest = text;
  while (rest.length > max) {
    const window = rest.slice(0, max + 1);
    let cut = window.lastIndexOf('\n');
    if (cut < max / 2) cut = Math.max(window.lastIndexOf('. '), window.lastIndexOf('? '), window.lastIndexOf('! ')) + 1;
    if (cut < max / 2) cut = window.lastIndexOf(' ');
    if (cut < max / 2) {
      cut = max;
      // Never split a surrogate pair (an emoji, a rare CJK character) in two.
      const code = rest.charCodeAt(cut - 1);
      if (code >= 0xd800 && code <= 0xdbff) cut--;
    }
    out.push(rest.slice(0, cut).trim());
    rest = rest.slice(cut).trim();
  }
  if (rest !== '') out.push(rest);
  return out.filter((s) => s !== '');
}

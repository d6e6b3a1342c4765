/** Word 97–2003 (.doc) to Markdown (word-extractor): the body's paragraphs, then text boxes, footnotes and endnotes. */
import WordExtractor from 'word-extractor';
import type { ConvertLimits } from './limits.js';
import { limitError } from './limits.js';
import { MarkdownOut, squeeze } from './markdown.js';

export async function docToMarkdown(bytes: Uint8Array, limits: ConvertLimits): Promise<{ markdown: string; notes: string[] }> {
  let doc;
  try {
    doc = await new WordExtractor().extract(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));
  } catch (e) {
    throw limitError('format', `not a readable Word 97–2003 document (${(e as Error).message})`);
  }
  const out = new MarkdownOut(limits);
  const sections: [string, string][] = [
    ['', doc.getBody()],
    ['Text boxes', doc.getTextboxes({ includeHeadersAndFooters: false, includeBody: true })],
    ['Footnotes', doc.getFootnotes()],
    ['Endnotes', doc.getEndnotes()],
  ];
  for (const [title, text] of sections) {
    const paragraphs = text.split(/\r?\n/).map(squeeze).filter((p) => p !== '');
    if (paragraphs.length === 0) continue;
    if (title !== '') out.heading(2, title);
    for (const p of paragraphs) if (!out.add(p)) break;
  }
  return { markdown: out.text(), notes: out.notes };
}

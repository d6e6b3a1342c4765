/**
 * EPUB to Markdown: the chapters in spine order (META-INF/container.xml → the package
 * document → its spine), each XHTML chapter as headings and paragraphs (html.ts).
 */
import { limitError, type ConvertLimits } from './limits.js';
import { htmlBlocks } from './html.js';
import { MarkdownOut } from './markdown.js';
import { attr, xmlTokens } from './xml.js';
import { openZip, resolveIn } from './zip.js';

export function epubToMarkdown(bytes: Uint8Array, limits: ConvertLimits): { markdown: string; notes: string[] } {
  const zip = openZip(bytes, limits);
  const container = zip.text('META-INF/container.xml');
  let opfPath: string | undefined;
  for (const t of xmlTokens(container ?? '')) if (t.kind === 'open' && t.name === 'rootfile') opfPath ??= attr(t.attrs, 'full-path');
  const opf = opfPath === undefined ? undefined : zip.text(opfPath);
  if (opfPath === undefined || opf === undefined) throw limitError('format', 'the package document is missing: not a complete EPUB (truncated?)');
  const manifest = new Map<string, string>();
  const spine: string[] = [];
  for (const t of xmlTokens(opf)) {
    if (t.kind !== 'open') continue;
    if (t.name.endsWith('item')) {
      const id = attr(t.attrs, 'id');
      const href = attr(t.attrs, 'href');
      if (id !== undefined && href !== undefined) manifest.set(id, resolveIn(opfPath, decodeURIComponent(href)));
    } else if (t.name.endsWith('itemref')) {
      const href = manifest.get(attr(t.attrs, 'idref') ?? '');
      if (href !== undefined) spine.push(href);
    }
  }
  const out = new MarkdownOut(limits);
  for (const chapter of spine) {
    const xhtml = zip.text(chapter);
    if (xhtml === undefined) continue;
    for (const b of htmlBlocks(xhtml)) if (!(b.level > 0 ? out.heading(b.level, b.text) : out.add(b.text))) break;
    if (out.isFull) break;
  }
  return { markdown: out.text(), notes: out.notes };
}

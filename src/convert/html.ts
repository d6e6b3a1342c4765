/** The blocks of an (X)HTML page: headings with their level, and paragraphs; scripts and styles dropped. */
import { squeeze } from './markdown.js';
import { local, xmlTokens } from './xml.js';

const BLOCKS = new Set(['p', 'div', 'li', 'td', 'th', 'tr', 'blockquote', 'pre', 'section', 'article', 'title', 'dt', 'dd', 'caption', 'figcaption']);

export function htmlBlocks(html: string): { level: number; text: string }[] {
  const blocks: { level: number; text: string }[] = [];
  let text: string[] = [];
  let level = 0;
  let hidden = 0;
  const flush = (): void => {
    const t = squeeze(text.join(''));
    if (t !== '') blocks.push({ level, text: t });
    text = [];
    level = 0;
  };
  for (const t of xmlTokens(html)) {
    const name = t.kind === 'text' ? '' : local(t.name).toLowerCase();
    if (t.kind === 'open') {
      if ((name === 'script' || name === 'style' || name === 'head') && !t.selfClosing) hidden++;
      else if (/^h[1-6]$/.test(name)) {
        flush();
        level = Number(name[1]);
      } else if (BLOCKS.has(name)) flush();
      else if (name === 'br') text.push('\n');
    } else if (t.kind === 'close') {
      if (name === 'script' || name === 'style' || name === 'head') hidden = Math.max(0, hidden - 1);
      else if (/^h[1-6]$/.test(name) || BLOCKS.has(name)) flush();
    } else if (hidden === 0) text.push(t.text);
  }
  flush();
  return blocks;
}

/**
 * RTF to Markdown: the document's text, paragraph by paragraph. Control words are read as
 * the RTF specification says: groups that are not text (font and colour tables, style
 * sheets, document info, pictures, objects, `{\*…}` destinations) are skipped, `\par` and
 * `\line` end lines, `\'hh` is a byte of the document's code page (Windows-1252 unless
 * `\ansicpg` says otherwise), `\uN` a Unicode character followed by `\ucN` fallback chars.
 */
import type { ConvertLimits } from './limits.js';
import { limitError } from './limits.js';
import { MarkdownOut, squeeze } from './markdown.js';

const SKIPPED = new Set(['fonttbl', 'colortbl', 'stylesheet', 'info', 'pict', 'object', 'themedata', 'colorschememapping', 'datastore', 'latentstyles', 'listtable', 'listoverridetable', 'rsidtbl', 'generator', 'xmlnstbl', 'mmathPr', 'header', 'footer', 'headerl', 'headerr', 'footerl', 'footerr', 'fldinst']);

export function rtfToText(rtf: string): string {
  if (!rtf.startsWith('{\\rtf')) throw limitError('format', 'not an RTF document (no {\\rtf header)');
  const out: string[] = [];
  const stack: { skip: boolean; uc: number }[] = [];
  let skip = false;
  let uc = 1;
  let pendingSkip = 0;
  let decoder = new TextDecoder('windows-1252');
  const bytes: number[] = [];
  const flushBytes = (): void => {
    if (bytes.length > 0) {
      if (!skip) out.push(decoder.decode(Uint8Array.from(bytes)));
      bytes.length = 0;
    }
  };
  const emit = (s: string): void => {
    flushBytes();
    if (pendingSkip > 0) {
      const n = Math.min(pendingSkip, s.length);
      pendingSkip -= n;
      s = s.slice(n);
    }
    if (!skip && s !== '') out.push(s);
  };
  let i = 0;
  while (i < rtf.length) {
    const ch = rtf[i] as string;
    if (ch === '{') {
      flushBytes();
      stack.push({ skip, uc });
      i++;
      if (rtf.startsWith('\\*', i)) skip = true;
    } else if (ch === '}') {
      flushBytes();
      const top = stack.pop();
      if (top) ({ skip, uc } = top);
      i++;
    } else if (ch === '\\') {
      const next = rtf[i + 1] ?? '';
      if (next === "'") {
        const hex = parseInt(rtf.slice(i + 2, i + 4), 16);
        i += 4;
        if (pendingSkip > 0) pendingSkip--;
        else if (!Number.isNaN(hex)) bytes.push(hex);
        continue;
      }
      const m = /^\\([a-zA-Z]+)(-?\d+)? ?/.exec(rtf.slice(i, i + 40));
      if (!m) {
        // A control symbol: \\ \{ \} \~ (non-breaking space), \- \_ and others.
        emit(next === '~' ? '\u00a0' : next === '_' ? '-' : '\\{}'.includes(next) ? next : '');
        i += 2;
        continue;
      }
      i += m[0].length;
      const word = m[1] as string;
      const arg = m[2] === undefined ? undefined : Number(m[2]);
      if (SKIPPED.has(word)) skip = true;
      else if (word === 'par' || word === 'line' || word === 'sect' || word === 'page' || word === 'row') emit('\n');
      else if (word === 'tab' || word === 'cell') emit('\t');
      else if (word === 'uc' && arg !== undefined) uc = arg;
      else if (word === 'u' && arg !== undefined) {
        emit(String.fromCharCode(arg < 0 ? arg + 65536 : arg));
        pendingSkip = uc;
      } else if (word === 'ansicpg' && arg !== undefined) {
        flushBytes();
        try {
          decoder = new TextDecoder(`windows-${arg}`);
        } catch {
          // An unknown code page: keep Windows-1252.
        }
      } else if (word === 'bin' && arg !== undefined) i += Math.max(0, arg);
    } else if (ch === '\r' || ch === '\n') i++;
    else {
      let j = i;
      while (j < rtf.length && !'{}\\\r\n'.includes(rtf[j] as string)) j++;
      emit(rtf.slice(i, j));
      i = j;
    }
  }
  flushBytes();
  return out.join('');
}

export function rtfToMarkdown(bytes: Uint8Array, limits: ConvertLimits): { markdown: string; notes: string[] } {
  const out = new MarkdownOut(limits);
  for (const p of rtfToText(Buffer.from(bytes).toString('latin1')).split('\n')) {
    const text = squeeze(p);
    if (text !== '' && !out.add(text)) break;
  }
  return { markdown: out.text(), notes: out.notes };
}

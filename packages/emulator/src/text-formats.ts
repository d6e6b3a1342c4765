/**
 * Small text extractors for markup formats (HTML, RTF, ODT's XML): good enough to make
 * realistic chunks, not full parsers. Each returns plain text with paragraphs separated
 * by a blank line.
 */

const NAMED_ENTITIES: Record<string, string> = {
  amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: ' ',
  mdash: '\u2014', ndash: '\u2013', hellip: '\u2026', bull: '\u2022', middot: '\u00b7',
  lsquo: '\u2018', rsquo: '\u2019', ldquo: '\u201c', rdquo: '\u201d', laquo: '\u00ab', raquo: '\u00bb',
  copy: '\u00a9', reg: '\u00ae', trade: '\u2122', euro: '\u20ac', deg: '\u00b0',
  eacute: '\u00e9', egrave: '\u00e8', ecirc: '\u00ea', agrave: '\u00e0', acirc: '\u00e2', ccedil: '\u00e7',
  ocirc: '\u00f4', uuml: '\u00fc', ouml: '\u00f6', auml: '\u00e4', szlig: '\u00df', iuml: '\u00ef', icirc: '\u00ee',
};

export function decodeEntities(text: string): string {
  return text.replace(/&(#x[0-9a-fA-F]{1,6}|#[0-9]{1,7}|[a-zA-Z]{2,8});/g, (whole, ref: string) => {
    if (ref.startsWith('#')) {
      const code = ref[1] === 'x' || ref[1] === 'X' ? parseInt(ref.slice(2), 16) : parseInt(ref.slice(1), 10);
      return code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : whole;
    }
    return NAMED_ENTITIES[ref] ?? whole;
  });
}

const BLOCK_TAGS = 'p|div|h[1-6]|li|tr|section|article|header|footer|blockquote|pre|table|ul|ol|dl|dt|dd|figure|figcaption|main|nav|aside|title';

export function htmlToText(html: string): string {
  let s = html
    .replace(/<!--[\s\S]*?-->/g, ' ')
    .replace(/<(script|style|head|template|noscript)\b[\s\S]*?<\/\1\s*>/gi, ' ')
    .replace(/\s+/g, ' ');
  s = s
    .replace(new RegExp(`<\\/?(?:${BLOCK_TAGS})\\b[^>]*>`, 'gi'), '\n\n')
    .replace(/<br\s*\/?>/gi, '\n')
    .replace(/<[^>]*>/g, '');
  return tidy(decodeEntities(s));
}

/** ODT content.xml: paragraphs and headings become paragraphs; spaces and tabs are expanded. */
export function odtXmlToText(xml: string): string {
  const body = xml.replace(/^[\s\S]*?<office:body\b[^>]*>/, '');
  const s = body
    .replace(/<text:s(?:\s+text:c="(\d+)")?\s*\/>/g, (_m, n?: string) => ' '.repeat(n ? Number(n) : 1))
    .replace(/<text:tab\s*\/>/g, '\t')
    .replace(/<text:line-break\s*\/>/g, '\n')
    .replace(/<\/text:(?:p|h)>/g, '\n\n')
    .replace(/<[^>]*>/g, '');
  return tidy(decodeEntities(s));
}

/** Destinations whose text is not document text (fonts, colours, metadata, pictures). */
const RTF_SKIP_DESTINATIONS = new Set([
  'fonttbl', 'colortbl', 'stylesheet', 'info', 'pict', 'header', 'footer', 'headerl', 'headerr', 'footerl', 'footerr',
  'listtable', 'listoverridetable', 'rsidtbl', 'generator', 'xmlnstbl', 'themedata', 'datastore', 'latentstyles', 'object', 'filetbl',
]);

const RTF_SYMBOLS: Record<string, string> = {
  par: '\n\n', line: '\n', tab: '\t', emdash: '\u2014', endash: '\u2013', lquote: '\u2018', rquote: '\u2019',
  ldblquote: '\u201c', rdblquote: '\u201d', bullet: '\u2022', emspace: ' ', enspace: ' ', qmspace: ' ', cell: '\t', row: '\n',
};

/** Windows-1252 bytes 0x80-0x9f that differ from Latin-1. */
const CP1252: Record<number, string> = {
  0x80: '\u20ac', 0x82: '\u201a', 0x83: '\u0192', 0x84: '\u201e', 0x85: '\u2026', 0x86: '\u2020', 0x87: '\u2021', 0x88: '\u02c6',
  0x89: '\u2030', 0x8a: '\u0160', 0x8b: '\u2039', 0x8c: '\u0152', 0x8e: '\u017d', 0x91: '\u2018', 0x92: '\u2019', 0x93: '\u201c',
  0x94: '\u201d', 0x95: '\u2022', 0x96: '\u2013', 0x97: '\u2014', 0x98: '\u02dc', 0x99: '\u2122', 0x9a: '\u0161', 0x9b: '\u203a',
  0x9c: '\u0153', 0x9e: '\u017e', 0x9f: '\u0178',
};

export function rtfToText(rtf: string): string {
  interface Group {
    skip: boolean;
    uc: number;
  }
  const stack: Group[] = [];
  let group: Group = { skip: false, uc: 1 };
  let out = '';
  let pendingFallback = 0; // characters to drop after a \uN escape
  const emit = (text: string): void => {
    if (pendingFallback > 0) {
      pendingFallback--;
      return;
    }
    if (!group.skip) out += text;
  };
  let i = 0;
  while (i < rtf.length) {
    const c = rtf[i] as string;
    if (c === '{') {
      stack.push(group);
      group = { ...group };
      pendingFallback = 0;
      i++;
    } else if (c === '}') {
      group = stack.pop() ?? { skip: false, uc: 1 };
      pendingFallback = 0;
      i++;
    } else if (c === '\\') {
      const next = rtf[i + 1] ?? '';
      if (/[a-zA-Z]/.test(next)) {
        const m = /^([a-zA-Z]{1,32})(-?\d{1,10})? ?/.exec(rtf.slice(i + 1, i + 45));
        const word = m?.[1] ?? '';
        const arg = m?.[2];
        i += 1 + (m?.[0].length ?? 1);
        if (RTF_SKIP_DESTINATIONS.has(word)) group.skip = true;
        else if (word === 'u' && arg !== undefined) {
          const code = Number(arg) < 0 ? Number(arg) + 65536 : Number(arg);
          if (!group.skip) out += String.fromCharCode(code);
          pendingFallback = group.uc;
        } else if (word === 'uc' && arg !== undefined) group.uc = Number(arg);
        else if (RTF_SYMBOLS[word] !== undefined) {
          pendingFallback = 0;
          emit(RTF_SYMBOLS[word]);
        }
      } else if (next === "'") {
        const byte = parseInt(rtf.slice(i + 2, i + 4), 16);
        i += 4;
        if (!Number.isNaN(byte)) emit(CP1252[byte] ?? String.fromCharCode(byte));
      } else if (next === '*') {
        group.skip = true;
        i += 2;
      } else if (next === '\n' || next === '\r') {
        emit('\n\n');
        i += 2;
      } else {
        const literal: Record<string, string> = { '\\': '\\', '{': '{', '}': '}', '~': '\u00a0', _: '-' };
        if (literal[next] !== undefined) emit(literal[next]);
        i += 2;
      }
    } else {
      if (c !== '\n' && c !== '\r') emit(c);
      i++;
    }
  }
  return tidy(out);
}

/** Trims each line, keeps at most one blank line between paragraphs. */
export function tidy(text: string): string {
  return text
    .replace(/\r\n?/g, '\n')
    .replace(/[ \t\u00a0]+/g, (m) => (m.includes('\t') ? '\t' : ' '))
    .split('\n')
    .map((line) => line.trim())
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}

/**
 * Does a PDF have a text layer (docs/formats.md, "Scanned PDFs")? A page's text is drawn by
 * a content stream's text operators: a font selected (`/F1 12 Tf`) and a string shown
 * (`(...) Tj`, `[...] TJ`). A PDF none of whose streams draws text is images only (a
 * scan): the App cannot read it unless the service runs OCR.
 *
 * Cheap and without a PDF library: the streams are found by their `stream`/`endstream`
 * keywords and decoded when their filters are FlateDecode (node:zlib, within the limit
 * decompressedBytes), ASCII85Decode or ASCIIHexDecode; images and font programs are not
 * looked at. Object streams (`/Type /ObjStm`) hold dictionaries, not drawing: they need no
 * reading. A file that is not a whole PDF (no header, no `%%EOF` at its end) is damaged, and
 * so is one whose only candidate streams cannot be decoded: an error with the reason.
 */
import { inflateSync, constants } from 'node:zlib';
import { limitError, type ConvertLimits } from './limits.js';

export type TextLayer = 'text' | 'no-text';

/** A font chosen for drawing text, and a string drawn with it. */
const SELECTS_FONT = /\/[^\s/[\]()<>{}%]+\s+[-+]?[\d.]+\s+Tf(?![\w])/;
const SHOWS_TEXT = /[)>\]]\s*(?:Tj|TJ|'|")(?![\w])/;

/** Streams that never draw text. */
const NOT_DRAWING = /\/Subtype\s*\/(?:Image|XML|Type1C|CIDFontType0C|OpenType)\b|\/Type\s*\/(?:XRef|ObjStm|Metadata|EmbeddedFile)\b|\/Length[123]\b/;

export function pdfTextLayer(bytes: Uint8Array, limits: Pick<ConvertLimits, 'decompressedBytes'>): TextLayer {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const s = buf.toString('latin1');
  if (!s.startsWith('%PDF-')) throw damaged('it does not begin with %PDF-');
  if (!/%%EOF\s*$/.test(s.slice(-1024))) throw damaged('it does not end with %%EOF (truncated?)');
  let budget = limits.decompressedBytes;
  let undecoded: string | undefined;
  const streamStart = /(?<!end)stream\r?\n/g;
  for (let m = streamStart.exec(s); m !== null; m = streamStart.exec(s)) {
    const start = m.index + m[0].length;
    const end = s.indexOf('endstream', start);
    if (end < 0) throw damaged(`a stream at byte ${m.index} has no endstream`);
    streamStart.lastIndex = end;
    const dict = s.slice(Math.max(0, s.lastIndexOf(' obj', m.index)), m.index);
    if (NOT_DRAWING.test(dict)) continue;
    let data: Buffer = buf.subarray(start, end);
    try {
      for (const filter of filtersOf(dict)) {
        data = decode(filter, data, budget);
        if (filter === 'FlateDecode') budget -= data.length;
      }
    } catch (e) {
      if ((e as { limit?: string }).limit === 'decompressedBytes') throw e;
      undecoded ??= (e as Error).message;
      continue;
    }
    const text = data.toString('latin1');
    if (SELECTS_FONT.test(text) && SHOWS_TEXT.test(text)) return 'text';
  }
  if (undecoded !== undefined) throw damaged(`a stream cannot be decoded (${undecoded})`);
  return 'no-text';
}

function damaged(why: string): Error {
  return limitError('format', `the PDF could not be checked: ${why}`);
}

function filtersOf(dict: string): string[] {
  const f = /\/Filter\s*(\[[^\]]*\]|\/\w+)/.exec(dict)?.[1] ?? '';
  return [...f.matchAll(/\/(\w+)/g)].map((x) => x[1] as string);
}

function decode(filter: string, data: Buffer, budget: number): Buffer {
  switch (filter) {
    case 'FlateDecode':
    case 'Fl':
      try {
        // A stream's trailing end-of-line is tolerated (sync flush), its size bounded.
        return inflateSync(data, { finishFlush: constants.Z_SYNC_FLUSH, maxOutputLength: Math.max(1, budget) });
      } catch (e) {
        if ((e as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE') {
          throw limitError('decompressedBytes', 'the PDF\'s streams inflate past the limit decompressedBytes: not checked');
        }
        throw e;
      }
    case 'ASCII85Decode':
    case 'A85':
      return ascii85(data);
    case 'ASCIIHexDecode':
    case 'AHx':
      return asciiHex(data);
    default:
      throw new Error(`filter ${filter} is not read`);
  }
}

function asciiHex(data: Buffer): Buffer {
  const hex = (data.toString('latin1').split('>')[0] ?? '').replace(/\s/g, '');
  if (/[^0-9a-f]/i.test(hex)) throw new Error('ASCIIHex data holds a character other than a hex digit');
  return Buffer.from(hex.length % 2 === 0 ? hex : `${hex}0`, 'hex');
}

function ascii85(data: Buffer): Buffer {
  const s = data.toString('latin1').replace(/\s/g, '').replace(/^<~/, '');
  const endAt = s.indexOf('~>');
  const body = endAt >= 0 ? s.slice(0, endAt) : s;
  const out: number[] = [];
  let group: number[] = [];
  const flush = (n: number): void => {
    let v = 0;
    for (let i = 0; i < 5; i++) v = v * 85 + (group[i] ?? 84);
    for (let i = 0; i < n - 1; i++) out.push((v >>> (24 - 8 * i)) & 0xff);
    group = [];
  };
  for (const ch of body) {
    if (ch === 'z' && group.length === 0) {
      out.push(0, 0, 0, 0);
      continue;
    }
    const c = ch.charCodeAt(0) - 33;
    if (c < 0 || c > 84) throw new Error(`ASCII85 data holds ${JSON.stringify(ch)}`);
    group.push(c);
    if (group.length === 5) flush(5);
  }
  if (group.length > 0) flush(group.length);
  return Buffer.from(out);
}

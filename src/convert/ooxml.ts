/**
 * PowerPoint (.pptx) and Excel (.xlsx, .xlsm) to Markdown, read from their OOXML parts.
 * Slides in presentation order: the title as a heading, the other text in shape order, the
 * speaker notes after. Sheets in workbook order: one section each, a table of its rows (the
 * first row as header), shared and inline strings resolved, formulas by their cached value.
 */
import { MarkdownOut, squeeze, table } from './markdown.js';
import type { ConvertLimits } from './limits.js';
import { limitError } from './limits.js';
import { attr, local, xmlTokens } from './xml.js';
import { openZip, relationships, type ZipReader } from './zip.js';

/** The paragraphs of a slide or notes part: the title's, and the others', by shape. */
function shapesText(xml: string): { title: string[]; body: string[] } {
  const title: string[] = [];
  const body: string[] = [];
  let inShape = 0;
  let isTitle = false;
  let skip = false;
  let para: string[] | undefined;
  for (const t of xmlTokens(xml)) {
    if (t.kind === 'open') {
      const n = local(t.name);
      if ((n === 'sp' || n === 'graphicFrame') && !t.selfClosing) {
        inShape++;
        if (inShape === 1) {
          isTitle = false;
          skip = false;
        }
      } else if (n === 'ph') {
        const type = attr(t.attrs, 'type');
        if (type === 'title' || type === 'ctrTitle') isTitle = true;
        if (type === 'sldNum' || type === 'sldImg' || type === 'dt' || type === 'ftr' || type === 'hdr') skip = true;
      } else if (n === 'p' && t.name.startsWith('a:') && !t.selfClosing) para = [];
      else if (n === 'br' && para) para.push('\n');
    } else if (t.kind === 'text') {
      if (para) para.push(t.text);
    } else {
      const n = local(t.name);
      if (n === 'p' && t.name.startsWith('a:') && para) {
        const text = squeeze(para.join(''));
        para = undefined;
        if (text !== '' && !skip) (isTitle ? title : body).push(text);
      } else if ((n === 'sp' || n === 'graphicFrame') && inShape > 0) inShape--;
    }
  }
  return { title, body };
}

export function pptxToMarkdown(bytes: Uint8Array, limits: ConvertLimits): { markdown: string; notes: string[] } {
  const zip = openZip(bytes, limits);
  const presentation = need(zip, 'ppt/presentation.xml');
  const rels = relationships(zip, 'ppt/presentation.xml');
  const slides: string[] = [];
  for (const t of xmlTokens(presentation)) {
    if (t.kind === 'open' && local(t.name) === 'sldId') {
      const target = rels.get(attr(t.attrs, 'r:id') ?? '')?.target;
      if (target !== undefined) slides.push(target);
    }
  }
  const out = new MarkdownOut(limits);
  slides.forEach((slide, i) => {
    if (out.isFull) return;
    const xml = zip.text(slide);
    if (xml === undefined) return;
    const { title, body } = shapesText(xml);
    out.heading(2, `Slide ${i + 1}${title.length > 0 ? `: ${title.join(' ')}` : ''}`);
    for (const p of body) out.add(p);
    const notesPart = [...relationships(zip, slide).values()].find((r) => r.type.endsWith('/notesSlide'))?.target;
    const notesXml = notesPart === undefined ? undefined : zip.text(notesPart);
    if (notesXml !== undefined) {
      const notes = shapesText(notesXml);
      const text = [...notes.title, ...notes.body];
      if (text.length > 0) {
        out.heading(3, 'Speaker notes');
        for (const p of text) out.add(p);
      }
    }
  });
  return { markdown: out.text(), notes: out.notes };
}

function need(zip: ZipReader, name: string): string {
  const xml = zip.text(name);
  if (xml === undefined) throw limitError('format', `${name} is missing: not a complete file of this format (truncated?)`);
  return xml;
}

/** Column index of a cell reference (`B7` → 1). */
function column(ref: string): number {
  let n = 0;
  for (const ch of ref) {
    const c = ch.charCodeAt(0);
    if (c < 65 || c > 90) break;
    n = n * 26 + (c - 64);
  }
  return n - 1;
}

function sharedStrings(zip: ZipReader): string[] {
  const xml = zip.text('xl/sharedStrings.xml');
  const strings: string[] = [];
  if (xml === undefined) return strings;
  let current: string[] | undefined;
  let inText = false;
  let inPhonetic = false;
  for (const t of xmlTokens(xml)) {
    if (t.kind === 'open') {
      if (t.name === 'si') current = [];
      else if (t.name === 'rPh') inPhonetic = !t.selfClosing;
      else if (t.name === 't' && !t.selfClosing) inText = true;
    } else if (t.kind === 'close') {
      if (t.name === 'si') {
        strings.push((current ?? []).join(''));
        current = undefined;
      } else if (t.name === 'rPh') inPhonetic = false;
      else if (t.name === 't') inText = false;
    } else if (inText && !inPhonetic && current) current.push(t.text);
  }
  return strings;
}

function sheetRows(xml: string, strings: readonly string[], maxRows: number): { rows: string[][]; total: number } {
  const rows: string[][] = [];
  let total = 0;
  let row: string[] | undefined;
  let cellType = '';
  let col = 0;
  // The cell's value: the text of its <v> (or an inline string's <t>), never its formula's <f>.
  let value: string[] | undefined;
  let inValue = false;
  for (const t of xmlTokens(xml)) {
    if (t.kind === 'open') {
      if (t.name === 'row') {
        total++;
        row = total <= maxRows + 1 ? [] : undefined;
        col = 0;
        if (t.selfClosing && row) rows.push(row);
      } else if (t.name === 'c' && row) {
        const ref = attr(t.attrs, 'r');
        col = ref === undefined ? col : column(ref);
        cellType = attr(t.attrs, 't') ?? 'n';
        value = [];
        if (t.selfClosing) endCell();
      } else if ((t.name === 'v' || t.name === 't') && value && !t.selfClosing) inValue = true;
    } else if (t.kind === 'text') {
      if (inValue) value?.push(t.text);
    } else if (t.name === 'v' || t.name === 't') inValue = false;
    else if (t.name === 'c' && row && value) endCell();
    else if (t.name === 'row' && row) {
      rows.push(Array.from(row, (v) => v ?? ''));
      row = undefined;
    }
  }
  return { rows, total };

  function endCell(): void {
    const raw = (value ?? []).join('');
    if (row) row[col] = cellType === 's' ? (strings[Number(raw)] ?? '') : cellType === 'b' ? (raw === '1' ? 'TRUE' : raw === '' ? '' : 'FALSE') : raw;
    col++;
    value = undefined;
  }
}

export function xlsxToMarkdown(bytes: Uint8Array, limits: ConvertLimits): { markdown: string; notes: string[] } {
  const zip = openZip(bytes, limits);
  const workbook = need(zip, 'xl/workbook.xml');
  const rels = relationships(zip, 'xl/workbook.xml');
  const strings = sharedStrings(zip);
  const out = new MarkdownOut(limits);
  for (const t of xmlTokens(workbook)) {
    if (out.isFull) break;
    if (t.kind !== 'open' || t.name !== 'sheet') continue;
    const name = attr(t.attrs, 'name') ?? '';
    const target = rels.get(attr(t.attrs, 'r:id') ?? '')?.target;
    const xml = target === undefined ? undefined : zip.text(target);
    if (xml === undefined) continue;
    const { rows, total } = sheetRows(xml, strings, limits.rowsPerSheet);
    out.heading(2, `Sheet: ${name}`);
    const notes: string[] = [];
    out.add(table(rows, limits.rowsPerSheet, notes, `sheet "${name}"`, total));
    out.notes.push(...notes);
  }
  return { markdown: out.text(), notes: out.notes };
}

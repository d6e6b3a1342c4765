/**
 * OpenDocument text (.odt), spreadsheets (.ods) and presentations (.odp) to Markdown, read
 * from content.xml: headings at their outline level and paragraphs; one section per sheet
 * with its table (repeated rows and columns expanded, trailing empty ones dropped); one
 * section per slide (draw:page) with its title, text and speaker notes.
 */
import { MarkdownOut, squeeze, table } from './markdown.js';
import { limitError, type ConvertLimits } from './limits.js';
import { attr, xmlTokens } from './xml.js';
import { openZip } from './zip.js';

/** Cells past this many repeats are not expanded (a row of 16,384 empty cells says nothing). */
const MAX_REPEAT = 1024;

export function odfToMarkdown(bytes: Uint8Array, limits: ConvertLimits): { markdown: string; notes: string[] } {
  const zip = openZip(bytes, limits);
  const xml = zip.text('content.xml');
  if (xml === undefined) throw limitError('format', 'content.xml is missing: not a complete OpenDocument file (truncated?)');
  const out = new MarkdownOut(limits);
  let para: string[] | undefined;
  let heading = 0;
  let slide = 0;
  let slideTitle = false;
  let inNotes = false;
  let notesStarted = false;
  // A sheet's table, when inside one (text documents' tables are read as paragraphs).
  let sheet: Sheet | undefined;
  let depthInTable = 0;
  const isSheet = (zip.text('mimetype') ?? '').includes('spreadsheet');
  for (const t of xmlTokens(xml)) {
    if (out.isFull) break;
    if (t.kind === 'open') {
      switch (t.name) {
        case 'table:table':
          depthInTable++;
          if (isSheet && depthInTable === 1 && !t.selfClosing) sheet = { name: attr(t.attrs, 'table:name') ?? '', rows: [], total: 0, rowRepeat: 1, cellRepeat: 1 };
          break;
        case 'table:table-row':
          if (sheet) {
            sheet.row = [];
            sheet.rowRepeat = Math.min(MAX_REPEAT, Number(attr(t.attrs, 'table:number-rows-repeated') ?? 1) || 1);
            if (t.selfClosing) endRow(sheet, limits.rowsPerSheet);
          }
          break;
        case 'table:table-cell':
        case 'table:covered-table-cell':
          if (sheet?.row) {
            sheet.cellRepeat = Math.min(MAX_REPEAT, Number(attr(t.attrs, 'table:number-columns-repeated') ?? 1) || 1);
            sheet.cell = [];
            if (t.selfClosing) endCell(sheet);
          }
          break;
        case 'draw:page':
          slide++;
          notesStarted = false;
          {
            // A page's own name, unless it is the suite's default ("page3").
            const name = attr(t.attrs, 'draw:name') ?? '';
            out.heading(2, `Slide ${slide}${name === '' || /^page\d+$/i.test(name) ? '' : `: ${name}`}`);
          }
          break;
        case 'draw:frame':
          slideTitle = attr(t.attrs, 'presentation:class') === 'title';
          break;
        case 'presentation:notes':
          inNotes = !t.selfClosing;
          break;
        case 'text:h':
        case 'text:p':
          if (!t.selfClosing) {
            para = [];
            heading = t.name === 'text:h' ? Number(attr(t.attrs, 'text:outline-level') ?? 1) || 1 : 0;
          }
          break;
        case 'text:s':
          para?.push(' '.repeat(Math.min(64, Number(attr(t.attrs, 'text:c') ?? 1) || 1)));
          break;
        case 'text:tab':
          para?.push('\t');
          break;
        case 'text:line-break':
          para?.push('\n');
          break;
      }
    } else if (t.kind === 'text') {
      para?.push(t.text);
    } else {
      switch (t.name) {
        case 'text:h':
        case 'text:p': {
          const text = squeeze((para ?? []).join(''));
          para = undefined;
          if (text === '') break;
          if (sheet?.cell) sheet.cell.push(text);
          else if (inNotes) {
            if (!notesStarted) out.heading(3, 'Speaker notes');
            notesStarted = true;
            out.add(text);
          } else if (slideTitle && slide > 0) out.heading(3, text);
          else if (heading > 0) out.heading(heading, text);
          else out.add(text);
          break;
        }
        case 'table:table-cell':
        case 'table:covered-table-cell':
          if (sheet?.row) endCell(sheet);
          break;
        case 'table:table-row':
          if (sheet?.row) endRow(sheet, limits.rowsPerSheet);
          break;
        case 'table:table':
          depthInTable--;
          if (sheet && depthInTable === 0) {
            while (sheet.rows.length > 0 && (sheet.rows.at(-1) ?? []).every((c) => c === '')) {
              sheet.rows.pop();
              sheet.total--;
            }
            out.heading(2, `Sheet: ${sheet.name}`);
            out.add(table(sheet.rows, limits.rowsPerSheet, out.notes, `sheet "${sheet.name}"`, sheet.total));
            sheet = undefined;
          }
          break;
        case 'draw:frame':
          slideTitle = false;
          break;
        case 'presentation:notes':
          inNotes = false;
          break;
      }
    }
  }
  return { markdown: out.text(), notes: out.notes };
}

type Sheet = { name: string; rows: string[][]; total: number; row?: string[]; rowRepeat: number; cellRepeat: number; cell?: string[] };

function endCell(sheet: Sheet): void {
  const text = (sheet.cell ?? []).join(' ');
  for (let i = 0; i < sheet.cellRepeat; i++) sheet.row?.push(text);
  sheet.cell = undefined;
}

function endRow(sheet: Sheet, maxRows: number): void {
  const row = sheet.row ?? [];
  while (row.length > 0 && row.at(-1) === '') row.pop();
  for (let i = 0; i < sheet.rowRepeat; i++) {
    sheet.total++;
    if (sheet.rows.length <= maxRows) sheet.rows.push(row);
  }
  sheet.row = undefined;
}

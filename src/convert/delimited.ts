/**
 * CSV and TSV to Markdown: one table, the first row as header (RFC 4180 quoting: quoted
 * fields may hold the delimiter, quotes doubled and line breaks), bounded by rowsPerSheet.
 */
import type { ConvertLimits } from './limits.js';
import { MarkdownOut, table } from './markdown.js';

export function parseDelimited(text: string, delimiter: string, maxRows: number): { rows: string[][]; total: number } {
  const rows: string[][] = [];
  let total = 0;
  let row: string[] = [];
  let field = '';
  let quoted = false;
  let i = 0;
  const endRow = (): void => {
    row.push(field);
    field = '';
    total++;
    if (rows.length <= maxRows) rows.push(row);
    row = [];
  };
  while (i < text.length) {
    const ch = text[i] as string;
    if (quoted) {
      if (ch === '"') {
        if (text[i + 1] === '"') {
          field += '"';
          i++;
        } else quoted = false;
      } else field += ch;
    } else if (ch === '"' && field === '') quoted = true;
    else if (ch === delimiter) {
      row.push(field);
      field = '';
    } else if (ch === '\n' || ch === '\r') {
      if (ch === '\r' && text[i + 1] === '\n') i++;
      endRow();
    } else field += ch;
    i++;
  }
  if (field !== '' || row.length > 0) endRow();
  return { rows, total };
}

export function delimitedToMarkdown(bytes: Uint8Array, delimiter: string, limits: ConvertLimits): { markdown: string; notes: string[] } {
  const text = new TextDecoder('utf-8').decode(bytes).replace(/^\uFEFF/, '');
  const { rows, total } = parseDelimited(text, delimiter, limits.rowsPerSheet);
  const out = new MarkdownOut(limits);
  out.add(table(rows, limits.rowsPerSheet, out.notes, 'the table', total));
  return { markdown: out.text(), notes: out.notes };
}

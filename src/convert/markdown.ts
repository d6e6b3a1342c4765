/**
 * Markdown out of converted text: tables, headings, and one bounded output per file. Past
 * limits.outputBytes the text is cut at a line and the cut is named in the text and in the
 * conversion's notes.
 */
import type { ConvertLimits } from './limits.js';

/** Text made safe for one table cell: no line breaks, no column separators. */
export function cell(text: string): string {
  return text.replace(/\s*[\r\n]+\s*/g, ' ').replace(/\|/g, '\\|').trim();
}

/** A Markdown table; the first row is the header. Rows past `maxRows` (of `total`, the rows the source had) are cut and the cut named. */
export function table(rows: readonly (readonly string[])[], maxRows: number, notes: string[], what: string, total = rows.length): string {
  if (rows.length === 0) return '_(empty)_\n';
  const width = Math.max(1, ...rows.map((r) => r.length));
  const line = (r: readonly string[]): string => `| ${Array.from({ length: width }, (_, i) => cell(r[i] ?? '')).join(' | ')} |`;
  const shown = rows.slice(0, maxRows + 1);
  const out = [line(shown[0] ?? []), `|${' --- |'.repeat(width)}`, ...shown.slice(1).map(line)];
  if (total > shown.length) {
    const note = `${what}: ${total - 1} rows, the first ${maxRows} shown (limit rowsPerSheet)`;
    notes.push(note);
    out.push('', `_(${note})_`);
  }
  return `${out.join('\n')}\n`;
}

/** Collects a document's Markdown and stops at the output bound. */
export class MarkdownOut {
  private readonly parts: string[] = [];
  private bytes = 0;
  private full = false;
  readonly notes: string[] = [];

  constructor(private readonly limits: Pick<ConvertLimits, 'outputBytes'>) {}

  /** Adds a block (a paragraph, a heading, a table); false once the bound is reached. */
  add(block: string): boolean {
    if (this.full) return false;
    const text = block.endsWith('\n') ? block : `${block}\n`;
    const size = Buffer.byteLength(text) + 1;
    if (this.bytes + size > this.limits.outputBytes) {
      this.full = true;
      const note = `the Markdown was cut at ${this.bytes} bytes (limit outputBytes, ${this.limits.outputBytes})`;
      this.notes.push(note);
      this.parts.push(`_(${note})_\n`);
      return false;
    }
    this.bytes += size;
    this.parts.push(text);
    return true;
  }

  heading(level: number, text: string): boolean {
    return this.add(`${'#'.repeat(Math.min(6, Math.max(1, level)))} ${text.replace(/\s+/g, ' ').trim()}`);
  }

  get isFull(): boolean {
    return this.full;
  }

  text(): string {
    return this.parts.join('\n');
  }
}

/** Collapses runs of blank space inside a paragraph. */
export function squeeze(text: string): string {
  return text.replace(/[ \t\u00a0]+/g, ' ').replace(/ *\n */g, '\n').trim();
}

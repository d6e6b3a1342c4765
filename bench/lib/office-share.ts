/**
 * The office scenario's shares (bench/scenarios/office.ts): office files generated at bench
 * time by the libraries that write them (exceljs for .xlsx, pptxgenjs for .pptx, docx for
 * .docx), beside copies of the office fixtures (test/fixtures/office: files saved by
 * LibreOffice, Word's .doc, a mail) for the formats no library here writes, and plain text
 * and PDF. Each generated file has text of its own (a seeded generator): no two alike.
 */
import { copyFile, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Document, HeadingLevel, Packer, Paragraph } from 'docx';
import ExcelJS from 'exceljs';
import pptxgen from 'pptxgenjs';
import { seeded } from './util.js';

// pptxgenjs's types declare an ES default export in a CommonJS package: Node's import gives the class itself.
const PptxGenJS = ((pptxgen as unknown as { default?: unknown }).default ?? pptxgen) as typeof pptxgen.default;

const FIXTURES = fileURLToPath(new URL(import.meta.url.includes('/dist/bench/') ? '../../../test/fixtures/office/' : '../../test/fixtures/office/', import.meta.url));

/** Fixtures copied as they are, by extension: the formats no library here writes. */
const FIXTURE_OF: Readonly<Record<string, string>> = {
  '.odt': 'hr/handbook.odt',
  '.ods': 'finance/plan.ods',
  '.odp': 'sales/deck.odp',
  '.rtf': 'hr/handbook-rtf.rtf',
  '.doc': 'hr/handbook-doc.doc',
  '.epub': 'hr/handbook-epub.epub',
  '.eml': 'mail/offsite.eml',
  '.pdf': 'policies/memo.pdf',
};

const WORDS = 'budget quarter region north south travel office supplies review meeting contract policy handbook revenue forecast customer invoice project schedule risk'.split(' ');

function words(rand: () => number, n: number): string {
  return Array.from({ length: n }, () => WORDS[Math.floor(rand() * WORDS.length)]).join(' ');
}

/** Random text that compresses as little as a zip gets it to: the large workbook's cells. */
function noise(rand: () => number, n: number): string {
  let s = '';
  for (let i = 0; i < n; i++) s += String.fromCharCode(48 + Math.floor(rand() * 75));
  return s.replace(/[<>&"'\\]/g, 'x');
}

export async function writeXlsx(path: string, seed: number, sheets: number, rows: number): Promise<void> {
  const rand = seeded(seed);
  const wb = new ExcelJS.Workbook();
  for (let s = 0; s < sheets; s++) {
    const ws = wb.addWorksheet(`Sheet ${s + 1}`);
    ws.addRow(['item', 'region', 'amount', 'note']);
    for (let r = 0; r < rows; r++) ws.addRow([words(rand, 2), words(rand, 1), Math.round(rand() * 10_000), words(rand, 6)]);
  }
  await wb.xlsx.writeFile(path);
}

/** A workbook of about `bytes` on disk, streamed (exceljs's WorkbookWriter, shared strings as Excel writes them). */
export async function writeLargeXlsx(path: string, bytes: number, seed: number): Promise<void> {
  const rand = seeded(seed);
  const wb = new ExcelJS.stream.xlsx.WorkbookWriter({ filename: path, useSharedStrings: true, useStyles: false });
  // 8 cells of 30 random characters a row: ~240 B a row once zipped.
  const rowsTotal = Math.ceil(bytes / 240);
  const sheets = 10;
  for (let s = 0; s < sheets; s++) {
    const ws = wb.addWorksheet(`Data ${s + 1}`);
    for (let r = 0; r < rowsTotal / sheets; r++) ws.addRow(Array.from({ length: 8 }, () => noise(rand, 30))).commit();
    ws.commit();
  }
  await wb.commit();
}

export async function writePptx(path: string, seed: number, slides: number): Promise<void> {
  const rand = seeded(seed);
  const deck = new PptxGenJS();
  for (let i = 0; i < slides; i++) {
    const slide = deck.addSlide();
    slide.addText(`Slide ${i + 1}: ${words(rand, 3)}`, { x: 0.5, y: 0.3, w: 9, h: 1, fontSize: 28 });
    slide.addText(Array.from({ length: 4 }, () => ({ text: words(rand, 8), options: { bullet: true, breakLine: true } })), { x: 0.5, y: 1.5, w: 9, h: 3.5, fontSize: 16 });
    slide.addNotes(words(rand, 20));
  }
  await writeFile(path, (await deck.write({ outputType: 'nodebuffer' })) as Buffer);
}

export async function writeDocx(path: string, seed: number, paragraphs: number): Promise<void> {
  const rand = seeded(seed);
  const children = [new Paragraph({ text: words(rand, 4), heading: HeadingLevel.HEADING_1 })];
  for (let i = 0; i < paragraphs; i++) children.push(new Paragraph({ text: words(rand, 40) }));
  await writeFile(path, await Packer.toBuffer(new Document({ sections: [{ children }] })));
}

function delimited(seed: number, rows: number, sep: string): string {
  const rand = seeded(seed);
  const lines = [['item', 'region', 'amount', 'note'].join(sep)];
  for (let r = 0; r < rows; r++) lines.push([words(rand, 2), words(rand, 1), String(Math.round(rand() * 10_000)), words(rand, 6)].join(sep));
  return `${lines.join('\n')}\n`;
}

/** Extensions of the mixed share, in the order they are made. */
export const MIXED_EXTENSIONS = ['.xlsx', '.pptx', '.docx', '.csv', '.tsv', '.odt', '.ods', '.odp', '.rtf', '.doc', '.epub', '.eml', '.txt', '.pdf'] as const;

/** `perFormat` files of each extension under `root/<ext>/`; `only` limits the extensions. Returns the relative paths by extension. */
export async function writeOfficeShare(root: string, perFormat: number, only: readonly string[] = MIXED_EXTENSIONS): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>();
  for (const ext of only) {
    const dir = join(root, ext.slice(1));
    await mkdir(dir, { recursive: true });
    const rels: string[] = [];
    for (let i = 0; i < perFormat; i++) {
      const rel = `${ext.slice(1)}/file-${String(i).padStart(4, '0')}${ext}`;
      const path = join(root, rel);
      const seed = 1000 * MIXED_EXTENSIONS.indexOf(ext as (typeof MIXED_EXTENSIONS)[number]) + i + 1;
      if (ext === '.xlsx') await writeXlsx(path, seed, 3, 200);
      else if (ext === '.pptx') await writePptx(path, seed, 15);
      else if (ext === '.docx') await writeDocx(path, seed, 30);
      else if (ext === '.csv' || ext === '.tsv') await writeFile(path, delimited(seed, 500, ext === '.csv' ? ',' : '\t'));
      else if (ext === '.txt') await writeFile(path, `${words(seeded(seed), 1500)}\n`);
      else await copyFile(join(FIXTURES, FIXTURE_OF[ext]!), path);
      rels.push(rel);
    }
    out.set(ext, rels);
  }
  return out;
}

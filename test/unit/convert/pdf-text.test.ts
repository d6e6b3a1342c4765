/**
 * The text-layer check on real PDFs: a text PDF from ghostscript (handbook.pdf) and from
 * ReportLab (memo.pdf, ASCII85 + Flate streams) has text; a drawing (no-text.pdf) and a
 * scanned page (scanned-contract.pdf: an image, and a font in its resources that draws
 * nothing) have none; a truncated file is "could not be checked", never a crash.
 */
import { readFileSync } from 'node:fs';
import { deflateSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { pdfTextLayer } from '../../../src/convert/pdf-text.js';
import { DEFAULT_LIMITS } from '../../../src/convert/limits.js';

const fixture = (f: string): Buffer => readFileSync(new URL(`../../fixtures/${f}`, import.meta.url));

describe('pdfTextLayer', () => {
  it.each([
    ['handbook.pdf', 'text'],
    ['office/policies/memo.pdf', 'text'],
    ['no-text.pdf', 'no-text'],
    ['office/policies/scanned-contract.pdf', 'no-text'],
  ])('%s: %s', (file, expected) => {
    expect(pdfTextLayer(fixture(file), DEFAULT_LIMITS)).toBe(expected);
  });

  it('a truncated PDF could not be checked, and says why', () => {
    expect(() => pdfTextLayer(fixture('truncated.pdf'), DEFAULT_LIMITS)).toThrow(/could not be checked: .*%%EOF/);
    expect(() => pdfTextLayer(Buffer.from('hello'), DEFAULT_LIMITS)).toThrow(/could not be checked: .*%PDF-/);
  });

  it('streams inflating past decompressedBytes stop the check, naming the limit', () => {
    expect(() => pdfTextLayer(fixture('handbook.pdf'), { decompressedBytes: 100 })).toThrow(/decompressedBytes/);
  });

  it('a stream that cannot be decoded makes a PDF without text "could not be checked"', () => {
    const pdf = Buffer.concat([Buffer.from('%PDF-1.4\n1 0 obj\n<</Length 4/Filter/FlateDecode>>\nstream\n'), Buffer.from('xxxx'), Buffer.from('\nendstream\nendobj\n%%EOF\n')]);
    expect(() => pdfTextLayer(pdf, DEFAULT_LIMITS)).toThrow(/could not be checked: a stream cannot be decoded/);
  });

  it('a compressed content stream that draws text is found', () => {
    const content = deflateSync(Buffer.from('BT /F1 12 Tf 72 712 Td (Hello) Tj ET'));
    const pdf = Buffer.concat([Buffer.from(`%PDF-1.5\n4 0 obj\n<</Length ${content.length}/Filter/FlateDecode>>\nstream\n`), content, Buffer.from('\nendstream\nendobj\n%%EOF\n')]);
    expect(pdfTextLayer(pdf, DEFAULT_LIMITS)).toBe('text');
  });
});

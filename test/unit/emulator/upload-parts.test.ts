import { Readable } from 'node:stream';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { detectFileType, extensionOf, refusedTypeReason } from '../../../packages/emulator/src/file-types.js';
import { documentNameFromPart } from '../../../packages/emulator/src/filename.js';
import { SPOOL_MEMORY_BYTES, spoolPart } from '../../../packages/emulator/src/spool.js';

describe('file types', () => {
  it('goes by extension, case-insensitively, then by content type for names without a known extension', () => {
    expect(detectFileType('a/b/Report.PDF', 'application/octet-stream')?.kind).toBe('pdf');
    expect(detectFileType('notes.md', undefined)?.contentType).toBe('text/markdown');
    expect(detectFileType('README', 'text/plain; charset=utf-8')?.contentType).toBe('text/plain');
    expect(detectFileType('README', 'application/octet-stream')).toBeUndefined();
    expect(detectFileType('setup.exe', 'application/x-msdownload')).toBeUndefined();
    expect(detectFileType('x', 'constructor')).toBeUndefined();
    expect(extensionOf('dir.v2/file')).toBe('');
    expect(extensionOf('.bashrc')).toBe('');
  });

  it('reads exactly the service\'s formats: PDF, DOCX, TXT, HTML, Markdown and its pre-chunked JSON', () => {
    const kinds = ['a.pdf', 'a.docx', 'a.txt', 'a.html', 'a.htm', 'a.md', 'a.markdown', 'a.json'].map((n) => detectFileType(n, undefined)?.kind);
    expect(kinds).toEqual(['pdf', 'docx', 'text', 'html', 'html', 'markdown', 'markdown', 'json']);
    expect(detectFileType('README', 'application/json')?.kind).toBe('json');
    for (const name of ['a.doc', 'a.odt', 'a.rtf', 'a.csv', 'a.pptx', 'a.xlsx', 'a.ods', 'a.eml']) {
      expect(detectFileType(name, 'application/octet-stream'), name).toBeUndefined();
    }
    // A known format's extension decides, whatever the part claims to be.
    expect(detectFileType('sales.csv', 'text/plain')).toBeUndefined();
    expect(detectFileType('README', 'text/csv')).toBeUndefined();
    expect(detectFileType('README', 'application/rtf')).toBeUndefined();
  });

  it('also reads .doc, .odt, .rtf and .csv when permissive', () => {
    const kinds = ['a.doc', 'a.odt', 'a.rtf', 'a.csv'].map((n) => detectFileType(n, undefined, true)?.kind);
    expect(kinds).toEqual(['doc', 'odt', 'rtf', 'text']);
    expect(detectFileType('README', 'text/csv', true)?.contentType).toBe('text/csv');
    expect(detectFileType('a.pptx', undefined, true)).toBeUndefined();
  });

  it('names the file, its type and the formats read in the reason of a refusal', () => {
    expect(refusedTypeReason('sales/q3.xlsx', 'application/octet-stream')).toBe(
      'file "sales/q3.xlsx" has type .xlsx, which the service does not read (it reads PDF, Word (.docx), plain text (.txt), HTML, Markdown (.md) and JSON in the pre-chunked format)',
    );
    expect(refusedTypeReason('README', 'application/octet-stream')).toContain('has type application/octet-stream,');
    expect(refusedTypeReason('README', undefined)).toContain('has no known type,');
    expect(refusedTypeReason('a.pptx', undefined, true)).toContain('(it reads .pdf .docx .txt .html .htm .md .markdown .json .csv .doc .odt .rtf)');
  });
});

describe('document names from parts', () => {
  it('keeps relative paths and undoes the FormData quote escape', () => {
    expect(documentNameFromPart('a/b/c.txt')).toBe('a/b/c.txt');
    expect(documentNameFromPart('say %22hi%22.txt')).toBe('say "hi".txt');
  });

  it('rejects a missing, blank, control-character or over-long name with 400', () => {
    for (const bad of [undefined, '', '   ', 'a\u0001b.txt', 'x'.repeat(1025)]) {
      expect(() => documentNameFromPart(bad)).toThrow(expect.objectContaining({ statusCode: 400 }));
    }
  });
});

describe('spoolPart', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'dssync-spool-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });
  const opts = (maxBytes: number) => ({ name: 'f.txt', maxBytes, tempDir: async () => dir });
  const stream = (chunks: Buffer[]) => Readable.from(chunks);

  it('keeps a small file in memory', async () => {
    const spooled = await spoolPart(stream([Buffer.from('ab'), Buffer.from('c')]), opts(10));
    expect(spooled.size).toBe(3);
    expect((await spooled.read()).toString()).toBe('abc');
    expect(await readdir(dir)).toEqual([]);
  });

  it('writes a larger file to the temp folder and removes it on dispose', async () => {
    const chunk = Buffer.alloc(64 * 1024, 'x');
    const chunks = Array.from({ length: SPOOL_MEMORY_BYTES / chunk.length + 2 }, () => chunk);
    const spooled = await spoolPart(stream(chunks), opts(10 * 1024 * 1024));
    expect(spooled.size).toBe(chunks.length * chunk.length);
    expect(await readdir(dir)).toHaveLength(1);
    expect((await spooled.read()).equals(Buffer.concat(chunks))).toBe(true);
    await spooled.dispose();
    expect(await readdir(dir)).toEqual([]);
  });

  it('fails with 413 naming the file as soon as the count passes the limit, leaving no temp file', async () => {
    const chunk = Buffer.alloc(200 * 1024, 'y');
    await expect(spoolPart(stream([chunk, chunk, chunk]), opts(500 * 1024))).rejects.toMatchObject({
      statusCode: 413,
      details: { file: 'f.txt' },
    });
    expect(await readdir(dir)).toEqual([]);
    const truncated = Object.assign(stream([Buffer.from('abc')]), { truncated: true });
    await expect(spoolPart(truncated, opts(3))).rejects.toMatchObject({ statusCode: 413 });
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator } from '@dssync/emulator';
import { call, createDataSource, fixtureBlob, form, walk } from './client.js';

const DS = '/datastore/v1/data-sources';
const NON_ASCII = "Réunion d'équipe – procès-verbal.txt";

interface Doc {
  document_id: string;
  name: string;
  status: string;
  chunk_count: number;
  failure_reason: string | null;
  size: number;
  content_type: string;
  url: string | null;
  metadata: Record<string, unknown>;
}

describe('emulator: documents and chunks', () => {
  let emu: RunningEmulator;
  let ds: string;
  beforeAll(async () => {
    emu = await startEmulator({ pageSize: 4 });
    ds = await createDataSource(emu.url);
  });
  afterAll(async () => {
    await emu.close();
  });

  it('uploads several files in one request, keeping relative paths and non-ASCII names, answering 201 in part order', async () => {
    const body = form([
      [await fixtureBlob('handbook.md'), 'policies/handbook.md'],
      [await fixtureBlob(NON_ASCII), `réunions/2026/${NON_ASCII}`],
      [await fixtureBlob('notes.txt', 'text/plain'), 'notes.txt'],
      ['quoted', 'say "hi".txt'],
    ]);
    const res = await call<{ documents: Doc[] }>(emu.url, 'POST', `${DS}/${ds}/documents/upload`, { form: body });
    expect(res.status).toBe(201);
    expect(res.body.documents.map((d) => d.name)).toEqual([
      'policies/handbook.md',
      `réunions/2026/${NON_ASCII}`,
      'notes.txt',
      'say "hi".txt',
    ]);
    const [md] = res.body.documents;
    expect(md).toMatchObject({ status: 'ready', content_type: 'text/markdown', size: 1429, url: null, metadata: {}, failure_reason: null });
    expect(md?.document_id).toMatch(/^doc_[0-9a-f]{32}$/);
    expect(md?.chunk_count).toBeGreaterThan(0);
    expect(emu.store.getDataSource(ds)?.document_count).toBe(4);
    expect(emu.stats().filesUploaded).toBe(4);
  });

  it('decodes an RFC 5987 filename*= and a raw UTF-8 filename= alike', async () => {
    const boundary = 'b0undary';
    const raw = Buffer.concat([
      Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="documents"; filename*=UTF-8''d%C3%A9j%C3%A0%2Fvu.txt\r\nContent-Type: text/plain\r\n\r\nfirst\r\n`),
      Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="documents"; filename="`),
      Buffer.from('señal/ñandú.txt', 'utf8'),
      Buffer.from(`"\r\nContent-Type: text/plain\r\n\r\nsecond\r\n--${boundary}--\r\n`),
    ]);
    const res = await call(emu.url, 'POST', `${DS}/${ds}/documents/upload`, {
      body: raw,
      headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
    });
    expect(res.status).toBe(201);
    expect(res.body.documents.map((d: Doc) => d.name)).toEqual(['déjà/vu.txt', 'señal/ñandú.txt']);
  });

  it('extracts text from txt, md, pdf, docx and html into chunks holding the text', async () => {
    await expectReadable(emu.url, ds, ['handbook.md', 'handbook.pdf', 'handbook.docx', 'handbook.html', 'notes.txt']);
  });

  it('reads .odt and .rtf too when permissive, which the service does not', async () => {
    const permissive = await startEmulator({ permissiveFormats: true });
    try {
      await expectReadable(permissive.url, await createDataSource(permissive.url), ['handbook.odt', 'handbook.rtf']);
    } finally {
      await permissive.close();
    }
  });

  it('cuts Markdown at its headings and the pre-chunked JSON at its parts', async () => {
    const json = JSON.stringify({ identifier: 'hb', title: 'Handbook', url: 'https://example.test/hb', hasPart: [{ text: 'Part one.' }, { text: 'Part two.' }] });
    const body = form([[await fixtureBlob('handbook.md'), 'handbook.md'], [json, 'handbook.json']]);
    const res = await call<{ documents: Doc[] }>(emu.url, 'POST', `${DS}/${ds}/documents/upload`, { form: body });
    expect(res.status).toBe(201);
    const texts = async (doc: Doc | undefined): Promise<string[]> =>
      (await walk<{ text: string }>(emu.url, `${DS}/${ds}/documents/${doc?.document_id}/chunks`)).items.map((c) => c.text);
    const [md, parts] = res.body.documents;
    const mdChunks = await texts(md);
    expect(mdChunks[0]).toBe('# Northwind Field Office Handbook');
    expect(mdChunks[1]).toMatch(/^## 1\. Opening hours\n\nThe field office opens/);
    expect(mdChunks.every((c) => /^#{1,6} /.test(c))).toBe(true);
    expect(parts).toMatchObject({ content_type: 'application/json', chunk_count: 2 });
    expect(await texts(parts)).toEqual(['Part one.', 'Part two.']);
  });

  async function expectReadable(url: string, dsId: string, files: string[]): Promise<void> {
    const body = form(await Promise.all(files.map(async (f): Promise<[Blob, string]> => [await fixtureBlob(f), f])));
    const res = await call<{ documents: Doc[] }>(url, 'POST', `${DS}/${dsId}/documents/upload`, { form: body });
    expect(res.status).toBe(201);
    for (const doc of res.body.documents) {
      expect(doc.status, doc.name).toBe('ready');
      const chunks = await walk<{ chunk_id: string; document_id: string; index: number; text: string }>(
        url,
        `${DS}/${dsId}/documents/${doc.document_id}/chunks`,
      );
      expect(chunks.items).toHaveLength(doc.chunk_count);
      expect(chunks.items.map((c) => c.index)).toEqual(chunks.items.map((_, i) => i));
      for (const c of chunks.items) expect(c.text.length).toBeLessThanOrEqual(1000);
      const text = chunks.items.map((c) => c.text).join('\n');
      if (doc.name === 'notes.txt') expect(text).toContain('Site visit notes — harbour extension');
      else {
        expect(text, doc.name).toContain('calibrated every six months');
        expect(text, doc.name).toContain('Northwind Field Office Handbook');
        expect(text, doc.name).not.toMatch(/<\/?p>|\\par|fonttbl/);
      }
      const one = await call(url, 'GET', `/datastore/v1/documents/${doc.document_id}/chunks/${chunks.items[0]?.chunk_id}`);
      expect(one.status).toBe(200);
      expect(one.body).toEqual(chunks.items[0]);
    }
  }

  it('stores a PDF without text and a truncated PDF as failed documents with no chunks, and keeps serving', async () => {
    const body = form([
      [await fixtureBlob('no-text.pdf'), 'scan.pdf'],
      [await fixtureBlob('truncated.pdf'), 'broken.pdf'],
      ['', 'empty.txt'],
    ]);
    const res = await call<{ documents: Doc[] }>(emu.url, 'POST', `${DS}/${ds}/documents/upload`, { form: body });
    expect(res.status).toBe(201);
    for (const doc of res.body.documents) {
      expect(doc, doc.name).toMatchObject({ status: 'failed', chunk_count: 0 });
      expect(doc.failure_reason, doc.name).toBeTruthy();
      const chunks = await call(emu.url, 'GET', `${DS}/${ds}/documents/${doc.document_id}/chunks`);
      expect(chunks.body).toEqual({ items: [], next_cursor: null });
    }
    expect(res.body.documents[1]?.failure_reason).toContain('Invalid PDF');
    expect((await call(emu.url, 'GET', `${DS}/${ds}`)).status).toBe(200);
  });

  it('views, updates (absent fields kept) and deletes a document', async () => {
    const up = await call(emu.url, 'POST', `${DS}/${ds}/documents/upload`, { form: form([['some text', 'a/b.txt']]) });
    const id = up.body.documents[0].document_id as string;
    const path = `${DS}/${ds}/documents/${id}`;
    expect((await call(emu.url, 'GET', path)).body).toEqual(up.body.documents[0]);

    const all = await call(emu.url, 'PUT', path, { json: { name: 'c/b.txt', url: 'file:///srv/share/c/b.txt', metadata: { dssync: { v: 1 } } } });
    expect(all.status).toBe(200);
    expect(all.body).toMatchObject({ name: 'c/b.txt', url: 'file:///srv/share/c/b.txt', metadata: { dssync: { v: 1 } } });
    const partial = await call(emu.url, 'PUT', path, { json: { metadata: { k: 'v' } } });
    expect(partial.body).toMatchObject({ name: 'c/b.txt', url: 'file:///srv/share/c/b.txt', metadata: { k: 'v' } });
    expect(partial.body.chunk_count).toBe(1);

    const deleted = await call(emu.url, 'DELETE', path);
    expect(deleted.status).toBe(204);
    expect((await call(emu.url, 'GET', path)).status).toBe(404);
    expect((await call(emu.url, 'DELETE', path)).status).toBe(404);
    expect(emu.store.getDocument(id)).toBeUndefined();
  });

  it('validates the document update, naming the field', async () => {
    const up = await call(emu.url, 'POST', `${DS}/${ds}/documents/upload`, { form: form([['x', 'v.txt']]) });
    const path = `${DS}/${ds}/documents/${up.body.documents[0].document_id}`;
    const cases: Array<[unknown, string | undefined]> = [
      [{ name: 3 }, 'name'],
      [{ name: '' }, 'name'],
      [{ url: 'not a url' }, 'url'],
      [{ url: null }, 'url'],
      [{ metadata: [1] }, 'metadata'],
      [{ metadata: 'x' }, 'metadata'],
      [{ metadata: { big: 'x'.repeat(70_000) } }, 'metadata'],
      [{ size: 3 }, 'size'],
      [{}, undefined],
    ];
    for (const [json, field] of cases) {
      const res = await call(emu.url, 'PUT', path, { json });
      expect(res.status, JSON.stringify(json).slice(0, 50)).toBe(400);
      expect(res.body.error.field).toBe(field);
    }
    expect((await call(emu.url, 'GET', path)).body.name).toBe('v.txt');
  });

  it('pages documents by cursor: every document exactly once', async () => {
    const other = await createDataSource(emu.url, 'paging');
    const names = Array.from({ length: 11 }, (_, i) => `p/${String(i).padStart(2, '0')}.txt`);
    await call(emu.url, 'POST', `${DS}/${other}/documents/upload`, { form: form(names.slice(0, 6).map((n): [string, string] => [n, n])) });
    await call(emu.url, 'POST', `${DS}/${other}/documents/upload`, { form: form(names.slice(6).map((n): [string, string] => [n, n])) });
    const listed = await walk<Doc>(emu.url, `${DS}/${other}/documents`);
    expect(listed.items.map((d) => d.name)).toEqual(names);
    expect(listed.pages).toBe(3);
    expect((await walk<Doc>(emu.url, `${DS}/${other}/documents`, 5)).pages).toBe(3);
    expect((await call(emu.url, 'GET', `${DS}/ds_missing/documents`)).status).toBe(404);
  });

  it('pages the chunks of a long document', async () => {
    const paragraphs = Array.from({ length: 30 }, (_, i) => `Paragraph ${i}. ${'word '.repeat(60)}`.trim());
    const up = await call(emu.url, 'POST', `${DS}/${ds}/documents/upload`, { form: form([[paragraphs.join('\n\n'), 'long.md']]) });
    const doc = up.body.documents[0] as Doc;
    expect(doc.chunk_count).toBeGreaterThan(4);
    const chunks = await walk<{ text: string; index: number }>(emu.url, `${DS}/${ds}/documents/${doc.document_id}/chunks`);
    expect(chunks.items).toHaveLength(doc.chunk_count);
    expect(chunks.pages).toBe(Math.ceil(doc.chunk_count / 4));
    expect(chunks.items.map((c) => c.text).join('\n\n')).toBe(paragraphs.join('\n\n'));
  });
});

describe('emulator: upload rejections (the whole request is rejected, nothing is stored)', () => {
  let emu: RunningEmulator;
  let ds: string;
  let upload: string;
  beforeAll(async () => {
    emu = await startEmulator({ maxFileBytes: 300 * 1024, maxFilesPerUpload: 3 });
    ds = await createDataSource(emu.url);
    upload = `${DS}/${ds}/documents/upload`;
  });
  afterAll(async () => {
    await emu.close();
  });

  it('answers 413 naming a file over the size limit, also when it streamed past the in-memory spool', async () => {
    const big = await call(emu.url, 'POST', upload, { form: form([['fine', 'ok.txt'], ['x'.repeat(400 * 1024), 'dir/big.txt']]) });
    expect(big.status).toBe(413);
    expect(big.body.error).toMatchObject({ code: 'payload_too_large', file: 'dir/big.txt' });
    expect(big.body.error.message).toContain('dir/big.txt');
    const exact = await call(emu.url, 'POST', upload, { form: form([['y'.repeat(300 * 1024), 'exact.txt']]) });
    expect(exact.status).toBe(201);
    expect(exact.body.documents[0].size).toBe(300 * 1024);
    expect(emu.store.listDocuments(ds).map((d) => d.name)).toEqual(['exact.txt']);
  });

  it('answers 413 to more files than the per-upload limit', async () => {
    const res = await call(emu.url, 'POST', upload, { form: form([1, 2, 3, 4].map((i): [string, string] => [`f${i}`, `f${i}.txt`])) });
    expect(res.status).toBe(413);
    expect(res.body.error.message).toContain('more than 3 files');
    expect(emu.store.listDocuments(ds).map((d) => d.name)).toEqual(['exact.txt']);
  });

  it('answers 415 naming a file of a type it does not accept', async () => {
    const res = await call(emu.url, 'POST', upload, { form: form([['ok', 'a.txt'], ['MZ', 'tools/setup.exe']]) });
    expect(res.status).toBe(415);
    expect(res.body.error).toMatchObject({ code: 'unsupported_media_type', file: 'tools/setup.exe' });
    const byType = await call(emu.url, 'POST', upload, { form: form([[new Blob(['plain'], { type: 'text/plain' }), 'README']]) });
    expect(byType.status).toBe(201);
    expect(byType.body.documents[0].content_type).toBe('text/plain');
    expect(emu.store.listDocuments(ds).map((d) => d.name)).toEqual(['exact.txt', 'README']);
  });

  it('answers 415 to each format the service does not read, naming the type and the formats it reads, and stores nothing', async () => {
    const before = emu.store.listDocuments(ds).map((d) => d.name);
    for (const name of ['old.doc', 'notes.odt', 'letter.rtf', 'sales.csv', 'deck.pptx', 'budget.xlsx']) {
      const res = await call(emu.url, 'POST', upload, { form: form([['ok', 'fine.txt'], [new Blob(['x'], { type: 'text/plain' }), name]]) });
      expect(res.status, name).toBe(415);
      expect(res.body.error).toMatchObject({ code: 'unsupported_media_type', file: name });
      expect(res.body.error.message).toContain(`has type ${name.slice(name.lastIndexOf('.'))}, which the service does not read`);
      expect(res.body.error.message).toContain('it reads PDF, Word (.docx), plain text (.txt), HTML, Markdown (.md) and JSON');
    }
    expect(emu.store.listDocuments(ds).map((d) => d.name)).toEqual(before);
  });

  it('answers 415 to a body that is not multipart, and 400 to malformed or empty multipart', async () => {
    const json = await call(emu.url, 'POST', upload, { json: { documents: [] } });
    expect(json.status).toBe(415);
    expect(json.body.error.code).toBe('unsupported_media_type');
    const noBoundary = await call(emu.url, 'POST', upload, { body: 'abc', headers: { 'content-type': 'multipart/form-data' } });
    expect(noBoundary.status).toBe(400);
    expect(noBoundary.body.error.code).toBe('malformed_multipart');
    const truncated = await call(emu.url, 'POST', upload, {
      body: '--zz\r\nContent-Disposition: form-data; name="documents"; filename="t.txt"\r\n\r\nhalf a fi',
      headers: { 'content-type': 'multipart/form-data; boundary=zz' },
    });
    expect(truncated.status).toBe(400);
    expect(truncated.body.error.code).toBe('malformed_multipart');
    const empty = await call(emu.url, 'POST', upload, { body: '--zz--\r\n', headers: { 'content-type': 'multipart/form-data; boundary=zz' } });
    expect(empty.status).toBe(400);
    expect(empty.body.error.field).toBe('documents');
  });

  it('answers 400 to parts not named documents, form fields and parts without a filename', async () => {
    const fd = form([['a', 'a.txt']]);
    fd.append('file', new Blob(['b']), 'b.txt');
    const wrongName = await call(emu.url, 'POST', upload, { form: fd });
    expect(wrongName.status).toBe(400);
    expect(wrongName.body.error.field).toBe('file');
    const field = form([['a', 'a.txt']]);
    field.append('comment', 'hello');
    expect((await call(emu.url, 'POST', upload, { form: field })).body.error.field).toBe('comment');
    const noFilename = await call(emu.url, 'POST', upload, {
      body: '--zz\r\nContent-Disposition: form-data; name="documents"\r\n\r\nno name\r\n--zz--\r\n',
      headers: { 'content-type': 'multipart/form-data; boundary=zz' },
    });
    expect(noFilename.status).toBe(400);
    expect(noFilename.body.error.message).toContain('filename');
    expect(emu.store.listDocuments(ds)).toHaveLength(2);
  });

  it('answers 404 before reading the body when the data source does not exist', async () => {
    const res = await call(emu.url, 'POST', `${DS}/ds_gone/documents/upload`, { form: form([['a', 'a.txt']]) });
    expect(res.status).toBe(404);
  });
});

/**
 * The client's tolerance, tested on recorded variants of what a service may answer
 * (test/fixtures/api-variants), independently of our own emulator's choices.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  decodeChunk,
  decodeDataSource,
  decodeDocument,
  decodeUploadResponse,
  errorMessageFromBody,
  findListArray,
  listItems,
  unwrapRecord,
} from '../../../src/api/decode.js';
import { nextPage, nextPageUrl } from '../../../src/api/paging.js';
import { matchUploadResults } from '../../../src/api/upload.js';
import { ApiError } from '../../../src/api/errors.js';
import type { UploadFile } from '../../../src/api/records.js';
import { onDisk } from '../../helpers/upload-file.js';

const FIXTURES = new URL('../../fixtures/api-variants/', import.meta.url);
const text = (rel: string): string => readFileSync(new URL(rel, FIXTURES), 'utf8');
const json = (rel: string): unknown => JSON.parse(text(rel));

function thrown(fn: () => unknown): ApiError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(ApiError);
    return e as ApiError;
  }
  throw new Error('expected an ApiError');
}

describe('lists: a bare array or an object holding the array', () => {
  it.each([
    'lists/bare-array.json',
    'lists/under-items.json',
    'lists/under-data.json',
    'lists/under-results.json',
    'lists/under-documents.json',
    'lists/under-data_sources.json',
    'lists/under-chunks.json',
    'lists/nested-data-items.json',
  ])('%s gives both documents', (file) => {
    const items = listItems(json(file));
    expect(items.map((i) => decodeDocument(i).id)).toEqual(['doc-1', 'doc-2']);
  });

  it('an empty list is a list', () => {
    expect(listItems(json('lists/empty-object-list.json'))).toEqual([]);
  });

  it('an object without any list is E_BAD_RESPONSE naming the keys received', () => {
    const err = thrown(() => listItems(json('lists/not-a-list.json'), { method: 'GET', path: '/datastore/v1/data-sources', status: 200 }));
    expect(err.code).toBe('E_BAD_RESPONSE');
    expect(err.status).toBe(200);
    expect(err.message).toContain('status, count');
    expect(err.message).toContain('GET /datastore/v1/data-sources (200)');
  });
});

describe('paging: every cursor and link style', () => {
  const current = new URL('https://svc.example/datastore/v1/data-sources/ds/documents?limit=1000');
  const withParam = (k: string, v: string): string => {
    const u = new URL(current);
    u.searchParams.set(k, v);
    return u.toString();
  };
  it.each<[string, string | undefined]>([
    ['paging/next_cursor.json', withParam('cursor', 'c2')],
    ['paging/nextCursor-camel.json', withParam('cursor', 'c2')],
    ['paging/hasMore-camel.json', withParam('cursor', 'c2')],
    ['paging/cursor.json', withParam('cursor', 'c2')],
    ['paging/next_page_token.json', withParam('page_token', 'tok2')],
    ['paging/nextPageToken.json', withParam('pageToken', 'tok2')],
    ['paging/pagination-next_cursor.json', withParam('cursor', 'c9')],
    ['paging/meta-nextCursor.json', withParam('cursor', 'c9')],
    ['paging/next-plain.json', withParam('cursor', 'opaque-xyz')],
    ['paging/next-url.json', 'https://svc.example/datastore/v1/data-sources/ds/documents?page=2'],
    ['paging/next-path.json', 'https://svc.example/datastore/v1/data-sources/ds/documents?after=doc-1'],
    ['paging/links-next.json', new URL('https://svc.example/datastore/v1/data-sources/ds/documents?page[after]=doc-1').toString()],
    ['paging/links-next-href.json', 'https://svc.example/datastore/v1/data-sources/ds/documents?p=2'],
    ['paging/has_more-page.json', withParam('page', '4')],
    ['paging/has_more-offset.json', withParam('offset', '42')],
    ['paging/has_more-only.json', withParam('offset', '2')],
    ['paging/total-offset.json', withParam('offset', '2')],
    ['paging/page-total_pages.json', withParam('page', '2')],
    // The last page, said in each style.
    ['paging/next_cursor-null.json', undefined],
    ['paging/next-null.json', undefined],
    ['paging/has_more-false-with-cursor.json', undefined],
    ['paging/total-offset-last.json', undefined],
    ['paging/page-total_pages-last.json', undefined],
    ['lists/bare-array.json', undefined],
    ['lists/under-items.json', undefined],
  ])('%s -> %s', (file, expected) => {
    const body = json(file);
    const items = listItems(body);
    const next = nextPage(body, items.length, current);
    if (expected === undefined) {
      expect(next).toBeUndefined();
      return;
    }
    expect(next).toBeDefined();
    expect(nextPageUrl(next!, current, {}).toString()).toBe(expected);
  });

  it('a cursor equal to the one just sent is not a next page', () => {
    const sent = new URL('https://svc.example/x?cursor=c2');
    expect(nextPage(json('paging/cursor.json'), 1, sent)).toBeUndefined();
  });

  it('refuses to follow a next link to another origin (the token would go there)', () => {
    const body = json('paging/links-next-other-origin.json');
    const next = nextPage(body, 1, current)!;
    const err = thrown(() => nextPageUrl(next, current, { method: 'GET', path: current.pathname, status: 200 }));
    expect(err.code).toBe('E_BAD_RESPONSE');
    expect(err.message).toContain('https://evil.example');
  });
});

describe('records: ids, wrappers, camelCase, metadata', () => {
  it.each<[string, (v: unknown) => unknown, Record<string, unknown>]>([
    ['records/document-snake.json', decodeDocument, { id: 'd-1', name: 'a/b.txt', url: 'file:///srv/a/b.txt', metadata: { k: 'v' } }],
    ['records/document-id.json', decodeDocument, { id: 'd-1', name: 'a/b.txt' }],
    ['records/document-uuid.json', decodeDocument, { id: '0b5e4b1e-7d35-4f0c-8f59-0bd1b8a1e001', name: 'a/b.txt' }],
    ['records/document-numeric-id.json', decodeDocument, { id: '42', name: 'a/b.txt' }],
    ['records/document-camel.json', decodeDocument, { id: 'd-1', name: 'a/b.txt', url: 'file:///a/b.txt', metadata: { k: 1 } }],
    ['records/document-wrapped-data.json', decodeDocument, { id: 'd-1', name: 'a/b.txt' }],
    ['records/document-wrapped-document.json', decodeDocument, { id: 'd-1', name: 'a/b.txt' }],
    ['records/document-metadata-string.json', decodeDocument, { id: 'd-1', metadata: { 'dssync.path': 'a/b.txt', size: 3 } }],
    ['records/datasource-snake.json', decodeDataSource, { id: 'ds-1', name: 'Handbook', llmConnectorIds: ['c1', 'c2'] }],
    ['records/datasource-camel.json', decodeDataSource, { id: 'ds-1', name: 'Handbook', llmConnectorIds: ['c1'] }],
    ['records/datasource-wrapped.json', decodeDataSource, { id: '7', name: 'Handbook' }],
    ['records/datasource-connectors-objects.json', decodeDataSource, { id: 'ds-1', llmConnectorIds: ['c1', 'c2'] }],
    ['records/chunk-text.json', decodeChunk, { id: 'ch-1', documentId: 'd-1', text: 'Hello', index: 0 }],
    ['records/chunk-content.json', decodeChunk, { id: 'ch-1', documentId: 'd-1', text: 'Hello', index: 2 }],
    ['records/chunk-chunk.json', decodeChunk, { id: 'ch-1', text: 'Hello' }],
    ['records/chunk-body.json', decodeChunk, { id: '5', text: 'Hello', index: 1 }],
  ])('%s', (file, decode, expected) => {
    const raw = json(file);
    const rec = decode(raw) as Record<string, unknown>;
    expect(rec).toMatchObject(expected);
    // raw is the record itself, as received (unwrapped from its envelope).
    expect(rec.raw).toEqual(unwrapRecord(raw, decode === decodeDocument ? 'document' : decode === decodeChunk ? 'chunk' : 'data source'));
  });

  it('metadata that is not a JSON object stays in raw only', () => {
    const rec = decodeDocument(json('records/document-metadata-bad-string.json'));
    expect(rec.metadata).toBeUndefined();
    expect(rec.raw.metadata).toBe('not json');
  });

  it('a record without any id is E_BAD_RESPONSE naming what was received', () => {
    const err = thrown(() => decodeDocument(json('records/document-without-id.json'), { method: 'GET', path: '/d', status: 200 }));
    expect(err.code).toBe('E_BAD_RESPONSE');
    expect(err.message).toContain('"status":"processing"');
    expect(err.ambiguous).toBe(false);
  });

  it('truncates a huge record in the message', () => {
    const err = thrown(() => decodeDocument({ name: 'x'.repeat(10_000) }));
    expect(err.message.length).toBeLessThan(400);
  });

  it('uses the known id when an answer does not repeat it', () => {
    expect(decodeDocument({ name: 'a' }, {}, 'd-9')).toMatchObject({ id: 'd-9', name: 'a' });
  });

  it('a record with its own id is never unwrapped (its data field is content)', () => {
    expect(decodeDocument({ id: 'd-1', data: { id: 'inner' } }).id).toBe('d-1');
  });

  it('rejects a non-object where a record is expected', () => {
    expect(thrown(() => decodeDocument('hello')).code).toBe('E_BAD_RESPONSE');
    expect(thrown(() => decodeDocument([{ id: 1 }])).code).toBe('E_BAD_RESPONSE');
  });

  it('an empty string is not an id', () => {
    expect(decodeDocument({ document_id: '', id: 'd-2' }).id).toBe('d-2');
  });
});

describe('error bodies: the message, in every shape', () => {
  it.each([
    ['errors/error-message.json', 'application/json', 'data source ds-9 not found'],
    ['errors/message.json', 'application/json', 'data source ds-9 not found'],
    ['errors/detail.json', 'application/json', 'data source ds-9 not found'],
    ['errors/detail-array.json', 'application/json', 'field required; not a URL'],
    ['errors/error-string.json', 'application/json', 'data source ds-9 not found'],
    ['errors/errors-array.json', 'application/json', 'data source ds-9 not found'],
    ['errors/problem-title.json', 'application/problem+json', 'data source ds-9 not found'],
    ['errors/error-page.html', 'text/html', '502 Bad Gateway'],
    ['errors/error-page-no-title.html', 'text/html; charset=utf-8', 'Service Unavailable'],
    ['errors/plain.txt', 'text/plain', 'upstream connect error or disconnect/reset before headers'],
    // Wrong or missing content types do not matter.
    ['errors/message.json', undefined, 'data source ds-9 not found'],
    ['errors/error-page.html', undefined, '502 Bad Gateway'],
  ])('%s (%s)', (file, contentType, expected) => {
    expect(errorMessageFromBody(text(file), contentType)).toBe(expected);
  });

  it('an empty body has no message; a JSON body without one is shown briefly', () => {
    expect(errorMessageFromBody('', 'application/json')).toBeUndefined();
    expect(errorMessageFromBody('{"code":17}', 'application/json')).toBe('{"code":17}');
  });

  it('an HTML page never leaks markup or scripts into the message', () => {
    const msg = errorMessageFromBody('<html><script>var x=1</script><body><p>Oops <b>down</b></p></body></html>', 'text/html');
    expect(msg).toBe('Oops down');
  });
});

describe('upload answers: one record, an array, or a wrapped list, matched to the files', () => {
  const files: UploadFile[] = [
    onDisk('/srv/a.txt', 'a.txt'),
    onDisk('/srv/b.txt', 'b.txt'),
  ];
  const ctx = { method: 'POST', path: '/datastore/v1/data-sources/ds/documents/upload', status: 201 };

  it('a single record for a single file', () => {
    const recs = decodeUploadResponse(json('upload/single-record.json'), ctx);
    expect(matchUploadResults([onDisk('/srv/notes/a.txt', 'notes/a.txt')], recs, ctx).map((r) => r.id)).toEqual(['d-1']);
  });

  it.each(['upload/array.json', 'upload/wrapped-documents.json', 'upload/wrapped-data-basenames.json', 'upload/unnamed.json'])(
    '%s: matched by name, whatever the order; by order only without names',
    (file) => {
      const recs = decodeUploadResponse(json(file), ctx);
      expect(matchUploadResults(files, recs, ctx).map((r) => r.id)).toEqual(['d-1', 'd-2']);
    },
  );

  it('matches names the service rewrote as it stored them (lower-cased, extension dropped, suffixed, cut) by their longest start; a tie is no match (issue 34)', () => {
    const marked: UploadFile[] = [
      onDisk('/srv/A.txt', '.dssync-upload-aaaa1111.Sub/A.dssync-upload-aaaa1111.txt'),
      onDisk('/srv/B.txt', '.dssync-upload-bbbb2222.Sub/B.dssync-upload-bbbb2222.txt'),
    ];
    const recs = [
      { id: 'd-2', name: '.dssync-upload-bbbb2222.sub/b.dssync-upload-bbbb2222 (1)', raw: {} },
      { id: 'd-1', name: '.dssync-upload-aaaa1111.sub/a.dssy', raw: {} },
    ];
    expect(matchUploadResults(marked, recs, ctx).map((r) => r.id)).toEqual(['d-1', 'd-2']);
    const plain: UploadFile[] = [
      onDisk('/srv/Report.txt', 'Report.txt'),
      onDisk('/srv/notes.md', 'notes.md'),
    ];
    expect(matchUploadResults(plain, [{ id: 'd-2', name: 'notes', raw: {} }, { id: 'd-1', name: 'report', raw: {} }], ctx).map((r) => r.id)).toEqual(['d-1', 'd-2']);
    const alike: UploadFile[] = [
      onDisk('/srv/x1.txt', 'x1.txt'),
      onDisk('/srv/x2.txt', 'x2.txt'),
    ];
    expect(() => matchUploadResults(alike, [{ id: 'd-1', name: 'x', raw: {} }, { id: 'd-2', name: 'y', raw: {} }], ctx)).toThrow(/match none/);
  });

  it('matches a base name and a differently normalised name', () => {
    const nested: UploadFile[] = [
      onDisk('/srv/x/Cafe\u0301.txt', 'x/Cafe\u0301.txt'),
      onDisk('/srv/y/notes.md', 'y/notes.md'),
    ];
    const recs = [
      { id: 'd-2', name: 'notes.md', raw: {} },
      { id: 'd-1', name: 'x/Caf\u00e9.txt', raw: {} },
    ];
    expect(matchUploadResults(nested, recs, ctx).map((r) => r.id)).toEqual(['d-1', 'd-2']);
  });

  it('two files with the same base name are matched in order among themselves', () => {
    const same: UploadFile[] = [
      onDisk('/srv/a/readme.md', 'a/readme.md'),
      onDisk('/srv/b/readme.md', 'b/readme.md'),
    ];
    const recs = [
      { id: 'd-1', name: 'readme.md', raw: {} },
      { id: 'd-2', name: 'readme.md', raw: {} },
    ];
    expect(matchUploadResults(same, recs, ctx).map((r) => r.id)).toEqual(['d-1', 'd-2']);
  });

  it('a count mismatch is E_BAD_RESPONSE and ambiguous (documents may exist)', () => {
    const recs = decodeUploadResponse(json('upload/single-record.json'), ctx);
    const err = thrown(() => matchUploadResults(files, recs, ctx));
    expect(err).toMatchObject({ code: 'E_BAD_RESPONSE', ambiguous: true, retryable: true, status: 201 });
    expect(err.message).toContain('uploaded 2 file(s) but the service returned 1');
  });

  it('a returned name matching no file is E_BAD_RESPONSE and ambiguous', () => {
    const err = thrown(() => matchUploadResults(files, [{ id: '1', name: 'a.txt', raw: {} }, { id: '2', name: 'zzz.txt', raw: {} }], ctx));
    expect(err).toMatchObject({ code: 'E_BAD_RESPONSE', ambiguous: true });
    expect(err.message).toContain('"zzz.txt"');
  });

  it('an upload answer without ids is ambiguous', () => {
    const err = thrown(() => decodeUploadResponse([{ name: 'a.txt' }], { ...ctx, mayHaveActed: true }));
    expect(err).toMatchObject({ code: 'E_BAD_RESPONSE', ambiguous: true });
  });

  it('findListArray leaves single records alone', () => {
    expect(findListArray(json('upload/single-record.json'))).toBeUndefined();
  });
});

describe('Wikit Semantics shapes (docs.wikit.ai): 24-hex ids under id, chunk text under data, bare arrays', () => {
  it('a document keeps title, storage_name and public_link', () => {
    const d = decodeDocument(json('wikit/document.json'));
    expect(d).toMatchObject({
      id: '65f1c2a9e4b0a1b2c3d4e5f6',
      name: 'handbook/leave.md',
      title: 'Leave policy',
      url: 'file:///srv/share/handbook/leave.md',
      publicLink: 'https://files.example.com/p/65f1c2a9e4b0a1b2c3d4e5f6',
      storageName: 'b7e1f0c2-leave.md',
    });
  });

  it("a chunk's text is read from data (Markdown), with position and pages", () => {
    const c = decodeChunk(json('wikit/chunk.json'));
    expect(c).toMatchObject({ id: '65f1c2a9e4b0a1b2c3d4e5a1', documentId: '65f1c2a9e4b0a1b2c3d4e5f6', position: 3, index: 3, pageStart: 2, pageEnd: 3 });
    expect(c.text).toContain('**25 days**');
  });

  it('bare arrays of chunks, documents and data sources; null pages and urls stay absent', () => {
    const chunks = listItems(json('wikit/chunks-bare-array.json')).map((i) => decodeChunk(i));
    expect(chunks.map((c) => c.text)).toEqual(['First part.', 'Second part.']);
    expect(chunks[0]?.pageStart).toBeUndefined();
    expect(chunks[1]).toMatchObject({ pageStart: 1, pageEnd: 1, position: 1 });
    const docs = listItems(json('wikit/documents-bare-array.json')).map((i) => decodeDocument(i));
    expect(docs.map((d) => d.id)).toEqual(['65f1c2a9e4b0a1b2c3d4e5f6', '65f1c2a9e4b0a1b2c3d4e5f7']);
    expect(docs[0]?.url).toBeUndefined();
    expect(docs[1]?.url).toBe('https://intranet.example/b');
    const ds = listItems(json('wikit/datasources-bare-array.json')).map((i) => decodeDataSource(i));
    expect(ds[0]).toMatchObject({ id: '65f1c2a9e4b0a1b2c3d4e500', name: 'Handbook', llmConnectorIds: ['65f1c2a9e4b0a1b2c3d4e533'] });
  });

  it('a chunk whose data is an object is not text', () => {
    expect(decodeChunk({ id: 'c', data: { x: 1 } }).text).toBeUndefined();
  });
});

describe('ids that would address something else (issue 24.7)', () => {
  const bad: [string, RegExp][] = [
    ['..', /"\.\." is not usable in a URL \(it is a relative path segment\)/],
    ['.', /"\." is not usable in a URL/],
    ['a/b', /"a\/b" is not usable in a URL \(it contains "\/"\)/],
    ['a\\b', /contains "\\\\"/],
    ['a?x=1', /contains "\?"/],
    ['a#b', /contains "#"/],
    ['%2e%2e', /contains "%"/],
    ['a\nb', /contains "\\n"/],
    ['x'.repeat(257), /257 characters long \(at most 256\)/],
  ];
  it.each(bad)('a document id %j is a bad answer, named', (id, message) => {
    const e = thrown(() => decodeUploadResponse({ id, name: 'a.txt' }, { method: 'POST', path: '/up', status: 200, mayHaveActed: true }));
    expect(e.code).toBe('E_BAD_RESPONSE');
    expect(e.message).toMatch(message);
    expect(e.message).toContain('POST /up (200)');
  });
  it('the same for data sources and chunks; ordinary ids pass', () => {
    expect(thrown(() => decodeDataSource({ id: '..' })).message).toMatch(/data source id "\.\."/);
    expect(thrown(() => decodeChunk({ chunk_id: 'c/1' })).message).toMatch(/chunk id "c\/1"/);
    expect(decodeDocument({ id: '65f1c2a9e4b0a1b2c3d4e5f6' }).id).toBe('65f1c2a9e4b0a1b2c3d4e5f6');
    expect(decodeDocument({ id: 42 }).id).toBe('42');
    expect(decodeDocument({ id: 'doc 1.txt' }).id).toBe('doc 1.txt');
  });
});

/**
 * The client against a local server answering in OTHER shapes than our emulator: the
 * tolerance of DESIGN §3 over real HTTP, plus the failure modes (Retry-After dates, HTML
 * error pages, timeouts, resets, token rotation) and the rule that the token never leaks.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import type { ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DatastoreClient, type DatastoreClientOptions } from '../../../src/api/client.js';
import { ApiError } from '../../../src/api/errors.js';
import { Pacer, type PacerEvent } from '../../../src/api/pacer.js';
import { createLogger } from '../../../src/log.js';
import { json, multipartParts, startVariantServer, text, type VariantServer } from './variant-server.js';
import { rejectionOf } from '../../helpers/rejection.js';
import { fixedToken } from '../../../src/api/token-provider.js';
import { QUEUE } from '../../helpers/queue-defaults.js';
import { waitFor } from '../../helpers/wait-for.js';
import { DEFAULT_ORGANIZATION_HEADER } from '../../../src/config/connection.js';
import { onDisk } from '../../helpers/upload-file.js';

const TOKEN = 'sk-live-SECRET-abc123xyz';
const ORG = 'org-7';
let server: VariantServer;
let dir: string;
const clients: DatastoreClient[] = [];

beforeAll(async () => {
  server = await startVariantServer();
  dir = await mkdtemp(join(tmpdir(), 'dssync-api-variants-'));
});
afterAll(async () => {
  await server.close();
  await rm(dir, { recursive: true, force: true });
});
afterEach(async () => {
  server.requests.length = 0;
  await Promise.all(clients.splice(0).map((c) => c.close()));
});

function client(opts: Partial<DatastoreClientOptions> = {}): DatastoreClient {
  const c = new DatastoreClient({
    baseUrl: server.url,
    organizationId: ORG,
    tokens: fixedToken(TOKEN),
    ...QUEUE,
    pacer: new Pacer({ requestsPerSecond: 0, concurrency: 4, maxAttempts: 6, backoffBaseMs: 5, backoffMaxMs: 20 }),
    ...opts,
    organizationHeader: opts.organizationHeader ?? DEFAULT_ORGANIZATION_HEADER,
  });
  clients.push(c);
  return c;
}

function failure(p: Promise<unknown> | (() => unknown)): Promise<ApiError> {
  return rejectionOf(p, ApiError);
}

async function file(name: string, content: string | Buffer): Promise<string> {
  const path = join(dir, name.replace(/\//g, '__'));
  await writeFile(path, content);
  return path;
}

describe('shapes other than the emulator\'s', () => {
  it('sends both auth headers, Accept and a dssync User-Agent on every request', async () => {
    server.handle((_req, res) => json(res, 200, []));
    await client().listDataSources();
    const h = server.requests[0]!.headers;
    expect(h.authorization).toBe(`Bearer ${TOKEN}`);
    expect(h['x-service-organization-id']).toBe(ORG);
    expect(h.accept).toBe('application/json');
    expect(h['user-agent']).toMatch(/^dssync\/\d+\.\d+\.\d+/);
  });

  it('lists data sources answered as a bare array with `id` and numeric ids', async () => {
    server.handle((_req, res) => json(res, 200, [{ id: 'ds-1', name: 'A' }, { id: 2, name: 'B', llmConnectorIds: ['c'] }]));
    const list = await client().listDataSources();
    expect(list.map((d) => [d.id, d.name])).toEqual([['ds-1', 'A'], ['2', 'B']]);
    expect(list[1]?.llmConnectorIds).toEqual(['c']);
    expect(server.requests[0]!.url).toBe('/datastore/v1/data-sources?limit=1000');
  });

  it('gets a data source wrapped in `data`', async () => {
    server.handle((_req, res) => json(res, 200, { data: { data_source_id: 'ds-1', name: 'Handbook' } }));
    expect(await client().getDataSource('ds-1')).toMatchObject({ id: 'ds-1', name: 'Handbook' });
  });

  it('follows `links.next` paging to the end, keeping to the same origin', async () => {
    server.handle((req, res) => {
      const page = new URL(req.url, server.url).searchParams.get('page') ?? '1';
      const n = Number(page);
      const next = n < 3 ? `/datastore/v1/data-sources/ds%201/documents?page=${n + 1}` : null;
      json(res, 200, { data: [{ id: `d-${n}a` }, { id: `d-${n}b`, name: `f${n}.txt` }], links: { next } });
    });
    const docs = await client().listDocuments('ds 1');
    expect(docs.map((d) => d.id)).toEqual(['d-1a', 'd-1b', 'd-2a', 'd-2b', 'd-3a', 'd-3b']);
    expect(server.requests.map((r) => r.url)).toEqual([
      '/datastore/v1/data-sources/ds%201/documents?limit=1000',
      '/datastore/v1/data-sources/ds%201/documents?page=2',
      '/datastore/v1/data-sources/ds%201/documents?page=3',
    ]);
  });

  it('follows a cursor under the service\'s own parameter name, keeping the page size', async () => {
    server.handle((req, res) => {
      const tok = new URL(req.url, server.url).searchParams.get('page_token');
      if (tok === null) json(res, 200, { results: [{ uuid: 'u1' }], next_page_token: 'p2' });
      else json(res, 200, { results: [{ uuid: 'u2' }], next_page_token: '' });
    });
    const docs = await client().listDocuments('ds');
    expect(docs.map((d) => d.id)).toEqual(['u1', 'u2']);
    expect(server.requests[1]!.url).toBe('/datastore/v1/data-sources/ds/documents?limit=1000&page_token=p2');
  });

  it('stops with E_BAD_RESPONSE when the service repeats a cursor (a paging loop)', async () => {
    let n = 0;
    server.handle((_req, res) => json(res, 200, { items: [{ id: `d${n++}` }], next_cursor: 'same' }));
    const err = await failure(client().listDocuments('ds'));
    expect(err.code).toBe('E_BAD_RESPONSE');
    expect(err.message).toMatch(/paging loops/);
    expect(server.requests).toHaveLength(2);
  });

  it('stops with E_BAD_RESPONSE past the page bound (a service that never ends its list)', async () => {
    let n = 0;
    server.handle((_req, res) => {
      n++;
      json(res, 200, { items: [{ id: `d${n}` }], next_cursor: `c${n}` });
    });
    const err = await failure(client({ maxPages: 4 }).listDocuments('ds'));
    expect(err.code).toBe('E_BAD_RESPONSE');
    expect(err.message).toMatch(/more than 4 pages/);
    expect(server.requests).toHaveLength(4);
  });

  it('the sync form: keep sees each distinct document once, whole; only what it keeps is compacted', async () => {
    server.handle((req, res) => {
      const offset = Number(new URL(req.url, server.url).searchParams.get('offset') ?? '0');
      // Offset paging over a list that grew in front: page 2 repeats d2.
      const pages: Record<number, unknown[]> = {
        0: [{ id: 'd1', name: 'a.txt', status: 'ready' }, { id: 'd2', name: 'b.txt', status: 'ready' }],
        2: [{ id: 'd2', name: 'b.txt', status: 'ready' }, { id: 'd3', name: 'c.txt', status: 'ready' }],
      };
      json(res, 200, { items: pages[offset] ?? [], offset, total: 4 });
    });
    const seen: string[] = [];
    const docs = await client().listDocuments('ds', {
      form: 'sync',
      keep: (d) => {
        seen.push(`${d.id}:${String(d.raw.status)}`);
        return d.id !== 'd1';
      },
    });
    expect(seen).toEqual(['d1:ready', 'd2:ready', 'd3:ready']);
    expect(docs).toEqual([
      { id: 'd2', name: 'b.txt', raw: {} },
      { id: 'd3', name: 'c.txt', raw: {} },
    ]);
    expect(server.requests.map((r) => r.url)).toEqual(['/datastore/v1/data-sources/ds/documents?limit=1000', '/datastore/v1/data-sources/ds/documents?limit=1000&offset=2']);
  });

  it('an empty page ends the list even if a cursor is given', async () => {
    server.handle((_req, res) => json(res, 200, { items: [], next_cursor: 'more?' }));
    expect(await client().listDocuments('ds')).toEqual([]);
    expect(server.requests).toHaveLength(1);
  });

  it('refuses a next link to another origin, and the token does not go there', async () => {
    const other = await startVariantServer((_req, res) => json(res, 200, []));
    try {
      server.handle((_req, res) => json(res, 200, { items: [{ id: 'd1' }], next: `${other.url}/steal` }));
      const err = await failure(client().listDocuments('ds'));
      expect(err.code).toBe('E_BAD_RESPONSE');
      expect(other.requests).toHaveLength(0);
    } finally {
      await other.close();
    }
  });

  it('lists without ?limit= when the service refuses it', async () => {
    server.handle((req, res) => {
      if (req.url.includes('limit=')) json(res, 400, { detail: 'unknown parameter limit' });
      else json(res, 200, { documents: [{ document_id: 'd1' }] });
    });
    const c = client();
    expect((await c.listDocuments('ds')).map((d) => d.id)).toEqual(['d1']);
    expect((await c.listDocuments('ds')).map((d) => d.id)).toEqual(['d1']);
    expect(server.requests.map((r) => r.url.includes('limit='))).toEqual([true, false, false]);
  });

  it('creates a data source answered 200 (not 201) and wrapped', async () => {
    server.handle((_req, res) => json(res, 200, { data_source: { id: 'ds-new' } }));
    const ds = await client().createDataSource({ name: 'Policies', llmConnectorIds: ['conn-1'] });
    expect(ds).toMatchObject({ id: 'ds-new', name: 'Policies', llmConnectorIds: ['conn-1'] });
    expect(JSON.parse(server.requests[0]!.body.toString())).toEqual({ name: 'Policies', llm_connector_ids: ['conn-1'] });
    expect(server.requests[0]!.headers['content-type']).toBe('application/json');
  });

  it('creates a data source answered 201 with no body but a Location header', async () => {
    server.handle((_req, res) => {
      res.writeHead(201, { location: '/datastore/v1/data-sources/ds-loc' });
      res.end();
    });
    expect(await client().createDataSource({ name: 'P', llmConnectorIds: ['c'] })).toMatchObject({ id: 'ds-loc', name: 'P' });
  });

  it('DELETE answered 200 with a body, 204, or 404 (already gone) all resolve', async () => {
    const answers: ((res: ServerResponse) => void)[] = [
      (res) => json(res, 200, { deleted: true, id: 'd1' }),
      (res) => {
        res.writeHead(204);
        res.end();
      },
      (res) => json(res, 404, { error: 'not found' }),
    ];
    let i = 0;
    server.handle((_req, res) => answers[i++]!(res));
    const c = client();
    await expect(c.deleteDocument('ds', 'd1')).resolves.toBeUndefined();
    await expect(c.deleteDocument('ds', 'd1')).resolves.toBeUndefined();
    await expect(c.deleteDataSource('ds')).resolves.toBeUndefined();
    expect(server.requests.map((r) => `${r.method} ${r.url}`)).toEqual([
      'DELETE /datastore/v1/data-sources/ds/documents/d1',
      'DELETE /datastore/v1/data-sources/ds/documents/d1',
      'DELETE /datastore/v1/data-sources/ds',
    ]);
    expect(server.requests.every((r) => r.body.length === 0)).toBe(true);
  });

  it('updateDocument sends all three fields and never a null; an empty 204 answer is fine', async () => {
    server.handle((_req, res) => {
      res.writeHead(204);
      res.end();
    });
    const update = { name: 'a/b.txt', url: 'file:///srv/a/b.txt', metadata: { 'dssync.size': 3 } };
    expect(await client().updateDocument('ds', 'd1', update)).toMatchObject({ id: 'd1', ...update });
    expect(JSON.parse(server.requests[0]!.body.toString())).toEqual(update);
    // An answer that is not a record ("updated") is described by the request's fields.
    server.handle((_req, res) => json(res, 200, 'updated'));
    expect(await client().updateDocument('ds', 'd1', update)).toMatchObject({ id: 'd1', ...update });
    server.requests.length = 1;
    server.handle((_req, res) => json(res, 200, { status: 'ok' }));
    // A field held as null is left out, not sent as null.
    await client().updateDocument('ds', 'd1', { name: 'x', url: null as unknown as string, metadata: {} });
    expect(JSON.parse(server.requests[1]!.body.toString())).toEqual({ name: 'x', metadata: {} });
  });

  it('reads chunks as `content` under `chunks`, and one chunk by its path without data source', async () => {
    server.handle((req, res) => {
      if (req.url.startsWith('/datastore/v1/documents/')) json(res, 200, { chunk: { id: 'c2', body: 'two' } });
      else json(res, 200, { chunks: [{ chunk_id: 'c1', content: 'one', position: 0 }] });
    });
    const c = client();
    expect(await c.listChunks('ds', 'd1')).toMatchObject([{ id: 'c1', text: 'one', index: 0, documentId: 'd1' }]);
    expect(await c.getChunk('d1', 'c2')).toMatchObject({ id: 'c2', text: 'two', documentId: 'd1' });
    expect(server.requests.map((r) => r.url)).toEqual([
      '/datastore/v1/data-sources/ds/documents/d1/chunks?limit=1000',
      '/datastore/v1/documents/d1/chunks/c2',
    ]);
  });

  it('lists the data sources of an App', async () => {
    server.handle((_req, res) => json(res, 200, { data_sources: [{ data_source_id: 'ds-1' }] }));
    expect((await client().listAppDataSources('app 1')).map((d) => d.id)).toEqual(['ds-1']);
    expect(server.requests[0]!.url).toBe('/semantics/apps/app%201/data-sources?limit=1000');
  });
});

describe('upload', () => {
  it('sends one multipart request with one `documents` part per file (names with / and non-ASCII, types by extension)', async () => {
    const a = await file('a.txt', 'alpha');
    const b = await file('b.md', '# beta');
    const c = await file('c.pdf', '%PDF-1.4');
    server.handle((_req, res) =>
      // An array in another order than the files, with base names only.
      json(res, 201, [
        { id: 'd-c', name: 'Ünïcode report.pdf' },
        { id: 'd-a', name: 'a.txt' },
        { id: 'd-b', name: 'b.md' },
      ]),
    );
    const docs = await client().uploadDocuments('ds', [
      onDisk(a, 'a.txt'),
      onDisk(b, 'notes/b.md'),
      onDisk(c, 'reports/2024/Ünïcode report.pdf'),
    ]);
    expect(docs.map((d) => d.id)).toEqual(['d-a', 'd-b', 'd-c']);
    expect(server.requests).toHaveLength(1);
    const req = server.requests[0]!;
    expect(req.url).toBe('/datastore/v1/data-sources/ds/documents/upload');
    expect(req.headers['content-type']).toMatch(/^multipart\/form-data; boundary=/);
    expect(req.headers.authorization).toBe(`Bearer ${TOKEN}`);
    expect(req.headers['x-service-organization-id']).toBe(ORG);
    expect(multipartParts(req.body)).toEqual([
      { filename: 'a.txt', contentType: 'text/plain', size: 5 },
      { filename: 'notes/b.md', contentType: 'text/markdown', size: 6 },
      { filename: 'reports/2024/Ünïcode report.pdf', contentType: 'application/pdf', size: 8 },
    ]);
  });

  it('accepts a single record as the answer to a one-file upload', async () => {
    const a = await file('single.docx', 'PK');
    server.handle((_req, res) => json(res, 200, { document: { document_id: 'd-1', file_name: 'single.docx' } }));
    expect((await client().uploadDocuments('ds', [onDisk(a, 'single.docx')]))[0]).toMatchObject({ id: 'd-1' });
    expect(multipartParts(server.requests[0]!.body)[0]?.contentType).toBe('application/vnd.openxmlformats-officedocument.wordprocessingml.document');
  });

  it('a file that changed or vanished since it was planned is E_FILE_CHANGED naming it, and nothing is sent', async () => {
    const a = await file('changed.txt', 'v2 longer');
    server.handle((_req, res) => json(res, 201, []));
    const changed = await failure(client().uploadDocuments('ds', [onDisk(a, 'changed.txt', { expectedSize: 2 })]));
    expect(changed).toMatchObject({ code: 'E_FILE_CHANGED', file: a, ambiguous: false });
    expect(changed.message).toContain(a);
    const gone = await failure(client().uploadDocuments('ds', [onDisk(join(dir, 'nope.txt'), 'nope.txt')]));
    expect(gone).toMatchObject({ code: 'E_FILE_CHANGED', file: join(dir, 'nope.txt') });
    expect(gone.message).toContain('ENOENT');
    expect(server.requests).toHaveLength(0);
  });

  it('a connection reset after the body was sent is ambiguous and NOT retried', async () => {
    const a = await file('reset.txt', 'x'.repeat(10_000));
    server.handle((_req, res) => void res.socket?.destroy());
    const err = await failure(client().uploadDocuments('ds', [onDisk(a, 'reset.txt')]));
    expect(err).toMatchObject({ code: 'E_CONNECTION', ambiguous: true, retryable: true, attempts: 1 });
    expect(server.requests).toHaveLength(1);
    expect(server.requests[0]!.body.length).toBeGreaterThan(10_000);
  });

  it('a 500 answer to an upload is ambiguous and not retried; a 503 is retried', async () => {
    const a = await file('fivehundred.txt', 'x');
    server.handle((_req, res) => json(res, 500, { message: 'internal' }));
    const err = await failure(client().uploadDocuments('ds', [onDisk(a, 'fivehundred.txt')]));
    expect(err).toMatchObject({ code: 'E_SERVER', status: 500, ambiguous: true, retryable: true });
    expect(server.requests).toHaveLength(1);
    let n = 0;
    server.handle((_req, res) => (n++ === 0 ? json(res, 503, { message: 'busy' }, { 'retry-after': '0' }) : json(res, 201, [{ id: 'd1', name: 'fivehundred.txt' }])));
    expect((await client().uploadDocuments('ds', [onDisk(a, 'fivehundred.txt')]))[0]?.id).toBe('d1');
    expect(server.requests).toHaveLength(3);
  });

  it('a 413 to a one-file upload names the file and is not retried', async () => {
    const a = await file('big.pdf', 'x');
    server.handle((_req, res) => json(res, 413, { error: { message: 'file too large (max 20 MB)' } }));
    const err = await failure(client().uploadDocuments('ds', [onDisk(a, 'big.pdf')]));
    expect(err).toMatchObject({ code: 'E_PAYLOAD_TOO_LARGE', status: 413, file: a, retryable: false });
    expect(err.message).toContain('file too large (max 20 MB)');
    expect(server.requests).toHaveLength(1);
  });

  it('an answer with fewer documents than files is ambiguous E_BAD_RESPONSE', async () => {
    const a = await file('m1.txt', '1');
    const b = await file('m2.txt', '2');
    server.handle((_req, res) => json(res, 201, { items: [{ id: 'd1', name: 'm1.txt' }] }));
    const err = await failure(client().uploadDocuments('ds', [onDisk(a, 'm1.txt'), onDisk(b, 'm2.txt')]));
    expect(err).toMatchObject({ code: 'E_BAD_RESPONSE', ambiguous: true, status: 201 });
  });
});

describe('failures', () => {
  it('waits out a Retry-After given as an HTTP date, as one pause for the whole pacer', { timeout: 10_000 }, async () => {
    const events: PacerEvent[] = [];
    let n = 0;
    server.handle((_req, res) => {
      if (n++ > 0) return json(res, 200, []);
      // Both dates from one second-aligned instant: the pause is exactly 2 s of the service's clock.
      const now = Math.floor(Date.now() / 1000) * 1000;
      json(res, 429, { message: 'slow down' }, { date: new Date(now).toUTCString(), 'retry-after': new Date(now + 2000).toUTCString() });
    });
    await client({ pacer: new Pacer({ requestsPerSecond: 0, concurrency: 4, maxAttempts: 6, onEvent: (e) => events.push(e) }) }).listDataSources();
    // The retry waited out the pause (the pacer's own account of its wait, not a stopwatch).
    expect(events.filter((e) => e.type === 'wait' && e.reason === 'pause').reduce((ms, e) => ms + (e.type === 'wait' ? e.ms : 0), 0)).toBeGreaterThanOrEqual(1_900);
    expect(events.find((e) => e.type === 'throttle')).toMatchObject({ status: 429, pauseMs: 2_000, retryAfterMs: 2_000 });
    expect(server.requests).toHaveLength(2);
  });

  it('an HTML 502 page gives a clean message with the status, after bounded retries', async () => {
    server.handle((_req, res) =>
      text(res, 502, '<html><head><title>502 Bad Gateway</title></head><body><h1>502 Bad Gateway</h1><hr>nginx</body></html>', 'text/html'),
    );
    const err = await failure(client({ maxAttempts: 3 }).getDataSource('ds'));
    expect(err).toMatchObject({ code: 'E_SERVER', status: 502, attempts: 3, retryable: true });
    expect(err.message).toBe('GET /datastore/v1/data-sources/ds: 502 Bad Gateway');
    expect(server.requests).toHaveLength(3);
  });

  it('a non-JSON 200 where a record is expected is E_BAD_RESPONSE with status and content type', async () => {
    server.handle((_req, res) => text(res, 200, '<html><body>Welcome to nginx!</body></html>', 'text/html'));
    const err = await failure(client().getDocument('ds', 'd1'));
    expect(err).toMatchObject({ code: 'E_BAD_RESPONSE', status: 200 });
    expect(err.message).toContain('text/html');
    expect(err.message).toContain('Welcome to nginx!');
    expect(err.message).not.toMatch(/\n\s+at /); // no stack trace
  });

  it('invalid JSON with a JSON content type is E_BAD_RESPONSE', async () => {
    server.handle((_req, res) => text(res, 200, '{"id": ', 'application/json'));
    expect(await failure(client().getDocument('ds', 'd1'))).toMatchObject({ code: 'E_BAD_RESPONSE', status: 200 });
  });

  it('a slow server hits the header timeout: E_TIMEOUT, retried within the attempt bound', { timeout: 10_000 }, async () => {
    server.handle(() => undefined); // never answers
    const err = await failure(client({ timeouts: { ...QUEUE.timeouts, headersMs: 300 }, maxAttempts: 2 }).listDataSources());
    expect(err).toMatchObject({ code: 'E_TIMEOUT', retryable: true, attempts: 2 });
    expect(server.requests).toHaveLength(2);
  });

  it('a response larger than the cap is E_BAD_RESPONSE', async () => {
    server.handle((_req, res) => json(res, 200, { items: Array.from({ length: 2000 }, (_, i) => ({ id: `d${i}` })) }));
    const err = await failure(client({ maxResponseBytes: 10_000 }).listDocuments('ds'));
    expect(err.code).toBe('E_BAD_RESPONSE');
    expect(err.message).toMatch(/10000 bytes/);
  });

  it('follows a same-origin redirect for a read, never for a write or to another origin', async () => {
    const other = await startVariantServer((_req, res) => json(res, 200, { id: 'x' }));
    try {
      server.handle((req, res) => {
        if (req.url === '/datastore/v1/data-sources/old') return text(res, 301, '', 'text/plain', { location: '/datastore/v1/data-sources/new' });
        if (req.url === '/datastore/v1/data-sources/away') return text(res, 302, '', 'text/plain', { location: `${other.url}/x?sig=secret` });
        if (req.method === 'PUT') return text(res, 307, '', 'text/plain', { location: '/elsewhere' });
        json(res, 200, { id: 'new' });
      });
      const c = client();
      expect((await c.getDataSource('old')).id).toBe('new');
      const away = await failure(c.getDataSource('away'));
      expect(away).toMatchObject({ code: 'E_HTTP', status: 302, retryable: false });
      expect(away.message).not.toContain('sig=secret');
      expect(other.requests).toHaveLength(0);
      const put = await failure(c.updateDataSource('ds', { name: 'n' }));
      expect(put).toMatchObject({ code: 'E_HTTP', status: 307 });
      expect(server.requests.filter((r) => r.url === '/elsewhere')).toHaveLength(0);
    } finally {
      await other.close();
    }
  });

  it('an abort (shutdown) stops a running request at once with E_ABORTED, and queued ones too', async () => {
    server.handle(() => undefined); // never answers
    const shutdown = new AbortController();
    const c = client({ pacer: new Pacer({ requestsPerSecond: 0, concurrency: 1, maxAttempts: 6, signal: shutdown.signal }) });
    const running = failure(c.listDataSources());
    const queued = failure(c.getDataSource('ds'));
    await waitFor(() => server.requests.length > 0, { interval: 5, timeout: 10_000, what: 'the request to reach the server' });
    shutdown.abort();
    expect(await running).toMatchObject({ code: 'E_ABORTED', retryable: false });
    expect(await queued).toMatchObject({ code: 'E_ABORTED' });
    expect(server.requests).toHaveLength(1);
  });

  it('a caller\'s signal aborts its own request only', async () => {
    server.handle((req, res) => (req.url.includes('/slow') ? undefined : json(res, 200, { id: 'ok' })));
    const c = client();
    const mine = new AbortController();
    const slow = failure(c.getDataSource('slow', { signal: mine.signal }));
    await waitFor(() => server.requests.length > 0, { interval: 5, timeout: 10_000, what: 'the request to reach the server' });
    mine.abort();
    expect(await slow).toMatchObject({ code: 'E_ABORTED' });
    expect((await c.getDataSource('fast')).id).toBe('ok');
  });

  it('a connection refused is E_CONNECTION, retryable', async () => {
    // A port that was just ours and is now closed.
    const gone = await startVariantServer();
    await gone.close();
    const c = client({ baseUrl: gone.url, maxAttempts: 2 });
    expect(await failure(c.listDataSources())).toMatchObject({ code: 'E_CONNECTION', retryable: true, attempts: 2 });
  });
});

describe('the token', () => {
  it('after a 401, a reloaded (rotated) token is used once, and from then on', async () => {
    server.handle((req, res) => (req.headers.authorization === 'Bearer new-token' ? json(res, 200, []) : json(res, 401, { message: 'invalid token' })));
    let reloads = 0;
    let current = 'old-token';
    const c = client({
      tokens: {
        ...fixedToken('unused'),
        token: () => Promise.resolve(current),
        renewAfterRejection: () => {
          reloads++;
          current = 'new-token';
          return Promise.resolve(current);
        },
      },
    });
    await c.listDataSources();
    await c.listDataSources();
    expect(reloads).toBe(1);
    expect(server.requests.map((r) => r.headers.authorization)).toEqual(['Bearer old-token', 'Bearer new-token', 'Bearer new-token']);
  });

  it('a 401 with an unchanged token is E_UNAUTHORIZED at once', async () => {
    server.handle((_req, res) => json(res, 401, { message: 'invalid token' }));
    const err = await failure(client().listDataSources());
    expect(err).toMatchObject({ code: 'E_UNAUTHORIZED', status: 401, retryable: false, attempts: 1 });
    expect(server.requests).toHaveLength(1);
  });

  it('never appears in an error message, its JSON, or a log line', { timeout: 10_000 }, async () => {
    const lines: string[] = [];
    const logger = createLogger({ level: 'debug', destination: { write: (s: string) => void lines.push(s) } });
    server.handle((req, res) => {
      // A hostile or careless service that echoes the Authorization header.
      if (req.url.includes('/echo')) return json(res, 400, { message: `bad header ${req.headers.authorization}` });
      if (req.url.includes('/slow')) return undefined;
      json(res, 401, { error: { message: `token ${req.headers.authorization} refused` } });
    });
    const c = client({ logger, timeouts: { ...QUEUE.timeouts, headersMs: 300 }, maxAttempts: 1 });
    const errors = [
      await failure(c.getDataSource('ds')),
      await failure(c.getDataSource('echo')),
      await failure(c.getDataSource('slow')),
      await failure(c.uploadDocuments('ds', [onDisk(join(dir, 'missing'), 'missing')])),
    ];
    // A 400 to a read is the service refusing a header of ours (a configuration error, issue 37.2).
    expect(errors.map((e) => e.code)).toEqual(['E_UNAUTHORIZED', 'E_HEADER_REFUSED', 'E_TIMEOUT', 'E_FILE_CHANGED']);
    expect(lines.length).toBeGreaterThanOrEqual(3);
    for (const e of errors) {
      expect(e.message).not.toContain(TOKEN);
      expect(JSON.stringify(e)).not.toContain(TOKEN);
      expect(String(e.stack)).not.toContain(TOKEN);
    }
    for (const line of lines) expect(line).not.toContain(TOKEN);
    expect(lines.some((l) => /"method":"GET".*"status":401.*"attempt":1/.test(l))).toBe(true);
  });
});

describe('one pacer shared by several clients', () => {
  it('a 429 seen by one client holds the other until the Retry-After has passed', { timeout: 10_000 }, async () => {
    let throttled: () => void = () => undefined;
    const seen429 = new Promise<void>((r) => (throttled = r));
    const waits: PacerEvent[] = [];
    const pacer = new Pacer({ requestsPerSecond: 0, concurrency: 4, maxAttempts: 6, onEvent: (e) => (e.type === 'throttle' ? throttled() : e.type === 'wait' && waits.push(e)) });
    const arrivals: string[] = [];
    let first = true;
    server.handle((req, res) => {
      arrivals.push(req.url ?? '');
      if (first) {
        first = false;
        return json(res, 429, { message: 'slow down' }, { 'retry-after': '1' });
      }
      json(res, 200, { id: 'x' });
    });
    const a = client({ pacer });
    const b = client({ pacer, organizationId: 'other-org' });
    const pa = a.getDataSource('a');
    await seen429;
    await b.getDataSource('b');
    await pa;
    // b was asked for after a's 429 and went out only after the shared pause.
    expect(arrivals[0]).toBe('/datastore/v1/data-sources/a');
    expect(arrivals.slice(1).sort()).toEqual(['/datastore/v1/data-sources/a', '/datastore/v1/data-sources/b']);
    expect(waits.some((e) => e.type === 'wait' && e.reason === 'pause' && e.ms > 0)).toBe(true);
    expect(server.requests.find((r) => r.url.endsWith('/b'))?.headers['x-service-organization-id']).toBe('other-org');
    expect(pacer.stats()).toMatchObject({ throttled: 1, retries: 1 });
  });
});

/**
 * The client against the real emulator over loopback: every operation of datastore-api.md,
 * paging past the page size, one multipart request for several files (non-ASCII names, a
 * 30 MB file), 429 with Retry-After waited out, and an ambiguous success surfacing
 * as an ambiguous, retryable error.
 */
import { mkdtemp, open, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { DatastoreClient, type DatastoreClientOptions } from '../../../src/api/client.js';
import { ApiError } from '../../../src/api/errors.js';
import { Pacer } from '../../../src/api/pacer.js';
import { startEmulator, type RunningEmulator } from '@dssync/emulator';
import { rejectionOf } from '../../helpers/rejection.js';
import { fixedToken } from '../../../src/api/token-provider.js';
import { QUEUE } from '../../helpers/queue-defaults.js';
import { DEFAULT_ORGANIZATION_HEADER } from '../../../src/config/connection.js';
import { onDisk } from '../../helpers/upload-file.js';

let emu: RunningEmulator;
let dir: string;
const clients: DatastoreClient[] = [];

beforeAll(async () => {
  emu = await startEmulator({ pageSize: 5, maxFileBytes: 40 * 1024 * 1024 });
  dir = await mkdtemp(join(tmpdir(), 'dssync-api-contract-'));
});
afterAll(async () => {
  await emu.close();
  await rm(dir, { recursive: true, force: true });
});
beforeEach(() => {
  emu.setFaults({});
  emu.resetStats();
});
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
});

function client(opts: Partial<DatastoreClientOptions> = {}): DatastoreClient {
  const c = new DatastoreClient({
    baseUrl: emu.url,
    organizationId: 'dev-org',
    tokens: fixedToken('dev-token'),
    ...QUEUE,
    pacer: new Pacer({ requestsPerSecond: 0, concurrency: 4, maxAttempts: 6, backoffBaseMs: 10, backoffMaxMs: 100 }),
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
  const path = join(dir, encodeURIComponent(name));
  await writeFile(path, content);
  return path;
}

describe('data sources', () => {
  it('create, get, list (past the page size), update, delete, and delete again', async () => {
    const c = client();
    const created = await c.createDataSource({ name: 'Handbook', llmConnectorIds: ['conn-1', 'conn-2'] });
    expect(created.id).toMatch(/\S/);
    expect(created).toMatchObject({ name: 'Handbook', llmConnectorIds: ['conn-1', 'conn-2'] });
    expect(await c.getDataSource(created.id)).toMatchObject({ id: created.id, name: 'Handbook' });

    const more = await Promise.all(Array.from({ length: 11 }, (_, i) => c.createDataSource({ name: `DS ${i}`, llmConnectorIds: ['conn-1'] })));
    // The emulator's default page is 5: without ?limit= the client follows next_cursor.
    const all = await client({ pageSize: 0 }).listDataSources();
    const ids = all.map((d) => d.id);
    for (const d of [created, ...more]) expect(ids).toContain(d.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(emu.stats().byRoute['GET /datastore/v1/data-sources']).toBeGreaterThanOrEqual(3);

    expect(await c.updateDataSource(created.id, { name: 'Handbook 2' })).toMatchObject({ id: created.id, name: 'Handbook 2' });
    expect((await c.getDataSource(created.id)).name).toBe('Handbook 2');

    await c.deleteDataSource(created.id);
    expect(await failure(c.getDataSource(created.id))).toMatchObject({ code: 'E_NOT_FOUND', status: 404, retryable: false });
    await expect(c.deleteDataSource(created.id)).resolves.toBeUndefined();
    await Promise.all(more.map((d) => c.deleteDataSource(d.id)));
  });

  it('lists the data sources enabled for an App', async () => {
    const c = client();
    const ds = await c.createDataSource({ name: 'For the app', llmConnectorIds: ['app-42'] });
    const other = await c.createDataSource({ name: 'Not for it', llmConnectorIds: ['conn-9'] });
    const list = await c.listAppDataSources('app-42');
    expect(list.map((d) => d.id)).toContain(ds.id);
    expect(list.map((d) => d.id)).not.toContain(other.id);
    await c.deleteDataSource(ds.id);
    await c.deleteDataSource(other.id);
  });

  it('the wrong token is E_UNAUTHORIZED, the wrong organization E_FORBIDDEN; neither is retried', async () => {
    const bad = await failure(client({ tokens: fixedToken('not-the-token') }).listDataSources());
    expect(bad).toMatchObject({ code: 'E_UNAUTHORIZED', status: 401, attempts: 1 });
    expect(bad.message).not.toContain('not-the-token');
    expect(await failure(client({ organizationId: 'someone-else' }).listDataSources())).toMatchObject({ code: 'E_FORBIDDEN', status: 403, attempts: 1 });
  });
});

describe('documents and chunks', () => {
  it('every document and chunk operation, with several files in ONE upload request', async () => {
    const c = client();
    const ds = await c.createDataSource({ name: 'Docs', llmConnectorIds: ['conn-1'] });
    const files = [
      onDisk(await file('intro.txt', 'Welcome to the handbook.\n\nIt has two paragraphs.'), 'intro.txt'),
      onDisk(await file('straße.md', '# Straße\n\nÜber die Brücke.'), 'guides/straße.md'),
      onDisk(await file('日本語.txt', 'こんにちは世界'), 'intl/日本語.txt'),
    ];
    const docs = await c.uploadDocuments(ds.id, files);
    expect(emu.stats()).toMatchObject({ uploads: 1, filesUploaded: 3 });
    expect(docs).toHaveLength(3);
    expect(new Set(docs.map((d) => d.id)).size).toBe(3);
    // One record per file, in the order of the files.
    expect(docs.map((d) => d.name?.normalize('NFC'))).toEqual(files.map((f) => f.name.normalize('NFC')));

    const listed = await c.listDocuments(ds.id);
    expect(listed.map((d) => d.id).sort()).toEqual(docs.map((d) => d.id).sort());

    const [intro] = docs as [(typeof docs)[0]];
    const update = { name: 'renamed/intro.txt', url: 'file:///srv/share/renamed/intro.txt', metadata: { 'dssync.path': 'renamed/intro.txt', size: 51 } };
    expect(await c.updateDocument(ds.id, intro.id, update)).toMatchObject({ id: intro.id, ...update });
    expect(await c.getDocument(ds.id, intro.id)).toMatchObject({ id: intro.id, ...update });

    const chunks = await c.listChunks(ds.id, intro.id);
    expect(chunks.length).toBeGreaterThan(0);
    expect(chunks.map((ch) => ch.text).join(' ')).toContain('Welcome to the handbook.');
    const one = await c.getChunk(intro.id, chunks[0]!.id);
    expect(one).toMatchObject({ id: chunks[0]!.id, documentId: intro.id, text: chunks[0]!.text });

    await c.deleteDocument(ds.id, intro.id);
    expect(await failure(c.getDocument(ds.id, intro.id))).toMatchObject({ code: 'E_NOT_FOUND' });
    await expect(c.deleteDocument(ds.id, intro.id)).resolves.toBeUndefined();
    expect((await c.listDocuments(ds.id)).map((d) => d.id)).not.toContain(intro.id);
    await c.deleteDataSource(ds.id);
  });

  it("the sync form of a listing: every page's documents, with the id, name, url, metadata and size a mirror reads, and nothing else", async () => {
    const c = client();
    const ds = await c.createDataSource({ name: 'SyncForm', llmConnectorIds: ['conn-1'] });
    const files = await Promise.all(Array.from({ length: 12 }, async (_, i) => (onDisk(await file(`form-${i}.txt`, `text ${i}`), `form/${i}.txt`))));
    const uploaded = await c.uploadDocuments(ds.id, files);
    for (const d of uploaded) {
      await c.updateDocument(ds.id, d.id, { name: d.name!, url: `file:///srv/${d.name!}`, metadata: { dssync_path: d.name!, dssync_mapping: 'docs', team: 'legal' } });
    }
    const whole = await c.listDocuments(ds.id);
    const sync = await c.listDocuments(ds.id, { form: 'sync' });
    expect(sync.map((d) => d.id).sort()).toEqual(uploaded.map((d) => d.id).sort()); // pages of 5: 3 pages
    for (const d of sync) {
      const w = whole.find((x) => x.id === d.id)!;
      expect(d).toEqual({ id: w.id, name: w.name, url: w.url, metadata: w.metadata, raw: { size: w.raw.size } });
      expect(typeof d.raw.size).toBe('number');
    }
    expect(Object.keys(whole[0]!.raw).length).toBeGreaterThan(5); // what the sync form leaves out
    await c.deleteDataSource(ds.id);
  });

  it('lists documents past the page size, with and without our page size', async () => {
    const c = client();
    const ds = await c.createDataSource({ name: 'Many', llmConnectorIds: ['conn-1'] });
    const files = await Promise.all(Array.from({ length: 23 }, async (_, i) => (onDisk(await file(`many-${i}.txt`, `document ${i}`), `many/${i}.txt`))));
    const uploaded = await c.uploadDocuments(ds.id, files);
    const expected = uploaded.map((d) => d.id).sort();
    emu.resetStats();
    expect((await client({ pageSize: 0 }).listDocuments(ds.id)).map((d) => d.id).sort()).toEqual(expected);
    expect(emu.stats().byRoute['GET /datastore/v1/data-sources/:data_source_id/documents']).toBe(5); // pages of 5
    emu.resetStats();
    expect((await client({ pageSize: 7 }).listDocuments(ds.id)).map((d) => d.id).sort()).toEqual(expected);
    expect(emu.stats().byRoute['GET /datastore/v1/data-sources/:data_source_id/documents']).toBe(4); // pages of 7
    emu.resetStats();
    expect((await c.listDocuments(ds.id)).map((d) => d.id).sort()).toEqual(expected);
    expect(emu.stats().byRoute['GET /datastore/v1/data-sources/:data_source_id/documents']).toBe(1); // limit=1000
    await c.deleteDataSource(ds.id);
  });

  // Streaming (fs.openAsBlob + undici request()) keeps memory flat by construction
  // (LIBRARIES.md: 3 x 256 MiB at 97 MiB RSS); in-process RSS is too noisy to assert here,
  // with the emulator in the same process. This proves a 30 MB file goes through whole.
  it('uploads a 30 MB file, streamed from disk', { timeout: 60_000 }, async () => {
    const c = client();
    const ds = await c.createDataSource({ name: 'Big', llmConnectorIds: ['conn-1'] });
    const path = join(dir, 'big.txt');
    const fh = await open(path, 'w');
    const line = Buffer.from('All work and no play makes a long document. '.repeat(20) + '\n');
    const size = 30 * 1024 * 1024;
    for (let written = 0; written < size; written += line.length) await fh.write(line);
    await fh.close();
    const { size: actual } = await stat(path);
    const docs = await c.uploadDocuments(ds.id, [onDisk(path, 'big.txt', { expectedSize: actual })]);
    expect(docs).toHaveLength(1);
    expect(emu.stats()).toMatchObject({ uploads: 1, filesUploaded: 1 });
    expect((await c.getDocument(ds.id, docs[0]!.id)).raw).toMatchObject({ size: actual });
    await c.deleteDataSource(ds.id);
  });

  it('a file larger than the service accepts is E_PAYLOAD_TOO_LARGE naming the file', async () => {
    const small = await startEmulator({ maxFileBytes: 1024 });
    const c = new DatastoreClient({ ...QUEUE, baseUrl: small.url, organizationId: 'dev-org', organizationHeader: DEFAULT_ORGANIZATION_HEADER, tokens: fixedToken('dev-token') });
    try {
      const ds = await c.createDataSource({ name: 'Small', llmConnectorIds: ['conn-1'] });
      const path = await file('too-big.txt', 'x'.repeat(5000));
      const err = await failure(c.uploadDocuments(ds.id, [onDisk(path, 'too-big.txt')]));
      expect(err).toMatchObject({ code: 'E_PAYLOAD_TOO_LARGE', status: 413, file: path, retryable: false, ambiguous: false });
    } finally {
      await c.close();
      await small.close();
    }
  });
});

describe('faults', () => {
  it('429 with Retry-After is waited out and every request succeeds', { timeout: 30_000 }, async () => {
    const c = client({ pacer: new Pacer({ requestsPerSecond: 0, concurrency: 8, maxAttempts: 6 }) });
    const ds = await c.createDataSource({ name: 'Limited', llmConnectorIds: ['conn-1'] });
    emu.resetStats();
    emu.setFaults({ rateLimitRps: 4 });
    const results = await Promise.all(Array.from({ length: 12 }, () => c.getDataSource(ds.id)));
    expect(results.every((r) => r.id === ds.id)).toBe(true);
    const stats = emu.stats();
    expect(stats.rateLimited).toBeGreaterThan(0);
    expect(c.pacer.stats().throttled).toBeGreaterThan(0);
    emu.setFaults({});
    await c.deleteDataSource(ds.id);
  });

  it('a Retry-After given as an HTTP date is honoured too', { timeout: 30_000 }, async () => {
    const c = client({ pacer: new Pacer({ requestsPerSecond: 0, concurrency: 4, maxAttempts: 6 }) });
    const ds = await c.createDataSource({ name: 'Dated', llmConnectorIds: ['conn-1'] });
    emu.resetStats();
    emu.setFaults({ rateLimitRps: 2, retryAfter: 'date' });
    const results = await Promise.all(Array.from({ length: 6 }, () => c.getDataSource(ds.id)));
    expect(results.every((r) => r.id === ds.id)).toBe(true);
    expect(emu.stats().rateLimited).toBeGreaterThan(0);
    emu.setFaults({});
    await c.deleteDataSource(ds.id);
  });

  it('an upload committed but answered by a dropped connection is ambiguous and retryable; listing finds it once', async () => {
    const c = client();
    const ds = await c.createDataSource({ name: 'Ambiguous', llmConnectorIds: ['conn-1'] });
    const path = await file('ambiguous.txt', 'committed, then the connection dropped');
    emu.setFaults({ ambiguousRate: 1, seed: 7 });
    const err = await failure(c.uploadDocuments(ds.id, [onDisk(path, 'ambiguous.txt')]));
    expect(err).toMatchObject({ ambiguous: true, retryable: true, attempts: 1 });
    expect(['E_CONNECTION', 'E_TIMEOUT']).toContain(err.code);
    emu.setFaults({});
    // Not retried blindly: exactly one document exists, for the caller to adopt.
    const docs = await c.listDocuments(ds.id);
    expect(docs.filter((d) => d.name === 'ambiguous.txt')).toHaveLength(1);
    expect(emu.stats().uploads).toBe(1);
    await c.deleteDataSource(ds.id);
  });

  it('an ambiguous create is reported, not retried', async () => {
    const c = client();
    emu.setFaults({ ambiguousRate: 1, seed: 3 });
    const err = await failure(c.createDataSource({ name: 'Ambiguous DS', llmConnectorIds: ['conn-1'] }));
    expect(err).toMatchObject({ ambiguous: true, retryable: true, attempts: 1 });
    emu.setFaults({});
    const all = await c.listDataSources();
    const made = all.filter((d) => d.name === 'Ambiguous DS');
    expect(made).toHaveLength(1);
    await c.deleteDataSource(made[0]!.id);
  });

  it('dropped connections and 5xx on reads are retried transparently', { timeout: 30_000 }, async () => {
    const c = client();
    const ds = await c.createDataSource({ name: 'Flaky', llmConnectorIds: ['conn-1'] });
    emu.resetStats();
    emu.setFaults({ dropRate: 0.25, errorRate: 0.25, seed: 11 });
    // One at a time, so the seeded fault sequence meets the requests in a fixed order.
    for (let i = 0; i < 10; i++) expect((await c.getDataSource(ds.id)).id).toBe(ds.id);
    const stats = emu.stats();
    expect(stats.dropped + stats.injectedErrors).toBeGreaterThan(0);
    expect(c.pacer.stats().retries).toBeGreaterThan(0);
    emu.setFaults({});
    await c.deleteDataSource(ds.id);
  });
});

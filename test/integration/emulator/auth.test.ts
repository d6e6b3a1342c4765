import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator } from '@dssync/emulator';
import { call, form } from './client.js';

const DS = '/datastore/v1/data-sources';
const SECRET = 's3cret-token-value';

describe('emulator: authentication, organizations, paths', () => {
  let emu: RunningEmulator;
  beforeAll(async () => {
    emu = await startEmulator({ token: SECRET, orgs: ['org-a', 'org-b'] });
  });
  afterAll(async () => {
    await emu.close();
  });

  it('answers 401 to a missing, malformed or wrong token, without echoing it', async () => {
    const missing = await call(emu.url, 'GET', DS, { noAuth: true, org: 'org-a' });
    expect(missing.status).toBe(401);
    expect(missing.body.error.code).toBe('unauthorized');
    expect(missing.headers['www-authenticate']).toContain('Bearer');
    const basic = await call(emu.url, 'GET', DS, { noAuth: true, org: 'org-a', headers: { authorization: `Basic ${SECRET}` } });
    expect(basic.status).toBe(401);
    const wrong = await call(emu.url, 'GET', DS, { token: 'guess-me-not', org: 'org-a' });
    expect(wrong.status).toBe(401);
    expect(wrong.text).not.toContain('guess-me-not');
    const prefix = await call(emu.url, 'GET', DS, { token: SECRET.slice(0, -1), org: 'org-a' });
    expect(prefix.status).toBe(401);
    expect(prefix.text).not.toContain(SECRET.slice(0, -1));
  });

  it('checks the token before anything else, on every route including unknown ones and uploads', async () => {
    expect((await call(emu.url, 'GET', '/nope', { noAuth: true, org: 'org-a' })).status).toBe(401);
    const upload = await call(emu.url, 'POST', `${DS}/ds_x/documents/upload`, { noAuth: true, org: 'org-a', form: form([['hi', 'a.txt']]) });
    expect(upload.status).toBe(401);
  });

  it('answers 400 without the organization header and 403 for an organization it does not serve', async () => {
    const missing = await call(emu.url, 'GET', DS, { token: SECRET, noOrg: true });
    expect(missing.status).toBe(400);
    expect(missing.body.error).toMatchObject({ code: 'missing_organization', field: 'X-Service-Organization-Id' });
    const unknown = await call(emu.url, 'GET', DS, { token: SECRET, org: 'org-z' });
    expect(unknown.status).toBe(403);
    expect(unknown.body.error.code).toBe('forbidden');
    expect(unknown.body.error.message).toContain('org-z');
  });

  it('isolates organizations: a data source, its documents and chunks are 404 for another organization', async () => {
    const created = await call(emu.url, 'POST', DS, { token: SECRET, org: 'org-a', json: { name: 'A only', llm_connector_ids: ['c'] } });
    const id = created.body.data_source_id as string;
    const up = await call(emu.url, 'POST', `${DS}/${id}/documents/upload`, { token: SECRET, org: 'org-a', form: form([['hello there', 'a.txt']]) });
    expect(up.status).toBe(201);
    const doc = up.body.documents[0];
    const chunks = await call(emu.url, 'GET', `${DS}/${id}/documents/${doc.document_id}/chunks`, { token: SECRET, org: 'org-a' });
    const chunkId = chunks.body.items[0].chunk_id;

    const asB = { token: SECRET, org: 'org-b' };
    expect((await call(emu.url, 'GET', `${DS}/${id}`, asB)).status).toBe(404);
    expect((await call(emu.url, 'GET', `${DS}/${id}/documents`, asB)).status).toBe(404);
    expect((await call(emu.url, 'GET', `${DS}/${id}/documents/${doc.document_id}`, asB)).status).toBe(404);
    expect((await call(emu.url, 'GET', `/datastore/v1/documents/${doc.document_id}/chunks/${chunkId}`, asB)).status).toBe(404);
    expect((await call(emu.url, 'PUT', `${DS}/${id}`, { ...asB, json: { name: 'stolen' } })).status).toBe(404);
    expect((await call(emu.url, 'DELETE', `${DS}/${id}`, asB)).status).toBe(404);
    expect((await call(emu.url, 'POST', `${DS}/${id}/documents/upload`, { ...asB, form: form([['x', 'b.txt']]) })).status).toBe(404);
    expect((await call(emu.url, 'GET', DS, asB)).body.items).toEqual([]);

    const asA = { token: SECRET, org: 'org-a' };
    expect((await call(emu.url, 'GET', `${DS}/${id}`, asA)).body.name).toBe('A only');
    expect((await call(emu.url, 'GET', `/datastore/v1/documents/${doc.document_id}/chunks/${chunkId}`, asA)).body.text).toBe('hello there');
  });

  it('rejects ids with traversal or odd characters (400 naming the parameter) before any lookup', async () => {
    const auth = { token: SECRET, org: 'org-a' };
    for (const bad of ['..%2F..%2Fetc', 'a..b', 'a%20b', 'x%00y', 'a'.repeat(200)]) {
      const res = await call(emu.url, 'GET', `${DS}/${bad}`, auth);
      expect(res.status, bad).toBe(400);
      expect(res.body.error).toMatchObject({ code: 'invalid_id', field: 'data_source_id' });
    }
    const chunk = await call(emu.url, 'GET', '/datastore/v1/documents/doc_1/chunks/..%2Fx', auth);
    expect(chunk.body.error.field).toBe('chunk_id');
  });

  it('answers 404 with an error body to an unknown route and 405 with Allow to a wrong method', async () => {
    const auth = { token: SECRET, org: 'org-a' };
    const unknown = await call(emu.url, 'GET', '/datastore/v2/data-sources', auth);
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.code).toBe('not_found');
    expect(unknown.body.error.message).toContain('/datastore/v2/data-sources');
    const trailing = await call(emu.url, 'GET', `${DS}/ds_x/documents/doc_y/chunks/extra`, auth);
    expect(trailing.status).toBe(404);
    const wrong = await call(emu.url, 'PATCH', `${DS}/ds_1`, auth);
    expect(wrong.status).toBe(405);
    expect(wrong.headers.allow).toBe('GET, PUT, DELETE');
    const getUpload = await call(emu.url, 'DELETE', `${DS}`, auth);
    expect(getUpload.status).toBe(405);
    expect(getUpload.headers.allow).toBe('POST, GET');
  });
});

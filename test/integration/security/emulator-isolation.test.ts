/**
 * Security: the emulator enforces organization isolation and rejects path traversal in
 * ids. Raw HTTP (node:http, the path sent byte for byte, no client-side normalisation),
 * so what is checked is the server, not a polite client.
 */
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator } from '@dssync/emulator';

const TOKEN = 'isolation-token-7Qx';
const DS = '/datastore/v1/data-sources';
let emu: RunningEmulator;
let a: { ds: string; doc: string; chunk: string };
let aOther: string;

interface Raw {
  status: number;
  text: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  json: any;
}

function raw(method: string, path: string, opts: { org?: string | undefined; body?: string; type?: string; token?: string | null } = {}): Promise<Raw> {
  const u = new URL(emu.url);
  const headers: Record<string, string> = {};
  if (opts.token !== null) headers.authorization = `Bearer ${opts.token ?? TOKEN}`;
  if (opts.org !== undefined) headers['x-service-organization-id'] = opts.org;
  if (opts.body !== undefined) headers['content-type'] = opts.type ?? 'application/json';
  return new Promise((resolve, reject) => {
    const req = request({ host: u.hostname, port: u.port, method, path, headers }, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (d: string) => (text += d));
      res.on('end', () => {
        let json: unknown;
        try {
          json = JSON.parse(text);
        } catch {
          json = undefined;
        }
        resolve({ status: res.statusCode ?? 0, text, json });
      });
    });
    req.on('error', reject);
    req.end(opts.body);
  });
}

async function upload(org: string, ds: string, name: string, content: string): Promise<Raw> {
  const boundary = 'xBOUNDARYx';
  const body = `--${boundary}\r\nContent-Disposition: form-data; name="documents"; filename="${name}"\r\nContent-Type: text/plain\r\n\r\n${content}\r\n--${boundary}--\r\n`;
  return raw('POST', `${DS}/${ds}/documents/upload`, { org, body, type: `multipart/form-data; boundary=${boundary}` });
}

beforeAll(async () => {
  emu = await startEmulator({ token: TOKEN, orgs: ['org-a', 'org-b'] });
  const ds = (await raw('POST', DS, { org: 'org-a', body: JSON.stringify({ name: 'A private', llm_connector_ids: ['c'] }) })).json.data_source_id as string;
  const up = await upload('org-a', ds, 'secret.txt', 'org A secret text');
  const doc = up.json.documents[0].document_id as string;
  const chunk = (await raw('GET', `${DS}/${ds}/documents/${doc}/chunks`, { org: 'org-a' })).json.items[0].chunk_id as string;
  a = { ds, doc, chunk };
  aOther = (await raw('POST', DS, { org: 'org-a', body: JSON.stringify({ name: 'A other', llm_connector_ids: ['c'] }) })).json.data_source_id as string;
});
afterAll(async () => {
  await emu?.close();
});

describe('security: the emulator isolates organizations', () => {
  it("every operation on another organization's data is 404, and changes nothing", async () => {
    const b = { org: 'org-b' };
    const attempts: [string, string, Parameters<typeof raw>[2]?][] = [
      ['GET', `${DS}/${a.ds}`],
      ['PUT', `${DS}/${a.ds}`, { ...b, body: '{"name":"taken"}' }],
      ['DELETE', `${DS}/${a.ds}`],
      ['GET', `${DS}/${a.ds}/documents`],
      ['GET', `${DS}/${a.ds}/documents/${a.doc}`],
      ['PUT', `${DS}/${a.ds}/documents/${a.doc}`, { ...b, body: '{"name":"taken"}' }],
      ['DELETE', `${DS}/${a.ds}/documents/${a.doc}`],
      ['GET', `${DS}/${a.ds}/documents/${a.doc}/chunks`],
      ['GET', `/datastore/v1/documents/${a.doc}/chunks/${a.chunk}`],
    ];
    for (const [method, path, opts] of attempts) {
      const r = await raw(method, path, opts ?? b);
      expect(r.status, `${method} ${path}`).toBe(404);
      expect(r.text).not.toContain('org A secret text');
    }
    expect((await upload('org-b', a.ds, 'planted.txt', 'from B')).status).toBe(404);
    expect((await raw('GET', DS, b)).json.items).toEqual([]);
    expect((await raw('GET', '/semantics/apps/any-app/data-sources', b)).json.items).toEqual([]);
    // Org A still has it all, unchanged.
    expect((await raw('GET', `${DS}/${a.ds}`, { org: 'org-a' })).json.name).toBe('A private');
    expect((await raw('GET', `/datastore/v1/documents/${a.doc}/chunks/${a.chunk}`, { org: 'org-a' })).json.text).toBe('org A secret text');
    expect(emu.store.listDocuments(a.ds).map((d) => d.name)).toEqual(['secret.txt']);
  });

  it("a document is not reachable through another data source's path, even in the same organization", async () => {
    expect((await raw('GET', `${DS}/${aOther}/documents/${a.doc}`, { org: 'org-a' })).status).toBe(404);
    expect((await raw('DELETE', `${DS}/${aOther}/documents/${a.doc}`, { org: 'org-a' })).status).toBe(404);
    expect(emu.store.listDocuments(a.ds)).toHaveLength(1);
  });

  it('without the token, or with an unknown organization, nothing is answered (401 / 403), admin routes included', async () => {
    expect((await raw('GET', `${DS}/${a.ds}`, { org: 'org-a', token: null })).status).toBe(401);
    expect((await raw('GET', `${DS}/${a.ds}`, { org: 'org-a', token: 'wrong' })).status).toBe(401);
    expect((await raw('GET', `${DS}/${a.ds}`, { org: 'org-z' })).status).toBe(403);
    expect((await raw('GET', `${DS}/${a.ds}`, {})).status).toBe(400);
    expect((await raw('GET', '/_emulator/stats', { token: null })).status).toBe(401);
    expect((await raw('PUT', '/_emulator/faults', { token: 'wrong', body: '{"down":true}' })).status).toBe(401);
    expect(emu.stats().injectedErrors).toBe(0);
  });
});

describe('security: the emulator rejects path traversal in ids', () => {
  const traversals = [
    '..',
    '%2e%2e',
    '%2E%2E',
    '..%2F..%2Fdata-sources',
    '..%5C..%5Cdata-sources',
    '%252e%252e%252f',
    '.%2e',
    'a%2F..%2F..',
    `${'ds'}%00`,
    '%E2%80%A4%E2%80%A4', // one-dot leaders: not dots, still not an id character
    'a'.repeat(129),
  ];

  it('every traversal-shaped id is a 400 naming the parameter, never a lookup or an action', async () => {
    for (const bad of traversals) {
      for (const [method, path] of [
        ['GET', `${DS}/${bad}`],
        ['DELETE', `${DS}/${bad}`],
        ['GET', `${DS}/${a.ds}/documents/${bad}`],
        ['DELETE', `${DS}/${a.ds}/documents/${bad}`],
        ['GET', `/datastore/v1/documents/${a.doc}/chunks/${bad}`],
      ] as const) {
        const r = await raw(method, path, { org: 'org-a' });
        // A raw ".." segment may be folded by the router into another path (404), never served.
        expect([400, 404], `${method} ${path}: ${r.status}`).toContain(r.status);
        if (r.status === 400) expect(r.json.error.code, `${method} ${path}`).toBe('invalid_id');
      }
    }
    expect(emu.store.listDataSources('org-a')).toHaveLength(2);
    expect(emu.store.listDocuments(a.ds)).toHaveLength(1);
  });

  it('a percent-encoded traversal in a data source id is refused with 400 invalid_id naming data_source_id', async () => {
    const r = await raw('GET', `${DS}/..%2F..%2Fetc%2Fpasswd`, { org: 'org-a' });
    expect(r.status).toBe(400);
    expect(r.json.error).toMatchObject({ code: 'invalid_id', field: 'data_source_id' });
  });

  it('an upload name with traversal is stored as a name only (never used as a path)', async () => {
    const r = await upload('org-a', aOther, '../../../../tmp/evil.txt', 'named with dots');
    expect(r.status).toBe(201);
    expect(r.json.documents[0].name).toBe('../../../../tmp/evil.txt');
    expect(emu.store.listDocuments(aOther).map((d) => d.name)).toEqual(['../../../../tmp/evil.txt']);
  });
});

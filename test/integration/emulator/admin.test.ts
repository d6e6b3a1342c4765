import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator } from '@dssync/emulator';
import { call, createDataSource, form } from './client.js';

const DS = '/datastore/v1/data-sources';

describe('emulator: admin routes and stats', () => {
  let emu: RunningEmulator;
  beforeAll(async () => {
    emu = await startEmulator();
  });
  afterAll(async () => {
    await emu.close();
  });

  it('counts requests by route pattern and status, uploads and files; admin calls are not counted', async () => {
    emu.resetStats();
    const ds = await createDataSource(emu.url);
    await call(emu.url, 'GET', `${DS}/${ds}`);
    await call(emu.url, 'GET', `${DS}/ds_missing`);
    await call(emu.url, 'POST', `${DS}/${ds}/documents/upload`, { form: form([['a', 'a.txt'], ['b', 'b.txt']]) });
    const res = await call(emu.url, 'GET', '/_emulator/stats', { noOrg: true });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      requests: 4,
      byRoute: {
        'POST /datastore/v1/data-sources': 1,
        'GET /datastore/v1/data-sources/:data_source_id': 2,
        'POST /datastore/v1/data-sources/:data_source_id/documents/upload': 1,
      },
      byStatus: { '201': 2, '200': 1, '404': 1 },
      uploads: 1,
      filesUploaded: 2,
      rateLimited: 0,
      dropped: 0,
      ambiguous: 0,
      store: { dataSources: 1, documents: 2, chunks: 2 },
    });
    expect(emu.stats()).toEqual(res.body);

    expect((await call(emu.url, 'POST', '/_emulator/reset-stats', { noOrg: true })).status).toBe(204);
    expect(emu.stats()).toMatchObject({ requests: 0, byRoute: {}, byStatus: {}, uploads: 0 });
  });

  it('replaces the faults over HTTP, validating them', async () => {
    const set = await call(emu.url, 'PUT', '/_emulator/faults', { noOrg: true, json: { rateLimitRps: 0.05, retryAfter: 'seconds' } });
    expect(set.status).toBe(200);
    expect(set.body).toEqual({ rateLimitRps: 0.05, retryAfter: 'seconds' });
    expect((await call(emu.url, 'GET', '/_emulator/faults', { noOrg: true })).body).toEqual(set.body);
    await call(emu.url, 'GET', DS);
    expect((await call(emu.url, 'GET', DS)).status).toBe(429);

    const bad = await call(emu.url, 'PUT', '/_emulator/faults', { noOrg: true, json: { errorRate: 'lots' } });
    expect(bad.status).toBe(400);
    expect(bad.body.error.field).toBe('errorRate');
    const unknown = await call(emu.url, 'PUT', '/_emulator/faults', { noOrg: true, json: { chaos: true } });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error.field).toBe('chaos');
    expect((await call(emu.url, 'PUT', '/_emulator/faults', { noOrg: true, json: {} })).body).toEqual({});
    expect((await call(emu.url, 'GET', DS)).status).toBe(200);
  });

  it('requires the bearer token on admin routes', async () => {
    expect((await call(emu.url, 'GET', '/_emulator/stats', { noAuth: true, noOrg: true })).status).toBe(401);
    expect((await call(emu.url, 'PUT', '/_emulator/faults', { token: 'wrong', noOrg: true, json: { down: true } })).status).toBe(401);
    expect((await call(emu.url, 'GET', DS)).status).toBe(200);
    expect((await call(emu.url, 'GET', '/_emulator/nothing', { noOrg: true })).status).toBe(404);
  });
});

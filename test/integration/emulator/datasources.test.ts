import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator } from '@dssync/emulator';
import { call, createDataSource, walk } from './client.js';

const DS = '/datastore/v1/data-sources';

describe('emulator: data sources', () => {
  let emu: RunningEmulator;
  beforeAll(async () => {
    emu = await startEmulator({ pageSize: 3 });
  });
  afterAll(async () => {
    await emu.close();
  });

  it('creates (201 + Location), retrieves, renames and deletes (204, then 404) a data source', async () => {
    const created = await call(emu.url, 'POST', DS, { json: { name: 'Policies', llm_connector_ids: ['conn-1', 'conn-2'] } });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ name: 'Policies', llm_connector_ids: ['conn-1', 'conn-2'], document_count: 0 });
    const id = created.body.data_source_id as string;
    expect(id).toMatch(/^ds_[0-9a-f]{32}$/);
    expect(created.headers.location).toBe(`${DS}/${id}`);

    const got = await call(emu.url, 'GET', `${DS}/${id}`);
    expect(got.status).toBe(200);
    expect(got.body).toEqual(created.body);

    const renamed = await call(emu.url, 'PUT', `${DS}/${id}`, { json: { name: 'Policies 2026' } });
    expect(renamed.status).toBe(200);
    expect(renamed.body).toMatchObject({ data_source_id: id, name: 'Policies 2026', llm_connector_ids: ['conn-1', 'conn-2'] });

    const deleted = await call(emu.url, 'DELETE', `${DS}/${id}`);
    expect(deleted.status).toBe(204);
    expect(deleted.text).toBe('');
    expect((await call(emu.url, 'GET', `${DS}/${id}`)).status).toBe(404);
    expect((await call(emu.url, 'DELETE', `${DS}/${id}`)).body).toEqual({ error: { code: 'not_found', message: `data source ${id} not found` } });
  });

  it('pages the list with next_cursor: every data source exactly once, in creation order', async () => {
    const fresh = await startEmulator({ pageSize: 3 });
    try {
      const ids: string[] = [];
      for (let i = 0; i < 8; i++) ids.push(await createDataSource(fresh.url, `ds ${i}`));
      const first = await call(fresh.url, 'GET', DS);
      expect(first.body.items).toHaveLength(3);
      expect(typeof first.body.next_cursor).toBe('string');

      const all = await walk<{ data_source_id: string }>(fresh.url, DS);
      expect(all.items.map((d) => d.data_source_id)).toEqual(ids);
      expect(all.pages).toBe(3);
      const big = await walk<{ data_source_id: string }>(fresh.url, DS, 1000);
      expect(big.pages).toBe(1);
      expect(big.items).toHaveLength(8);
    } finally {
      await fresh.close();
    }
  });

  it('keeps a walk exact while items are added and deleted during it', async () => {
    const fresh = await startEmulator({ pageSize: 2 });
    try {
      const ids: string[] = [];
      for (let i = 0; i < 6; i++) ids.push(await createDataSource(fresh.url, `ds ${i}`));
      const page1 = await call(fresh.url, 'GET', DS);
      // Delete one already seen and one not yet seen, add one: nothing existing is skipped or repeated.
      await call(fresh.url, 'DELETE', `${DS}/${ids[0]}`);
      await call(fresh.url, 'DELETE', `${DS}/${ids[4]}`);
      const added = await createDataSource(fresh.url, 'late');
      const seen = page1.body.items.map((d: { data_source_id: string }) => d.data_source_id);
      let cursor: string | null = page1.body.next_cursor;
      while (cursor) {
        const res = await call(fresh.url, 'GET', `${DS}?cursor=${cursor}`);
        seen.push(...res.body.items.map((d: { data_source_id: string }) => d.data_source_id));
        cursor = res.body.next_cursor;
      }
      expect(seen).toEqual([ids[0], ids[1], ids[2], ids[3], ids[5], added]);
    } finally {
      await fresh.close();
    }
  });

  it('rejects a bad limit or cursor with 400 naming the parameter', async () => {
    for (const q of ['limit=0', 'limit=1001', 'limit=abc', 'limit=2.5', 'limit=1&limit=2']) {
      const res = await call(emu.url, 'GET', `${DS}?${q}`);
      expect(res.status, q).toBe(400);
      expect(res.body.error.field, q).toBe('limit');
    }
    for (const cursor of ['nope', 'bm90LWEtY3Vyc29y', '%2F%2E%2E']) {
      const res = await call(emu.url, 'GET', `${DS}?cursor=${cursor}`);
      expect(res.status, cursor).toBe(400);
      expect(res.body.error).toMatchObject({ code: 'invalid_cursor', field: 'cursor' });
    }
  });

  it('validates the create body strictly, naming the field', async () => {
    const cases: Array<[unknown, string]> = [
      [{ llm_connector_ids: ['c'] }, 'name'],
      [{ name: '', llm_connector_ids: ['c'] }, 'name'],
      [{ name: 42, llm_connector_ids: ['c'] }, 'name'],
      [{ name: 'x' }, 'llm_connector_ids'],
      [{ name: 'x', llm_connector_ids: [] }, 'llm_connector_ids'],
      [{ name: 'x', llm_connector_ids: 'c' }, 'llm_connector_ids'],
      [{ name: 'x', llm_connector_ids: ['c', 7] }, 'llm_connector_ids[1]'],
      [{ name: 'x', llm_connector_ids: ['c'], colour: 'red' }, 'colour'],
    ];
    for (const [json, field] of cases) {
      const res = await call(emu.url, 'POST', DS, { json });
      expect(res.status, JSON.stringify(json)).toBe(400);
      expect(res.body.error.code).toBe('invalid_request');
      expect(res.body.error.field).toBe(field);
      expect(res.body.error.message).toContain(field);
    }
    const arrayBody = await call(emu.url, 'POST', DS, { json: [1, 2] });
    expect(arrayBody.status).toBe(400);
    expect(arrayBody.body.error.code).toBe('invalid_json');
    expect(emu.store.listDataSources()).toHaveLength(0);
  });

  it('answers 400 invalid_json to a broken body and 415 to a body that is not JSON', async () => {
    const broken = await call(emu.url, 'POST', DS, { body: '{"name": ', headers: { 'content-type': 'application/json' } });
    expect(broken.status).toBe(400);
    expect(broken.body.error.code).toBe('invalid_json');
    const empty = await call(emu.url, 'POST', DS, { body: '', headers: { 'content-type': 'application/json' } });
    expect(empty.status).toBe(400);
    const text = await call(emu.url, 'POST', DS, { body: 'name=x', headers: { 'content-type': 'text/plain' } });
    expect(text.status).toBe(415);
    expect(text.body.error.code).toBe('unsupported_media_type');
    const form = await call(emu.url, 'POST', DS, { body: 'name=x', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    expect(form.status).toBe(415);
    const none = await call(emu.url, 'POST', DS, {});
    expect(none.status).toBe(415);
  });

  it('validates the update body: name required, no other field', async () => {
    const id = await createDataSource(emu.url, 'to update');
    const noName = await call(emu.url, 'PUT', `${DS}/${id}`, { json: {} });
    expect(noName.status).toBe(400);
    expect(noName.body.error.field).toBe('name');
    const extra = await call(emu.url, 'PUT', `${DS}/${id}`, { json: { name: 'n', llm_connector_ids: ['x'] } });
    expect(extra.status).toBe(400);
    expect(extra.body.error.field).toBe('llm_connector_ids');
    expect((await call(emu.url, 'PUT', `${DS}/ds_missing`, { json: { name: 'n' } })).status).toBe(404);
  });

  it('lists the data sources of an App: connector id equal to the App id, or enabled by the admin route', async () => {
    const fresh = await startEmulator({ pageSize: 2 });
    try {
      const viaConnector = await createDataSource(fresh.url, 'A', ['app-7', 'conn-1']);
      const other = await createDataSource(fresh.url, 'B', ['conn-1']);
      const third = await createDataSource(fresh.url, 'C', ['app-7']);
      const res = await call(fresh.url, 'GET', '/semantics/apps/app-7/data-sources');
      expect(res.status).toBe(200);
      expect(res.body.items.map((d: { data_source_id: string }) => d.data_source_id)).toEqual([viaConnector, third]);
      expect(res.body.next_cursor).toBeNull();

      const enable = await call(fresh.url, 'PUT', '/_emulator/apps/app-7', {
        noOrg: true,
        json: { organization_id: 'dev-org', data_source_ids: [other] },
      });
      expect(enable.status).toBe(200);
      const all = await walk<{ data_source_id: string }>(fresh.url, '/semantics/apps/app-7/data-sources');
      expect(all.items.map((d) => d.data_source_id)).toEqual([viaConnector, other, third]);
      expect(all.pages).toBe(2);

      const none = await call(fresh.url, 'GET', '/semantics/apps/app-unknown/data-sources');
      expect(none.body).toEqual({ items: [], next_cursor: null });
      const missing = await call(fresh.url, 'PUT', '/_emulator/apps/app-7', {
        noOrg: true,
        json: { organization_id: 'dev-org', data_source_ids: ['ds_nope'] },
      });
      expect(missing.status).toBe(404);
    } finally {
      await fresh.close();
    }
  });
});

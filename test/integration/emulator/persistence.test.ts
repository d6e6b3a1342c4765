import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startEmulator } from '@dssync/emulator';
import { call, createDataSource, fixtureBlob, form } from './client.js';

const DS = '/datastore/v1/data-sources';

describe('emulator: dataDir persistence', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'dssync-emu-data-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('keeps data sources, documents, metadata, chunks and App enablement across a restart', async () => {
    const first = await startEmulator({ dataDir: dir, pageSize: 2 });
    const ds = await createDataSource(first.url, 'Kept', ['conn-1']);
    const gone = await createDataSource(first.url, 'Deleted');
    const up = await call(first.url, 'POST', `${DS}/${ds}/documents/upload`, {
      form: form([
        [await fixtureBlob('handbook.md'), 'handbook.md'],
        ['second', 'b.txt'],
        ['third', 'c.txt'],
      ]),
    });
    const docId = up.body.documents[0].document_id as string;
    await call(first.url, 'PUT', `${DS}/${ds}/documents/${docId}`, { json: { url: 'file:///srv/handbook.md', metadata: { n: 1 } } });
    await call(first.url, 'DELETE', `${DS}/${ds}/documents/${up.body.documents[1].document_id}`);
    await call(first.url, 'DELETE', `${DS}/${gone}`);
    await call(first.url, 'PUT', '/_emulator/apps/app-1', { noOrg: true, json: { organization_id: 'dev-org', data_source_ids: [ds] } });
    const before = {
      dataSources: first.store.listDataSources(),
      documents: first.store.listDocuments(ds),
      chunks: first.store.listChunks(docId),
    };
    await first.close();

    const second = await startEmulator({ dataDir: dir, pageSize: 2 });
    try {
      expect(second.store.listDataSources()).toEqual(before.dataSources);
      expect(second.store.listDocuments(ds)).toEqual(before.documents);
      expect(second.store.listChunks(docId)).toEqual(before.chunks);
      const doc = await call(second.url, 'GET', `${DS}/${ds}/documents/${docId}`);
      expect(doc.body).toMatchObject({ url: 'file:///srv/handbook.md', metadata: { n: 1 }, status: 'ready' });
      const chunk = before.chunks[0];
      expect((await call(second.url, 'GET', `/datastore/v1/documents/${docId}/chunks/${chunk?.chunk_id}`)).body.text).toBe(chunk?.text);
      const app = await call(second.url, 'GET', '/semantics/apps/app-1/data-sources');
      expect(app.body.items.map((d: { data_source_id: string }) => d.data_source_id)).toEqual([ds]);
      // New items still come after the restored ones in list order.
      const later = await call(second.url, 'POST', `${DS}/${ds}/documents/upload`, { form: form([['later', 'd.txt']]) });
      expect(later.status).toBe(201);
      expect(second.store.listDocuments(ds).map((d) => d.name)).toEqual(['handbook.md', 'c.txt', 'd.txt']);
    } finally {
      await second.close();
    }
  });

  it('writes the file atomically and refuses to start over a corrupt one, naming it', async () => {
    const emu = await startEmulator({ dataDir: dir });
    await createDataSource(emu.url, 'x');
    await emu.close();
    const file = join(dir, 'emulator-store.json');
    const saved = JSON.parse(await readFile(file, 'utf8'));
    expect(saved).toMatchObject({ format: 'dssync-emulator-store', version: 1 });
    expect(saved.dataSources).toHaveLength(1);

    await writeFile(file, '{"format": "dssync-emulator-store", "ver');
    await expect(startEmulator({ dataDir: dir })).rejects.toThrow(file);
  });

  it('starts empty when the folder does not exist yet, and creates it', async () => {
    const nested = join(dir, 'a', 'b');
    const emu = await startEmulator({ dataDir: nested });
    try {
      expect(emu.store.listDataSources()).toEqual([]);
      await createDataSource(emu.url);
    } finally {
      await emu.close();
    }
    expect(JSON.parse(await readFile(join(nested, 'emulator-store.json'), 'utf8')).dataSources).toHaveLength(1);
  });
});

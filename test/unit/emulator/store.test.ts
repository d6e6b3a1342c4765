import { describe, expect, it } from 'vitest';
import { MemoryStore, type NewDocument } from '../../../packages/emulator/src/store.js';

const file = (name: string, chunkTexts = ['text of ' + name]): NewDocument => ({
  name,
  contentType: 'text/plain',
  size: 10,
  status: 'ready',
  failureReason: null,
  chunkTexts,
});

describe('MemoryStore', () => {
  it('scopes every lookup to the organization', () => {
    const store = new MemoryStore();
    const ds = store.createDataSource('org-a', 'A', ['c']);
    const [doc] = store.addDocuments(ds, [file('a.txt')]);
    expect(store.findDataSource('org-a', ds.id)).toBe(ds);
    expect(store.findDataSource('org-b', ds.id)).toBeUndefined();
    expect(store.findDocumentById('org-b', doc!.id)).toBeUndefined();
    expect(store.pageDataSources('org-b', 0, 10).items).toEqual([]);
    expect(store.listDataSources('org-b')).toEqual([]);
    expect(store.listDataSources('org-a')).toHaveLength(1);
  });

  it('stamps times from the injected clock and calls onChange on every write', () => {
    let now = Date.UTC(2026, 4, 1);
    let changes = 0;
    const store = new MemoryStore(() => now, () => changes++);
    const ds = store.createDataSource('o', 'n', ['c']);
    expect(ds.createdAt).toBe('2026-05-01T00:00:00.000Z');
    now += 1000;
    store.renameDataSource(ds, 'm');
    expect(store.getDataSource(ds.id)).toMatchObject({ name: 'm', created_at: '2026-05-01T00:00:00.000Z', updated_at: '2026-05-01T00:00:01.000Z' });
    const [doc] = store.addDocuments(ds, [file('x.txt')]);
    store.updateDocument(doc!, { url: 'file:///x' });
    store.deleteDocument(ds, doc!);
    store.setAppDataSources('o', 'app', [ds.id]);
    store.deleteDataSource(ds);
    expect(changes).toBe(7);
  });

  it('forgets the documents and chunks of a deleted data source, and its App enablement', () => {
    const store = new MemoryStore();
    const ds = store.createDataSource('o', 'n', ['c']);
    const keep = store.createDataSource('o', 'k', ['c']);
    const docs = store.addDocuments(ds, [file('a', ['1', '2']), file('b', ['3'])]);
    store.setAppDataSources('o', 'app', [ds.id, keep.id]);
    expect(store.counts()).toEqual({ dataSources: 2, documents: 2, chunks: 3 });
    store.deleteDataSource(ds);
    expect(store.counts()).toEqual({ dataSources: 1, documents: 0, chunks: 0 });
    expect(store.getDocument(docs[0]!.id)).toBeUndefined();
    expect(store.listChunks(docs[0]!.id)).toEqual([]);
    expect(store.pageAppDataSources('o', 'app', 0, 10).items.map((d) => d.id)).toEqual([keep.id]);
  });

  it('finds a chunk only inside its own document', () => {
    const store = new MemoryStore();
    const ds = store.createDataSource('o', 'n', ['c']);
    const [a, b] = store.addDocuments(ds, [file('a', ['1', '2']), file('b', ['3'])]);
    expect(store.findChunk(a!, a!.chunks[1]!.id)).toBe(1);
    expect(store.findChunk(b!, a!.chunks[1]!.id)).toBeUndefined();
    expect(store.pageChunks(a!, 0, 1)).toEqual({ indexes: [0], nextAfter: 1 });
    expect(store.pageChunks(a!, 1, 1)).toEqual({ indexes: [1], nextAfter: null });
  });

  it('restores a snapshot to an equal store that keeps handing out later positions', () => {
    const store = new MemoryStore();
    const ds = store.createDataSource('o', 'n', ['c', 'd']);
    const other = store.createDataSource('p', 'm', ['c']);
    const [doc] = store.addDocuments(ds, [file('a', ['x', 'y']), file('b')]);
    store.updateDocument(doc!, { metadata: { k: [1, 2] }, url: 'https://e/x' });
    store.setAppDataSources('o', 'app', [ds.id]);
    const snapshot = JSON.parse(JSON.stringify(store.snapshot()));

    const copy = new MemoryStore();
    copy.restore(snapshot);
    expect(copy.listDataSources()).toEqual(store.listDataSources());
    expect(copy.listDocuments(ds.id)).toEqual(store.listDocuments(ds.id));
    expect(copy.listChunks(doc!.id)).toEqual(store.listChunks(doc!.id));
    expect(copy.counts()).toEqual(store.counts());
    expect(copy.pageAppDataSources('o', 'app', 0, 5).items.map((d) => d.id)).toEqual([ds.id]);
    const restored = copy.findDataSource('o', ds.id)!;
    const [later] = copy.addDocuments(restored, [file('c')]);
    expect(copy.listDocuments(ds.id).map((d) => d.document_id).at(-1)).toBe(later!.id);
    expect(copy.findDataSource('p', other.id)?.name).toBe('m');
  });

  it('refuses a snapshot of another format', () => {
    expect(() => new MemoryStore().restore({ format: 'x' } as never)).toThrow(/dssync-emulator-store/);
  });
});

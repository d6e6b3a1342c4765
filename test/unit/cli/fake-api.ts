/**
 * An in-memory DatastoreApi for the CLI's unit tests: it answers like the service
 * (404 as ApiError E_NOT_FOUND) and records every call.
 */
import type { DatastoreApi } from '../../../src/api/api.js';
import { ApiError } from '../../../src/api/errors.js';
import type { ChunkRecord, DataSourceRecord, DocumentRecord, DocumentUpdate, UploadFile } from '../../../src/api/records.js';
import type { CliContext } from '../../../src/cli/context.js';

export interface Call {
  op: string;
  args: unknown[];
}

function notFound(path: string): ApiError {
  return new ApiError({ code: 'E_NOT_FOUND', status: 404, message: `not found: ${path}`, path });
}

export class FakeApi implements DatastoreApi {
  calls: Call[] = [];
  dataSources = new Map<string, DataSourceRecord>();
  documents = new Map<string, Map<string, DocumentRecord>>();
  chunks = new Map<string, ChunkRecord[]>();
  apps = new Map<string, string[]>();
  private next = 1;

  addDataSource(id: string, name: string): DataSourceRecord {
    const r: DataSourceRecord = { id, name, llmConnectorIds: ['conn-1'], raw: { data_source_id: id, name } };
    this.dataSources.set(id, r);
    this.documents.set(id, new Map());
    return r;
  }
  addDocument(ds: string, doc: DocumentRecord): void {
    this.documents.get(ds)!.set(doc.id, doc);
  }

  private log(op: string, ...args: unknown[]): void {
    this.calls.push({ op, args });
  }
  private ds(id: string): Map<string, DocumentRecord> {
    const docs = this.documents.get(id);
    if (!docs) throw notFound(`/datastore/v1/data-sources/${id}`);
    return docs;
  }
  private doc(ds: string, id: string): DocumentRecord {
    const d = this.ds(ds).get(id);
    if (!d) throw notFound(`/datastore/v1/data-sources/${ds}/documents/${id}`);
    return d;
  }

  async createDataSource(input: { name: string; llmConnectorIds: string[] }): Promise<DataSourceRecord> {
    this.log('createDataSource', input);
    const id = `ds_${this.next++}`;
    const r: DataSourceRecord = { id, name: input.name, llmConnectorIds: input.llmConnectorIds, raw: { id } };
    this.dataSources.set(id, r);
    this.documents.set(id, new Map());
    return r;
  }
  async getDataSource(id: string): Promise<DataSourceRecord> {
    this.log('getDataSource', id);
    const r = this.dataSources.get(id);
    if (!r) throw notFound(id);
    return r;
  }
  async listDataSources(): Promise<DataSourceRecord[]> {
    this.log('listDataSources');
    return [...this.dataSources.values()];
  }
  async updateDataSource(id: string, input: { name: string }): Promise<DataSourceRecord> {
    this.log('updateDataSource', id, input);
    const r = this.dataSources.get(id);
    if (!r) throw notFound(id);
    const u = { ...r, name: input.name };
    this.dataSources.set(id, u);
    return u;
  }
  async deleteDataSource(id: string): Promise<void> {
    this.log('deleteDataSource', id);
    this.dataSources.delete(id);
    this.documents.delete(id);
  }
  async listAppDataSources(appId: string): Promise<DataSourceRecord[]> {
    this.log('listAppDataSources', appId);
    const ids = this.apps.get(appId);
    if (!ids) throw notFound(appId);
    return ids.map((id) => this.dataSources.get(id)!);
  }
  async listDocuments(ds: string): Promise<DocumentRecord[]> {
    this.log('listDocuments', ds);
    return [...this.ds(ds).values()];
  }
  async getDocument(ds: string, id: string): Promise<DocumentRecord> {
    this.log('getDocument', ds, id);
    return this.doc(ds, id);
  }
  async uploadDocuments(ds: string, files: UploadFile[]): Promise<DocumentRecord[]> {
    this.log('uploadDocuments', ds, files);
    const docs = this.ds(ds);
    return files.map((f) => {
      const id = `doc_${this.next++}`;
      const r: DocumentRecord = { id, name: f.name, raw: { document_id: id, name: f.name } };
      docs.set(id, r);
      return r;
    });
  }
  async updateDocument(ds: string, id: string, update: DocumentUpdate): Promise<DocumentRecord> {
    this.log('updateDocument', ds, id, update);
    const cur = this.doc(ds, id);
    const r: DocumentRecord = { ...cur, ...update, raw: { ...cur.raw, ...update } };
    this.ds(ds).set(id, r);
    return r;
  }
  async deleteDocument(ds: string, id: string): Promise<void> {
    this.log('deleteDocument', ds, id);
    this.ds(ds).delete(id);
  }
  async listChunks(ds: string, doc: string): Promise<ChunkRecord[]> {
    this.log('listChunks', ds, doc);
    this.doc(ds, doc);
    return this.chunks.get(doc) ?? [];
  }
  async getChunk(doc: string, chunk: string): Promise<ChunkRecord> {
    this.log('getChunk', doc, chunk);
    const c = this.chunks.get(doc)?.find((x) => x.id === chunk);
    if (!c) throw notFound(`/datastore/v1/documents/${doc}/chunks/${chunk}`);
    return c;
  }

  /** Names of the operations called, in order. */
  ops(): string[] {
    return this.calls.map((c) => c.op);
  }
}

/** A context around the fake: what the command printed is in `printed()`. */
export function fakeContext(api: DatastoreApi, json = false): CliContext & { printed: () => string } {
  let text = '';
  return {
    api,
    json,
    out: (t: string) => {
      text += t;
    },
    printed: () => text,
  };
}

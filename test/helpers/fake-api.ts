/**
 * The one in-memory DatastoreApi of the unit tests (the engine's, the daemon's and the
 * CLI's; the simulation's FakeService extends it): documents by id, every call recorded,
 * scripted failures, 404s as the service gives them (ApiError E_NOT_FOUND). Content is not
 * stored, only the name sent.
 *
 * Data sources: by default every id is one that exists (the engine's tests sync into a data
 * source they never declare); `new FakeApi({ dataSources: 'listed' })` knows only those
 * created or added, with their own documents, so that a command's not-found answers can be
 * tested.
 */
import { basename } from 'node:path';
import { keptRecords, type DatastoreApi, type ListDocumentsOptions } from '../../src/api/api.js';
import { ApiError } from '../../src/api/errors.js';
import type { ChunkRecord, DataSourceRecord, DocumentRecord, DocumentUpdate, JsonObject, UploadFile } from '../../src/api/records.js';
import type { CliContext } from '../../src/cli/context.js';

export interface FakeDoc {
  id: string;
  name: string;
  url?: string | undefined;
  metadata: JsonObject;
  /** Bytes, as the service reports it (the emulator does); absent: the service says nothing. */
  size?: number;
  /** The disk path it was uploaded from (tests assert on it). */
  uploadedFrom?: string;
  /** The data source it was uploaded to or added in (absent: any). */
  dataSourceId?: string;
  /** The ingestion state as the emulator's records carry it (absent: the service says nothing). */
  status?: string;
  failure_reason?: string;
}

export interface FakeCall {
  op: string;
  /** The argument that says what the call is about (a document id, the files, the input). */
  arg: unknown;
  /** All arguments, as passed. */
  args: unknown[];
}

type Failure = (op: string, arg: unknown) => ApiError | undefined;

export interface FakeApiOptions {
  /** 'any' (default): every data source id exists; 'listed': only those created or added. */
  dataSources?: 'any' | 'listed';
}

export class FakeApi implements DatastoreApi {
  docs = new Map<string, FakeDoc>();
  calls: FakeCall[] = [];
  dataSources = new Map<string, DataSourceRecord>();
  /** The data source ids of each App. */
  apps = new Map<string, string[]>();
  /** The chunks of a document, by document id (none: not ingested yet). */
  chunks = new Map<string, ChunkRecord[]>();
  /** Return an error to make that call fail; called before the call acts. */
  failBefore: Failure = () => undefined;
  /** Return an error to make that call fail AFTER it acted (a lost answer). */
  failAfter: Failure = () => undefined;
  /** Keep only base names on upload (a service that drops directories). */
  baseNamesOnly = false;
  /** An update keeps the document's name (a service that ignores a new name). */
  ignoreRename = false;
  ignoreUrl = false;
  /** The name stored for a name given, at an upload and an update (a service that rewrites or cuts names). */
  storeName: (name: string) => string = (name) => name;
  private nextId = 1;
  private nextDataSource = 1;
  private readonly listed: boolean;

  constructor(opts: FakeApiOptions = {}) {
    this.listed = opts.dataSources === 'listed';
  }

  count(op: string): number {
    return this.calls.filter((c) => c.op === op).length;
  }
  /** Names of the operations called, in order. */
  ops(): string[] {
    return this.calls.map((c) => c.op);
  }
  list(): FakeDoc[] {
    return [...this.docs.values()];
  }
  add(doc: Omit<FakeDoc, 'id'> & { id?: string }): FakeDoc {
    const d = { ...doc, id: doc.id ?? `doc${this.nextId++}` };
    this.docs.set(d.id, d);
    return d;
  }
  addDataSource(id: string, name: string): DataSourceRecord {
    const r: DataSourceRecord = { id, name, llmConnectorIds: ['conn-1'], raw: { data_source_id: id, name } };
    this.dataSources.set(id, r);
    return r;
  }
  /** A document as the service would list it, in that data source. */
  addDocument(dataSourceId: string, doc: DocumentRecord): FakeDoc {
    return this.add({ id: doc.id, name: doc.name ?? '', url: doc.url, metadata: doc.metadata ?? {}, dataSourceId });
  }

  private async call<T>(op: string, args: unknown[], arg: unknown, fn: () => T): Promise<T> {
    this.calls.push({ op, arg, args });
    const before = this.failBefore(op, arg);
    if (before) throw before;
    const out = fn();
    const after = this.failAfter(op, arg);
    if (after) throw after;
    return out;
  }

  private record(d: FakeDoc): DocumentRecord {
    return { id: d.id, name: d.name, url: d.url, metadata: structuredClone(d.metadata), raw: { ...d, url: d.url ?? null } };
  }

  /** The data source, or a 404 (only when data sources are listed). */
  private dataSource(id: string): DataSourceRecord {
    const r = this.dataSources.get(id);
    if (r) return r;
    if (this.listed) throw notFound(`/datastore/v1/data-sources/${id}`);
    return { id, raw: {} };
  }
  private docsIn(dataSourceId: string): FakeDoc[] {
    this.dataSource(dataSourceId);
    return this.list().filter((d) => !this.listed || d.dataSourceId === dataSourceId);
  }
  private mustGet(dataSourceId: string, id: string): FakeDoc {
    const d = this.docsIn(dataSourceId).find((x) => x.id === id);
    if (!d) throw notFound(`/datastore/v1/data-sources/${dataSourceId}/documents/${id}`, `document ${id} not found`);
    return d;
  }

  createDataSource(input: { name: string; llmConnectorIds: string[] }): Promise<DataSourceRecord> {
    return this.call('createDataSource', [input], input, () => {
      const id = `ds_${this.nextDataSource++}`;
      const r: DataSourceRecord = { id, name: input.name, llmConnectorIds: input.llmConnectorIds, raw: { id } };
      this.dataSources.set(id, r);
      return r;
    });
  }
  getDataSource(id: string): Promise<DataSourceRecord> {
    return this.call('getDataSource', [id], id, () => this.dataSource(id));
  }
  listDataSources(): Promise<DataSourceRecord[]> {
    return this.call('listDataSources', [], undefined, () => [...this.dataSources.values()]);
  }
  updateDataSource(id: string, input: { name: string }): Promise<DataSourceRecord> {
    return this.call('updateDataSource', [id, input], input, () => {
      const r = { ...this.dataSource(id), name: input.name };
      if (this.dataSources.has(id)) this.dataSources.set(id, r);
      return r;
    });
  }
  deleteDataSource(id: string): Promise<void> {
    return this.call('deleteDataSource', [id], id, () => {
      this.dataSources.delete(id);
      for (const d of this.list()) if (d.dataSourceId === id) this.docs.delete(d.id);
    });
  }
  listAppDataSources(appId: string): Promise<DataSourceRecord[]> {
    return this.call('listAppDataSources', [appId], appId, () => {
      const ids = this.apps.get(appId);
      if (!ids) {
        if (this.listed) throw notFound(`/datastore/v1/apps/${appId}/data-sources`);
        return [];
      }
      return ids.map((id) => this.dataSource(id));
    });
  }
  listDocuments(dataSourceId: string, opts?: ListDocumentsOptions): Promise<DocumentRecord[]> {
    return this.call('listDocuments', [dataSourceId], undefined, () => keptRecords(this.docsIn(dataSourceId).map((d) => this.record(d)), opts));
  }
  getDocument(dataSourceId: string, id: string): Promise<DocumentRecord> {
    return this.call('getDocument', [dataSourceId, id], id, () => this.record(this.mustGet(dataSourceId, id)));
  }
  uploadDocuments(dataSourceId: string, files: UploadFile[]): Promise<DocumentRecord[]> {
    return this.call('uploadDocuments', [dataSourceId, files], files, () => {
      this.dataSource(dataSourceId);
      return files.map((f) =>
        this.record(
          this.add({
            name: this.storeName(this.baseNamesOnly ? basename(f.name) : f.name),
            metadata: {},
            uploadedFrom: f.path,
            dataSourceId,
            ...(f.expectedSize === undefined ? {} : { size: f.expectedSize }),
          }),
        ),
      );
    });
  }
  updateDocument(dataSourceId: string, id: string, update: DocumentUpdate): Promise<DocumentRecord> {
    return this.call('updateDocument', [dataSourceId, id, update], { id, update }, () => {
      const d = this.mustGet(dataSourceId, id);
      if (!this.ignoreRename) d.name = this.storeName(update.name);
      if (!this.ignoreUrl) d.url = update.url;
      d.metadata = structuredClone(update.metadata);
      return this.record(d);
    });
  }
  deleteDocument(dataSourceId: string, id: string): Promise<void> {
    return this.call('deleteDocument', [dataSourceId, id], id, () => {
      this.mustGet(dataSourceId, id);
      this.docs.delete(id);
    });
  }
  listChunks(dataSourceId: string, documentId: string): Promise<ChunkRecord[]> {
    return this.call('listChunks', [dataSourceId, documentId], documentId, () => {
      // The ingestion checker asks about documents the fake was never given: only a
      // listed data source's documents are checked.
      if (this.listed) this.mustGet(dataSourceId, documentId);
      return this.chunks.get(documentId) ?? [];
    });
  }
  getChunk(documentId: string, chunkId: string): Promise<ChunkRecord> {
    return this.call('getChunk', [documentId, chunkId], chunkId, () => {
      const c = this.chunks.get(documentId)?.find((x) => x.id === chunkId);
      if (!c) throw notFound(`/datastore/v1/documents/${documentId}/chunks/${chunkId}`);
      return c;
    });
  }
}

function notFound(path: string, message = `not found: ${path}`): ApiError {
  return new ApiError({ code: 'E_NOT_FOUND', status: 404, message, path });
}

export function apiError(code: ApiError['code'], status: number | undefined, extra: Partial<{ ambiguous: boolean; retryable: boolean }> = {}): ApiError {
  return new ApiError({ code, status, message: `${code} (test)`, ...extra });
}

/** A CLI context around a fake: what the command printed is in `printed()`. */
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

/**
 * An in-memory DatastoreApi for the engine's unit tests: documents by id, request
 * counters, and scripted failures. Content is not stored, only the name sent.
 */
import { basename } from 'node:path';
import type { DatastoreApi } from '../../src/api/api.js';
import { ApiError } from '../../src/api/errors.js';
import type { ChunkRecord, DataSourceRecord, DocumentRecord, DocumentUpdate, JsonObject, UploadFile } from '../../src/api/records.js';

export interface FakeDoc {
  id: string;
  name: string;
  url?: string;
  metadata: JsonObject;
  /** Bytes, as the service reports it (the emulator does); absent: the service says nothing. */
  size?: number;
  /** The disk path it was uploaded from (tests assert on it). */
  uploadedFrom?: string;
}

type Failure = (op: string, arg: unknown) => ApiError | undefined;

export class FakeApi implements DatastoreApi {
  docs = new Map<string, FakeDoc>();
  calls: { op: string; arg: unknown }[] = [];
  private nextId = 1;
  /** Return an error to make that call fail; called before the call acts. */
  failBefore: Failure = () => undefined;
  /** Return an error to make that call fail AFTER it acted (a lost answer). */
  failAfter: Failure = () => undefined;
  /** Keep only base names on upload (a service that drops directories). */
  baseNamesOnly = false;
  /** The chunks of a document, by document id (none: not ingested yet). */
  chunks = new Map<string, ChunkRecord[]>();

  count(op: string): number {
    return this.calls.filter((c) => c.op === op).length;
  }
  list(): FakeDoc[] {
    return [...this.docs.values()];
  }
  add(doc: Omit<FakeDoc, 'id'> & { id?: string }): FakeDoc {
    const d = { ...doc, id: doc.id ?? `doc${this.nextId++}` };
    this.docs.set(d.id, d);
    return d;
  }

  private async call<T>(op: string, arg: unknown, fn: () => T): Promise<T> {
    this.calls.push({ op, arg });
    const before = this.failBefore(op, arg);
    if (before) throw before;
    const out = fn();
    const after = this.failAfter(op, arg);
    if (after) throw after;
    return out;
  }

  private record(d: FakeDoc): DocumentRecord {
    return { id: d.id, name: d.name, url: d.url, metadata: structuredClone(d.metadata), raw: { ...d } };
  }

  createDataSource(input: { name: string; llmConnectorIds: string[] }): Promise<DataSourceRecord> {
    return this.call('createDataSource', input, () => ({ id: 'ds1', name: input.name, raw: {} }));
  }
  getDataSource(id: string): Promise<DataSourceRecord> {
    return this.call('getDataSource', id, () => ({ id, raw: {} }));
  }
  listDataSources(): Promise<DataSourceRecord[]> {
    return this.call('listDataSources', undefined, () => []);
  }
  updateDataSource(id: string, input: { name: string }): Promise<DataSourceRecord> {
    return this.call('updateDataSource', input, () => ({ id, name: input.name, raw: {} }));
  }
  deleteDataSource(id: string): Promise<void> {
    return this.call('deleteDataSource', id, () => undefined);
  }
  listAppDataSources(): Promise<DataSourceRecord[]> {
    return this.call('listAppDataSources', undefined, () => []);
  }
  listDocuments(): Promise<DocumentRecord[]> {
    return this.call('listDocuments', undefined, () => this.list().map((d) => this.record(d)));
  }
  getDocument(_ds: string, id: string): Promise<DocumentRecord> {
    return this.call('getDocument', id, () => this.record(this.mustGet(id)));
  }
  uploadDocuments(_ds: string, files: UploadFile[]): Promise<DocumentRecord[]> {
    return this.call('uploadDocuments', files, () =>
      files.map((f) => this.record(this.add({ name: this.baseNamesOnly ? basename(f.name) : f.name, metadata: {}, uploadedFrom: f.path, ...(f.expectedSize === undefined ? {} : { size: f.expectedSize }) }))),
    );
  }
  updateDocument(_ds: string, id: string, update: DocumentUpdate): Promise<DocumentRecord> {
    return this.call('updateDocument', { id, update }, () => {
      const d = this.mustGet(id);
      d.name = update.name;
      d.url = update.url;
      d.metadata = structuredClone(update.metadata);
      return this.record(d);
    });
  }
  deleteDocument(_ds: string, id: string): Promise<void> {
    return this.call('deleteDocument', id, () => {
      this.docs.delete(id);
    });
  }
  listChunks(_ds: string, documentId: string): Promise<ChunkRecord[]> {
    return this.call('listChunks', documentId, () => this.chunks.get(documentId) ?? []);
  }
  getChunk(_doc: string, chunkId: string): Promise<ChunkRecord> {
    return this.call('getChunk', chunkId, () => ({ id: chunkId, raw: {} }));
  }

  private mustGet(id: string): FakeDoc {
    const d = this.docs.get(id);
    if (!d) throw new ApiError({ code: 'E_NOT_FOUND', status: 404, message: `document ${id} not found` });
    return d;
  }
}

export function apiError(code: ApiError['code'], status: number | undefined, extra: Partial<{ ambiguous: boolean; retryable: boolean }> = {}): ApiError {
  return new ApiError({ code, status, message: `${code} (test)`, ...extra });
}

/**
 * The operations of the service (datastore-api.md), as an interface, so that the engine
 * and the CLI depend on this and tests can swap in a fake. DatastoreClient implements it
 * over HTTP.
 */
import type {
  ChunkRecord,
  DataSourceRecord,
  DocumentRecord,
  DocumentUpdate,
  UploadFile,
} from './records.js';
import type { PageChain } from './list-pages.js';

export interface RequestOptions {
  /** Aborts the request (and its retries); the promise rejects with E_ABORTED. */
  signal?: AbortSignal;
}

export interface ListDocumentsOptions extends RequestOptions {
  /**
   * 'sync': the records a mirror needs, compact (id, name, url, metadata, size only:
   * listing-form.ts); a million of them fit in ~half the memory. Default: as received.
   */
  form?: 'whole' | 'sync';
  /**
   * Called once for each distinct document, as its page arrives. A record it answers false
   * for is left out of the result: the caller took what it needed from it (a mirror's
   * restart vouches for a million documents this way without holding them). Every
   * implementation honours it (keptRecords below). Default: every record is kept. In the
   * sync form it is asked before the record is compacted: it sees the same id, name, url
   * and metadata, and `raw` as received.
   */
  keep?: ((doc: DocumentRecord) => boolean) | undefined;
  /**
   * The most distinct documents the listing may hold across its pages (sized by the caller:
   * the mirror's `listingBound`); past it the listing fails with E_LIST_TOO_LONG, naming the
   * bound and `boundReason`. Default: no bound but the client's page limit.
   */
  maxRecords?: number | undefined;
  /** What the bound is, for its error (e.g. "4 × the 12 files tracked + 100000"). */
  boundReason?: string | undefined;
  /**
   * This listing's first pages, fetched before it began (DatastoreClient.documentPages):
   * taken while they are the pages it asks for. An implementation may ignore it.
   */
  pages?: PageChain | undefined;
}

/** The records `keep` keeps, in order: for implementations that list all at once. */
export function keptRecords(records: DocumentRecord[], opts: ListDocumentsOptions | undefined): DocumentRecord[] {
  const keep = opts?.keep;
  return keep ? records.filter((d) => keep(d)) : records;
}

export interface DatastoreApi {
  // Data sources
  createDataSource(input: { name: string; llmConnectorIds: string[] }, opts?: RequestOptions): Promise<DataSourceRecord>;
  getDataSource(dataSourceId: string, opts?: RequestOptions): Promise<DataSourceRecord>;
  /** Follows paging until the end. */
  listDataSources(opts?: RequestOptions): Promise<DataSourceRecord[]>;
  updateDataSource(dataSourceId: string, input: { name: string }, opts?: RequestOptions): Promise<DataSourceRecord>;
  /** Resolves also when the service answers 404 (already gone). */
  deleteDataSource(dataSourceId: string, opts?: RequestOptions): Promise<void>;
  listAppDataSources(llmAppId: string, opts?: RequestOptions): Promise<DataSourceRecord[]>;

  // Documents
  /** Follows paging until the end. */
  listDocuments(dataSourceId: string, opts?: ListDocumentsOptions): Promise<DocumentRecord[]>;
  getDocument(dataSourceId: string, documentId: string, opts?: RequestOptions): Promise<DocumentRecord>;
  /**
   * Uploads all files in ONE multipart request (one `documents` part per file), streamed
   * from disk. Returns one record per file, in the order of `files` (matched by name,
   * by order only when the service returns no names).
   * Never retried blindly after the body may have reached the service: such a failure
   * rejects with an ApiError whose `ambiguous` is true.
   */
  uploadDocuments(dataSourceId: string, files: UploadFile[], opts?: RequestOptions): Promise<DocumentRecord[]>;
  updateDocument(dataSourceId: string, documentId: string, update: DocumentUpdate, opts?: RequestOptions): Promise<DocumentRecord>;
  /** Resolves also when the service answers 404 (already gone). */
  deleteDocument(dataSourceId: string, documentId: string, opts?: RequestOptions): Promise<void>;

  // Chunks
  listChunks(dataSourceId: string, documentId: string, opts?: RequestOptions): Promise<ChunkRecord[]>;
  getChunk(documentId: string, chunkId: string, opts?: RequestOptions): Promise<ChunkRecord>;
}

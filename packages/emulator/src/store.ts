/**
 * The emulator's data: data sources per organization, their documents, the chunks of each
 * document, and which data sources are enabled for an App. Everything is in memory with
 * O(1) lookups by id; lists page through OrderedIndex without copying. Lookups take the
 * caller's organization: an id of another organization is simply not found.
 */
import { newId } from './ids.js';
import { OrderedIndex, type Page } from './ordered-index.js';
import {
  chunkRecord,
  dataSourceRecord,
  documentRecord,
  type ChunkRecord,
  type DataSourceEntry,
  type DataSourceRecord,
  type DocumentEntry,
  type DocumentRecord,
  type DocumentStatus,
  type JsonObject,
} from './records.js';

/** Read access for tests and benchmarks (RunningEmulator.store). Records are copies. */
export interface EmulatorStore {
  /** Data sources of one organization (or of all), in creation order. */
  listDataSources(orgId?: string): DataSourceRecord[];
  getDataSource(dataSourceId: string): DataSourceRecord | undefined;
  /** Documents of a data source in creation order; [] when it does not exist. */
  listDocuments(dataSourceId: string): DocumentRecord[];
  getDocument(documentId: string): DocumentRecord | undefined;
  /** Chunks of a document in order; [] when it does not exist. */
  listChunks(documentId: string): ChunkRecord[];
  counts(): StoreCounts;
}

export interface StoreCounts {
  dataSources: number;
  documents: number;
  chunks: number;
}

/** A document ready to be stored: the upload has been received and its text extracted. */
export interface NewDocument {
  name: string;
  contentType: string;
  size: number;
  status: DocumentStatus;
  failureReason: string | null;
  chunkTexts: string[];
}

export interface DocumentPatch {
  name?: string;
  url?: string;
  metadata?: JsonObject;
}

export interface StoreSnapshot {
  format: 'dssync-emulator-store';
  version: 1;
  seq: number;
  dataSources: Array<Omit<DataSourceRecord, 'document_count'> & { org_id: string; seq: number }>;
  documents: Array<
    Omit<DocumentRecord, 'chunk_count'> & { org_id: string; seq: number; chunks: Array<{ chunk_id: string; text: string }> }
  >;
  apps: Array<{ org_id: string; llm_app_id: string; data_source_ids: string[] }>;
}

export class MemoryStore implements EmulatorStore {
  private seq = 0;
  private readonly orgs = new Map<string, OrderedIndex<DataSourceEntry>>();
  private readonly dataSources = new Map<string, DataSourceEntry>();
  private readonly documents = new Map<string, DocumentEntry>();
  private readonly chunks = new Map<string, { doc: DocumentEntry; index: number }>();
  /** orgId -> llm_app_id -> data source ids enabled through the admin route. */
  private readonly apps = new Map<string, Map<string, Set<string>>>();

  constructor(
    private readonly clock: () => number = Date.now,
    /** Called after every change (persistence schedules a write). */
    private readonly onChange: () => void = () => {},
  ) {}

  // ---- data sources -------------------------------------------------------------

  createDataSource(orgId: string, name: string, llmConnectorIds: string[]): DataSourceEntry {
    const now = this.timestamp();
    const ds: DataSourceEntry = {
      id: newId('ds'),
      seq: ++this.seq,
      orgId,
      name,
      llmConnectorIds: [...llmConnectorIds],
      createdAt: now,
      updatedAt: now,
      documents: new OrderedIndex<DocumentEntry>(),
    };
    this.insertDataSource(ds);
    this.onChange();
    return ds;
  }

  findDataSource(orgId: string, id: string): DataSourceEntry | undefined {
    const ds = this.dataSources.get(id);
    return ds && ds.orgId === orgId ? ds : undefined;
  }

  renameDataSource(ds: DataSourceEntry, name: string): void {
    ds.name = name;
    ds.updatedAt = this.timestamp();
    this.onChange();
  }

  deleteDataSource(ds: DataSourceEntry): void {
    for (const doc of ds.documents.values()) this.forgetDocument(doc);
    this.orgs.get(ds.orgId)?.remove(ds.id);
    this.dataSources.delete(ds.id);
    for (const enabled of this.apps.get(ds.orgId)?.values() ?? []) enabled.delete(ds.id);
    this.onChange();
  }

  pageDataSources(orgId: string, afterSeq: number, limit: number): Page<DataSourceEntry> {
    const index = this.orgs.get(orgId);
    return index ? index.page(afterSeq, limit) : { items: [], nextAfter: null };
  }

  // ---- apps -----------------------------------------------------------------------

  /** Replaces the data sources explicitly enabled for an App in one organization. */
  setAppDataSources(orgId: string, appId: string, dataSourceIds: string[]): void {
    let byApp = this.apps.get(orgId);
    if (!byApp) this.apps.set(orgId, (byApp = new Map()));
    if (dataSourceIds.length === 0) byApp.delete(appId);
    else byApp.set(appId, new Set(dataSourceIds));
    this.onChange();
  }

  /**
   * Data sources enabled for an App: those enabled through the admin route, and those
   * whose llm_connector_ids contain the App id.
   */
  pageAppDataSources(orgId: string, appId: string, afterSeq: number, limit: number): Page<DataSourceEntry> {
    const index = this.orgs.get(orgId);
    if (!index) return { items: [], nextAfter: null };
    const explicit = this.apps.get(orgId)?.get(appId);
    return index.page(afterSeq, limit, (ds) => explicit?.has(ds.id) === true || ds.llmConnectorIds.includes(appId));
  }

  // ---- documents ------------------------------------------------------------------

  addDocuments(ds: DataSourceEntry, files: NewDocument[]): DocumentEntry[] {
    const now = this.timestamp();
    const added = files.map((file) => {
      const doc: DocumentEntry = {
        id: newId('doc'),
        seq: ++this.seq,
        orgId: ds.orgId,
        dataSourceId: ds.id,
        name: file.name,
        url: null,
        metadata: {},
        contentType: file.contentType,
        size: file.size,
        status: file.status,
        failureReason: file.failureReason,
        chunks: file.chunkTexts.map((text) => ({ id: newId('chk'), text })),
        createdAt: now,
        updatedAt: now,
      };
      this.insertDocument(ds, doc);
      return doc;
    });
    this.onChange();
    return added;
  }

  findDocument(ds: DataSourceEntry, documentId: string): DocumentEntry | undefined {
    return ds.documents.get(documentId);
  }

  /** For the chunk route, whose path has no data source segment. */
  findDocumentById(orgId: string, documentId: string): DocumentEntry | undefined {
    const doc = this.documents.get(documentId);
    return doc && doc.orgId === orgId ? doc : undefined;
  }

  updateDocument(doc: DocumentEntry, patch: DocumentPatch): void {
    if (patch.name !== undefined) doc.name = patch.name;
    if (patch.url !== undefined) doc.url = patch.url;
    if (patch.metadata !== undefined) doc.metadata = patch.metadata;
    doc.updatedAt = this.timestamp();
    this.onChange();
  }

  deleteDocument(ds: DataSourceEntry, doc: DocumentEntry): void {
    ds.documents.remove(doc.id);
    this.forgetDocument(doc);
    this.onChange();
  }

  pageDocuments(ds: DataSourceEntry, afterSeq: number, limit: number): Page<DocumentEntry> {
    return ds.documents.page(afterSeq, limit);
  }

  // ---- chunks ---------------------------------------------------------------------

  /** Chunks never change once stored, so their cursor is simply the count already seen. */
  pageChunks(doc: DocumentEntry, afterIndex: number, limit: number): { indexes: number[]; nextAfter: number | null } {
    const end = Math.min(doc.chunks.length, afterIndex + limit);
    const indexes: number[] = [];
    for (let i = afterIndex; i < end; i++) indexes.push(i);
    return { indexes, nextAfter: end < doc.chunks.length ? end : null };
  }

  findChunk(doc: DocumentEntry, chunkId: string): number | undefined {
    const hit = this.chunks.get(chunkId);
    return hit && hit.doc === doc ? hit.index : undefined;
  }

  // ---- read API (EmulatorStore) ---------------------------------------------------

  listDataSources(orgId?: string): DataSourceRecord[] {
    const out: DataSourceRecord[] = [];
    for (const [org, index] of this.orgs) {
      if (orgId !== undefined && org !== orgId) continue;
      for (const ds of index.values()) out.push(dataSourceRecord(ds));
    }
    return out;
  }

  getDataSource(dataSourceId: string): DataSourceRecord | undefined {
    const ds = this.dataSources.get(dataSourceId);
    return ds && dataSourceRecord(ds);
  }

  listDocuments(dataSourceId: string): DocumentRecord[] {
    const ds = this.dataSources.get(dataSourceId);
    return ds ? [...ds.documents.values()].map((doc) => cloneRecord(documentRecord(doc))) : [];
  }

  getDocument(documentId: string): DocumentRecord | undefined {
    const doc = this.documents.get(documentId);
    return doc && cloneRecord(documentRecord(doc));
  }

  listChunks(documentId: string): ChunkRecord[] {
    const doc = this.documents.get(documentId);
    return doc ? doc.chunks.map((_, i) => chunkRecord(doc, i)) : [];
  }

  counts(): StoreCounts {
    return { dataSources: this.dataSources.size, documents: this.documents.size, chunks: this.chunks.size };
  }

  // ---- persistence ----------------------------------------------------------------

  snapshot(): StoreSnapshot {
    const snap: StoreSnapshot = { format: 'dssync-emulator-store', version: 1, seq: this.seq, dataSources: [], documents: [], apps: [] };
    for (const index of this.orgs.values()) {
      for (const ds of index.values()) {
        const { document_count: _count, ...record } = dataSourceRecord(ds);
        snap.dataSources.push({ org_id: ds.orgId, seq: ds.seq, ...record });
        for (const doc of ds.documents.values()) {
          const { chunk_count: _chunks, ...docRecord } = documentRecord(doc);
          snap.documents.push({
            org_id: doc.orgId,
            seq: doc.seq,
            ...docRecord,
            chunks: doc.chunks.map((c) => ({ chunk_id: c.id, text: c.text })),
          });
        }
      }
    }
    for (const [orgId, byApp] of this.apps) {
      for (const [appId, ids] of byApp) snap.apps.push({ org_id: orgId, llm_app_id: appId, data_source_ids: [...ids] });
    }
    return snap;
  }

  /** Loads a snapshot into this (empty) store. Throws naming what is wrong. */
  restore(snap: StoreSnapshot): void {
    if (snap?.format !== 'dssync-emulator-store' || snap.version !== 1) {
      throw new Error('not a dssync emulator store (expected format "dssync-emulator-store", version 1)');
    }
    // Entries are sorted by seq so each OrderedIndex receives them in order.
    const dataSources = [...snap.dataSources].sort((a, b) => a.seq - b.seq);
    for (const r of dataSources) {
      this.insertDataSource({
        id: r.data_source_id,
        seq: r.seq,
        orgId: r.org_id,
        name: r.name,
        llmConnectorIds: r.llm_connector_ids,
        createdAt: r.created_at,
        updatedAt: r.updated_at,
        documents: new OrderedIndex<DocumentEntry>(),
      });
    }
    const documents = [...snap.documents].sort((a, b) => a.seq - b.seq);
    for (const r of documents) {
      const ds = this.dataSources.get(r.data_source_id);
      if (!ds) continue; // a document saved while its data source was being deleted
      this.insertDocument(ds, {
        id: r.document_id,
        seq: r.seq,
        orgId: r.org_id,
        dataSourceId: r.data_source_id,
        name: r.name,
        url: r.url,
        metadata: r.metadata,
        contentType: r.content_type,
        size: r.size,
        status: r.status,
        failureReason: r.failure_reason ?? null,
        chunks: r.chunks.map((c) => ({ id: c.chunk_id, text: c.text })),
        createdAt: r.created_at,
        updatedAt: r.updated_at,
      });
    }
    for (const app of snap.apps) this.setAppDataSourcesQuietly(app.org_id, app.llm_app_id, app.data_source_ids);
    let maxSeq = snap.seq;
    for (const r of dataSources) maxSeq = Math.max(maxSeq, r.seq);
    for (const r of documents) maxSeq = Math.max(maxSeq, r.seq);
    this.seq = maxSeq;
  }

  // ---- internals ------------------------------------------------------------------

  private insertDataSource(ds: DataSourceEntry): void {
    let index = this.orgs.get(ds.orgId);
    if (!index) this.orgs.set(ds.orgId, (index = new OrderedIndex()));
    index.add(ds);
    this.dataSources.set(ds.id, ds);
  }

  private insertDocument(ds: DataSourceEntry, doc: DocumentEntry): void {
    ds.documents.add(doc);
    this.documents.set(doc.id, doc);
    doc.chunks.forEach((chunk, index) => this.chunks.set(chunk.id, { doc, index }));
  }

  private forgetDocument(doc: DocumentEntry): void {
    this.documents.delete(doc.id);
    for (const chunk of doc.chunks) this.chunks.delete(chunk.id);
  }

  private setAppDataSourcesQuietly(orgId: string, appId: string, ids: string[]): void {
    let byApp = this.apps.get(orgId);
    if (!byApp) this.apps.set(orgId, (byApp = new Map()));
    byApp.set(appId, new Set(ids));
  }

  private timestamp(): string {
    return new Date(this.clock()).toISOString();
  }
}

/** Records are fresh objects already; only the caller-supplied metadata needs a deep copy. */
function cloneRecord(record: DocumentRecord): DocumentRecord {
  for (const _ in record.metadata) return { ...record, metadata: structuredClone(record.metadata) };
  return { ...record, metadata: {} };
}

/**
 * What the emulator stores (entries) and what it answers (records, snake_case as on the
 * wire). Entries are internal and mutable; records are fresh plain objects.
 */
import type { OrderedIndex } from './ordered-index.js';

export type JsonObject = Record<string, unknown>;
export type DocumentStatus = 'ready' | 'failed';

export interface DataSourceRecord {
  data_source_id: string;
  name: string;
  llm_connector_ids: string[];
  document_count: number;
  created_at: string;
  updated_at: string;
}

export interface DocumentRecord {
  document_id: string;
  data_source_id: string;
  name: string;
  url: string | null;
  metadata: JsonObject;
  content_type: string;
  size: number;
  status: DocumentStatus;
  /** Why no text could be extracted; null when status is ready. */
  failure_reason: string | null;
  chunk_count: number;
  created_at: string;
  updated_at: string;
}

export interface ChunkRecord {
  chunk_id: string;
  document_id: string;
  index: number;
  text: string;
}

export interface ChunkEntry {
  id: string;
  text: string;
}

export interface DocumentEntry {
  readonly id: string;
  readonly seq: number;
  readonly orgId: string;
  readonly dataSourceId: string;
  name: string;
  url: string | null;
  metadata: JsonObject;
  readonly contentType: string;
  readonly size: number;
  readonly status: DocumentStatus;
  readonly failureReason: string | null;
  readonly chunks: readonly ChunkEntry[];
  readonly createdAt: string;
  updatedAt: string;
}

export interface DataSourceEntry {
  readonly id: string;
  readonly seq: number;
  readonly orgId: string;
  name: string;
  readonly llmConnectorIds: readonly string[];
  readonly createdAt: string;
  updatedAt: string;
  readonly documents: OrderedIndex<DocumentEntry>;
}

export function dataSourceRecord(ds: DataSourceEntry): DataSourceRecord {
  return {
    data_source_id: ds.id,
    name: ds.name,
    llm_connector_ids: [...ds.llmConnectorIds],
    document_count: ds.documents.size,
    created_at: ds.createdAt,
    updated_at: ds.updatedAt,
  };
}

export function documentRecord(doc: DocumentEntry): DocumentRecord {
  return {
    document_id: doc.id,
    data_source_id: doc.dataSourceId,
    name: doc.name,
    url: doc.url,
    metadata: doc.metadata,
    content_type: doc.contentType,
    size: doc.size,
    status: doc.status,
    failure_reason: doc.failureReason,
    chunk_count: doc.chunks.length,
    created_at: doc.createdAt,
    updated_at: doc.updatedAt,
  };
}

export function chunkRecord(doc: DocumentEntry, index: number): ChunkRecord {
  const chunk = doc.chunks[index];
  if (!chunk) throw new Error(`chunk ${index} of ${doc.id} does not exist`);
  return { chunk_id: chunk.id, document_id: doc.id, index, text: chunk.text };
}

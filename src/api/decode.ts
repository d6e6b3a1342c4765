/**
 * The ONE place that turns what the service answered into dssync's typed records
 * (DESIGN §3): tolerant on input (several spellings of ids and fields, wrapped records,
 * lists under various keys), strict on output (records.ts). Pure.
 */
import { ApiError } from './errors.js';
import { idProblem, quoteId } from './ids.js';
import type { ChunkRecord, DataSourceRecord, DocumentRecord, JsonObject } from './records.js';

export type RecordKind = 'data source' | 'document' | 'chunk';

/** Where a decoded value came from, for error messages. */
export interface DecodeContext {
  method?: string | undefined;
  path?: string | undefined;
  status?: number | undefined;
  /** Set when the request may have created something (upload, create): errors are then ambiguous. */
  mayHaveActed?: boolean | undefined;
}

const ID_KEYS: Record<RecordKind, string[]> = {
  'data source': ['data_source_id', 'dataSourceId', 'datasource_id', 'id', 'uuid', '_id'],
  document: ['document_id', 'documentId', 'doc_id', 'id', 'uuid', '_id'],
  chunk: ['chunk_id', 'chunkId', 'id', 'uuid', '_id'],
};

/** Keys under which a single record may be wrapped, by kind. */
const WRAPPER_KEYS: Record<RecordKind, string[]> = {
  'data source': ['data_source', 'dataSource', 'datasource', 'data', 'result', 'item'],
  document: ['document', 'data', 'result', 'item'],
  chunk: ['chunk', 'data', 'result', 'item'],
};

/** Keys under which a list may be held, in order of preference. */
export const LIST_KEYS = ['items', 'data', 'results', 'documents', 'data_sources', 'dataSources', 'chunks', 'records'];

export function isObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** A string, or a finite number as a string; anything else (incl. '') is undefined. */
export function asId(v: unknown): string | undefined {
  if (typeof v === 'string') return v.trim() === '' ? undefined : v;
  if (typeof v === 'number' && Number.isFinite(v)) return String(v);
  return undefined;
}

function firstString(obj: JsonObject, keys: string[]): string | undefined {
  for (const k of keys) {
    const v = obj[k];
    if (typeof v === 'string') return v;
  }
  return undefined;
}

/** An integer, or a string holding one (some services send numbers as strings). */
function firstInteger(obj: JsonObject, keys: string[]): number | undefined {
  for (const k of keys) {
    const v = obj[k];
    if (typeof v === 'number' && Number.isInteger(v)) return v;
    if (typeof v === 'string' && /^-?\d{1,15}$/.test(v.trim())) return Number(v.trim());
  }
  return undefined;
}

function findId(obj: JsonObject, kind: RecordKind): string | undefined {
  for (const k of ID_KEYS[kind]) {
    const id = asId(obj[k]);
    if (id !== undefined) return id;
  }
  return undefined;
}

/**
 * Takes the record out of `{data: {...}}`, `{document: {...}}` and the like. A record that
 * carries an id itself is never unwrapped (its `data` field would be its own content).
 */
export function unwrapRecord(value: unknown, kind: RecordKind): unknown {
  let current = value;
  for (let depth = 0; depth < 3; depth++) {
    if (!isObject(current) || findId(current, kind) !== undefined) return current;
    const inner = WRAPPER_KEYS[kind].map((k) => (current as JsonObject)[k]).find(isObject);
    if (inner === undefined) return current;
    current = inner;
  }
  return current;
}

/** A short, single-line rendering of a received value for error messages. */
export function preview(value: unknown, max = 200): string {
  let text: string;
  try {
    text = typeof value === 'string' ? value : (JSON.stringify(value) ?? String(value));
  } catch {
    text = String(value);
  }
  text = text.replace(/\s+/g, ' ').trim();
  return text.length > max ? `${text.slice(0, max)}… (${text.length} chars)` : text;
}

function where(ctx: DecodeContext): string {
  const req = ctx.method && ctx.path ? `${ctx.method} ${ctx.path}` : (ctx.path ?? 'the service');
  return ctx.status === undefined ? req : `${req} (${ctx.status})`;
}

export function badResponse(ctx: DecodeContext, what: string): ApiError {
  return new ApiError({
    code: 'E_BAD_RESPONSE',
    message: `${where(ctx)}: ${what}`,
    status: ctx.status,
    method: ctx.method,
    path: ctx.path,
    // Something may have been created: the caller must list before trying again.
    retryable: ctx.mayHaveActed === true,
    ambiguous: ctx.mayHaveActed === true,
  });
}

function recordObject(value: unknown, kind: RecordKind, ctx: DecodeContext, fallbackId?: string): { obj: JsonObject; id: string } {
  const unwrapped = unwrapRecord(value, kind);
  if (!isObject(unwrapped)) {
    throw badResponse(ctx, `expected a ${kind} record (a JSON object), received ${preview(value)}`);
  }
  const id = findId(unwrapped, kind) ?? fallbackId;
  if (id === undefined) {
    throw badResponse(ctx, `the ${kind} record has no id (${ID_KEYS[kind].slice(0, 3).join(', ')}, id or uuid); received ${preview(value)}`);
  }
  // The id goes back into request paths: one that would address something else is refused here.
  const problem = idProblem(id);
  if (problem !== undefined) throw badResponse(ctx, `the ${kind} id ${quoteId(id)} is not usable in a URL (${problem})`);
  return { obj: unwrapped, id };
}

/** Metadata as an object, or a JSON string holding one; anything else is dropped. */
function decodeMetadata(v: unknown): JsonObject | undefined {
  if (isObject(v)) return v;
  if (typeof v === 'string' && v.trim().startsWith('{')) {
    try {
      const parsed: unknown = JSON.parse(v);
      if (isObject(parsed)) return parsed;
    } catch {
      // Not JSON after all: left in raw only.
    }
  }
  return undefined;
}

function stringArray(v: unknown): string[] | undefined {
  if (!Array.isArray(v)) return undefined;
  const out: string[] = [];
  for (const item of v) {
    const id = asId(item) ?? (isObject(item) ? asId(item.id ?? item.llm_connector_id ?? item.connector_id) : undefined);
    if (id !== undefined) out.push(id);
  }
  return out;
}

/** The record with each of `fields` that is defined, in their order (a field left out is absent, not undefined). */
function withDefined<R extends { id: string; raw: JsonObject }>(rec: R, fields: { [K in keyof R]?: R[K] | undefined }): R {
  for (const k in fields) if (fields[k] !== undefined) (rec as Record<string, unknown>)[k] = fields[k];
  return rec;
}

/**
 * Decoders. `fallbackId` is the id the caller already knows (get/update of a known id): a
 * response that does not repeat it is still usable.
 */
export function decodeDataSource(value: unknown, ctx: DecodeContext = {}, fallbackId?: string): DataSourceRecord {
  const { obj, id } = recordObject(value, 'data source', ctx, fallbackId);
  return withDefined<DataSourceRecord>({ id, raw: obj }, {
    name: firstString(obj, ['name', 'display_name', 'displayName', 'title']),
    llmConnectorIds: stringArray(obj.llm_connector_ids ?? obj.llmConnectorIds ?? obj.connector_ids ?? obj.llm_connectors),
  });
}

export function decodeDocument(value: unknown, ctx: DecodeContext = {}, fallbackId?: string): DocumentRecord {
  const { obj, id } = recordObject(value, 'document', ctx, fallbackId);
  return withDefined<DocumentRecord>({ id, raw: obj }, {
    name: firstString(obj, ['name', 'file_name', 'filename', 'fileName', 'original_filename', 'title']),
    url: firstString(obj, ['url', 'source_url', 'sourceUrl', 'uri']),
    metadata: decodeMetadata(obj.metadata ?? obj.meta ?? obj.metadata_json),
    title: firstString(obj, ['title']),
    storageName: firstString(obj, ['storage_name', 'storageName']),
    publicLink: firstString(obj, ['public_link', 'publicLink']),
  });
}

export function decodeChunk(value: unknown, ctx: DecodeContext = {}, fallbackId?: string): ChunkRecord {
  const { obj, id } = recordObject(value, 'chunk', ctx, fallbackId);
  return withDefined<ChunkRecord>({ id, raw: obj }, {
    documentId: asId(obj.document_id ?? obj.documentId),
    // Wikit Semantics holds the text (Markdown) under `data`; a record with an id is never
    // unwrapped (unwrapRecord), so its `data` string is its own text.
    text: firstString(obj, ['text', 'content', 'data', 'chunk', 'body']),
    index: firstInteger(obj, ['index', 'chunk_index', 'chunkIndex', 'position', 'seq', 'order']),
    position: firstInteger(obj, ['position']),
    pageStart: firstInteger(obj, ['page_start', 'pageStart']),
    pageEnd: firstInteger(obj, ['page_end', 'pageEnd']),
  });
}

/**
 * The array of a list answer: a bare array, or an object holding it under one of LIST_KEYS,
 * possibly one level down (`{data: {items: [...]}}`). Undefined when there is none.
 */
export function findListArray(body: unknown): unknown[] | undefined {
  if (Array.isArray(body)) return body;
  if (!isObject(body)) return undefined;
  for (const k of LIST_KEYS) {
    const v = body[k];
    if (Array.isArray(v)) return v;
  }
  for (const k of LIST_KEYS) {
    const v = body[k];
    if (isObject(v)) {
      for (const k2 of LIST_KEYS) {
        const inner = v[k2];
        if (Array.isArray(inner)) return inner;
      }
    }
  }
  return undefined;
}

/** Like findListArray, but a missing list is an E_BAD_RESPONSE naming what was received. */
export function listItems(body: unknown, ctx: DecodeContext = {}): unknown[] {
  const items = findListArray(body);
  if (items !== undefined) return items;
  if (isObject(body)) {
    throw badResponse(ctx, `expected a list (an array, or an object with one of ${LIST_KEYS.join(', ')}); received an object with keys ${preview(Object.keys(body).join(', '), 120)}`);
  }
  throw badResponse(ctx, `expected a list, received ${preview(body)}`);
}

/**
 * The answer to an upload: one record, an array, or a wrapped list. Each item decoded as
 * a document; the caller matches them to the files.
 */
export function decodeUploadResponse(body: unknown, ctx: DecodeContext): DocumentRecord[] {
  const items = findListArray(body);
  if (items !== undefined) return items.map((item) => decodeDocument(item, ctx));
  return [decodeDocument(body, ctx)];
}

/**
 * The human message of an error body, from the first of: `error.message`, `message`,
 * `detail`, `error` (string), `errors[0].message`, `title`. HTML pages give their title or
 * first text; plain text is used as is. Single line, truncated.
 */
export function errorMessageFromBody(body: string, contentType?: string): string | undefined {
  const text = body.trim();
  if (text === '') return undefined;
  const ct = (contentType ?? '').toLowerCase();
  if (ct.includes('json') || text.startsWith('{') || text.startsWith('[')) {
    try {
      const msg = errorMessageFromJson(JSON.parse(text));
      if (msg !== undefined) return preview(msg, 300);
    } catch {
      // Not JSON after all: fall through to text.
    }
  }
  if (ct.includes('html') || /^<(!doctype|html|head|body)/i.test(text)) return htmlSummary(text);
  if (text.startsWith('{') || text.startsWith('[')) return preview(text, 200);
  return preview(text, 300);
}

export function errorMessageFromJson(value: unknown): string | undefined {
  if (typeof value === 'string') return value.trim() || undefined;
  if (!isObject(value)) return undefined;
  const err = value.error;
  if (isObject(err)) {
    const m = firstNonEmpty(err.message, err.detail, err.description);
    if (m !== undefined) return m;
  }
  const direct = firstNonEmpty(value.message, detailText(value.detail), typeof err === 'string' ? err : undefined);
  if (direct !== undefined) return direct;
  if (Array.isArray(value.errors) && value.errors.length > 0) {
    const first: unknown = value.errors[0];
    const m = typeof first === 'string' ? first : isObject(first) ? firstNonEmpty(first.message, first.msg, first.detail, first.title) : undefined;
    if (m !== undefined) return m;
  }
  return firstNonEmpty(value.title, value.error_description, value.description);
}

/** `detail` is a string in most services; FastAPI-style validation gives [{loc, msg}]. */
function detailText(v: unknown): string | undefined {
  if (typeof v === 'string') return v;
  if (Array.isArray(v)) {
    const parts = v
      .map((d) => (isObject(d) ? firstNonEmpty(d.msg, d.message) : typeof d === 'string' ? d : undefined))
      .filter((s): s is string => s !== undefined);
    return parts.length > 0 ? parts.join('; ') : undefined;
  }
  return undefined;
}

function firstNonEmpty(...values: unknown[]): string | undefined {
  for (const v of values) if (typeof v === 'string' && v.trim() !== '') return v.trim();
  return undefined;
}

function htmlSummary(html: string): string | undefined {
  const title = /<title[^>]*>([\s\S]*?)<\/title>/i.exec(html)?.[1];
  const h1 = /<h1[^>]*>([\s\S]*?)<\/h1>/i.exec(html)?.[1];
  const pick = [title, h1].map((s) => (s === undefined ? '' : stripTags(s))).find((s) => s !== '');
  if (pick) return preview(pick, 150);
  const body = stripTags(html.replace(/<(script|style)[\s\S]*?<\/\1>/gi, ' '));
  return body ? preview(body, 150) : undefined;
}

function stripTags(s: string): string {
  return s
    .replace(/<[^>]*>/g, ' ')
    .replace(/&nbsp;/g, ' ')
    .replace(/&amp;/g, '&')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/\s+/g, ' ')
    .trim();
}

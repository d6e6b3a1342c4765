/**
 * What the administration commands print: aligned tables for lists, `key: value`
 * summaries for one record, and with --json the normalised records (DESIGN §6).
 * Pure formatting: functions return strings; the caller writes them to stdout.
 */
import type { ChunkRecord, DataSourceRecord, DocumentRecord, JsonObject } from '../api/records.js';
import { ingestionStatus } from '../api/ingestion-status.js';
import { printable } from '../printable.js';

/** The ellipsis that marks a value cut short in a table. */
export const ELLIPSIS = '…';

export interface Column<T> {
  header: string;
  value: (row: T) => string;
  /** Longest value shown; longer ones are cut and end with an ellipsis. */
  max?: number;
}

/** Shortens to at most `max` characters (counted as code points), marking the cut. */
export function truncate(text: string, max: number): string {
  const chars = Array.from(text);
  if (chars.length <= max) return text;
  if (max <= 1) return ELLIPSIS.slice(0, max);
  return chars.slice(0, max - 1).join('') + ELLIPSIS;
}

/** One line of a table cell: newlines and tabs would break the alignment; control characters are escaped. */
function oneLine(text: string): string {
  return printable(text.replace(/\s+/g, ' ').trim());
}

function width(text: string): number {
  return Array.from(text).length;
}

export interface TableOptions {
  /** --wide: values in full, never cut. */
  wide?: boolean | undefined;
}

/**
 * An aligned table with a header row; `empty` is printed instead when there are no rows.
 * The last column is not padded, so lines carry no trailing spaces.
 */
export function formatTable<T>(rows: readonly T[], columns: readonly Column<T>[], empty: string, opts: TableOptions = {}): string {
  if (rows.length === 0) return `${empty}\n`;
  const cells = rows.map((row) =>
    columns.map((c) => {
      const v = oneLine(c.value(row));
      return c.max === undefined || opts.wide ? v : truncate(v, c.max);
    }),
  );
  const widths = columns.map((c, i) => Math.max(width(c.header), ...cells.map((r) => width(r[i] ?? ''))));
  const line = (values: readonly string[]): string =>
    values
      .map((v, i) => (i === values.length - 1 ? v : v + ' '.repeat((widths[i] ?? 0) - width(v))))
      .join('  ')
      .trimEnd();
  return [line(columns.map((c) => c.header)), ...cells.map(line)].join('\n') + '\n';
}

/** `key: value` lines with the values aligned; multi-line values are indented under them. */
export function formatSummary(pairs: ReadonlyArray<readonly [string, string]>): string {
  const keyWidth = Math.max(0, ...pairs.map(([k]) => width(k) + 1));
  return (
    pairs
      .map(([k, v]) => {
        const label = `${k}:`.padEnd(keyWidth + 1);
        // Each line made printable; the breaks of a multi-line value (JSON metadata) kept.
        const [first = '', ...rest] = v.split('\n').map((l) => printable(l));
        return [label + first, ...rest.map((l) => ' '.repeat(keyWidth + 1) + l)].join('\n').trimEnd();
      })
      .join('\n') + '\n'
  );
}

/** Values of the service's own record that the summary shows as they are. */
function describeValue(value: unknown): string {
  if (value === null || value === undefined) return '-';
  if (typeof value === 'string') return value === '' ? '""' : value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return JSON.stringify(value);
}

/**
 * Fields of the raw record that the normalised record did not take over (timestamps,
 * status, sizes...): an operator wants to see them, but the known ones only once.
 */
function otherRawFields(raw: JsonObject, known: ReadonlySet<string>): Array<[string, string]> {
  return Object.entries(raw)
    .filter(([k]) => !known.has(k))
    .map(([k, v]) => [k, truncate(oneLine(describeValue(v)), 200)]);
}

const ID_KEYS = ['id', 'uuid'];
const DATA_SOURCE_KEYS = new Set([...ID_KEYS, 'data_source_id', 'dataSourceId', 'name', 'llm_connector_ids', 'llmConnectorIds']);
const DOCUMENT_KEYS = new Set([...ID_KEYS, 'document_id', 'documentId', 'name', 'url', 'metadata']);
const CHUNK_KEYS = new Set([...ID_KEYS, 'chunk_id', 'chunkId', 'document_id', 'documentId', 'text', 'content', 'index']);

// ---- data sources ------------------------------------------------------------------

export const dataSourceColumns: Column<DataSourceRecord>[] = [
  { header: 'ID', value: (r) => r.id },
  { header: 'NAME', value: (r) => r.name ?? '-', max: 40 },
  { header: 'CONNECTORS', value: (r) => (r.llmConnectorIds?.length ? r.llmConnectorIds.join(', ') : '-'), max: 50 },
];

export function formatDataSources(records: readonly DataSourceRecord[], opts: TableOptions = {}): string {
  return formatTable(records, dataSourceColumns, 'No data sources.', opts);
}

export function formatDataSource(r: DataSourceRecord): string {
  return formatSummary([
    ['id', r.id],
    ['name', oneLine(r.name ?? '-')],
    ['connectors', r.llmConnectorIds?.length ? r.llmConnectorIds.join(', ') : '-'],
    ...otherRawFields(r.raw, DATA_SOURCE_KEYS),
  ]);
}

// ---- documents ---------------------------------------------------------------------

export const documentColumns: Column<DocumentRecord>[] = [
  { header: 'ID', value: (r) => r.id },
  { header: 'NAME', value: (r) => r.name ?? '-', max: 50 },
  { header: 'URL', value: (r) => r.url ?? '-', max: 60 },
];

/** The STATUS column: the service's ingestion status and why it failed, shown when the service gives one. */
const statusColumn: Column<DocumentRecord> = {
  header: 'STATUS',
  value: (r) => {
    const s = ingestionStatus(r);
    return s ? `${s.status}${s.reason ? `: ${s.reason}` : ''}` : '-';
  },
  max: 60,
};

export function formatDocuments(records: readonly DocumentRecord[], opts: TableOptions = {}): string {
  const columns = records.some((r) => ingestionStatus(r) !== undefined) ? [...documentColumns, statusColumn] : documentColumns;
  return formatTable(records, columns, 'No documents.', opts);
}

export function formatDocument(r: DocumentRecord): string {
  const metadata = r.metadata === undefined ? '-' : JSON.stringify(r.metadata, null, 2);
  return formatSummary([
    ['id', r.id],
    ['name', oneLine(r.name ?? '-')],
    ['url', oneLine(r.url ?? '-')],
    ['metadata', metadata],
    ...otherRawFields(r.raw, DOCUMENT_KEYS),
  ]);
}

// ---- chunks ------------------------------------------------------------------------

export const chunkColumns: Column<ChunkRecord>[] = [
  { header: 'ID', value: (r) => r.id },
  { header: 'INDEX', value: (r) => (r.index === undefined ? '-' : String(r.index)) },
  { header: 'TEXT', value: (r) => r.text ?? '-', max: 70 },
];

export function formatChunks(records: readonly ChunkRecord[], opts: TableOptions = {}): string {
  return formatTable(records, chunkColumns, 'No chunks.', opts);
}

/** One chunk: its fields, then its whole text after a blank line (that is what one reads it for). */
export function formatChunk(r: ChunkRecord): string {
  const head = formatSummary([
    ['id', r.id],
    ['document', r.documentId ?? '-'],
    ['index', r.index === undefined ? '-' : String(r.index)],
    ...otherRawFields(r.raw, CHUNK_KEYS),
  ]);
  if (r.text === undefined) return `${head}\n(no text)\n`;
  return `${head}\n${r.text.endsWith('\n') ? r.text : `${r.text}\n`}`;
}

// ---- --json ------------------------------------------------------------------------

type AnyRecord = DataSourceRecord | DocumentRecord | ChunkRecord;

/**
 * The normalised record as printed by --json: `id` first, `raw` last, the known fields
 * in between (absent ones are left out, as in the record).
 */
export function jsonRecord(record: AnyRecord): JsonObject {
  const { id, raw, ...known } = record;
  return { id, ...known, raw };
}

/** Pretty JSON plus a newline, so `jq` and humans both read it. */
export function formatJson(value: unknown): string {
  return `${JSON.stringify(value, null, 2)}\n`;
}

export function formatJsonRecords(records: readonly AnyRecord[]): string {
  return formatJson(records.map(jsonRecord));
}

export function formatJsonRecord(record: AnyRecord): string {
  return formatJson(jsonRecord(record));
}

export function formatJsonDeleted(id: string): string {
  return formatJson({ id, deleted: true });
}

import { describe, expect, it } from 'vitest';
import type { ChunkRecord, DocumentRecord } from '../../../src/api/records.js';
import {
  formatChunk,
  formatDataSource,
  formatDocument,
  formatDocuments,
  formatJsonDeleted,
  formatJsonRecord,
  formatSummary,
  formatTable,
  jsonRecord,
  truncate,
} from '../../../src/cli/output.js';

describe('tables', () => {
  it('aligns columns under their headers, without trailing spaces', () => {
    const text = formatTable(
      [
        { a: 'x', b: 'first' },
        { a: 'longer-id', b: 'second' },
      ],
      [
        { header: 'ID', value: (r) => r.a },
        { header: 'NAME', value: (r) => r.b },
      ],
      'None.',
    );
    expect(text).toBe('ID         NAME\nx          first\nlonger-id  second\n');
  });

  it('cuts long values with an ellipsis and keeps each row on one line', () => {
    const text = formatTable([{ v: 'a\nb\tc ' + 'z'.repeat(50) }], [{ header: 'V', value: (r) => r.v, max: 10 }], '-');
    const row = text.split('\n')[1];
    expect(row).toBe('a b c zzz…');
  });

  it('prints the empty message when there are no rows', () => {
    expect(formatDocuments([])).toBe('No documents.\n');
  });

  it('truncate counts characters, not UTF-16 units', () => {
    expect(truncate('ééééé', 5)).toBe('ééééé');
    expect(truncate('😀😀😀😀', 3)).toBe('😀😀…');
  });
});

describe('summaries', () => {
  it('aligns values and indents continuation lines', () => {
    expect(formatSummary([['id', 'x'], ['metadata', '{\n  "a": 1\n}']])).toBe(
      'id:       x\nmetadata: {\n            "a": 1\n          }\n',
    );
  });

  it('shows a document with its metadata and the service fields it did not map', () => {
    const doc: DocumentRecord = {
      id: 'doc_1',
      name: 'a.txt',
      metadata: { team: 'hr' },
      raw: { document_id: 'doc_1', name: 'a.txt', url: null, metadata: { team: 'hr' }, created_at: '2025-01-01' },
    };
    const text = formatDocument(doc);
    expect(text).toContain('id:         doc_1');
    expect(text).toContain('url:        -');
    expect(text).toContain('"team": "hr"');
    expect(text).toContain('created_at: 2025-01-01');
    expect(text).not.toContain('document_id');
  });

  it('shows a data source with its connectors', () => {
    const text = formatDataSource({ id: 'ds_1', name: 'H', llmConnectorIds: ['c1', 'c2'], raw: { id: 'ds_1' } });
    expect(text).toBe('id:         ds_1\nname:       H\nconnectors: c1, c2\n');
  });

  it('shows a chunk with its whole text', () => {
    const text = 'line one\nline two '.repeat(20);
    const chunk: ChunkRecord = { id: 'c1', documentId: 'doc_1', index: 0, text, raw: { chunk_id: 'c1', text } };
    const out = formatChunk(chunk);
    expect(out).toContain('document: doc_1');
    expect(out).toContain(text);
  });
});

describe('--json', () => {
  it('prints id first and raw last, with the known fields between', () => {
    const doc: DocumentRecord = { raw: { document_id: 'd' }, metadata: {}, name: 'n', id: 'd' };
    expect(Object.keys(jsonRecord(doc))).toEqual(['id', 'metadata', 'name', 'raw']);
    expect(JSON.parse(formatJsonRecord(doc))).toEqual({ id: 'd', name: 'n', metadata: {}, raw: { document_id: 'd' } });
  });

  it('a delete prints the id and deleted: true', () => {
    expect(JSON.parse(formatJsonDeleted('x'))).toEqual({ id: 'x', deleted: true });
  });
});

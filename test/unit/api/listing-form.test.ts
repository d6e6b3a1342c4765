/**
 * The sync form of a listing (issue 16): what the mirror plans from must be the same as
 * with the records as received, only smaller.
 */
import { describe, expect, it } from 'vitest';
import { DOCUMENT_SIZE_KEYS, SyncForm } from '../../../src/api/listing-form.js';
import type { DocumentRecord } from '../../../src/api/records.js';
import { documentSize, planMirror } from '../../../src/engine/plan.js';
import { documentFields } from '../../../src/engine/document-fields.js';
import { newMappingState } from '../../../src/state/validate.js';

const spec = { mappingId: 'docs', installationId: 'inst-1', root: '/srv/share' };

function received(i: number, extra: Record<string, unknown> = {}): DocumentRecord {
  const path = `team/file-${i}.txt`;
  const f = documentFields(spec, { path, size: 100 + i, mtimeMs: 1_700_000_000_000 + i, sha256: String(i).padStart(64, 'a') });
  const raw = {
    document_id: `doc-${i}`,
    data_source_id: 'ds-1',
    name: f.name,
    url: f.url,
    metadata: { ...f.metadata },
    content_type: 'text/plain',
    status: 'ready',
    created_at: '2026-11-24T05:00:00.000Z',
    ...extra,
  };
  return { id: raw.document_id, name: raw.name, url: raw.url, metadata: raw.metadata, raw };
}

describe('SyncForm', () => {
  it('keeps the id, name, url, metadata and the size fields, and drops the rest of the record', () => {
    const form = new SyncForm();
    const a = form.compact(received(1, { size: 101 }));
    expect(a).toEqual({ id: 'doc-1', name: 'team/file-1.txt', url: 'file:///srv/share/team/file-1.txt', metadata: received(1).metadata, raw: { size: 101 } });
    // Every key a service may report the size under survives, in any form the planner reads.
    for (const k of DOCUMENT_SIZE_KEYS) expect(documentSize(form.compact(received(2, { [k]: '102' })))).toBe(102);
    expect(documentSize(form.compact(received(3)))).toBeUndefined();
  });

  it("a metadata value repeated from the previous document is kept as it was (the mapping's, the installation's)", () => {
    const form = new SyncForm();
    const docs = [1, 2, 3].map((i) => form.compact(received(i)));
    for (const d of docs) expect(d.metadata).toMatchObject({ dssync_mapping: 'docs', dssync_installation: 'inst-1', dssync_version: '1' });
    expect(docs.map((d) => d.metadata?.dssync_path)).toEqual(['team/file-1.txt', 'team/file-2.txt', 'team/file-3.txt']);
  });

  it('plans exactly as the records as received do', () => {
    const state = newMappingState('ds-1', spec.root);
    const whole = Array.from({ length: 6 }, (_, i) => received(i, { size: 100 + i }));
    // Someone's unmarked document, and one of another mapping: both left alone alike.
    whole.push({ id: 'doc-x', name: 'notes.txt', raw: { document_id: 'doc-x', name: 'notes.txt', file_size: '7' } });
    const other = received(9);
    whole.push({ ...other, metadata: { ...other.metadata, dssync_mapping: 'other' } });
    const local = new Map(
      [0, 1, 2, 4, 5].map((i) => {
        // file 1 changed, file 3 deleted, file 5 renamed to 7
        const path = i === 5 ? 'team/file-7.txt' : `team/file-${i}.txt`;
        return [path, { path, diskPath: `/srv/share/${path}`, size: 100 + i, mtimeMs: 1_700_000_000_000 + i, sha256: String(i === 1 ? 99 : i).padStart(64, 'a') }];
      }),
    );
    const form = new SyncForm();
    const sync = whole.map((d) => form.compact(d));
    // No installation id: the mapping id alone decides, so an empty state rebuilds from the
    // listing (with one, documents of ours that it never recorded are another writer's).
    const plan = (remote: DocumentRecord[]) => planMirror({ mappingId: 'docs', local, state, remote, desired: (f) => documentFields(spec, f), prune: 'all' });
    const fromWhole = plan(whole);
    const fromSync = plan(sync);
    expect(fromSync.ops.map((o) => ({ ...o, doc: undefined }))).toEqual(fromWhole.ops.map((o) => ({ ...o, doc: undefined })));
    expect(fromSync.ops.map((o) => o.kind).sort()).toEqual(['adopt', 'adopt', 'adopt', 'delete', 'delete', 'rename', 'replace'].sort());
    expect(fromSync.otherOwners).toEqual(fromWhole.otherOwners);
  });
});

/**
 * The owner rule (src/engine/owner.ts) as a table: one row per row of the decision table in
 * docs/reliability.md ("The owner rule"), with the same label and class; the last test
 * fails when the two drift apart.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { DocumentRecord } from '../../../src/api/records.js';
import { documentFields, markUploadName, uploadTag } from '../../../src/engine/document-fields.js';
import type { LeaseView } from '../../../src/engine/lease-view.js';
import { ownerOfListing } from '../../../src/engine/plan.js';
import { FileTable } from '../../../src/state/file-table.js';
import type { FileEntry, Intent } from '../../../src/state/schema.js';

const MAPPING = 'm1';
const ME = 'inst-A';
const RECORDED_SESSION = 'aaaa0001';
const TAG = uploadTag(MAPPING, ME);

function meta(id: string, path: string, o: { installationId?: string | null; mappingId?: string; session?: string; sha256?: string } = {}): DocumentRecord {
  const f = documentFields(
    { mappingId: o.mappingId ?? MAPPING, installationId: o.installationId === null ? undefined : (o.installationId ?? ME), session: o.session, root: '/srv' },
    { path, sha256: o.sha256 ?? 'h1', size: 10, mtimeMs: 1000 },
  );
  return { id, name: f.name, url: f.url, metadata: f.metadata, raw: {} };
}
const bare = (id: string, name: string): DocumentRecord => ({ id, name, raw: { size: 10 } });
const entry = (documentId: string, sha256 = 'h1'): FileEntry => ({ documentId, size: 10, mtimeMs: 1000, sha256, syncedAt: '2026-01-01T00:00:00.000Z' });
const upload = (file: { path: string; documentId?: string; uploadName?: string }): Record<string, Intent> => ({
  i1: { kind: 'upload', id: 'i1', startedAt: '2026-01-01T00:00:00.000Z', files: [{ size: 10, mtimeMs: 1000, sha256: 'h1', ...file }] },
});

interface Row {
  label: string;
  doc: DocumentRecord;
  files?: Record<string, FileEntry>;
  intents?: Record<string, Intent>;
  /** Other documents of the listing (what makes an id a former one). */
  listing?: DocumentRecord[];
  lease?: LeaseView;
  rebuilding?: boolean;
  kind: string;
}

const HELD: LeaseView = { held: true };
const rows: Row[] = [
  { label: 'O1', doc: { id: 'l1', name: '.dssync-lease-m1', metadata: { dssync_lease: MAPPING }, raw: {} }, kind: 'lease' },
  { label: 'O2', doc: meta('d1', 'a.txt'), files: { 'a.txt': entry('d1') }, kind: 'ours' },
  { label: 'O3', doc: bare('d1', 'a.txt'), files: { 'a.txt': entry('d1') }, kind: 'ours' },
  { label: 'O4', doc: meta('d1', 'a.txt', { installationId: 'host-derived-0' }), files: { 'a.txt': entry('d1') }, kind: 'ours' },
  { label: 'O5', doc: meta('x1', 'a.txt', { mappingId: 'other' }), lease: HELD, kind: 'other-mapping' },
  { label: 'O6', doc: meta('x1', 'a.txt', { installationId: 'inst-B' }), lease: HELD, kind: 'other-installation' },
  { label: 'O7', doc: meta('n1', 'b.txt', { session: RECORDED_SESSION }), intents: upload({ path: 'b.txt' }), kind: 'own-write' },
  { label: 'O8', doc: meta('d0', 'a.txt', { session: RECORDED_SESSION, sha256: 'h0' }), files: { 'a.txt': entry('d1') }, kind: 'own-write' },
  { label: 'O9', doc: meta('x1', 'new.txt', { session: 'c1c1c1c1' }), lease: HELD, kind: 'recovered' },
  { label: 'O10', doc: meta('x1', 'new.txt'), lease: HELD, kind: 'recovered' },
  { label: 'O11', doc: meta('x1', 'new.txt', { session: RECORDED_SESSION }), rebuilding: true, kind: 'recovered' },
  { label: 'O12', doc: meta('x2', 'b.txt', { installationId: 'host-derived-0' }), files: { 'a.txt': entry('d1') }, listing: [meta('d1', 'a.txt', { installationId: 'host-derived-0' })], lease: HELD, kind: 'recovered' },
  { label: 'O13', doc: meta('x2', 'b.txt', { installationId: 'host-derived-0' }), files: { 'a.txt': entry('d1') }, listing: [meta('d1', 'a.txt', { installationId: 'host-derived-0' })], kind: 'other-installation' },
  { label: 'O14', doc: meta('x1', 'new.txt', { session: 'c1c1c1c1' }), lease: { held: false, liveSession: 'c1c1c1c1' }, kind: 'same-identity' },
  { label: 'O15', doc: meta('x1', 'new.txt', { session: RECORDED_SESSION }), kind: 'same-identity' },
  { label: 'O16', doc: bare('n1', 'b.txt'), intents: upload({ path: 'b.txt', documentId: 'n1' }), kind: 'open-upload' },
  { label: 'O17', doc: bare('n1', markUploadName('b.txt', `${TAG}${RECORDED_SESSION}00000001`)), intents: upload({ path: 'b.txt', uploadName: markUploadName('b.txt', `${TAG}${RECORDED_SESSION}00000001`) }), kind: 'open-upload' },
  { label: 'O18', doc: bare('n1', markUploadName('b.txt', `${TAG}${RECORDED_SESSION}00000001`)), kind: 'lost-upload' },
  { label: 'O19', doc: bare('n1', markUploadName('b.txt', `${TAG}c1c1c1c100000001`)), lease: HELD, kind: 'lost-upload' },
  { label: 'O20', doc: bare('n1', markUploadName('b.txt', `${TAG}c1c1c1c100000001`)), kind: 'same-identity' },
  { label: 'O23', doc: bare('n1', markUploadName('b.txt', `${uploadTag(MAPPING, 'host-derived-0')}c1c1c1c100000001`)), files: { 'a.txt': entry('d1') }, listing: [meta('d1', 'a.txt', { installationId: 'host-derived-0' })], lease: HELD, kind: 'lost-upload' },
  { label: 'O21', doc: bare('n1', markUploadName('b.txt', '0123456789abcdef')), lease: HELD, kind: 'foreign-upload' },
  { label: 'O22', doc: bare('p1', 'b.txt'), lease: HELD, kind: 'person' },
];

describe('the owner rule, row by row (docs/reliability.md "The owner rule")', () => {
  for (const row of rows) {
    it(`${row.label}: ${row.kind}`, () => {
      const whose = ownerOfListing({
        mappingId: MAPPING,
        installationId: ME,
        state: { files: FileTable.of(row.files ?? {}), intents: row.intents ?? {}, rejected: {}, sessions: { [RECORDED_SESSION]: 1 } },
        remote: [...(row.listing ?? []), row.doc],
        lease: row.lease,
        rebuilding: row.rebuilding,
      });
      expect(whose(row.doc).kind).toBe(row.kind);
    });
  }

  it("O4: a recorded document of a former id is placed where its metadata says, the newest path (a state older than the service; sim seed 9510)", () => {
    const former = 'host-derived-0';
    const doc = meta('d1', 'b.txt', { installationId: former });
    const whose = ownerOfListing({
      mappingId: MAPPING,
      installationId: ME,
      formerInstallationIds: [former],
      state: { files: FileTable.of({ 'sub/a.txt': entry('d1') }), intents: {}, rejected: {}, sessions: { [RECORDED_SESSION]: 1 } },
      remote: [doc],
    });
    expect(whose(doc)).toMatchObject({ kind: 'ours', path: 'b.txt', rewrite: true });
  });

  it("O23 and O21: a mark of a former id's tag (O4) is a lost upload of ours with the lease, nobody's to touch without it (sim seed 4031)", () => {
    const former = 'host-derived-0';
    const doc = bare('n1', markUploadName('b.txt', `${uploadTag(MAPPING, former)}c1c1c1c100000001`));
    const whose = (lease: LeaseView | undefined): string =>
      ownerOfListing({
        mappingId: MAPPING,
        installationId: ME,
        state: { files: FileTable.of({ 'a.txt': entry('d1') }), intents: {}, rejected: {}, sessions: { [RECORDED_SESSION]: 1 } },
        remote: [meta('d1', 'a.txt', { installationId: former }), doc],
        lease,
      })(doc).kind;
    expect(whose(HELD)).toBe('lost-upload');
    expect(whose({ held: false, liveSession: 'c1c1c1c1' })).toBe('foreign-upload');
    expect(whose(undefined)).toBe('foreign-upload');
  });

  it('the documented table has these rows, each with this class', () => {
    const doc = readFileSync(new URL('../../../docs/reliability.md', import.meta.url), 'utf8');
    const section = doc.slice(doc.indexOf('### The owner rule'));
    const documented = [...section.matchAll(/^\| (O\d+) \|(?:[^|]*\|){2} `([a-z-]+)` \|/gm)].map((m) => [m[1], m[2]]);
    expect(documented).toEqual(rows.map((r) => [r.label, r.kind]));
  });
});

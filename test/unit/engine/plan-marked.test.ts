/**
 * Issue 23, defects 4 and 5 in the planner: a marked upload of ours is recognised by the
 * mark and nonce wherever they sit in a name the service rewrote, and one committed after
 * its intent was closed (a late commit) is deleted when its nonce carries our tag; a marked
 * document that is not provably ours is reported and never touched.
 */
import { describe, expect, it } from 'vitest';
import type { DocumentRecord } from '../../../src/api/records.js';
import { documentFields, markUploadName, uploadTag } from '../../../src/engine/document-fields.js';
import { findUploadMark } from '../../../src/engine/upload-mark.js';
import { planMirror, type Op } from '../../../src/engine/plan.js';
import { FileTable } from '../../../src/state/file-table.js';
import type { FileEntry, Intent } from '../../../src/state/schema.js';

const MAPPING = 'm1';
const INSTALLATION = 'inst-7f3a';
const spec = { mappingId: MAPPING, installationId: INSTALLATION, root: '/srv/share' };
const TAG = uploadTag(MAPPING, INSTALLATION);

const local = (path: string, sha256: string, size = 10) => ({ path, diskPath: `/srv/share/${path}`, size, mtimeMs: 1000, sha256 });
const entry = (documentId: string, sha256: string): FileEntry => ({ documentId, sha256, size: 10, mtimeMs: 1000, syncedAt: '2026-01-01T00:00:00.000Z' });
function ours(id: string, path: string, sha256: string): DocumentRecord {
  const f = documentFields(spec, { path, sha256, size: 10, mtimeMs: 1000 });
  return { id, name: f.name, url: f.url, metadata: f.metadata, raw: {} };
}
const unmarked = (id: string, name: string, size = 10): DocumentRecord => ({ id, name, metadata: {}, raw: { size } });

function plan(c: { local: ReturnType<typeof local>[]; files?: Record<string, FileEntry>; intents?: Record<string, Intent>; remote: DocumentRecord[]; prune?: 'ours' | 'all'; installationId?: string }) {
  return planMirror({
    mappingId: MAPPING,
    installationId: 'installationId' in c ? c.installationId : INSTALLATION,
    local: new Map(c.local.map((f) => [f.path, f])),
    state: { files: FileTable.of(c.files ?? {}), intents: c.intents ?? {}, rejected: {} },
    remote: c.remote,
    desired: (f) => documentFields(spec, f),
    prune: c.prune ?? 'ours',
  });
}

const summary = (ops: Op[]): string[] =>
  ops.map((op) => (op.kind === 'delete' ? `delete ${op.documentId} ${op.reason}` : 'documentId' in op ? `${op.kind} ${op.documentId} ${op.path}` : `${op.kind} ${op.path}`)).sort();

describe('marked uploads: recognised by mark and nonce (issue 23, defect 5)', () => {
  it('finds the first mark anywhere in a name, in lower case (a cut shortens only a later one)', () => {
    expect(findUploadMark('a.dssync-upload-00ff.txt')).toBe('00ff');
    expect(findUploadMark('.dssync-upload-BB12.x.dssync-upload-bb1')).toBe('bb12');
    expect(findUploadMark('plain.txt')).toBeUndefined();
  });

  const sent = markUploadName('sub/a\\b c.txt', `${TAG}0a1b2c3d`);
  const openIntent: Record<string, Intent> = {
    i1: { kind: 'upload', id: 'i1', startedAt: 't', files: [{ path: 'sub/a\\b c.txt', size: 10, mtimeMs: 1000, sha256: 'h1', uploadName: sent }], preexisting: [], preexistingFresh: true },
  };
  it.each([
    ['as sent', sent],
    ['a quoted-string reading (backslash dropped)', sent.replace('\\', '')],
    ['base name only', sent.slice(sent.lastIndexOf('/') + 1)],
    ['spaces trimmed and removed', sent.replace(' ', '')],
    ['Unicode normalised (NFD)', `é/${sent}`.normalize('NFD')],
    ['case folded', sent.toUpperCase()],
  ])("a lost answer's document under a name the service rewrote (%s) is the upload's", (_how, name) => {
    const r = plan({ local: [local('sub/a\\b c.txt', 'h1')], intents: openIntent, remote: [unmarked('d7', name, 99)] });
    expect(summary(r.ops)).toEqual(['update-meta d7 sub/a\\b c.txt']);
    expect(r.intentPins).toEqual([{ intentId: 'i1', index: 0, documentId: 'd7' }]);
    expect(r.lostUploads).toEqual([]);
  });

  it('a settled intent whose upload the listing does not show under its mark is reported', () => {
    const r = plan({ local: [local('sub/a\\b c.txt', 'h1')], intents: openIntent, remote: [unmarked('d9', 'renamed-by-the-service.txt')] });
    expect(r.unfoundUploads).toEqual([{ path: 'sub/a\\b c.txt', uploadName: sent }]);
    expect(r.resolvedIntentIds).toEqual(['i1']);
  });
});

describe('marked uploads committed late (issue 23, defect 4)', () => {
  const late = (id: string, name: string, nonce: string) => unmarked(id, markUploadName(name, nonce));

  it("a marked document of ours that no intent names is deleted, the file's own document kept", () => {
    const r = plan({ local: [local('a.txt', 'h1')], files: { 'a.txt': entry('d1', 'h1') }, remote: [ours('d1', 'a.txt', 'h1'), late('d2', 'a.txt', `${TAG}12345678`)] });
    expect(summary(r.ops)).toEqual(['delete d2 lost-upload']);
    expect(r.lostUploads.map((d) => d.id)).toEqual(['d2']);
    expect(r.ops[0]).toMatchObject({ unmarked: true });
  });

  it('even when the file has no other document: deleted, and the file uploaded with its metadata (it has no hash to prove its content)', () => {
    const r = plan({ local: [local('a.txt', 'h1')], remote: [late('d2', 'a.txt', `${TAG}12345678`)] });
    expect(summary(r.ops)).toEqual(['delete d2 lost-upload', 'upload a.txt']);
  });

  it('under a rewritten name, and for a file deleted since: still ours', () => {
    const r = plan({ local: [], remote: [unmarked('d3', `gone.dssync-upload-${TAG}abcdef01.txt`.replace('gone', 'sub gone'))] });
    expect(summary(r.ops)).toEqual(['delete d3 lost-upload']);
  });

  it("a marked document whose nonce is not ours (another installation's upload, an older dssync) is reported and never touched, not even with prune all", () => {
    const other = uploadTag(MAPPING, 'another-installation');
    const remote = [late('d4', 'a.txt', `${other}12345678`), late('d5', 'b.txt', '0123456789ab')];
    for (const prune of ['ours', 'all'] as const) {
      const r = plan({ local: [local('a.txt', 'h1')], files: { 'a.txt': entry('d1', 'h1') }, remote: [ours('d1', 'a.txt', 'h1'), ...remote], prune });
      expect(summary(r.ops)).toEqual([]);
      expect(r.foreignMarked.map((d) => d.id)).toEqual(['d4', 'd5']);
      expect(r.lostUploads).toEqual([]);
    }
  });

  it('without an installation id nothing is provably ours: reported only', () => {
    const r = plan({ local: [], remote: [late('d2', 'a.txt', `${TAG}12345678`)], installationId: undefined });
    expect(r.ops).toEqual([]);
    expect(r.foreignMarked.map((d) => d.id)).toEqual(['d2']);
  });
});

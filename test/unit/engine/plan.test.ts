import { describe, expect, it } from 'vitest';
import { newFilesNeedNoContent, pathsToHash, planMirror, type LocalFileInfo, type Op, type PlanInput } from '../../../src/engine/plan.js';
import { documentFields, markUploadName, uploadTag } from '../../../src/engine/document-fields.js';
import type { DocumentRecord } from '../../../src/api/records.js';
import type { FileEntry, Intent, MappingState } from '../../../src/state/schema.js';
import { FileTable } from '../../../src/state/file-table.js';
import type { ServiceNames } from '../../../src/engine/service-names.js';

const MAPPING = 'm1';
const spec = { mappingId: MAPPING, root: '/srv/share' };

function local(path: string, sha256: string | undefined, size = 10, mtimeMs = 1000): LocalFileInfo {
  return { path, diskPath: `/srv/share/${path}`, size, mtimeMs, sha256 };
}
function entry(documentId: string, sha256: string, size = 10, mtimeMs = 1000): FileEntry {
  return { documentId, sha256, size, mtimeMs, syncedAt: '2026-01-01T00:00:00.000Z' };
}
/** A remote document exactly as dssync would have written it. */
function ours(id: string, path: string, sha256: string, size = 10, mtimeMs = 1000): DocumentRecord {
  const f = documentFields(spec, { path, sha256, size, mtimeMs });
  return { id, name: f.name, url: f.url, metadata: f.metadata, raw: {} };
}
/** A document without dssync metadata; `size` as the service reports it (absent: it says nothing). */
function unmarked(id: string, name: string, size?: number): DocumentRecord {
  return { id, name, metadata: {}, raw: size === undefined ? {} : { size } };
}

interface Case {
  local?: LocalFileInfo[];
  files?: Record<string, FileEntry>;
  intents?: Record<string, Intent>;
  rejected?: MappingState['rejected'];
  remote?: DocumentRecord[] | undefined;
  scope?: string[];
  prune?: 'ours' | 'all';
  untouchable?: string[];
  /** Of the untouchable paths, those excluded by a setting (maxFileBytes). */
  excluded?: string[];
  /** What the service was seen to do to names. */
  serviceNames?: ServiceNames;
  /** Files without an entry come unhashed (PlanInput.newFilesUnhashed). */
  unhashed?: boolean;
}

function plan(c: Case) {
  const input: PlanInput = {
    mappingId: MAPPING,
    local: new Map((c.local ?? []).map((f) => [f.path, f])),
    state: { files: FileTable.of(c.files ?? {}), intents: c.intents ?? {}, rejected: c.rejected ?? {} },
    remote: 'remote' in c ? c.remote : [],
    scope: c.scope ? new Set(c.scope) : undefined,
    desired: (f) => documentFields(spec, f),
    prune: c.prune ?? 'ours',
    untouchable: c.untouchable ? (p) => c.untouchable!.includes(p) : undefined,
    excluded: c.excluded ? (p) => c.excluded!.includes(p) : undefined,
    serviceNames: c.serviceNames,
    newFilesUnhashed: c.unhashed,
  };
  return planMirror(input);
}

/** A compact, order-independent description of the ops. */
function summary(ops: Op[]): string[] {
  return ops
    .map((op) => {
      switch (op.kind) {
        case 'upload':
          return `upload ${op.path}`;
        case 'replace':
          return `replace ${op.path} (old ${op.oldDocumentIds.join(',')})`;
        case 'rename':
          return `rename ${op.documentId} ${op.from} -> ${op.path}`;
        case 'update-meta':
          return `update-meta ${op.documentId} ${op.path}`;
        case 'delete':
          return `delete ${op.documentId} ${op.path} (${op.reason})`;
        case 'adopt':
          return `adopt ${op.documentId} ${op.path}`;
        case 'forget':
          return `forget ${op.path}`;
      }
    })
    .sort();
}

describe('planMirror', () => {
  const cases: [string, Case, string[]][] = [
    ['a new file is uploaded', { local: [local('a.txt', 'h1')] }, ['upload a.txt']],
    [
      'an unchanged file needs nothing',
      { local: [local('a.txt', undefined)], files: { 'a.txt': entry('d1', 'h1') }, remote: [ours('d1', 'a.txt', 'h1')] },
      [],
    ],
    [
      'a changed file is replaced: upload the new version, delete the old',
      { local: [local('a.txt', 'h2', 11, 2000)], files: { 'a.txt': entry('d1', 'h1') }, remote: [ours('d1', 'a.txt', 'h1')] },
      ['replace a.txt (old d1)'],
    ],
    [
      'a touched file with the same content: no operation (the entry is refreshed, see below)',
      { local: [local('a.txt', 'h1', 10, 5000)], files: { 'a.txt': entry('d1', 'h1') }, remote: [ours('d1', 'a.txt', 'h1')] },
      [],
    ],
    [
      'a deleted file has its document deleted',
      { files: { 'a.txt': entry('d1', 'h1') }, remote: [ours('d1', 'a.txt', 'h1')] },
      ['delete d1 a.txt (deleted-locally)'],
    ],
    [
      'a renamed file keeps its document (update, no upload)',
      { local: [local('b.txt', 'h1')], files: { 'a.txt': entry('d1', 'h1') }, remote: [ours('d1', 'a.txt', 'h1')] },
      ['rename d1 a.txt -> b.txt'],
    ],
    [
      'a rename to a path sorting before the old one is still a rename',
      { local: [local('0.txt', 'h1')], files: { 'z.txt': entry('d1', 'h1') }, remote: [ours('d1', 'z.txt', 'h1')] },
      ['rename d1 z.txt -> 0.txt'],
    ],
    [
      'a directory move renames every file',
      {
        local: [local('new/a.txt', 'h1'), local('new/sub/b.txt', 'h2')],
        files: { 'old/a.txt': entry('d1', 'h1'), 'old/sub/b.txt': entry('d2', 'h2') },
        remote: [ours('d1', 'old/a.txt', 'h1'), ours('d2', 'old/sub/b.txt', 'h2')],
      },
      ['rename d1 old/a.txt -> new/a.txt', 'rename d2 old/sub/b.txt -> new/sub/b.txt'],
    ],
    [
      'a rename plus an edit is an upload and a delete (content decides)',
      { local: [local('b.txt', 'h2')], files: { 'a.txt': entry('d1', 'h1') }, remote: [ours('d1', 'a.txt', 'h1')] },
      ['delete d1 a.txt (deleted-locally)', 'upload b.txt'],
    ],
    [
      'two new files with the same content are two documents',
      { local: [local('a.txt', 'h1'), local('b.txt', 'h1')] },
      ['upload a.txt', 'upload b.txt'],
    ],
    [
      'a copy of a renamed file: one rename, one upload',
      {
        local: [local('b.txt', 'h1'), local('c.txt', 'h1')],
        files: { 'a.txt': entry('d1', 'h1') },
        remote: [ours('d1', 'a.txt', 'h1')],
      },
      ['rename d1 a.txt -> b.txt', 'upload c.txt'],
    ],
    [
      'a copy of an existing file is uploaded, the original untouched',
      {
        local: [local('a.txt', undefined), local('b.txt', 'h1')],
        files: { 'a.txt': entry('d1', 'h1') },
        remote: [ours('d1', 'a.txt', 'h1')],
      },
      ['upload b.txt'],
    ],
    [
      'a file moved over another one: rename, and the overwritten version goes',
      {
        local: [local('b.txt', 'h1')],
        files: { 'a.txt': entry('d1', 'h1'), 'b.txt': entry('d2', 'h2') },
        remote: [ours('d1', 'a.txt', 'h1'), ours('d2', 'b.txt', 'h2')],
      },
      ['delete d2 b.txt (stale-version)', 'rename d1 a.txt -> b.txt'],
    ],
    [
      'a document deleted remotely by someone else is uploaded again',
      { local: [local('a.txt', undefined)], files: { 'a.txt': entry('d1', 'h1') }, remote: [] },
      ['upload a.txt'],
    ],
    [
      'a document whose name was changed remotely gets its fields back',
      {
        local: [local('a.txt', undefined)],
        files: { 'a.txt': entry('d1', 'h1') },
        remote: [{ ...ours('d1', 'a.txt', 'h1'), name: 'renamed by someone' }],
      },
      ['update-meta d1 a.txt'],
    ],
    [
      'a document whose dssync metadata was stripped remotely is recognised by the state and repaired',
      { local: [local('a.txt', undefined)], files: { 'a.txt': entry('d1', 'h1') }, remote: [unmarked('d1', 'a.txt')] },
      ['update-meta d1 a.txt'],
    ],
    [
      'lost state: documents are adopted from their metadata, nothing uploaded',
      { local: [local('a.txt', 'h1'), local('b.txt', 'h2')], remote: [ours('d1', 'a.txt', 'h1'), ours('d2', 'b.txt', 'h2')] },
      ['adopt d1 a.txt', 'adopt d2 b.txt'],
    ],
    [
      'lost state and a file changed meanwhile: replace',
      { local: [local('a.txt', 'h9')], remote: [ours('d1', 'a.txt', 'h1')] },
      ['replace a.txt (old d1)'],
    ],
    [
      'duplicates of one file are reduced to one (the state’s choice kept)',
      {
        local: [local('a.txt', undefined)],
        files: { 'a.txt': entry('d2', 'h1') },
        remote: [ours('d1', 'a.txt', 'h1'), ours('d2', 'a.txt', 'h1')],
      },
      ['delete d1 a.txt (duplicate)'],
    ],
    [
      'a crash in the middle of a replace: the new version is kept, the old deleted',
      {
        local: [local('a.txt', 'h2', 11, 2000)],
        files: { 'a.txt': entry('d1', 'h1') },
        remote: [ours('d1', 'a.txt', 'h1'), ours('d2', 'a.txt', 'h2', 11, 2000)],
      },
      ['adopt d2 a.txt', 'delete d1 a.txt (stale-version)'],
    ],
    [
      'a crash after a rename landed but before the state was written',
      { local: [local('b.txt', 'h1')], files: { 'a.txt': entry('d1', 'h1') }, remote: [ours('d1', 'b.txt', 'h1')] },
      ['adopt d1 b.txt', 'forget a.txt'],
    ],
    [
      'an upload whose answer was lost: the unmarked document is adopted through the intent',
      {
        local: [local('dir/a.txt', 'h1')],
        intents: { i1: { kind: 'upload', id: 'i1', startedAt: 't', files: [{ path: 'dir/a.txt', size: 10, mtimeMs: 1000, sha256: 'h1' }], preexisting: [], preexistingFresh: true } },
        remote: [unmarked('d7', 'dir/a.txt', 10)],
      },
      ['update-meta d7 dir/a.txt'],
    ],
    [
      'defect 1: an unmarked document with only the base name of an open intent is not ours (left alone)',
      {
        local: [local('dir/a.txt', 'h1')],
        intents: { i1: { kind: 'upload', id: 'i1', startedAt: 't', files: [{ path: 'dir/a.txt', size: 10, mtimeMs: 1000, sha256: 'h1' }], preexisting: [], preexistingFresh: true } },
        remote: [unmarked('d7', 'a.txt', 10)],
      },
      ['upload dir/a.txt'],
    ],
    [
      'defect 1: same full name as an open intent but another size: a person\'s document, left alone even when the file changed',
      {
        local: [local('sub/report.txt', 'h2', 12, 2000)],
        intents: { i1: { kind: 'upload', id: 'i1', startedAt: 't', files: [{ path: 'sub/report.txt', size: 10, mtimeMs: 1000, sha256: 'h1' }], preexisting: [], preexistingFresh: true } },
        remote: [unmarked('x1', 'sub/report.txt', 11)],
      },
      ['upload sub/report.txt'],
    ],
    [
      'defect 1: a service that reports no size gives no evidence: the unmarked document is left alone',
      {
        local: [local('a.txt', 'h1')],
        intents: { i1: { kind: 'upload', id: 'i1', startedAt: 't', files: [{ path: 'a.txt', size: 10, mtimeMs: 1000, sha256: 'h1' }], preexisting: [], preexistingFresh: true } },
        remote: [unmarked('x1', 'a.txt')],
      },
      ['upload a.txt'],
    ],
    [
      'defect 1: a file deleted while its intent is open: only the document of our name and size is deleted',
      {
        intents: { i1: { kind: 'upload', id: 'i1', startedAt: 't', files: [{ path: 'sub/report.txt', size: 10, mtimeMs: 1000, sha256: 'h1' }], preexisting: [], preexistingFresh: true } },
        remote: [unmarked('x1', 'report.txt', 10), unmarked('x2', 'sub/report.txt', 99), unmarked('d7', 'sub/report.txt', 10)],
        prune: 'ours',
      },
      ['delete d7 sub/report.txt (deleted-locally)'],
    ],
    [
      'an upload sent twice, both answers lost: one kept, the other deleted',
      {
        local: [local('a.txt', 'h1')],
        intents: {
          i1: { kind: 'upload', id: 'i1', startedAt: 't1', files: [{ path: 'a.txt', size: 10, mtimeMs: 1000, sha256: 'h1' }], preexisting: [], preexistingFresh: true },
          i2: { kind: 'upload', id: 'i2', startedAt: 't2', files: [{ path: 'a.txt', size: 10, mtimeMs: 1000, sha256: 'h1' }], preexisting: [], preexistingFresh: true },
        },
        remote: [unmarked('d7', 'a.txt', 10), unmarked('d8', 'a.txt', 10)],
      },
      ['delete d8 a.txt (duplicate)', 'update-meta d7 a.txt'],
    ],
    [
      'a lost answer and two documents of its name and size: one request makes one, so one is someone else\'s; neither is taken',
      {
        local: [local('a.txt', 'h1')],
        intents: { i1: { kind: 'upload', id: 'i1', startedAt: 't', files: [{ path: 'a.txt', size: 10, mtimeMs: 1000, sha256: 'h1' }], preexisting: [], preexistingFresh: true } },
        remote: [unmarked('d7', 'a.txt', 10), unmarked('p1', 'a.txt', 10)],
      },
      ['upload a.txt'],
    ],
    [
      'the upload answer named its document: a person\'s document of the same full name and size is not ours (sim, seed 42)',
      {
        local: [local('sub/c.txt', 'h1')],
        intents: { i1: { kind: 'upload', id: 'i1', startedAt: 't', files: [{ path: 'sub/c.txt', size: 10, mtimeMs: 1000, sha256: 'h1', documentId: 'd7' }], preexisting: [], preexistingFresh: true } },
        remote: [unmarked('p1', 'sub/c.txt', 10), unmarked('d7', 'sub/c.txt', 10)],
        prune: 'ours',
      },
      ['update-meta d7 sub/c.txt'],
    ],
    [
      'the upload answer named its document: ours by id even when someone renamed it; the file deleted since: deleted',
      {
        intents: { i1: { kind: 'upload', id: 'i1', startedAt: 't', files: [{ path: 'a.txt', size: 10, mtimeMs: 1000, sha256: 'h1', documentId: 'd7' }], preexisting: [], preexistingFresh: true } },
        remote: [unmarked('d7', 'renamed by someone.txt', 10), unmarked('p1', 'a.txt', 10)],
      },
      ['delete d7 a.txt (deleted-locally)'],
    ],
    [
      'seed 9604: a lost answer whose document is found by its metadata under the name the service gave it: a person\'s document of the file\'s name and size is left alone',
      {
        local: [local('sub/a.txt', 'h1')],
        files: { 'sub/a.txt': entry('d3', 'h1') },
        intents: { i1: { kind: 'upload', id: 'i1', startedAt: 't', files: [{ path: 'sub/a.txt', size: 10, mtimeMs: 1000, sha256: 'h1', replacesDocumentId: 'd3' }], preexisting: [], preexistingFresh: true } },
        remote: [{ ...ours('d5', 'sub/a.txt', 'h1'), name: 'sub/a.txt (1)' }, unmarked('p1', 'sub/a.txt', 10)],
      },
      ['update-meta d5 sub/a.txt'],
    ],
    [
      'a lost answer on a service that appends " (1)": the document under the name it gives is the upload\'s, one under the name sent is a person\'s',
      {
        local: [local('a.txt', 'h1')],
        intents: { i1: { kind: 'upload', id: 'i1', startedAt: 't', files: [{ path: 'a.txt', size: 10, mtimeMs: 1000, sha256: 'h1' }], preexisting: [], preexistingFresh: true } },
        remote: [unmarked('p1', 'a.txt', 10), unmarked('d7', 'a.txt (1)', 10)],
        serviceNames: { renamesIgnored: true, rule: { suffix: ' (1)' } },
      },
      ['update-meta d7 a.txt'],
    ],
    [
      'a lost answer: a document of its name and size that existed before the upload was sent is not its',
      {
        local: [local('a.txt', 'h1')],
        intents: { i1: { kind: 'upload', id: 'i1', startedAt: 't', files: [{ path: 'a.txt', size: 10, mtimeMs: 1000, sha256: 'h1' }], preexisting: ['p1'], preexistingFresh: true } },
        remote: [unmarked('p1', 'a.txt', 10)],
      },
      ['upload a.txt'],
    ],
    [
      'a lost answer: the document that appeared since is its, the one that existed before is not',
      {
        intents: { i1: { kind: 'upload', id: 'i1', startedAt: 't', files: [{ path: 'a.txt', size: 10, mtimeMs: 1000, sha256: 'h1' }], preexisting: ['p1'], preexistingFresh: true } },
        remote: [unmarked('p1', 'a.txt', 10), unmarked('d7', 'a.txt', 10)],
      },
      ['delete d7 a.txt (deleted-locally)'],
    ],
    [
      'an interrupted upload of a file that changed since: the stale upload is replaced',
      {
        local: [local('a.txt', 'h2')],
        intents: { i1: { kind: 'upload', id: 'i1', startedAt: 't', files: [{ path: 'a.txt', size: 10, mtimeMs: 1000, sha256: 'h1' }], preexisting: [], preexistingFresh: true } },
        remote: [unmarked('d7', 'a.txt', 10)],
      },
      ['replace a.txt (old d7)'],
    ],
    [
      'an interrupted upload of a file deleted since: the document is deleted',
      {
        intents: { i1: { kind: 'upload', id: 'i1', startedAt: 't', files: [{ path: 'a.txt', size: 10, mtimeMs: 1000, sha256: 'h1' }], preexisting: [], preexistingFresh: true } },
        remote: [unmarked('d7', 'a.txt', 10)],
      },
      ['delete d7 a.txt (deleted-locally)'],
    ],
    [
      'documents that are not ours are left alone',
      { local: [local('a.txt', 'h1')], remote: [unmarked('x1', 'a.txt'), unmarked('x2', 'manual.pdf')] },
      ['upload a.txt'],
    ],
    [
      'documents of another mapping in the same data source are left alone',
      {
        local: [],
        remote: [{ ...ours('x1', 'a.txt', 'h1'), metadata: { ...ours('x1', 'a.txt', 'h1').metadata, dssync_mapping: 'other' } }],
      },
      [],
    ],
    [
      'prune: all deletes documents that are not ours',
      { local: [local('a.txt', 'h1')], remote: [unmarked('x2', 'manual.pdf')], prune: 'all' },
      ['delete x2 manual.pdf (not-in-folder)', 'upload a.txt'],
    ],
    [
      'a file refused before and unchanged is skipped; its old version stays',
      {
        local: [local('big.pdf', 'h2', 99, 2000)],
        files: { 'big.pdf': entry('d1', 'h1') },
        rejected: { 'big.pdf': { size: 99, mtimeMs: 2000, status: 413, reason: 'too large', at: 't' } },
        remote: [ours('d1', 'big.pdf', 'h1')],
      },
      [],
    ],
    [
      'a file refused before that changed is tried again',
      {
        local: [local('big.pdf', 'h3', 50, 3000)],
        rejected: { 'big.pdf': { size: 99, mtimeMs: 2000, status: 413, reason: 'too large', at: 't' } },
      },
      ['upload big.pdf'],
    ],
    [
      'an untouchable file (unreadable, too large now, being written) keeps its document',
      { files: { 'a.txt': entry('d1', 'h1') }, remote: [ours('d1', 'a.txt', 'h1')], untouchable: ['a.txt'] },
      [],
    ],
    [
      'incremental plan without a listing trusts the state: rename',
      { local: [local('b.txt', 'h1')], files: { 'a.txt': entry('d1', 'h1'), 'c.txt': entry('d3', 'h3') }, remote: undefined, scope: ['a.txt', 'b.txt'] },
      ['rename d1 a.txt -> b.txt'],
    ],
    [
      'incremental plan leaves paths outside its scope alone',
      { local: [local('b.txt', 'h2')], files: { 'a.txt': entry('d1', 'h1') }, remote: undefined, scope: ['b.txt'] },
      ['upload b.txt'],
    ],
    [
      'a path whose file and document are both gone is forgotten',
      { files: { 'a.txt': entry('d1', 'h1') }, remote: [] },
      ['forget a.txt'],
    ],
  ];

  for (const [name, c, expected] of cases) {
    it(name, () => {
      expect(summary(plan(c).ops)).toEqual([...expected].sort());
    });
  }

  it('counts unchanged files and reports skipped rejected ones', () => {
    const r = plan({
      local: [local('a.txt', undefined), local('big.pdf', 'h2', 99, 2000)],
      files: { 'a.txt': entry('d1', 'h1') },
      rejected: { 'big.pdf': { size: 99, mtimeMs: 2000, reason: 'too large', at: 't' } },
      remote: [ours('d1', 'a.txt', 'h1')],
    });
    expect(r.unchanged).toBe(1);
    expect(r.skippedRejected).toEqual(['big.pdf']);
    expect(r.ourDocumentCount).toBe(1);
  });

  it('a lost answer: the one document a listing ties to a file is recorded in its intent (pinned); none when in doubt', () => {
    const intents: Record<string, Intent> = {
      i1: {
        kind: 'upload',
        id: 'i1',
        startedAt: 't',
        files: [
          { path: 'a.txt', size: 10, mtimeMs: 1000, sha256: 'h1' },
          { path: 'b.txt', size: 10, mtimeMs: 1000, sha256: 'h2' },
          { path: 'c.txt', size: 10, mtimeMs: 1000, sha256: 'h3', documentId: 'd9' },
        ],
        preexisting: [],
        preexistingFresh: true,
      },
    };
    const r = plan({
      local: [local('a.txt', 'h1'), local('b.txt', 'h2'), local('c.txt', 'h3')],
      intents,
      remote: [unmarked('d7', 'b.txt', 10), unmarked('d8', 'a.txt', 10), unmarked('p1', 'a.txt', 10), unmarked('d9', 'c.txt', 10)],
    });
    expect(r.intentPins).toEqual([{ intentId: 'i1', index: 1, documentId: 'd7' }]);
    expect(r.doubtful.map((d) => d.id).sort()).toEqual(['d8', 'p1']);
  });

  it('a lost answer of a marked upload: the document of the name it was sent under is ours, whatever its size and the listing; a person\'s of the plain name is foreign', () => {
    const intents: Record<string, Intent> = {
      i1: { kind: 'upload', id: 'i1', startedAt: 't', files: [{ path: 'sub/a.txt', size: 10, mtimeMs: 1000, sha256: 'h1', uploadName: 'sub/a.dssync-upload-0123456789ab.txt' }], preexisting: [] },
    };
    const r = plan({ local: [local('sub/a.txt', 'h1')], intents, remote: [unmarked('p1', 'sub/a.txt', 10), unmarked('d7', 'sub/a.dssync-upload-0123456789ab.txt')] });
    expect(summary(r.ops)).toEqual(['update-meta d7 sub/a.txt']);
    expect(r.intentPins).toEqual([{ intentId: 'i1', index: 0, documentId: 'd7' }]);
    expect(r.doubtful).toEqual([]);
  });

  it("a lost answer of an upload sent without a listing of its own pass: a document of the file's name and size is doubtful, never claimed (SIM_PERSON_RACES_UPLOAD)", () => {
    // The intent's "before" is the last full listing's, older than the upload's pass (an
    // incremental pass): a person may have uploaded p1 since, so it may not be ours.
    const intents: Record<string, Intent> = { i1: { kind: 'upload', id: 'i1', startedAt: 't', files: [{ path: 'a.txt', size: 10, mtimeMs: 1000, sha256: 'h1' }], preexisting: [] } };
    const r = plan({ local: [local('a.txt', 'h1')], intents, remote: [unmarked('p1', 'a.txt', 10)] });
    expect(summary(r.ops)).toEqual(['upload a.txt']);
    expect(r.intentPins).toEqual([]);
    expect(r.doubtful.map((d) => d.id)).toEqual(['p1']);
    // The same with a "before" of its own pass: p1 appeared since, so it is the upload's.
    const fresh: Record<string, Intent> = { i1: { ...intents['i1']!, preexistingFresh: true } as Intent };
    expect(summary(plan({ local: [local('a.txt', 'h1')], intents: fresh, remote: [unmarked('p1', 'a.txt', 10)] }).ops)).toEqual(['update-meta p1 a.txt']);
  });

  it("an upload sent unmarked whose answer a document of ours shows (the state rolled back past it): a person's document of the same name and size is never taken for it (the simulation, seed 4021)", () => {
    // The state came back from a damaged journal as it was before the answer: the intent open,
    // the old (marked) document recorded. d5 carries our metadata, name, size and content: the answer.
    const intents: Record<string, Intent> = {
      i1: { kind: 'upload', id: 'i1', startedAt: 't', files: [{ path: 'other/e.txt', size: 10, mtimeMs: 1000, sha256: 'h1', replacesDocumentId: 'd3' }], preexisting: [], preexistingFresh: true },
    };
    const d5 = { ...ours('d5', 'other/e.txt', 'h1'), raw: { size: 10 } };
    const r = plan({ local: [local('other/e.txt', 'h1')], files: { 'other/e.txt': entry('d3', 'h1') }, intents, remote: [d5, unmarked('p6', 'other/e.txt', 10)] });
    expect(summary(r.ops).filter((o) => o.includes('p6'))).toEqual([]);
    expect(r.intentPins).toEqual([{ intentId: 'i1', index: 0, documentId: 'd5' }]);
    expect(r.doubtful.map((d) => d.id)).toEqual(['p6']);
  });

  it("a request one of whose documents is listed marked lost no answer: a person's document of another of its files' name and size is never taken for it (the simulation, seed 20219)", () => {
    // Renames ignored: both files sent unmarked in one request. The state came back from a
    // damaged journal with the intent open; keep.txt's answer d5 is listed marked, a.txt's
    // was deleted by a person, and p6 is a person's a.txt of the same size.
    const sent = [local('a.txt', 'h1'), local('keep.txt', 'h2')].map(({ path, size, mtimeMs, sha256 }) => ({ path, size, mtimeMs, sha256: sha256! }));
    const intents: Record<string, Intent> = { i1: { kind: 'upload', id: 'i1', startedAt: 't', files: sent, preexisting: [], preexistingFresh: true } };
    const d5 = { ...ours('d5', 'keep.txt', 'h2'), raw: { size: 10 } };
    const r = plan({ local: [local('a.txt', 'h1'), local('keep.txt', 'h2')], intents, remote: [d5, unmarked('p6', 'a.txt', 10)] });
    expect(summary(r.ops).filter((o) => !o.includes('keep.txt'))).toEqual(['upload a.txt']);
    expect(r.doubtful.map((d) => d.id)).toEqual(['p6']);
    expect(r.intentPins).toEqual([{ intentId: 'i1', index: 1, documentId: 'd5' }]);
    // Without keep.txt's marked document nothing says the answer came: p6 appeared since the
    // upload's own listing, so it is a.txt's lost answer.
    expect(summary(plan({ local: [local('a.txt', 'h1'), local('keep.txt', 'h2')], intents, remote: [unmarked('p6', 'a.txt', 10)] }).ops)).toContain('update-meta p6 a.txt');
  });

  it('a file excluded by a setting (maxFileBytes): what its open intent uploaded is deleted and the intent resolves; its marked document stays (the simulation, seed 7)', () => {
    const intents: Record<string, Intent> = {
      i1: { kind: 'upload', id: 'i1', startedAt: 't', files: [{ path: 'a.txt', size: 1, mtimeMs: 1000, sha256: 'h2', documentId: 'd7' }, { path: 'b.txt', size: 1, mtimeMs: 1000, sha256: 'h3' }], preexisting: [], preexistingFresh: true },
    };
    const c = {
      files: { 'a.txt': entry('d1', 'h1') },
      intents,
      remote: [ours('d1', 'a.txt', 'h1'), unmarked('d7', 'a.txt', 1), unmarked('d8', 'b.txt', 1)],
      untouchable: ['a.txt', 'b.txt'],
    };
    const excluded = plan({ ...c, excluded: ['a.txt', 'b.txt'] });
    expect(summary(excluded.ops)).toEqual(['delete d7 a.txt (excluded)', 'delete d8 b.txt (excluded)']);
    expect(excluded.ops.every((o) => o.kind === 'delete' && o.unmarked)).toBe(true);
    expect(excluded.resolvedIntentIds).toEqual(['i1']);
    // Unreadable or being written (not excluded): the intent waits for the file; of a.txt's
    // two documents the state's stays, the upload its answer named goes (sent again once
    // the file can be read); b.txt's, tied by name and size only, may be a person's: left.
    const waiting = plan(c);
    expect(summary(waiting.ops)).toEqual(['delete d7 a.txt (stale-version)']);
    expect(waiting.resolvedIntentIds).toEqual([]);
  });

  it('a file excluded by a setting keeps one document of ours, its last synced version; another version left by a failed delete goes (the simulation, seed 20261127)', () => {
    const c = { files: { 'b.txt': entry('d2', 'h2') }, remote: [ours('d1', 'b.txt', 'h1'), ours('d2', 'b.txt', 'h2')], untouchable: ['b.txt'] };
    expect(summary(plan({ ...c, excluded: ['b.txt'] }).ops)).toEqual(['delete d1 b.txt (stale-version)']);
  });

  it('a file excluded by a setting whose document of ours the state records nowhere (recovered after a restore) has it recorded, so that its deletion from the folder deletes the document with no full pass (the simulation, seed 2002)', () => {
    const c = { remote: [ours('d1', 'a.txt', 'h1', 1, 500)], untouchable: ['a.txt'], excluded: ['a.txt'] };
    const r = plan(c);
    expect(summary(r.ops)).toEqual(['adopt d1 a.txt']);
    const adopt = r.ops[0] as Extract<Op, { kind: 'adopt' }>;
    // Recorded as the document describes it, with no hash time: it never vouches for the file.
    expect(adopt.file).toMatchObject({ sha256: 'h1', size: 1, mtimeMs: 500 });
    expect(adopt.file.hashedAt).toBeUndefined();
    // The file deleted: the incremental pass (no listing) deletes the recorded document.
    const gone = plan({ files: { 'a.txt': entry('d1', 'h1', 1, 500) }, remote: undefined, scope: ['a.txt'] });
    expect(summary(gone.ops)).toEqual(['delete d1 a.txt (deleted-locally)']);
    // A document the state records at another path is not recorded twice.
    expect(plan({ ...c, files: { 'b.txt': entry('d1', 'h1') } }).ops.filter((o) => o.kind === 'adopt')).toEqual([]);
    // A file waiting to be read (unreadable, being written: not excluded) has it recorded the
    // same way, or its deletion would leave the document until the hourly rescan (seed 9942).
    expect(summary(plan({ ...c, excluded: [] }).ops)).toEqual(['adopt d1 a.txt']);
  });

  it('an unreadable file whose replace a crash cut keeps one document of ours: the older version beside the state\'s goes (the simulation, seed 20261201)', () => {
    const c = { files: { 'b.txt': entry('d2', 'h2') }, remote: [ours('d1', 'b.txt', 'h1'), ours('d2', 'b.txt', 'h2')], untouchable: ['b.txt'] };
    expect(summary(plan(c).ops)).toEqual(['delete d1 b.txt (stale-version)']);
    // Not in an incremental plan (no listing), nor when the state's document is not listed:
    // then that record goes (seed 9304, below), replaced by one of a listed document of ours.
    expect(plan({ ...c, remote: undefined, scope: ['b.txt'] }).ops).toEqual([]);
    expect(summary(plan({ ...c, files: { 'b.txt': entry('d3', 'h3') } }).ops)).toEqual(['adopt d1 b.txt']);
  });

  it('a full pass settles open intents; an incremental one does not', () => {
    const intents: Record<string, Intent> = { i1: { kind: 'upload', id: 'i1', startedAt: 't', files: [{ path: 'a.txt', size: 1, mtimeMs: 1, sha256: 'h1' }] } };
    expect(plan({ intents, remote: [] }).resolvedIntentIds).toEqual(['i1']);
    expect(plan({ intents, remote: undefined }).resolvedIntentIds).toEqual([]);
  });

  it('refuses to plan a changed file without its hash', () => {
    expect(() => plan({ local: [local('a.txt', undefined, 11)], files: { 'a.txt': entry('d1', 'h1') } })).toThrow(/a\.txt needs a content hash/);
  });
});

describe('planMirror: one record per document', () => {
  it('adopting a document at its new path drops its record at a path set aside (a rename whose answer was lost; seed 18, history 3,627)', () => {
    const r = plan({
      local: [local('sub.old/d.txt', 'h1')],
      files: { 'sub/d.txt': entry('d1', 'h1') },
      remote: [ours('d1', 'sub.old/d.txt', 'h1')],
      untouchable: ['sub/d.txt'],
    });
    expect(summary(r.ops).sort()).toEqual(['adopt d1 sub.old/d.txt', 'forget sub/d.txt']);
  });

  it('renaming a document its state records at an older path than the listing shows drops that record (a journal lost after a move; seed 9101, history 9,922)', () => {
    // The state, older than the service, records d1 at sub/d.txt; its metadata names staging/d.txt, whose file moved on.
    const c = { local: [local('staging.old/d.txt', 'h1')], files: { 'sub/d.txt': entry('d1', 'h1') }, remote: [ours('d1', 'staging/d.txt', 'h1')] };
    expect(summary(plan(c).ops)).toEqual(['forget sub/d.txt', 'rename d1 staging/d.txt -> staging.old/d.txt']);
    // Recorded where the listing shows it, the rename moves that record itself: nothing forgotten.
    expect(summary(plan({ ...c, files: { 'staging/d.txt': entry('d1', 'h1') } }).ops)).toEqual(['rename d1 staging/d.txt -> staging.old/d.txt']);
    // Recorded at a path set aside (written anew): the record goes with the document too.
    const aside = { ...c, local: [...c.local, local('sub/d.txt', 'h2', 11, 2000)], untouchable: ['sub/d.txt'] };
    expect(summary(plan(aside).ops)).toEqual(['forget sub/d.txt', 'rename d1 staging/d.txt -> staging.old/d.txt']);
  });

  it('a file set aside whose recorded document the full listing shows nowhere loses that record (seed 9304, history 4,016)', () => {
    // A journal lost after the delete: the state still records churn.txt's deleted document.
    const c = { local: [local('churn.txt', 'h1', 10, 2000)], files: { 'churn.txt': entry('d1', 'h1') }, remote: [], untouchable: ['churn.txt'] };
    expect(summary(plan(c).ops)).toEqual(['forget churn.txt']);
    // Listed (at its path or at another), or an incremental plan: the record stays.
    expect(summary(plan({ ...c, remote: [ours('d1', 'churn.txt', 'h1')] }).ops)).toEqual([]);
    expect(summary(plan({ ...c, local: [...c.local, local('moved.txt', 'h1')], remote: [ours('d1', 'moved.txt', 'h1')] }).ops)).toEqual(['forget churn.txt', 'adopt d1 moved.txt'].sort());
    expect(summary(plan({ ...c, remote: undefined }).ops)).toEqual([]);
    // Excluded (grown past maxFileBytes) too: kept, the record would be taken as synced when
    // the file is included again with that content, and the file never sent (seed 9932).
    expect(summary(plan({ ...c, excluded: ['churn.txt'] }).ops)).toEqual(['forget churn.txt']);
  });

  it('deleting a document whose file is gone drops its record at a path set aside (a state older than the listing; seed 20012, history 1,873)', () => {
    // The state records d1 at b.txt; the listing shows it at a.txt, whose file is gone; b.txt is set aside.
    const c = { local: [local('b.txt', 'h1', 10, 2000)], files: { 'b.txt': entry('d1', 'h1') }, remote: [ours('d1', 'a.txt', 'h1')], untouchable: ['b.txt'] };
    expect(summary(plan(c).ops).sort()).toEqual(['delete d1 a.txt (deleted-locally)', 'forget b.txt']);
    // b.txt judged (not set aside): its own plan decides, nothing forgotten for it here.
    expect(summary(plan({ ...c, untouchable: [] }).ops)).not.toContain('forget b.txt');
  });

  it('a record of the document at a path this plan judges is left to that path (no forget twice)', () => {
    const r = plan({
      local: [local('sub.old/d.txt', 'h1'), local('sub/d.txt', 'h2')],
      files: { 'sub/d.txt': entry('d1', 'h1') },
      remote: [ours('d1', 'sub.old/d.txt', 'h1')],
    });
    expect(summary(r.ops).sort()).toEqual(['adopt d1 sub.old/d.txt', 'upload sub/d.txt']);
  });
});

describe('pathsToHash (quick check)', () => {
  it('hashes only files the state cannot vouch for (racy.ts)', () => {
    const st = (ino: number) => ({ ctimeMs: 1000, dev: 1, ino });
    const hashed = (id: string, sha: string, mtimeMs: number, ino: number): FileEntry => ({ ...entry(id, sha, 10, mtimeMs), ...st(ino), hashedAt: mtimeMs + 60_000 });
    const files = {
      'same.txt': hashed('d1', 'h1', 1000, 1),
      'touched.txt': hashed('d2', 'h2', 1000, 2),
      'racy.txt': { ...entry('d3', 'h3', 10, 1000), ...st(3), hashedAt: 1500 },
      // An older version's entry: no ctime, device or inode (an unknown field never vouches).
      'old.txt': { ...entry('d4', 'h4', 10, 1000), hashedAt: 61_000 },
    };
    const localFiles = new Map([
      ['same.txt', { ...local('same.txt', undefined, 10, 1000), ...st(1) }],
      ['touched.txt', { ...local('touched.txt', undefined, 10, 2000), ...st(2) }],
      ['racy.txt', { ...local('racy.txt', undefined, 10, 1000), ...st(3) }],
      ['old.txt', { ...local('old.txt', undefined, 10, 1000), ...st(4) }],
      ['new.txt', local('new.txt', undefined)],
    ]);
    expect(pathsToHash(localFiles, FileTable.of(files), 120_000).sort()).toEqual(['new.txt', 'old.txt', 'racy.txt', 'touched.txt']);
  });
});

describe('new files planned unhashed: hashed as they are sent (issue 39.1)', () => {
  const lease: DocumentRecord = { id: 'l1', name: '.dssync-lease-m1', metadata: { dssync_lease: 'm1' }, raw: {} };
  const state = (files: Record<string, FileEntry> = {}, intents: Record<string, Intent> = {}) => ({ files: FileTable.of(files), intents });
  const upload: Intent = { kind: 'upload', id: 'i1', startedAt: 't', files: [{ path: 'x.txt', size: 1, mtimeMs: 1, sha256: 'h' }] };

  it('only when nothing their content could be matched with exists', () => {
    expect(newFilesNeedNoContent([], state(), () => 0)).toBe(true);
    // A lease marker is nobody's document; every entry's file found: nothing to rename from.
    expect(newFilesNeedNoContent([lease], state({ 'a.txt': entry('d1', 'h1') }), () => 1)).toBe(true);
    // A document the state does not confirm may be at a new file's path, or held as a duplicate.
    expect(newFilesNeedNoContent([unmarked('p1', 'b.txt')], state(), () => 0)).toBe(false);
    expect(newFilesNeedNoContent([ours('x2', 'b.txt', 'h2')], state(), () => 0)).toBe(false);
    // An open intent's lost upload is recognised by its file's hash.
    expect(newFilesNeedNoContent([], state({}, { i1: upload }), () => 0)).toBe(false);
    // An entry whose file is gone: its document may be renamed onto a new file of its content.
    expect(newFilesNeedNoContent([], state({ 'a.txt': entry('d1', 'h1') }), () => 0)).toBe(false);
  });

  it('each is an upload, its hash left to the send; a refused file as it is stays skipped', () => {
    const p = plan({
      local: [local('new.txt', undefined), local('refused.txt', undefined, 20, 2000), local('a.txt', 'h1')],
      files: { 'a.txt': entry('d1', 'h1') },
      remote: [ours('d1', 'a.txt', 'h1')],
      rejected: { 'refused.txt': { size: 20, mtimeMs: 2000, reason: 'too large', at: 't' } },
      unhashed: true,
    });
    expect(summary(p.ops)).toEqual(['upload new.txt']);
    expect(p.ops[0]).toMatchObject({ kind: 'upload', file: { path: 'new.txt', sha256: undefined } });
    expect(p.skippedRejected).toEqual(['refused.txt']);
    expect(p.unchanged).toBe(1);
  });

  it('an unhashed file the plan cannot place without its content is an error, never a guess', () => {
    expect(() => plan({ local: [local('new.txt', undefined)] })).toThrow(/new\.txt needs a content hash/);
    expect(() => plan({ local: [local('b.txt', undefined)], remote: [ours('x2', 'b.txt', 'h2')], unhashed: true })).toThrow(/b\.txt needs a content hash/);
  });
});

describe('planMirror: a file hashed again and found the same (racy.ts)', () => {
  it('is unchanged, no operation; its entry is refreshed with the new stat and hash time', () => {
    const r = plan({
      local: [{ ...local('a.txt', 'h1', 10, 1000), ctimeMs: 1001, dev: 1, ino: 7, hashedAt: 9000 }, local('b.txt', undefined)],
      files: { 'a.txt': { ...entry('d1', 'h1'), hashedAt: 1200 }, 'b.txt': { ...entry('d2', 'h2'), hashedAt: 9000 } },
      remote: [ours('d1', 'a.txt', 'h1'), ours('d2', 'b.txt', 'h2')],
    });
    expect(r.ops).toEqual([]);
    expect(r.unchanged).toBe(2);
    expect(r.refreshed.map((x) => [x.path, x.documentId, x.file.hashedAt, x.file.ino])).toEqual([['a.txt', 'd1', 9000, 7]]);
  });

  it('found different: replaced (a same-size rewrite whose mtime was put back)', () => {
    const r = plan({
      local: [{ ...local('a.txt', 'h2', 10, 1000), ctimeMs: 5000, hashedAt: 9000 }],
      files: { 'a.txt': { ...entry('d1', 'h1'), ctimeMs: 1000, hashedAt: 60_000 } },
      remote: [ours('d1', 'a.txt', 'h1')],
    });
    expect(summary(r.ops)).toEqual(['replace a.txt (old d1)']);
  });
});

describe('planMirror: what is ours (issue 9, defect 6)', () => {
  const specI = { mappingId: MAPPING, root: '/srv/share', installationId: 'inst-A' };
  /** `installationId` null: written before installation ids existed. */
  function mine(id: string, path: string, sha256: string, installationId: string | null = 'inst-A', mappingId = MAPPING): DocumentRecord {
    const f = documentFields({ ...specI, mappingId, installationId: installationId ?? undefined }, { path, sha256, size: 10, mtimeMs: 1000 });
    return { id, name: f.name, url: f.url, metadata: f.metadata, raw: {} };
  }
  function planI(c: Case) {
    return planMirror({
      mappingId: MAPPING,
      installationId: 'inst-A',
      formerInstallationIds: ['inst-OLD'],
      local: new Map((c.local ?? []).map((f) => [f.path, f])),
      state: { files: FileTable.of(c.files ?? {}), intents: c.intents ?? {}, rejected: c.rejected ?? {} },
      remote: c.remote ?? [],
      desired: (f) => documentFields(specI, f),
      prune: c.prune ?? 'ours',
    });
  }
  const cases: [string, Case, string[], string[]][] = [
    ['a document of this mapping and installation is ours', { files: { 'a.txt': entry('d1', 'h1') }, remote: [mine('d1', 'a.txt', 'h1')] }, ['delete d1 a.txt (deleted-locally)'], []],
    [
      'another installation with the same mapping id: never deleted, even with prune all; reported',
      { remote: [mine('x1', 'a.txt', 'h1', 'inst-B')], prune: 'all' },
      [],
      ['x1'],
    ],
    [
      'another mapping on the same data source: never deleted, even with prune all; reported',
      { remote: [mine('x1', 'a.txt', 'h1', 'inst-A', 'other')], prune: 'all' },
      [],
      ['x1'],
    ],
    [
      'another installation\'s document at the path of our file, other content: ours is uploaded beside it',
      { local: [local('a.txt', 'h2')], remote: [mine('x1', 'a.txt', 'h1', 'inst-B')] },
      ['upload a.txt'],
      ['x1'],
    ],
    [
      'another installation\'s document of the same path and content: the upload is held, not duplicated (a lost state: dssync adopt)',
      { local: [local('a.txt', 'h1'), local('b.txt', 'h2')], remote: [mine('x1', 'a.txt', 'h1', 'inst-B')] },
      ['upload b.txt'],
      ['x1'],
    ],
    [
      'a document the state tracks under a former id of ours (a pin replaced it) is claimed: its metadata is rewritten',
      { local: [local('a.txt', 'h1')], files: { 'a.txt': entry('d1', 'h1') }, remote: [mine('d1', 'a.txt', 'h1', 'inst-OLD')] },
      ['update-meta d1 a.txt'],
      [],
    ],
    [
      'an old-format document (no installation id) the state tracks is claimed: its metadata is rewritten',
      { local: [local('a.txt', 'h1')], files: { 'a.txt': entry('d1', 'h1') }, remote: [mine('d1', 'a.txt', 'h1', null)] },
      ['update-meta d1 a.txt'],
      [],
    ],
    [
      'an old-format document the state does not track is another owner\'s',
      { remote: [mine('x1', 'a.txt', 'h1', null)], prune: 'all' },
      [],
      ['x1'],
    ],
    [
      'a document the state tracks is ours whatever installation id it carries (0.1.0 upgraded under a new host name): its file gone, it is deleted',
      { files: { 'a.txt': entry('x1', 'h1') }, remote: [mine('x1', 'a.txt', 'h1', 'inst-B')] },
      ['delete x1 a.txt (deleted-locally)'],
      [],
    ],
  ];
  for (const [name, c, expected, others] of cases) {
    it(name, () => {
      const p = planI(c);
      expect(summary(p.ops)).toEqual([...expected].sort());
      expect(p.otherOwners.map((o) => o.documentId)).toEqual(others);
    });
  }
  it('the held upload names the other owner', () => {
    const p = planI({ local: [local('a.txt', 'h1')], remote: [mine('x1', 'a.txt', 'h1', 'inst-B')] });
    expect(p.held).toEqual([{ path: 'a.txt', owner: expect.objectContaining({ documentId: 'x1', installationId: 'inst-B' }) }]);
  });
});

describe('planMirror: another writer with our identity (issue 23, defect 2)', () => {
  const specI = { mappingId: MAPPING, root: '/srv/share', installationId: 'inst-A' };
  function ours(id: string, path: string, sha256: string): DocumentRecord {
    const f = documentFields(specI, { path, sha256, size: 10, mtimeMs: 1000 });
    return { id, name: f.name, url: f.url, metadata: f.metadata, raw: {} };
  }
  function planA(c: Case) {
    return planMirror({
      mappingId: MAPPING,
      installationId: 'inst-A',
      local: new Map((c.local ?? []).map((f) => [f.path, f])),
      state: { files: FileTable.of(c.files ?? {}), intents: c.intents ?? {}, rejected: c.rejected ?? {} },
      remote: c.remote ?? [],
      desired: (f) => documentFields(specI, f),
      prune: 'ours',
    });
  }
  const openUpload = (path: string, sha256: string, documentId?: string): Case['intents'] => ({
    i1: { kind: 'upload', id: 'i1', startedAt: '2026-01-01T00:00:00.000Z', files: [{ path, size: 10, mtimeMs: 1000, sha256, ...(documentId ? { documentId } : {}) }] },
  });
  const cases: [string, Case, string[], string[]][] = [
    [
      'a marked document of a path the state does not track: another writer; nothing is written, not even a local deletion',
      { local: [local('b.txt', 'h2')], files: { 'a.txt': entry('d1', 'h1') }, remote: [ours('d1', 'a.txt', 'h1'), ours('x9', 'c.txt', 'h3')] },
      [],
      ['x9'],
    ],
    [
      'a second marked document of the content the state records: another writer',
      { local: [local('a.txt', 'h1')], files: { 'a.txt': entry('d1', 'h1') }, remote: [ours('d1', 'a.txt', 'h1'), ours('x9', 'a.txt', 'h1')] },
      [],
      ['x9'],
    ],
    [
      'a lost state under a pinned id: every marked document is in doubt, nothing is uploaded or deleted',
      { local: [local('a.txt', 'h1')], remote: [ours('x1', 'a.txt', 'h1'), ours('x2', 'gone.txt', 'h2')] },
      [],
      ['x1', 'x2'],
    ],
    [
      'our own upload whose state entry was lost with an open intent (named by the answer): ours',
      { local: [local('a.txt', 'h1')], intents: openUpload('a.txt', 'h1', 'n1'), remote: [ours('n1', 'a.txt', 'h1')] },
      ['adopt n1 a.txt'],
      [],
    ],
    [
      'our own upload marked before the answer was recorded (the intent sent its path): ours',
      { local: [local('a.txt', 'h1')], intents: openUpload('a.txt', 'h1'), remote: [ours('n1', 'a.txt', 'h1')] },
      ['adopt n1 a.txt'],
      [],
    ],
    [
      'an older version of a tracked path whose delete failed (other content): ours, deleted as stale',
      { local: [local('a.txt', 'h2')], files: { 'a.txt': entry('d2', 'h2') }, remote: [ours('d2', 'a.txt', 'h2'), ours('d1', 'a.txt', 'h1')] },
      ['delete d1 a.txt (stale-version)'],
      [],
    ],
  ];
  for (const [name, c, expected, writers] of cases) {
    it(name, () => {
      const p = planA(c);
      expect(summary(p.ops)).toEqual([...expected].sort());
      expect(p.sameIdentity.map((o) => o.documentId)).toEqual(writers);
      if (writers.length > 0) expect(p.resolvedIntentIds).toEqual([]);
    });
  }
  describe('writer sessions: a document of our identity written by a session this state never recorded is a clone\'s', () => {
    const TAG = uploadTag(MAPPING, 'inst-A');
    const sessions = { aaaa0001: 1 };
    function planS(remote: DocumentRecord[], files: Record<string, FileEntry> = {}) {
      return planMirror({
        mappingId: MAPPING,
        installationId: 'inst-A',
        local: new Map([['a.txt', local('a.txt', 'h2')]]),
        state: { files: FileTable.of(files), intents: {}, rejected: {}, sessions },
        remote,
        desired: (f) => documentFields(specI, f),
        prune: 'ours',
      });
    }
    const withSession = (d: DocumentRecord, session: string): DocumentRecord => ({ ...d, metadata: { ...d.metadata, dssync_session: session } });
    const marked = (id: string, nonce: string): DocumentRecord => unmarked(id, markUploadName('b.txt', nonce), 10);

    it('a marked upload of our tag and a recorded session, no intent naming it: our late commit, deleted', () => {
      const p = planS([marked('n1', `${TAG}aaaa0001deadbeef`)]);
      expect(summary(p.ops)).toContain(`delete n1 ${markUploadName('b.txt', `${TAG}aaaa0001deadbeef`)} (lost-upload)`);
      expect(p.sameIdentity).toEqual([]);
    });
    it('a marked upload of our tag and another session (a clone before its metadata): reported, nothing written', () => {
      const p = planS([marked('n1', `${TAG}c1c1c1c1deadbeef`)]);
      expect(p.ops).toEqual([]);
      expect(p.sameIdentity.map((o) => [o.documentId, o.path])).toEqual([['n1', 'b.txt']]);
    });
    it('a marked upload of our tag from before sessions (tag and 8 digits): ours, as before', () => {
      expect(planS([marked('n1', `${TAG}deadbeef`)]).sameIdentity).toEqual([]);
    });
    it('an older version of a tracked path written by a recorded session: ours, deleted as stale', () => {
      const p = planS([withSession(ours('d2', 'a.txt', 'h2'), 'aaaa0001'), withSession(ours('d1', 'a.txt', 'h1'), 'aaaa0001')], { 'a.txt': entry('d2', 'h2') });
      expect(summary(p.ops)).toEqual(['delete d1 a.txt (stale-version)']);
    });
    it('another version of a tracked path written by another session (a clone\'s edit): reported, not deleted', () => {
      const p = planS([withSession(ours('d2', 'a.txt', 'h2'), 'aaaa0001'), withSession(ours('x1', 'a.txt', 'h1'), 'c1c1c1c1')], { 'a.txt': entry('d2', 'h2') });
      expect(p.ops).toEqual([]);
      expect(p.sameIdentity.map((o) => o.documentId)).toEqual(['x1']);
    });
    it('a session of ours that differs from the desired one rewrites nothing (not compared)', () => {
      const p = planS([withSession(ours('d2', 'a.txt', 'h2'), 'aaaa0001')], { 'a.txt': entry('d2', 'h2') });
      expect(summary(p.ops)).toEqual([]);
    });
  });

  it('without an installation id (the mapping id alone decides) a listing rebuilds the state as before', () => {
    const p = planMirror({
      mappingId: MAPPING,
      local: new Map([['a.txt', local('a.txt', 'h1')]]),
      state: { files: FileTable.of({}), intents: {}, rejected: {} },
      remote: [ours('x1', 'a.txt', 'h1')],
      desired: (f) => documentFields(specI, f),
      prune: 'ours',
    });
    expect(p.sameIdentity).toEqual([]);
    expect(summary(p.ops)).toEqual(['adopt x1 a.txt']);
  });
});

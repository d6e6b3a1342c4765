/**
 * File names that the multipart encoding changes (found by the bad-input catalogue: a file
 * named "a%22b.txt" or with a newline in its name made one orphan document per upload,
 * pass after pass). The upload answer and the listing must still be matched to the file.
 */
import { describe, expect, it } from 'vitest';
import { escapeFormName, formNameForms } from '../../../src/api/form-name.js';
import type { DocumentRecord, UploadFile } from '../../../src/api/records.js';
import { matchUploadResults } from '../../../src/api/upload.js';
import { documentFields, documentName } from '../../../src/engine/document-fields.js';
import { executePlan } from '../../../src/engine/executor.js';
import { planMirror } from '../../../src/engine/plan.js';
import { silentLogger } from '../../../src/log.js';
import { FakeApi, apiError } from '../../helpers/fake-api.js';
import { MemoryState } from '../../helpers/memory-state.js';
import { FileTable } from '../../../src/state/file-table.js';
import { neverOpened, onDisk } from '../../helpers/upload-file.js';

const ctx = { method: 'POST', path: '/datastore/v1/data-sources/ds/documents/upload', status: 201 };
const rec = (id: string, name: string): DocumentRecord => ({ id, name, raw: {} });

describe('formNameForms', () => {
  it('names the escaped form and every partly decoded one', () => {
    expect(escapeFormName('a"b\nc\rd.txt')).toBe('a%22b%0Ac%0Dd.txt');
    expect(formNameForms('a%22b.txt')).toEqual(expect.arrayContaining(['a%22b.txt', 'a"b.txt']));
    expect(formNameForms('new\nline.txt')).toEqual(expect.arrayContaining(['new\nline.txt', 'new%0Aline.txt']));
    expect(formNameForms('plain.txt')).toEqual(['plain.txt']);
  });
});

describe('matchUploadResults with names changed in transit', () => {
  it('matches a name the service decoded (%22 -> ") or kept escaped (%0A)', () => {
    const files: UploadFile[] = [
      onDisk('/s/a%22b.txt', 'a%22b.txt'),
      onDisk('/s/new\nline.txt', 'new\nline.txt'),
      onDisk('/s/ok.txt', 'ok.txt'),
    ];
    const recs = [rec('d-ok', 'ok.txt'), rec('d-nl', 'new%0Aline.txt'), rec('d-q', 'a"b.txt')];
    expect(matchUploadResults(files, recs, ctx).map((r) => r.id)).toEqual(['d-q', 'd-nl', 'd-ok']);
  });

  it('one file sent, one document returned: it is that file, whatever its name', () => {
    expect(matchUploadResults([onDisk('/s/x.txt', 'dir/x.txt')], [rec('d-1', 'dir_x.txt')], ctx).map((r) => r.id)).toEqual(['d-1']);
  });
});

describe('planMirror after a lost upload answer', () => {
  it('adopts the unmarked document the service named with the escaped form of the path', () => {
    const path = 'new\nline.txt';
    const plan = planMirror({
      mappingId: 'm1',
      local: new Map([[path, { path, diskPath: `/s/${path}`, size: 3, mtimeMs: 1, sha256: 'h1' }]]),
      state: {
        files: new FileTable(),
        // Sent by a full pass whose listing (before the upload) showed no such document.
        intents: { i1: { kind: 'upload', id: 'i1', startedAt: 't', files: [{ path, size: 3, mtimeMs: 1, sha256: 'h1' }], preexisting: [], preexistingFresh: true } },
        rejected: {},
      },
      remote: [{ ...rec('d-1', 'new%0Aline.txt'), raw: { size: 3 } }],
      desired: (f) => documentFields({ mappingId: 'm1', root: '/s' }, f),
      prune: 'ours',
    });
    expect(plan.ops.map((o) => `${o.kind} ${o.path}`)).toEqual([`update-meta ${path}`]);
  });
});

describe('a file whose name the service refuses (400)', () => {
  it('documentName escapes control characters; the metadata keeps the exact path', () => {
    expect(documentName('a\tb\u0001.txt')).toBe('a%09b%01.txt');
    expect(documentName('Réunion 2026.txt')).toBe('Réunion 2026.txt');
    const f = documentFields({ mappingId: 'm1', root: '/s' }, { path: 'new\nline.txt', size: 1, mtimeMs: 1, sha256: 'h' });
    expect(f.name).toBe('new%0Aline.txt');
    expect(f.metadata.dssync_path).toBe('new\nline.txt');
  });

  it('is isolated from its batch and skipped until it changes; the others are uploaded', async () => {
    const api = new FakeApi();
    api.failBefore = (op, arg) =>
      op === 'uploadDocuments' && (arg as UploadFile[]).some((f) => f.path === 'bad.txt') ? apiError('E_BAD_REQUEST', 400) : undefined;
    const state = new MemoryState();
    const files = ['a.txt', 'bad.txt', 'c.txt', 'd.txt'].map((path, i) => ({ path, diskPath: `/s/${path}`, size: 1, mtimeMs: 1, sha256: `h${i}` }));
    const result = await executePlan(
      files.map((file) => ({ kind: 'upload' as const, path: file.path, file })),
      {
        api,
        state,
        mappingId: 'm1',
        dataSourceId: 'ds1',
        desired: (f) => documentFields({ mappingId: 'm1', root: '/s' }, f),
        batchFiles: 20,
        batchBytes: 1 << 20,
        concurrency: 1,
        now: () => 0,
        logger: silentLogger,
        open: neverOpened,
      },
    );
    expect([...state.m.files.keys()].sort()).toEqual(['a.txt', 'c.txt', 'd.txt']);
    expect(Object.keys(state.m.rejected)).toEqual(['bad.txt']);
    expect(result.rejected.map((r) => [r.path, r.code])).toEqual([['bad.txt', 'E_BAD_REQUEST']]);
    expect(result.failures).toEqual([]);
    expect(state.m.intents).toEqual({});
  });
});

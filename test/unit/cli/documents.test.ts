import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DocumentRecord } from '../../../src/api/records.js';
import {
  checkUploadFiles,
  deleteDocument,
  documentUpdateBody,
  getDocument,
  listDocuments,
  parseMetadata,
  parseUrl,
  updateDocument,
  uploadDocuments,
} from '../../../src/cli/commands/documents.js';
import { CliError, describeFailure, ExitCode } from '../../../src/cli/exit.js';
import { FakeApi, fakeContext } from '../../helpers/fake-api.js';
import { rejectionOf } from '../../helpers/rejection.js';
import { onDisk } from '../../helpers/upload-file.js';

function failure(p: Promise<unknown> | (() => unknown)): Promise<CliError> {
  return rejectionOf(p, CliError);
}

describe('--metadata', () => {
  it('accepts a JSON object', () => {
    expect(parseMetadata('{"team":"hr","n":1}')).toEqual({ team: 'hr', n: 1 });
  });

  it.each([['{team:hr}'], ['[1]'], ['null'], ['"text"'], ['3']])('rejects %s as a usage error naming the option', async (text) => {
    const e = await failure(() => parseMetadata(text));
    expect(describeFailure(e).exitCode).toBe(ExitCode.USAGE);
    expect(e.message).toContain('--metadata');
  });
});

describe('--url', () => {
  it('must be an absolute URL', async () => {
    expect(parseUrl('https://x.example/a b')).toBe('https://x.example/a b');
    const e = await failure(() => parseUrl('handbook.pdf'));
    expect(describeFailure(e).exitCode).toBe(ExitCode.USAGE);
    expect(e.message).toContain('--url "handbook.pdf"');
  });
});

describe('the body of a document update', () => {
  const current: DocumentRecord = {
    id: 'd',
    name: 'old.txt',
    url: 'file:///old.txt',
    metadata: { team: 'a', dssync_path: 'old.txt', dssync_mapping: 'm1' },
    raw: {},
  };

  it('keeps every field not given', () => {
    expect(documentUpdateBody(current, { name: 'new.txt' })).toEqual({
      name: 'new.txt',
      url: 'file:///old.txt',
      metadata: { team: 'a', dssync_path: 'old.txt', dssync_mapping: 'm1' },
    });
  });

  it('replaces the metadata but keeps dssync\'s own keys unless they are given', () => {
    expect(documentUpdateBody(current, { metadata: { owner: 'b' } }).metadata).toEqual({
      owner: 'b',
      dssync_path: 'old.txt',
      dssync_mapping: 'm1',
    });
    expect(documentUpdateBody(current, { metadata: { dssync_path: 'new.txt' } }).metadata).toEqual({
      dssync_path: 'new.txt',
      dssync_mapping: 'm1',
    });
  });

  it('leaves out a field the service holds as null instead of sending null', () => {
    const bare: DocumentRecord = { id: 'd', name: 'x', raw: { name: 'x', url: null, metadata: null } };
    const body = documentUpdateBody(bare, { name: 'y' });
    expect(body).toEqual({ name: 'y' });
    expect(JSON.stringify(body)).not.toContain('null');
  });
});

describe('checking upload files', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'dssync-cli-unit-'));
    await writeFile(join(dir, 'a.txt'), 'hello');
    await mkdir(join(dir, 'sub'));
    await writeFile(join(dir, 'sub', 'a.txt'), 'same name');
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('returns the files with absolute paths, base names, size and mtime', async () => {
    const [f] = await checkUploadFiles([join(dir, 'a.txt')]);
    expect(f).toMatchObject({ path: join(dir, 'a.txt'), name: 'a.txt', expectedSize: 5 });
    expect(typeof f?.expectedMtimeMs).toBe('number');
  });

  it('names every missing file and directory, as a usage error', async () => {
    const e = await failure(checkUploadFiles([join(dir, 'a.txt'), join(dir, 'nope.txt'), join(dir, 'sub')]));
    expect(describeFailure(e).exitCode).toBe(ExitCode.USAGE);
    expect(e.message).toContain(`${join(dir, 'nope.txt')}: no such file`);
    expect(e.message).toContain(`${join(dir, 'sub')}: is a directory`);
    expect(e.message).toContain('Nothing was sent');
  });

  it('refuses two files that would get the same document name', async () => {
    const e = await failure(checkUploadFiles([join(dir, 'a.txt'), join(dir, 'sub', 'a.txt')]));
    expect(describeFailure(e).exitCode).toBe(ExitCode.USAGE);
    expect(e.message).toContain('"a.txt"');
  });
});

describe('document operations', () => {
  function setup() {
    const api = new FakeApi({ dataSources: 'listed' });
    api.addDataSource('ds_1', 'Handbook');
    api.addDocument('ds_1', { id: 'doc_1', name: 'a.txt', url: 'file:///a.txt', metadata: { k: 1 }, raw: { document_id: 'doc_1' } });
    return api;
  }

  it('update reads the document first and sends all its fields', async () => {
    const api = setup();
    const ctx = fakeContext(api, true);
    await updateDocument(ctx, 'ds_1', 'doc_1', { url: 'https://x.example/a' });
    expect(api.ops()).toEqual(['getDocument', 'updateDocument']);
    expect(api.calls[1]?.args[2]).toEqual({ name: 'a.txt', url: 'https://x.example/a', metadata: { k: 1 } });
    expect(JSON.parse(ctx.printed())).toMatchObject({ id: 'doc_1', name: 'a.txt', url: 'https://x.example/a' });
  });

  it('an unknown document is named with its data source, and nothing is written', async () => {
    const api = setup();
    const e = await failure(updateDocument(fakeContext(api), 'ds_1', 'doc_x', { name: 'n' }));
    expect(describeFailure(e).exitCode).toBe(ExitCode.FAILURE);
    expect(e.message).toBe('document doc_x not found in data source ds_1');
    expect(api.ops()).not.toContain('updateDocument');
  });

  it('an unknown data source is named as such', async () => {
    const api = setup();
    expect((await failure(getDocument(fakeContext(api), 'ds_x', 'doc_1'))).message).toBe('data source ds_x not found');
    expect((await failure(listDocuments(fakeContext(api), 'ds_x'))).message).toBe("data source ds_x not found (this takes a data source id; `dssync datasources list` shows each one's id and name)");
  });

  it('delete of an unknown id fails instead of reporting a deletion', async () => {
    const api = setup();
    const e = await failure(deleteDocument(fakeContext(api), 'ds_1', 'doc_x'));
    expect(e.message).toContain('doc_x');
    expect(api.ops()).not.toContain('deleteDocument');
  });

  it('delete with --json prints the id and deleted: true', async () => {
    const api = setup();
    const ctx = fakeContext(api, true);
    await deleteDocument(ctx, 'ds_1', 'doc_1');
    expect(JSON.parse(ctx.printed())).toEqual({ id: 'doc_1', deleted: true });
  });

  it('upload sends all files in one call and lists the new documents', async () => {
    const api = setup();
    const ctx = fakeContext(api);
    await uploadDocuments(ctx, 'ds_1', [
      onDisk('/x/a.txt', 'a.txt'),
      onDisk('/x/b.txt', 'b.txt'),
    ]);
    expect(api.ops()).toEqual(['uploadDocuments']);
    expect(ctx.printed()).toMatch(/^Uploaded 2 documents to data source ds_1\.\nID +NAME +URL\n/);
  });
});

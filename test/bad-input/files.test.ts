/**
 * Bad-input catalogue, file names and contents (F-cases): what people put on a shared
 * drive. Each case adds its file(s) to an already mirrored folder and runs a real full
 * pass against the emulator: the file is mirrored, or skipped or refused with a reason
 * naming it; the other files are mirrored; nothing of the baseline is lost; and a second
 * pass makes no duplicate.
 */
import { execFileSync } from 'node:child_process';
import { copyFile, mkdir, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PassReport } from '../../src/engine/pass-report.js';
import { createWorld, sha, type World } from './world.js';

const FIXTURES = fileURLToPath(new URL('../fixtures/', import.meta.url));

let world: World;
beforeAll(async () => {
  world = await createWorld();
});
afterAll(async () => {
  await world?.close();
});

/** Documents of the data source whose dssync path is `path`. */
function docsOf(path: string) {
  return world.ws.emu.store.listDocuments(world.dataSourceId).filter((d) => d.metadata?.dssync_path === path);
}

/** Runs a pass and a second one; the second must change nothing. Returns the first. */
async function twoPasses(): Promise<PassReport> {
  const first = await world.pass();
  const second = await world.pass();
  const writes = second.counts.uploaded + second.counts.replaced + second.counts.deleted + second.counts.updated + second.counts.renamed;
  expect(writes, `second pass: ${JSON.stringify(second.counts)}`).toBe(0);
  await world.expectNothingLost();
  return first;
}

/** Every document of the data source: id -> its path and content hash. */
function documents(): Map<string, string> {
  return new Map(world.ws.emu.store.listDocuments(world.dataSourceId).map((d) => [d.document_id, `${String(d.metadata?.dssync_path)} ${String(d.metadata?.dssync_sha256)}`]));
}

/** Nothing else affected: every document from before `act` is still there unchanged, and `act` added the documents of `paths` only. */
async function addsOnly(paths: string[], act: () => Promise<unknown>): Promise<void> {
  const before = documents();
  await act();
  const after = documents();
  expect([...before].filter(([id, what]) => after.get(id) !== what).map(([, what]) => what), 'documents changed or deleted').toEqual([]);
  expect([...after].filter(([id]) => !before.has(id)).map(([, what]) => what.split(' ')[0]).sort()).toEqual([...paths].sort());
}

function reasonOf(report: PassReport, path: string): string | undefined {
  return report.skipped.find((s) => s.path === path)?.reason ?? report.failures.find((f) => f.path === path)?.message;
}

describe('bad-input catalogue: file names and contents', () => {
  it('F01 a double quote in the name: mirrored under its name', async () => {
    await world.ws.write('names/say "hello".txt', 'quoted');
    const r = await twoPasses();
    expect(r.ok).toBe(true);
    expect(docsOf('names/say "hello".txt').map((d) => d.name)).toEqual(['names/say "hello".txt']);
  });

  it('F02 a literal "%22" in the name (what the multipart encoding makes of a quote): one document, no orphan', async () => {
    await world.ws.write('names/a%22b.txt', 'percent twenty-two');
    await twoPasses();
    expect(docsOf('names/a%22b.txt')).toHaveLength(1);
    expect(world.ws.emu.store.listDocuments(world.dataSourceId).filter((d) => !d.metadata?.dssync_path)).toEqual([]);
  });

  it('F03 a newline in the name: mirrored, the control character escaped in the document name', async () => {
    await world.ws.write('names/two\nlines.txt', 'newline');
    await twoPasses();
    expect(docsOf('names/two\nlines.txt').map((d) => d.name)).toEqual(['names/two%0Alines.txt']);
  });

  it('F04 a tab in the name (the emulator refuses raw control characters): mirrored, escaped', async () => {
    await world.ws.write('names/tab\there.txt', 'tab');
    await twoPasses();
    expect(docsOf('names/tab\there.txt').map((d) => d.name)).toEqual(['names/tab%09here.txt']);
  });

  it('F05 a name that is not valid UTF-8: skipped with a reason naming it, not silently ignored', async () => {
    await mkdir(join(world.ws.share, 'names'), { recursive: true });
    await writeFile(Buffer.concat([Buffer.from(join(world.ws.share, 'names', 'latin1-')), Buffer.from([0xe9, 0x74, 0xe9]), Buffer.from('.txt')]), 'ete');
    const r = await world.pass();
    const entry = r.skipped.find((s) => s.path.startsWith('names/latin1-'));
    expect(entry?.reason).toMatch(/not valid UTF-8.*rename it/);
    await world.expectNothingLost();
  });

  it('F06 a name in Unicode NFD (written by a Mac): mirrored under its NFC path', async () => {
    await world.ws.write('names/Cafe\u0301.txt', 'nfd');
    await twoPasses();
    expect(docsOf('names/Caf\u00e9.txt')).toHaveLength(1);
  });

  it('F07 a path longer than the service accepts (1,024 characters): refused by the service, reported, the rest mirrored', async () => {
    const deep = Array.from({ length: 9 }, (_, i) => `${String(i).repeat(120)}`).join('/');
    await world.ws.write(`${deep}/long.txt`, 'deep');
    await world.ws.write('names/next-to-long.txt', 'sent in the same batch');
    const r = await world.pass();
    expect(reasonOf(r, `${deep}/long.txt`)).toMatch(/400.*longer than 1024/);
    expect(docsOf('names/next-to-long.txt')).toHaveLength(1);
    expect(docsOf(`${deep}/long.txt`)).toHaveLength(0);
    // Refused until it changes: the next pass does not send it again.
    const again = await world.pass();
    expect(again.counts.uploaded).toBe(0);
    expect(reasonOf(again, `${deep}/long.txt`)).toMatch(/refused by the service \(HTTP 400\).*retried when the file changes/);
    await world.expectNothingLost();
  });

  it('F08 an empty file: mirrored', async () => {
    await world.ws.write('contents/empty.txt', '');
    await twoPasses();
    expect(docsOf('contents/empty.txt').map((d) => d.metadata?.dssync_sha256)).toEqual([sha('')]);
  });

  it('F09 binary junk named .txt: sent; the service decides; nothing else affected', async () => {
    await world.ws.write('contents/junk.txt', Buffer.from([0, 1, 2, 0xff, 0xfe, 0, 0x80, 3]));
    await world.ws.write('contents/beside-junk.txt', 'sent in the same pass');
    await addsOnly(['contents/beside-junk.txt', 'contents/junk.txt'], twoPasses);
    expect(docsOf('contents/junk.txt')).toHaveLength(1);
  });

  it('F10 a truncated PDF: sent, stored (without text), nothing else affected', async () => {
    await mkdir(join(world.ws.share, 'contents'), { recursive: true });
    await copyFile(join(FIXTURES, 'truncated.pdf'), join(world.ws.share, 'contents', 'truncated.pdf'));
    await world.ws.write('contents/beside-pdf.txt', 'sent in the same pass');
    await addsOnly(['contents/beside-pdf.txt', 'contents/truncated.pdf'], twoPasses);
    expect(docsOf('contents/truncated.pdf')).toHaveLength(1);
  });

  it('F11 a file larger than maxFileBytes: skipped with its size, its neighbours mirrored', async () => {
    const c = world.config();
    await world.ws.write('contents/huge.txt', Buffer.alloc(c.mappings[0]!.maxFileBytes + 1, 0x61));
    const r = await world.pass();
    expect(reasonOf(r, 'contents/huge.txt')).toMatch(/larger than maxFileBytes \(\d+ > \d+ bytes\)/);
    expect(docsOf('contents/huge.txt')).toHaveLength(0);
    await world.expectNothingLost();
  });

  it('F12 a FIFO named like a document: never opened (a pass would hang on it), not a document', { timeout: 10_000 }, async () => {
    await mkdir(join(world.ws.share, 'contents'), { recursive: true });
    execFileSync('mkfifo', [join(world.ws.share, 'contents', 'pipe.txt')]);
    const r = await world.pass();
    expect(docsOf('contents/pipe.txt')).toHaveLength(0);
    expect(r.failures).toEqual([]);
    await world.expectNothingLost();
  });

  it('F13 a symbolic link to a file outside the folder: not followed, not a document', async () => {
    await mkdir(join(world.ws.share, 'links'), { recursive: true });
    await writeFile(join(world.ws.dir, 'outside-secret.txt'), 'must never be uploaded');
    await symlink(join(world.ws.dir, 'outside-secret.txt'), join(world.ws.share, 'links', 'secret.txt'));
    await twoPasses();
    expect(docsOf('links/secret.txt')).toHaveLength(0);
  });

  it('F14 a corrupt word-processing document (.docx that is not a zip): the service decides; reported if refused', async () => {
    await world.ws.write('contents/broken.docx', 'this is not a zip archive');
    const r = await world.pass();
    const docs = docsOf('contents/broken.docx');
    if (docs.length === 0) expect(reasonOf(r, 'contents/broken.docx')).toMatch(/\b(4\d\d)\b/);
    else expect(docs).toHaveLength(1);
    await world.expectNothingLost();
  });

  it('F15 an office lock file and an editor swap file: excluded, never sent', async () => {
    await world.ws.write('contents/~$report.docx', 'lock');
    await world.ws.write('contents/.report.txt.swp', 'swap');
    await twoPasses();
    expect(docsOf('contents/~$report.docx')).toHaveLength(0);
    expect(docsOf('contents/.report.txt.swp')).toHaveLength(0);
  });
});

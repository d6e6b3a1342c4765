/**
 * Security: an upload sends the file that was walked and hashed, read from the descriptor
 * it was checked on — never a path opened again (api/upload.ts). The bytes streamed are
 * hashed on the way and the last chunk is held back until they match the hash recorded at
 * planning: a file modified in place since, or another file swapped in, is never
 * completely sent, and the service creates nothing for it.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdir, rename, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createClientFromConfig } from '../../../src/compose/client.js';
import { isApiError, type ApiError } from '../../../src/api/errors.js';
import type { UploadFile } from '../../../src/api/records.js';
import { confinementOf, openRegularFile } from '../../../src/local/fs.js';
import { loadConfig } from '../../../src/config/load.js';
import { createWorkspace, type Workspace, fileDocuments, filesUploaded } from '../../helpers/mirror-check.js';

let ws: Workspace | undefined;
afterEach(async () => {
  await ws?.close();
  ws = undefined;
});

const sha = (b: string | Buffer): string => createHash('sha256').update(b).digest('hex');

async function upload(w: Workspace, files: UploadFile[]): Promise<{ ok: true } | { ok: false; error: ApiError }> {
  const config = loadConfig({ file: w.configPath, env: w.env });
  const api = createClientFromConfig(config);
  try {
    const ds = (await api.listDataSources()).find((d) => d.name === 'Share') ?? (await api.createDataSource({ name: 'Share', llmConnectorIds: ['c'] }));
    await api.uploadDocuments(ds.id, files);
    return { ok: true };
  } catch (e) {
    if (!isApiError(e)) throw e;
    return { ok: false, error: e };
  } finally {
    await api.close();
  }
}

/** The engine's open of a file of the share: the local side's checks (local/fs.ts). */
function checked(w: Workspace, path: string, o: { identity?: { dev: number; ino: number }; noFollow?: boolean } = {}): Pick<UploadFile, 'open'> {
  return { open: async () => openRegularFile(path, { within: await confinementOf(w.share, { followSymlinks: o.noFollow !== true }), expect: o.identity, noFollow: o.noFollow }) };
}

function storedText(w: Workspace): string {
  const ds = w.emu.store.listDataSources().find((d) => d.name === 'Share');
  if (!ds) return '';
  return fileDocuments(w.emu, ds.data_source_id)
    .flatMap((d) => w.emu.store.listChunks(d.document_id).map((c) => c.text))
    .join('\n');
}

function documentCount(w: Workspace): number {
  const ds = w.emu.store.listDataSources().find((d) => d.name === 'Share');
  return ds ? fileDocuments(w.emu, ds.data_source_id).length : 0;
}

describe('security: uploads stream the checked descriptor', () => {
  it('a large file streams whole, byte for byte, when it is the version hashed', async () => {
    ws = await createWorkspace();
    const text = 'line of the handbook\n'.repeat(100_000); // ~2 MiB: several chunks
    await ws.write('big.txt', text);
    const path = join(ws.share, 'big.txt');
    const st = await stat(path);
    const r = await upload(ws, [{ path, name: 'big.txt', ...checked(ws, path, { identity: { dev: st.dev, ino: st.ino } }), expectedSha256: sha(text), expectedSize: st.size, expectedMtimeMs: st.mtimeMs }]);
    expect(r).toEqual({ ok: true });
    expect(storedText(ws).replace(/\s+/g, ' ').trim()).toBe(text.replace(/\s+/g, ' ').trim());
  });

  it('content that is not the version hashed (same size and mtime) is abandoned before its part ends: no document', async () => {
    ws = await createWorkspace();
    const text = 'B'.repeat(600 * 1024);
    await ws.write('b.txt', text);
    const path = join(ws.share, 'b.txt');
    const r = await upload(ws, [{ path, name: 'b.txt', ...checked(ws, path), expectedSha256: sha('A'.repeat(600 * 1024)) }]);
    expect(r.ok).toBe(false);
    const e = (r as { error: ApiError }).error;
    expect(e.code).toBe('E_FILE_CHANGED');
    expect(e.file).toBe(path);
    expect(e.message).toContain('not the version that was hashed');
    // Part of the body left: the caller lists before uploading again (DESIGN §3).
    expect(e.ambiguous).toBe(true);
    expect(documentCount(ws)).toBe(0);
  });

  it('a batch of small files (read and checked whole before the request) is sent byte for byte', async () => {
    ws = await createWorkspace();
    const texts = ['alpha beta gamma\n', 'delta '.repeat(3000), 'epsilon zeta\n'.repeat(200)];
    const files: UploadFile[] = [];
    for (const [i, text] of texts.entries()) {
      await ws.write(`f${i}.txt`, text);
      const path = join(ws.share, `f${i}.txt`);
      const st = await stat(path);
      files.push({ path, name: `f${i}.txt`, ...checked(ws, path, { identity: { dev: st.dev, ino: st.ino } }), expectedSha256: sha(text), expectedSize: st.size, expectedMtimeMs: st.mtimeMs });
    }
    expect(await upload(ws, files)).toEqual({ ok: true });
    expect(documentCount(ws)).toBe(3);
    const stored = storedText(ws).replace(/\s+/g, ' ');
    for (const text of texts) expect(stored).toContain(text.replace(/\s+/g, ' ').trim());
  });

  it('a small file that is not the version hashed is refused before a byte of its batch is sent: not ambiguous, no document', async () => {
    ws = await createWorkspace();
    await ws.write('good.txt', 'the good one');
    await ws.write('bad.txt', 'B'.repeat(1000));
    const good = join(ws.share, 'good.txt');
    const bad = join(ws.share, 'bad.txt');
    const r = await upload(ws, [
      { path: good, name: 'good.txt', ...checked(ws, good), expectedSha256: sha('the good one') },
      { path: bad, name: 'bad.txt', ...checked(ws, bad), expectedSha256: sha('A'.repeat(1000)) },
    ]);
    expect(r.ok).toBe(false);
    const e = (r as { error: ApiError }).error;
    expect(e.code).toBe('E_FILE_CHANGED');
    expect(e.file).toBe(bad);
    expect(e.message).toContain('not the version that was hashed');
    // Nothing left: no listing is needed before the next try.
    expect(e.ambiguous).toBe(false);
    expect(filesUploaded(ws.emu)).toBe(0);
    expect(documentCount(ws)).toBe(0);
  });

  it('another file than the one walked (inode differs) is not sent', async () => {
    ws = await createWorkspace();
    await ws.write('a.txt', 'first version');
    const path = join(ws.share, 'a.txt');
    const st = await stat(path);
    await writeFile(join(ws.share, 'a.new'), 'second version');
    await rename(join(ws.share, 'a.new'), path);
    const r = await upload(ws, [{ path, name: 'a.txt', ...checked(ws, path, { identity: { dev: st.dev, ino: st.ino } }) }]);
    expect(r.ok).toBe(false);
    expect((r as { error: ApiError }).error.message).toContain('replaced by another file');
    expect((r as { error: ApiError }).error.ambiguous).toBe(false);
    expect(filesUploaded(ws.emu)).toBe(0);
  });

  it('a file, or a folder above it, swapped for a link to an outside target is not sent, with or without identity', async () => {
    ws = await createWorkspace();
    const secret = 'OUTSIDE-SECRET-BYTES';
    const outside = join(ws.dir, 'outside');
    await mkdir(outside);
    await writeFile(join(outside, 'notes.txt'), secret);
    await ws.write('team/notes.txt', 'x'.repeat(secret.length));
    await ws.write('b.txt', 'y'.repeat(secret.length));
    await rm(join(ws.share, 'b.txt'));
    await symlink(join(outside, 'notes.txt'), join(ws.share, 'b.txt'));
    await rename(join(ws.share, 'team'), join(ws.dir, 'team-away'));
    await symlink(outside, join(ws.share, 'team'));
    for (const rel of ['b.txt', 'team/notes.txt']) {
      const path = join(ws.share, rel);
      for (const noFollow of [false, true]) {
        const r = await upload(ws, [{ path, name: rel, ...checked(ws, path, { noFollow }) }]);
        expect(r.ok, rel).toBe(false);
        expect((r as { error: ApiError }).error.code).toBe('E_FILE_CHANGED');
      }
    }
    expect(filesUploaded(ws.emu)).toBe(0);
    expect(storedText(ws)).not.toContain(secret);
  });

  it('a FIFO in place of a file is refused at once, without blocking', async () => {
    ws = await createWorkspace();
    const path = join(ws.share, 'pipe.txt');
    execFileSync('mkfifo', [path]);
    const r = await upload(ws, [{ path, name: 'pipe.txt', ...checked(ws, path) }]);
    expect(r.ok).toBe(false);
    expect((r as { error: ApiError }).error.message).toContain('FIFO');
    expect(filesUploaded(ws.emu)).toBe(0);
  });
});

// An upload's small file read by the folder lister's worker (issue 39.1): a file of the real
// disk opened with its size (at most READ_AT_OPEN_MAX_BYTES) is opened, checked, read whole and
// fstat'ed again by the worker with synchronous calls, one message each way; the upload judges
// what it hands back as it would a descriptor's reads. Every refusal of the open holds there
// (hash-worker.test.ts, for both).
import { createHash } from 'node:crypto';
import { appendFile, mkdir, mkdtemp, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openUpload } from '../../../src/api/upload.js';
import type { OpenedFile } from '../../../src/api/records.js';
import { confinementOf, openRegularFile, READ_AT_OPEN_MAX_BYTES } from '../../../src/local/fs.js';
import { sharedFolderLister } from '../../../src/local/folder-lister.js';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'dssync-readw-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const sha = (b: Buffer | string): string => createHash('sha256').update(b).digest('hex');
const ctx = { method: 'POST', path: '/upload' };
const WHOLE_SECOND = 1_700_000_000;

/** Everything the opened file gives, read as the upload reads (explicit positions), and its stat after. */
async function drain(f: OpenedFile): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for (let pos = 0; ; ) {
    const buffer = Buffer.alloc(64 * 1024);
    const { bytesRead } = await f.handle.read(buffer, 0, buffer.length, pos);
    if (bytesRead === 0) return Buffer.concat(chunks);
    chunks.push(buffer.subarray(0, bytesRead));
    pos += bytesRead;
  }
}

describe.runIf(process.platform === 'linux')("an upload's small file, read whole by the worker", () => {
  it('reads files of every size up to the limit in the worker: their bytes, the stats before and after', async () => {
    const root = join(dir, 'sizes');
    await mkdir(root);
    const within = await confinementOf(root, { followSymlinks: false });
    expect(sharedFolderLister().workerCount).toBe(0);
    for (const size of [0, 1, 4095, 4096, 65_536, READ_AT_OPEN_MAX_BYTES]) {
      const content = Buffer.alloc(size, size % 251);
      const p = join(root, `f${size}`);
      await writeFile(p, content);
      const st = await stat(p);
      const f = await openRegularFile(p, { size, within, noFollow: true, expect: { dev: st.dev, ino: st.ino } });
      // The worker has read it: the file's later fate does not change what was read and checked.
      await appendFile(p, 'later');
      expect(sha(await drain(f))).toBe(sha(content));
      expect(f.stat).toMatchObject({ size, mtimeMs: st.mtimeMs, ctimeMs: st.ctimeMs, dev: st.dev, ino: st.ino });
      expect(await f.handle.stat()).toMatchObject({ size, mtimeMs: st.mtimeMs, ctimeMs: st.ctimeMs });
      await f.handle.close();
      await expect(f.handle.read(Buffer.alloc(1), 0, 1, 0)).rejects.toMatchObject({ code: 'EBADF' });
    }
    // The worker path was taken: the process's lister runs a worker (nothing else here lists).
    expect(sharedFolderLister().workerCount).toBeGreaterThan(0);
  });

  it('the upload sends what the worker read byte for byte, and refuses a version other than the one hashed', async () => {
    const root = join(dir, 'upload');
    await mkdir(root);
    const within = await confinementOf(root, { followSymlinks: false });
    const files = await Promise.all(
      ['alpha\n', 'beta '.repeat(3000)].map(async (text, i) => {
        const p = join(root, `f${i}.txt`);
        await writeFile(p, text);
        // A whole second: an mtime set again below is then exactly this one.
        await utimes(p, WHOLE_SECOND, WHOLE_SECOND);
        const st = await stat(p);
        return { path: p, name: `f${i}.txt`, expectedSize: st.size, expectedMtimeMs: st.mtimeMs, expectedSha256: sha(text), open: () => openRegularFile(p, { size: st.size, within, noFollow: true, expect: { dev: st.dev, ino: st.ino } }) };
      }),
    );
    const up = await openUpload(files, ctx);
    const body = (up.body.body as Buffer).toString();
    expect(body).toContain('\r\n\r\nalpha\n\r\n');
    expect(body).toContain(`\r\n\r\n${'beta '.repeat(3000)}\r\n`);
    await up.close();
    // Rewritten in place at the same size and mtime since it was hashed: not sent.
    await writeFile(files[0]!.path, 'ALPHA\n');
    await utimes(files[0]!.path, WHOLE_SECOND, WHOLE_SECOND);
    await expect(openUpload(files, ctx)).rejects.toMatchObject({ code: 'E_FILE_CHANGED', file: files[0]!.path, ambiguous: false, message: expect.stringContaining('not the version that was hashed') });
  });
});

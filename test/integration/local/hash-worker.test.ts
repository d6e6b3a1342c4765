// hashFile's worker path (issue 28.1): a small file of the real disk, its size known from
// the walk, is opened, checked, read and stat'ed by a worker thread with synchronous calls.
// Every refusal of the main thread's path holds there, before a byte is read, for the hash
// and for the upload's read (read-worker.test.ts).
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, rm, symlink, writeFile, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { confinementOf, keptFile, openRegularFile, type OpenFileOptions } from '../../../src/local/fs.js';
import { sharedFolderLister } from '../../../src/local/folder-lister.js';
import { FileChangedError, FileVanishedError, NotRegularFileError, OutsideFolderError } from '../../../src/local/errors.js';
import { contentBytesRead, hashFile, resetContentBytesRead } from '../../../src/local/hash.js';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'dssync-hashw-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const sha = (b: Buffer | string): string => createHash('sha256').update(b).digest('hex');

describe.runIf(process.platform === 'linux')('hashFile in the worker thread', () => {
  it('hashes small files of every size in the worker, with the stats and the bytes counted', async () => {
    const root = join(dir, 'sizes');
    await mkdir(root);
    const within = await confinementOf(root, { followSymlinks: false });
    resetContentBytesRead();
    let bytes = 0;
    for (const size of [0, 1, 4095, 4096, 4097, 65_536, 1024 * 1024]) {
      const content = Buffer.alloc(size, size % 251);
      const p = join(root, `f${size}`);
      await writeFile(p, content);
      const st = await stat(p);
      const h = await hashFile(p, { size, within, noFollow: true, expect: { dev: st.dev, ino: st.ino } });
      expect(h).toEqual({ sha256: sha(content), size, mtimeMs: st.mtimeMs, dev: st.dev, ino: st.ino, ctimeMs: st.ctimeMs });
      bytes += size;
    }
    expect(contentBytesRead()).toBe(bytes);
    // The worker path was taken: the process's lister runs a worker (nothing else here lists).
    expect(sharedFolderLister().workerCount).toBeGreaterThan(0);
  });

  it('keeps the bytes it hashed when asked, handed over from the worker: the file read once for its hash and its upload', async () => {
    const root = join(dir, 'kept');
    await mkdir(root);
    const within = await confinementOf(root, { followSymlinks: false });
    const content = Buffer.from('the bytes hashed, and sent\n'.repeat(300));
    const p = join(root, 'kept.txt');
    await writeFile(p, content);
    const st = await stat(p);
    const opts = { size: st.size, within, noFollow: true, expect: { dev: st.dev, ino: st.ino } };
    resetContentBytesRead();
    const h = await hashFile(p, { ...opts, keep: true });
    expect(h.sha256).toBe(sha(content));
    expect(Buffer.from(h.content as Uint8Array).equals(content)).toBe(true);
    expect(contentBytesRead()).toBe(content.length);
    // Its upload takes those bytes as an open file: nothing more is read.
    const opened = keptFile(p, h, h.content as Uint8Array);
    const back = Buffer.alloc(content.length + 1);
    expect((await opened.handle.read(back, 0, back.length, 0)).bytesRead).toBe(content.length);
    expect(back.subarray(0, content.length).equals(content)).toBe(true);
    expect(await opened.handle.stat()).toMatchObject({ size: st.size, mtimeMs: st.mtimeMs, ctimeMs: st.ctimeMs });
    expect(contentBytesRead()).toBe(content.length);
    expect((await hashFile(p, opts)).content).toBeUndefined();
  });

  // The open's refusals, by both the hash and the upload's read (fs.ts openRegularFile with a size).
  const paths = [
    { by: 'hashFile', go: (p: string, o: OpenFileOptions & { size: number }) => hashFile(p, o), loop: FileChangedError, gone: FileVanishedError },
    { by: "the upload's read", go: (p: string, o: OpenFileOptions & { size: number }) => openRegularFile(p, o), loop: undefined, gone: undefined },
  ];
  for (const { by, go, loop, gone } of paths) {
    it(`${by}: refuses a FIFO without blocking, a link with noFollow, another inode, a vanished file`, async () => {
      const root = join(dir, `refusals ${by}`);
      await mkdir(root);
      const fifo = join(root, 'fifo');
      execFileSync('mkfifo', [fifo]);
      await expect(go(fifo, { size: 0 })).rejects.toBeInstanceOf(NotRegularFileError);

      const target = join(root, 'target');
      await writeFile(target, 'x');
      const link = join(root, 'link');
      await symlink(target, link);
      await expect(go(link, { size: 1, noFollow: true })).rejects.toSatisfy((e) => (loop ? e instanceof loop : (e as { code?: string }).code === 'ELOOP'));
      const followed = await go(link, { size: 1 });
      if ('sha256' in followed) expect(followed.sha256).toBe(sha('x'));
      else expect(followed.stat.size).toBe(1);

      const st = await stat(target);
      await expect(go(target, { size: 1, expect: { dev: st.dev, ino: st.ino + 1 } })).rejects.toThrow(/replaced by another file/);
      await expect(go(join(root, 'gone'), { size: 1 })).rejects.toSatisfy((e) => (gone ? e instanceof gone : (e as { code?: string }).code === 'ENOENT'));
    });

    it(`${by}: refuses a file that resolves outside the folder, or through a link when links are not followed`, async () => {
      const root = join(dir, `confined ${by}`);
      const outside = join(dir, `outside ${by}`);
      await mkdir(root);
      await mkdir(outside);
      await writeFile(join(outside, 'secret'), 'secret');
      await symlink(outside, join(root, 'sub'));
      const followed = await confinementOf(root, { followSymlinks: true });
      const exact = await confinementOf(root, { followSymlinks: false });
      const p = join(root, 'sub', 'secret');
      resetContentBytesRead();
      await expect(go(p, { size: 6, within: followed })).rejects.toBeInstanceOf(OutsideFolderError);
      await expect(go(p, { size: 6, within: exact })).rejects.toBeInstanceOf(OutsideFolderError);
      // Refused before a byte was read.
      expect(contentBytesRead()).toBe(0);
    });
  }

  it('stops at once when aborted', async () => {
    const p = join(dir, 'abort');
    await writeFile(p, 'abc');
    const ac = new AbortController();
    ac.abort(new Error('shutting down'));
    await expect(hashFile(p, { size: 3, signal: ac.signal })).rejects.toThrow('shutting down');
  });
});

import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { appendFile, mkdtemp, rename, rm, truncate, unlink, writeFile, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nodeFs, type LocalFs } from '../../../src/local/fs.js';
import { FileChangedError, FileVanishedError } from '../../../src/local/errors.js';
import { contentBytesRead, hashFile, resetContentBytesRead } from '../../../src/local/hash.js';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'dssync-hash-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Real fs, with a hook run after each chunk is read: changes the file at a chosen moment. */
function fsWithHook(afterRead: (chunk: number) => Promise<void>, onRead?: () => void): LocalFs {
  let chunk = 0;
  return {
    ...nodeFs,
    read: async (fd, buffer, offset, length, position) => {
      const n = await nodeFs.read(fd, buffer, offset, length, position);
      onRead?.();
      await afterRead(chunk++);
      return n;
    },
  };
}

async function oracle(path: string): Promise<string> {
  const h = createHash('sha256');
  for await (const chunk of createReadStream(path)) h.update(chunk as Buffer);
  return h.digest('hex');
}

describe('hashFile on real files', () => {
  it('returns the SHA-256, size and mtime of the file', async () => {
    const p = join(dir, 'hello world #1 %.txt');
    await writeFile(p, 'hello\n');
    const h = await hashFile(p);
    expect(h).toMatchObject({
      sha256: '5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03',
      size: 6,
      mtimeMs: expect.any(Number),
    });
  });

  it('hashes an empty file', async () => {
    const p = join(dir, 'empty.txt');
    await writeFile(p, '');
    expect((await hashFile(p)).sha256).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
  });

  it('reads a file whose name is NFD on disk through its disk path', async () => {
    const p = join(dir, 'Re\u0301union.txt');
    await writeFile(p, 'x');
    expect((await hashFile(p)).size).toBe(1);
  });

  it('throws FileChangedError naming the file when it grows while read', async () => {
    const p = join(dir, 'growing.txt');
    await writeFile(p, Buffer.alloc(64 * 1024, 'a'));
    const fs = fsWithHook(async (chunk) => {
      if (chunk === 0) await appendFile(p, 'more');
    });
    const err = await hashFile(p, { fs, chunkBytes: 4096 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(FileChangedError);
    expect((err as FileChangedError).path).toBe(p);
    expect((err as Error).message).toContain(`${p} changed while it was being read`);
  });

  it('hashes files of every size around the read buffer exactly', async () => {
    for (const size of [1, 100, 4095, 4096, 4097, 10_000]) {
      const p = join(dir, `size-${size}.bin`);
      const content = Buffer.alloc(size);
      for (let i = 0; i < size; i++) content[i] = (i * 7 + size) & 0xff;
      await writeFile(p, content);
      const h = await hashFile(p, { chunkBytes: 4096 });
      expect(h.size).toBe(size);
      expect(h.sha256).toBe(await oracle(p));
    }
  });

  it('throws FileChangedError when the file grows right after its last byte was read', async () => {
    const p = join(dir, 'grows-at-end.txt');
    await writeFile(p, 'x'.repeat(100));
    // The one read returns all 100 bytes; the file grows before the end is confirmed.
    const fs = fsWithHook(async (chunk) => {
      if (chunk === 0) await appendFile(p, 'late');
    });
    await expect(hashFile(p, { fs })).rejects.toBeInstanceOf(FileChangedError);
  });

  it('throws FileChangedError when the file is truncated while read', async () => {
    const p = join(dir, 'shrinking.txt');
    await writeFile(p, Buffer.alloc(64 * 1024, 'a'));
    const fs = fsWithHook(async (chunk) => {
      if (chunk === 0) await truncate(p, 10);
    });
    await expect(hashFile(p, { fs, chunkBytes: 4096 })).rejects.toBeInstanceOf(FileChangedError);
  });

  it('throws FileChangedError when an editor replaces the file (rename over) while read', async () => {
    const p = join(dir, 'atomic.txt');
    await writeFile(p, Buffer.alloc(64 * 1024, 'a'));
    const fs = fsWithHook(async (chunk) => {
      if (chunk === 0) {
        await writeFile(`${p}.tmp`, Buffer.alloc(64 * 1024, 'b'));
        await rename(`${p}.tmp`, p);
      }
    });
    const err = await hashFile(p, { fs, chunkBytes: 4096 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(FileChangedError);
    expect((err as Error).message).toContain('replaced by another file');
  });

  it('throws FileVanishedError when the file is deleted while read, or was never there', async () => {
    const p = join(dir, 'vanishing.txt');
    await writeFile(p, Buffer.alloc(64 * 1024, 'a'));
    const fs = fsWithHook(async (chunk) => {
      if (chunk === 0) await unlink(p);
    });
    await expect(hashFile(p, { fs, chunkBytes: 4096 })).rejects.toBeInstanceOf(FileVanishedError);
    await expect(hashFile(join(dir, 'never.txt'))).rejects.toThrow(`${join(dir, 'never.txt')} no longer exists`);
  });

  it('with noFollow, refuses a file that became a symbolic link', async () => {
    const target = join(dir, 'target.txt');
    await writeFile(target, 't');
    const link = join(dir, 'was-a-file.txt');
    await symlink(target, link);
    await expect(hashFile(link, { noFollow: true })).rejects.toBeInstanceOf(FileChangedError);
    expect((await hashFile(link)).size).toBe(1);
  });

  it('stops when aborted', async () => {
    const p = join(dir, 'abort.txt');
    await writeFile(p, Buffer.alloc(64 * 1024, 'a'));
    const ac = new AbortController();
    const fs = fsWithHook(async () => ac.abort(new Error('shutting down')));
    await expect(hashFile(p, { fs, chunkBytes: 4096, signal: ac.signal })).rejects.toThrow('shutting down');
  });

  it('counts the content bytes it reads', async () => {
    const p = join(dir, 'counted.txt');
    await writeFile(p, Buffer.alloc(10_000, 'c'));
    resetContentBytesRead();
    await hashFile(p);
    await hashFile(p);
    expect(contentBytesRead()).toBe(20_000);
  });

  it('hashes a 50 MB file in bounded memory', { timeout: 60_000 }, async () => {
    const p = join(dir, 'big.bin');
    // Not sparse: a real 50 MB of varied bytes, written in 1 MiB pieces.
    const piece = Buffer.alloc(1024 * 1024);
    for (let i = 0; i < piece.length; i++) piece[i] = (i * 31) & 0xff;
    await writeFile(p, '');
    for (let i = 0; i < 50; i++) {
      piece[0] = i;
      await appendFile(p, piece);
    }
    const baseline = process.memoryUsage();
    let peakExternal = 0;
    let peakHeap = 0;
    const fs = fsWithHook(
      async () => undefined,
      () => {
        const m = process.memoryUsage();
        peakExternal = Math.max(peakExternal, m.arrayBuffers - baseline.arrayBuffers);
        peakHeap = Math.max(peakHeap, m.heapUsed - baseline.heapUsed);
      },
    );
    resetContentBytesRead();
    const h = await hashFile(p, { fs });
    expect(h.size).toBe(50 * 1024 * 1024);
    expect(contentBytesRead()).toBe(50 * 1024 * 1024);
    expect(h.sha256).toBe(await oracle(p));
    // One 1 MiB read buffer at a time; reading the whole file would add ~50 MB.
    expect(peakExternal).toBeLessThan(8 * 1024 * 1024);
    expect(peakHeap).toBeLessThan(16 * 1024 * 1024);
  });
});

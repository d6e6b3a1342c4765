/**
 * local/fs.ts on real files: non-blocking opens that refuse special files, bounded small
 * reads, confinement by the descriptor's kernel path, and a walk that never lists a folder
 * swapped for a link while it runs (the swap made at an exact point through a wrapped fs).
 */
import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FileTooLargeError, NotRegularFileError, OutsideFolderError } from '../../../src/local/errors.js';
import { confinementOf, nodeFs, openRegularFile, readSmallFile, type LocalFs } from '../../../src/local/fs.js';
import { createFilter } from '../../../src/local/filters.js';
import { walkTree } from '../../../src/local/walk.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'dssync-fs-safety-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('small files', () => {
  it('a FIFO is refused at once', async () => {
    const fifo = join(dir, 'token');
    execFileSync('mkfifo', [fifo]);
    await expect(readSmallFile(fifo, { what: 'the token file' })).rejects.toBeInstanceOf(NotRegularFileError);
  });

  it('a file over the cap is refused naming it and the cap; one under it is read', async () => {
    const p = join(dir, '.dssyncignore');
    await writeFile(p, 'x'.repeat(101));
    await expect(readSmallFile(p, { maxBytes: 100, what: 'the ignore file' })).rejects.toThrow(
      new FileTooLargeError(p, 101, 100, 'the ignore file').message,
    );
    await writeFile(p, '*.tmp\n');
    expect(await readSmallFile(p)).toBe('*.tmp\n');
  });

  it('a folder is refused', async () => {
    await mkdir(join(dir, 'd'));
    await expect(readSmallFile(join(dir, 'd'))).rejects.toThrow(/is a folder, not a regular file/);
  });
});

describe('file handles over bare descriptors', () => {
  it('a second close is a no-op: it never closes the descriptor the kernel handed to a later open', async () => {
    await writeFile(join(dir, 'a.txt'), 'first');
    await writeFile(join(dir, 'b.txt'), 'second file');
    const a = await openRegularFile(join(dir, 'a.txt'));
    await a.handle.close();
    // The lowest free descriptor: most likely a's number again.
    const b = await openRegularFile(join(dir, 'b.txt'));
    await a.handle.close();
    const buf = Buffer.alloc(64);
    const { bytesRead } = await b.handle.read(buf, 0, buf.length, 0);
    expect(buf.toString('utf8', 0, bytesRead)).toBe('second file');
    await expect(a.handle.read(buf, 0, 1, 0)).rejects.toMatchObject({ code: 'EBADF' });
    await b.handle.close();
  });
});

describe('openRegularFile confinement', () => {
  it('a parent folder swapped for a link to an outside folder is caught on the opened descriptor', async () => {
    const root = join(dir, 'root');
    await mkdir(join(root, 'team'), { recursive: true });
    await writeFile(join(root, 'team', 'a.txt'), 'inside');
    await mkdir(join(dir, 'outside'));
    await writeFile(join(dir, 'outside', 'a.txt'), 'outside');
    const within = await confinementOf(root, { followSymlinks: false });
    const ok = await openRegularFile(join(root, 'team', 'a.txt'), { within, noFollow: true });
    await ok.handle.close();
    await rename(join(root, 'team'), join(dir, 'team-away'));
    await symlink(join(dir, 'outside'), join(root, 'team'));
    for (const followSymlinks of [false, true]) {
      const c = await confinementOf(root, { followSymlinks });
      await expect(openRegularFile(join(root, 'team', 'a.txt'), { within: c, noFollow: !followSymlinks })).rejects.toBeInstanceOf(OutsideFolderError);
    }
  });

  it('a link inside the folder to a file inside it is fine when links are followed, refused otherwise', async () => {
    const root = join(dir, 'root');
    await mkdir(root);
    await writeFile(join(root, 'real.txt'), 'x');
    await symlink(join(root, 'real.txt'), join(root, 'link.txt'));
    const follow = await confinementOf(root, { followSymlinks: true });
    const f = await openRegularFile(join(root, 'link.txt'), { within: follow });
    await f.handle.close();
    const strict = await confinementOf(root, { followSymlinks: false });
    await expect(openRegularFile(join(root, 'link.txt'), { within: strict, noFollow: true })).rejects.toMatchObject({ code: 'ELOOP' });
    await expect(openRegularFile(join(root, 'link.txt'), { within: strict })).rejects.toBeInstanceOf(OutsideFolderError);
  });
});

/** The fs whose listing of `path` (listFolder: the folder lister's worker, the walk's one way to list) first runs `swap`. */
function swappingFs(seam: 'listFolder', path: string, swap: () => Promise<void>): { fs: LocalFs; swapped: () => boolean } {
  let swapped = false;
  const before = async (p: string): Promise<void> => {
    if (p === path && !swapped) {
      swapped = true;
      await swap();
    }
  };
  const fs: LocalFs = {
    ...nodeFs,
    async [seam](p: string, opts?: Parameters<LocalFs['listFolder']>[1]) {
      await before(p);
      return nodeFs.listFolder(p, opts);
    },
  };
  return { fs, swapped: () => swapped };
}

describe.each(['listFolder'] as const)('walkTree and folders swapped while it runs (%s)', (seam) => {
  it('a folder swapped for a link to an outside folder right before it is listed is never listed', async () => {
    const root = join(dir, 'root');
    await mkdir(join(root, 'team'), { recursive: true });
    await writeFile(join(root, 'team', 'inside.txt'), 'inside');
    await writeFile(join(root, 'top.txt'), 'top');
    await mkdir(join(dir, 'outside'));
    await writeFile(join(dir, 'outside', 'secret.txt'), 'secret');
    const { fs, swapped } = swappingFs(seam, join(root, 'team'), async () => {
      await rename(join(root, 'team'), join(dir, 'team-away'));
      await symlink(join(dir, 'outside'), join(root, 'team'));
    });
    const w = await walkTree(root, createFilter({ include: ['*'], exclude: [] }), { fs });
    expect(swapped()).toBe(true);
    expect([...w.files.keys()].sort()).toEqual(["top.txt"]);
  });

  it('a folder above the one being listed, moved away and replaced by a link, is reported and its documents kept', async () => {
    const root = join(dir, 'root');
    await mkdir(join(root, 'a', 'b'), { recursive: true });
    await writeFile(join(root, 'a', 'b', 'f.txt'), 'f');
    await mkdir(join(dir, 'elsewhere', 'b'), { recursive: true });
    await writeFile(join(dir, 'elsewhere', 'b', 'f.txt'), 'outside');
    const { fs, swapped } = swappingFs(seam, join(root, 'a', 'b'), async () => {
      await rename(join(root, 'a'), join(dir, 'a-away'));
      await symlink(join(dir, 'elsewhere'), join(root, 'a'));
    });
    const w = await walkTree(root, createFilter({ include: ['*'], exclude: [] }), { fs });
    expect(swapped()).toBe(true);
    expect([...w.files.keys()]).toEqual([]);
    expect(w.errors).toEqual([expect.objectContaining({ path: 'a/b', kind: 'dir', code: 'EMOVED' })]);
  });
});

/**
 * The listing's and the hash's steps (src/local/list-steps.ts, hash-steps.ts), the code the
 * worker runs with node:fs and the fakes with their own calls (issue 38.1): driven here by a
 * synchronous fake of the system-call interface, and through FakeLocal, where the local
 * side's open is what an upload reads.
 */
import { describe, expect, it } from 'vitest';
import { openUpload } from '../../../src/api/upload.js';
import { hashSteps, readSteps } from '../../../src/local/hash-steps.js';
import { listFolderSteps } from '../../../src/local/list-steps.js';
import { ENTRY_DIR, ENTRY_FILE, STAT_FIELDS, STAT_GONE, STAT_SIZE } from '../../../src/local/folder-listing.js';
import { contentBytesRead } from '../../../src/local/hash.js';
import { createLocalSide } from '../../../src/local/side.js';
import { READ_AT_OPEN_MAX_BYTES } from '../../../src/local/fs.js';
import { runSync, type FsStats, type SysCalls } from '../../../src/local/sys-calls.js';
import { FakeLocal, fsError, sha256 } from '../../helpers/fake-local.js';

const fileStat = (size: number, ino: number): FsStats => ({ isFile: () => true, isDirectory: () => false, isSymbolicLink: () => false, size, mtimeMs: 5, ctimeMs: 6, dev: 1, ino });

/** A disk of one folder /d with a.txt ("hello") and sub/, that logs every call; `fail` makes one call throw. */
function disk(fail: Partial<Record<keyof SysCalls, string>> = {}): { sys: SysCalls; log: string[] } {
  const log: string[] = [];
  const data = Buffer.from('hello');
  const may = (name: keyof SysCalls, what: string): void => {
    log.push(`${name} ${what}`);
    const code = fail[name];
    if (code !== undefined) throw fsError(code, what);
  };
  const sys: SysCalls = {
    open: (path, o) => (may('open', `${path}${o.folder ? ' folder' : ''}`), path === '/d' ? 3 : 4),
    fstat: (fd) => (may('fstat', String(fd)), fileStat(data.length, 7)),
    read: (fd, buffer, offset, length, position) => {
      may('read', String(fd));
      return data.copy(buffer, offset, position ?? 0, Math.min(data.length, length));
    },
    close: (fd) => void log.push(`close ${fd}`),
    fdPath: (fd) => (may('fdPath', String(fd)), undefined),
    readdir: (path) => {
      may('readdir', path);
      return [
        { name: 'a.txt', isFile: () => true, isDirectory: () => false, isSymbolicLink: () => false },
        { name: 'gone.txt', isFile: () => true, isDirectory: () => false, isSymbolicLink: () => false },
        { name: 'sub', isFile: () => false, isDirectory: () => true, isSymbolicLink: () => false },
      ];
    },
    lstat: (path) => {
      may('lstat', path);
      if (path.endsWith('gone.txt')) throw fsError('ENOENT', path);
      return fileStat(data.length, 7);
    },
    stat: (path) => (may('stat', path), fileStat(data.length, 7)),
    realpath: (path) => (may('realpath', path), path),
  };
  return { sys, log };
}

describe('the listing steps', () => {
  it('open the folder as a folder, list it, close it, then lstat each file: a file gone since is marked, not an error', () => {
    const { sys, log } = disk();
    const l = runSync(listFolderSteps('/d', true), sys);
    expect(log).toEqual(['open /d folder', 'fdPath 3', 'readdir /d', 'close 3', 'lstat /d/a.txt', 'lstat /d/gone.txt']);
    expect(l.names).toEqual(['a.txt', 'gone.txt', 'sub']);
    expect([...l.types]).toEqual([ENTRY_FILE, ENTRY_FILE, ENTRY_DIR]);
    expect(l.stats[STAT_SIZE]).toBe(5);
    expect(l.stats[STAT_FIELDS + STAT_SIZE]).toBe(STAT_GONE);
    expect(l.realPath).toBeUndefined();
  });

  it('close the folder when its read fails, and give the read\'s error', () => {
    const { sys, log } = disk({ readdir: 'EIO' });
    expect(() => runSync(listFolderSteps('/d', true), sys)).toThrow(expect.objectContaining({ code: 'EIO' }));
    expect(log.at(-1)).toBe('close 3');
  });
});

describe('the hash steps', () => {
  it('hash what was read, with the facts before and after', () => {
    const { sys, log } = disk();
    const h = runSync(hashSteps({ path: '/d/a.txt', noFollow: true, expect: { dev: 1, ino: 7 }, within: undefined, chunkBytes: 4096 }), sys);
    expect(h).toMatchObject({ sha256: sha256('hello'), total: 5, before: { size: 5, kind: 'file' }, afterPath: { ino: 7 } });
    expect(log.at(-1)).toBe('close 4');
  });

  it('refuse another inode than the walk saw before reading a byte, and close it', () => {
    const { sys, log } = disk();
    const h = runSync(hashSteps({ path: '/d/a.txt', noFollow: true, expect: { dev: 1, ino: 8 }, within: undefined, chunkBytes: 4096 }), sys);
    expect(h.refused).toBe('replaced');
    expect(log.some((c) => c.startsWith('read'))).toBe(false);
    expect(log.at(-1)).toBe('close 4');
  });

  it('without the kernel\'s path of the descriptor, confine by the path resolved (and still the file opened)', () => {
    const { sys } = disk();
    const req = { path: '/d/a.txt', noFollow: true, expect: undefined, chunkBytes: 4096 };
    expect(runSync(hashSteps({ ...req, within: { exact: true, expected: '/d/a.txt', rootReal: '/d' } }), sys).sha256).toBe(sha256('hello'));
    expect(runSync(hashSteps({ ...req, within: { exact: true, expected: '/elsewhere/a.txt', rootReal: '/elsewhere' } }), sys).refused).toBe('outside');
  });

  it('keep the bytes hashed when asked and the file fits one read: the same calls, the bytes handed back', () => {
    const req = { path: '/d/a.txt', noFollow: true, expect: { dev: 1, ino: 7 }, within: undefined };
    const plain = disk();
    const kept = disk();
    const h = runSync(hashSteps({ ...req, chunkBytes: 4096, keep: true }), kept.sys);
    expect(Buffer.from(h.bytes as Uint8Array).toString()).toBe('hello');
    expect(h.sha256).toBe(sha256('hello'));
    expect(runSync(hashSteps({ ...req, chunkBytes: 4096 }), plain.sys).bytes).toBeUndefined();
    expect(kept.log).toEqual(plain.log);
  });

  it('a read error is the read step\'s, and the file is closed', () => {
    const { sys, log } = disk({ read: 'EIO' });
    expect(() => runSync(hashSteps({ path: '/d/a.txt', noFollow: true, expect: undefined, within: undefined, chunkBytes: 4096 }), sys)).toThrow(expect.objectContaining({ code: 'EIO', step: 'read' }));
    expect(log.at(-1)).toBe('close 4');
  });
});

describe('the read steps (a small file an upload opens, read whole at once)', () => {
  const req = { path: '/d/a.txt', noFollow: true, expect: { dev: 1, ino: 7 }, within: undefined };

  it('make the upload\'s calls at once: open, the checks, one read, the descriptor\'s stats after, close', () => {
    const { sys, log } = disk();
    const r = runSync(readSteps(req), sys);
    expect(log).toEqual(['open /d/a.txt', 'fstat 4', 'read 4', 'fstat 4', 'close 4']);
    expect(Buffer.from(r.bytes as Uint8Array).toString()).toBe('hello');
    expect(r).toMatchObject({ before: { size: 5, kind: 'file' }, afterHandle: { size: 5, mtimeMs: 5, ctimeMs: 6 } });
    expect(r.failed).toBeUndefined();
  });

  it('refuse another inode than the walk saw before reading a byte, and close it', () => {
    const { sys, log } = disk();
    const r = runSync(readSteps({ ...req, expect: { dev: 1, ino: 8 } }), sys);
    expect(r.refused).toBe('replaced');
    expect(r.bytes).toBeUndefined();
    expect(log.some((c) => c.startsWith('read'))).toBe(false);
    expect(log.at(-1)).toBe('close 4');
  });

  it('a read error is a fact for the reader (its step and errno), and the file is closed', () => {
    const { sys, log } = disk({ read: 'EIO' });
    const r = runSync(readSteps(req), sys);
    expect(r.failed).toMatchObject({ step: 'read', code: 'EIO' });
    expect(r.bytes).toBeUndefined();
    expect(log.at(-1)).toBe('close 4');
  });
});

describe('an upload reads the file the local side opened and checked', () => {
  const side = (fs: FakeLocal) => createLocalSide({ path: '/r', include: ['**'], exclude: [], maxFileBytes: 1e9, followSymlinks: false }, { fs });
  const ctx = { method: 'POST', path: '/upload' };

  it('sends the bytes of the file hashed, from the side\'s descriptor (the fake\'s, not a path of the real disk)', async () => {
    const fs = new FakeLocal().dir('/r').file('/r/a.txt', 'the text');
    const st = await fs.lstat('/r/a.txt');
    const file = { path: 'a.txt', diskPath: '/r/a.txt', size: st.size, mtimeMs: st.mtimeMs, dev: st.dev, ino: st.ino, sha256: sha256('the text') };
    const up = await openUpload([{ path: '/r/a.txt', name: 'a.txt', expectedSha256: file.sha256, open: () => side(fs).open!(file) }], ctx);
    expect((up.body.body as Buffer).toString()).toContain('\r\n\r\nthe text\r\n');
    await up.close();
  });

  /**
   * An upload of a.txt ("the text") as the hash saw it. `sinceHash`: what happened to it
   * between the hash and the upload; `during`: what happens to it while the open reads it.
   */
  async function uploadWhile(o: { sinceHash?: (fs: FakeLocal) => void; during?: (fs: FakeLocal) => void }): Promise<ReturnType<typeof openUpload>> {
    const fs = new FakeLocal().dir('/r').file('/r/a.txt', 'the text');
    const st = await fs.lstat('/r/a.txt');
    const file = { path: 'a.txt', diskPath: '/r/a.txt', size: st.size, mtimeMs: st.mtimeMs, dev: st.dev, ino: st.ino, sha256: sha256('the text') };
    o.sinceHash?.(fs);
    if (o.during) fs.hang('/r/a.txt', 'read');
    const outcome = openUpload([{ path: '/r/a.txt', name: 'a.txt', expectedSize: file.size, expectedMtimeMs: file.mtimeMs, expectedSha256: file.sha256, open: () => side(fs).open!(file) }], ctx);
    outcome.catch(() => undefined);
    if (o.during) {
      // The fake settles in promise turns: the read is held once the open's checks are made.
      for (let turn = 0; turn < 1000 && fs.held().length === 0; turn++) await new Promise((r) => setImmediate(r));
      expect(fs.held()).toEqual([{ call: 'read', path: '/r/a.txt' }]);
      o.during(fs);
      fs.release('/r/a.txt', 'read');
    }
    return outcome;
  }

  it('a file whose hash kept its bytes is sent from them: the upload opens and reads nothing, and counts nothing read', async () => {
    const fs = new FakeLocal().dir('/r').file('/r/a.txt', 'the text');
    const s = side(fs);
    const st = await fs.lstat('/r/a.txt');
    const walked = { path: 'a.txt', diskPath: '/r/a.txt', size: st.size, mtimeMs: st.mtimeMs, dev: st.dev, ino: st.ino, ctimeMs: st.ctimeMs };
    const h = await s.hash(walked, true);
    expect(Buffer.from(h.content as Uint8Array).toString()).toBe('the text');
    expect((await s.hash(walked)).content).toBeUndefined();
    // Larger than what an upload reads at once (fs.ts READ_AT_OPEN_MAX_BYTES): read again when sent.
    const large = Buffer.alloc(READ_AT_OPEN_MAX_BYTES + 1, 7);
    fs.file('/r/large.bin', large);
    const lst = await fs.lstat('/r/large.bin');
    const big = await s.hash({ path: 'large.bin', diskPath: '/r/large.bin', size: lst.size, mtimeMs: lst.mtimeMs, dev: lst.dev, ino: lst.ino, ctimeMs: lst.ctimeMs }, true);
    expect([big.sha256, big.content]).toEqual([sha256(large), undefined]);
    const file = { ...walked, sha256: h.sha256 };
    const [calls, read] = [fs.calls, contentBytesRead()];
    const up = await openUpload([{ path: '/r/a.txt', name: 'a.txt', expectedSize: file.size, expectedMtimeMs: file.mtimeMs, expectedSha256: file.sha256, open: () => s.open(file, h.content) }], ctx);
    expect((up.body.body as Buffer).toString()).toContain('\r\n\r\nthe text\r\n');
    expect([fs.calls, contentBytesRead()]).toEqual([calls, read]);
    await up.close();
  });

  it('kept bytes that are not the version recorded are refused like a file modified since its hash: E_FILE_CHANGED, nothing built', async () => {
    const fs = new FakeLocal().dir('/r').file('/r/a.txt', 'the text');
    const st = await fs.lstat('/r/a.txt');
    const file = { path: 'a.txt', diskPath: '/r/a.txt', size: st.size, mtimeMs: st.mtimeMs, dev: st.dev, ino: st.ino, sha256: sha256('the text') };
    const other = Buffer.from('THE TEXT');
    await expect(openUpload([{ path: '/r/a.txt', name: 'a.txt', expectedSha256: file.sha256, open: () => side(fs).open(file, other) }], ctx)).rejects.toMatchObject({
      code: 'E_FILE_CHANGED',
      ambiguous: false,
      message: expect.stringContaining('not the version that was hashed'),
    });
  });

  it('a small file is read whole as it is opened: building the body makes no call of the file\'s own', async () => {
    const fs = new FakeLocal().dir('/r').file('/r/a.txt', 'the text');
    const st = await fs.lstat('/r/a.txt');
    const file = { path: 'a.txt', diskPath: '/r/a.txt', size: st.size, mtimeMs: st.mtimeMs, dev: st.dev, ino: st.ino, sha256: sha256('the text') };
    const opened = await side(fs).open!(file);
    const callsAtOpen = fs.calls;
    const up = await openUpload([{ path: '/r/a.txt', name: 'a.txt', expectedSha256: file.sha256, open: () => Promise.resolve(opened) }], ctx);
    expect((up.body.body as Buffer).toString()).toContain('\r\n\r\nthe text\r\n');
    expect(fs.calls).toBe(callsAtOpen);
    await up.close();
  });

  for (const [what, during, message] of [
    ['grew', (fs: FakeLocal) => fs.write('/r/a.txt', 'the text, longer'), 'it grew beyond 8 bytes while being read'],
    ['shrank', (fs: FakeLocal) => fs.write('/r/a.txt', 'the'), 'it shrank while being read'],
    ['was rewritten at the same size', (fs: FakeLocal) => fs.write('/r/a.txt', 'THE TEXT', 2000), 'it was modified while being read'],
  ] as const) {
    it(`a small file that ${what} while the open read it: E_FILE_CHANGED naming it, not ambiguous, nothing built`, async () => {
      await expect(uploadWhile({ during })).rejects.toMatchObject({ code: 'E_FILE_CHANGED', file: '/r/a.txt', ambiguous: false, message: expect.stringContaining(message) });
    });
  }

  it('a small file whose read fails: E_FILE_CHANGED with the errno, as where the upload reads', async () => {
    await expect(uploadWhile({ sinceHash: (fs) => fs.fail('/r/a.txt', 'read', 'EIO') })).rejects.toMatchObject({ code: 'E_FILE_CHANGED', ambiguous: false, message: expect.stringContaining('could not be read while being read (EIO)') });
  });

  it('a small file modified in place since it was hashed (same size and mtime): E_FILE_CHANGED, not the version hashed', async () => {
    // The fake's clock stands still: the same mtime.
    await expect(uploadWhile({ sinceHash: (fs) => fs.write('/r/a.txt', 'THE TEXT') })).rejects.toMatchObject({ code: 'E_FILE_CHANGED', ambiguous: false, message: expect.stringContaining('not the version that was hashed') });
  });

  it('a small file that changed size since it was planned: E_FILE_CHANGED before a byte is judged', async () => {
    await expect(uploadWhile({ sinceHash: (fs) => fs.write('/r/a.txt', 'the text!') })).rejects.toMatchObject({ code: 'E_FILE_CHANGED', ambiguous: false, message: expect.stringContaining('size is now 9 bytes, expected 8') });
  });

  it('a small file gone since it was planned: E_FILE_CHANGED, the file is gone', async () => {
    await expect(uploadWhile({ sinceHash: (fs) => fs.remove('/r/a.txt') })).rejects.toMatchObject({ code: 'E_FILE_CHANGED', message: expect.stringContaining('the file is gone (ENOENT)') });
  });

  it('refuses another file at the path (replaced since it was hashed): E_FILE_CHANGED, nothing built', async () => {
    const fs = new FakeLocal().dir('/r').file('/r/a.txt', 'the text');
    const st = await fs.lstat('/r/a.txt');
    fs.remove('/r/a.txt');
    fs.file('/r/a.txt', 'the text');
    const file = { path: 'a.txt', diskPath: '/r/a.txt', size: st.size, mtimeMs: st.mtimeMs, dev: st.dev, ino: st.ino, sha256: sha256('the text') };
    await expect(openUpload([{ path: '/r/a.txt', name: 'a.txt', open: () => side(fs).open!(file) }], ctx)).rejects.toMatchObject({ code: 'E_FILE_CHANGED', message: expect.stringContaining('replaced by another file') });
  });
});

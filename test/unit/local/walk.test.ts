import { describe, expect, it } from 'vitest';
import { DEFAULT_INCLUDE } from '../../../src/config/schema.js';
import { createFilter } from '../../../src/local/filters.js';
import { FileAccessError, FileChangedError, FileReadError, FileVanishedError } from '../../../src/local/errors.js';
import { hashFile } from '../../../src/local/hash.js';
import { createLocalSide } from '../../../src/local/side.js';
import { diskPathOf } from '../../../src/local/paths.js';
import { walkTree } from '../../../src/local/walk.js';
import { FakeLocal } from '../../helpers/fake-local.js';
import { LINK_TREE } from '../../helpers/link-tree.js';

const filter = createFilter({ include: DEFAULT_INCLUDE, exclude: [] });

function tree(): FakeLocal {
  return new FakeLocal()
    .dir('/r')
    .file('/r/a.txt', 'a')
    .dir('/r/locked')
    .file('/r/locked/secret.txt', 's')
    .dir('/r/ok')
    .file('/r/ok/b.md', 'bb');
}

describe('walkTree on a fake filesystem: failures', () => {
  it('records an unreadable subfolder and walks the rest', async () => {
    const fs = tree().fail('/r/locked', 'readdir', 'EACCES');
    const w = await walkTree('/r', filter, { fs });
    expect(w.rootStatus).toBe('ok');
    expect([...w.files.keys()].sort()).toEqual(['a.txt', 'ok/b.md']);
    expect(w.errors).toEqual([
      { path: 'locked', kind: 'dir', code: 'EACCES', message: 'cannot list the folder: permission denied (EACCES)' },
    ]);
  });

  it('records a file whose size cannot be read', async () => {
    const w = await walkTree('/r', filter, { fs: tree().fail('/r/ok/b.md', 'lstat', 'EIO') });
    expect(w.files.has('ok/b.md')).toBe(false);
    expect(w.errors).toEqual([expect.objectContaining({ path: 'ok/b.md', kind: 'file', code: 'EIO' })]);
  });

  it('reports an unreadable root as such, with no files', async () => {
    const w = await walkTree('/r', filter, { fs: tree().fail('/r', 'readdir', 'EACCES') });
    expect(w.rootStatus).toBe('unreadable');
    expect(w.files.size).toBe(0);
    expect(w.rootError?.code).toBe('EACCES');
  });

  it('reports a root on a dead network mount (stat fails) as unreadable', async () => {
    const w = await walkTree('/r', filter, { fs: tree().fail('/r', 'stat', 'ESTALE') });
    expect(w.rootStatus).toBe('unreadable');
  });

  it('reports a missing root and a root that is a file', async () => {
    expect((await walkTree('/nope', filter, { fs: tree() })).rootStatus).toBe('missing');
    expect((await walkTree('/r/a.txt', filter, { fs: tree() })).rootStatus).toBe('not-a-directory');
  });

  it('reports the root as missing when it vanished during the walk (unmount)', async () => {
    const fs = tree();
    const readdir = fs.readdir.bind(fs);
    fs.readdir = async (p) => {
      const out = await readdir(p);
      if (p === '/r/ok') fs.remove('/r');
      return out;
    };
    const w = await walkTree('/r', filter, { fs });
    expect(w.rootStatus).toBe('missing');
    expect(w.files.size).toBe(0);
  });

  it('stops with the abort reason when aborted', async () => {
    const ac = new AbortController();
    ac.abort(new Error('stopping'));
    await expect(walkTree('/r', filter, { fs: tree(), signal: ac.signal })).rejects.toThrow('stopping');
  });
});

describe('walkTree on a fake filesystem: symbolic links (the tree test/integration/local/walk.test.ts walks on a disk)', () => {
  /** LINK_TREE below /l, and /l/root-link -> root. */
  function linked(): FakeLocal {
    const fs = new FakeLocal();
    for (const [path, content] of Object.entries(LINK_TREE.files)) fs.file(`/l/${path}`, content);
    for (const [path, target] of LINK_TREE.links) fs.link(`/l/${path}`, target.startsWith('/') ? `/l${target}` : target);
    return fs.link('/l/root-link', LINK_TREE.root);
  }
  const paths = (w: Awaited<ReturnType<typeof walkTree>>): string[] => [...w.files.keys()].sort();

  it('are not followed by default, and are reported, as on a disk', async () => {
    const w = await walkTree('/l/root', filter, { fs: linked() });
    expect(paths(w)).toEqual(LINK_TREE.notFollowed.files);
    expect(w.skipped.map((s) => [s.path, s.reason])).toEqual(LINK_TREE.notFollowed.skipped);
  });

  it('with followSymlinks, are followed inside the root only, and loops are cut, as on a disk', async () => {
    const w = await walkTree('/l/root', filter, { fs: linked(), followSymlinks: true });
    expect(paths(w)).toEqual(LINK_TREE.followed.files);
    expect(w.files.get('link-to-file.txt')).toMatchObject({ size: 1 });
    expect(diskPathOf('/l/root', w.files.get('link-to-file.txt')!)).toBe('/l/root/link-to-file.txt');
    expect(w.skipped.map((s) => [s.path, s.reason])).toEqual(LINK_TREE.followed.skipped);
  });

  it('a mapped folder that is itself a link is walked; a link that loops is ELOOP', async () => {
    const fs = linked().link('/l/root/a', 'b').link('/l/root/b', 'a');
    expect(paths(await walkTree('/l/root-link', filter, { fs }))).toEqual(LINK_TREE.notFollowed.files);
    await expect(fs.stat('/l/root/a')).rejects.toMatchObject({ code: 'ELOOP' });
    expect((await fs.lstat('/l/root/a')).isSymbolicLink()).toBe(true);
  });

  it('a hash refuses a file replaced by a link when links are not followed (noFollow: ELOOP)', async () => {
    const err = await hashFile('/l/root/link-to-file.txt', { fs: linked(), noFollow: true }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(FileChangedError);
    expect((err as Error).message).toContain('it was replaced by a symbolic link');
    expect(await hashFile('/l/root/link-to-file.txt', { fs: linked() })).toMatchObject({ size: 1 });
  });
});

describe('walkTree on a fake filesystem: its queue', () => {
  /** 3 folders of 20 files, each folder with a subfolder of 20 more. */
  function wide(): FakeLocal {
    const fs = new FakeLocal().dir('/w');
    for (const d of ['a', 'b', 'c']) {
      fs.dir(`/w/${d}`).dir(`/w/${d}/deep`);
      for (let i = 0; i < 20; i++) fs.file(`/w/${d}/f${i}.txt`, 'x').file(`/w/${d}/deep/g${i}.txt`, 'y');
    }
    return fs;
  }

  it('looks at no more folders at once than its concurrency (one listFolder each: its entries and its files\' lstats)', async () => {
    const fs = wide();
    let inFlight = 0;
    let most = 0;
    const listFolder = fs.listFolder.bind(fs);
    fs.listFolder = async (p, o) => {
      most = Math.max(most, ++inFlight);
      await new Promise((r) => setImmediate(r));
      try {
        return await listFolder(p, o);
      } finally {
        inFlight--;
      }
    };
    const w = await walkTree('/w', filter, { fs, concurrency: 2 });
    expect(w.files.size).toBe(120);
    expect(most).toBe(2);
  });

  it('goes deep before wide: a subfolder is listed before the folders after its parent', async () => {
    const fs = wide();
    const listed: string[] = [];
    const readdir = fs.readdir.bind(fs);
    fs.readdir = async (p) => {
      listed.push(p);
      return readdir(p);
    };
    await walkTree('/w', filter, { fs, concurrency: 1 });
    // Last in, first out: the last folder listed at the root is walked first, down to its subfolder.
    expect(listed.slice(0, 3)).toEqual(['/w', '/w/c', '/w/c/deep']);
  });
});

describe('walkTree: files the caller vouches for (a restart over unchanged files)', () => {
  const NFC = 'caf\u00e9.txt';
  const NFD = NFC.normalize('NFD');

  it('keeps the paths of vouched files only, and is asked only where the disk path is join(root, path)', async () => {
    const fs = tree().dir('/r/Cafe\u0301').file('/r/Cafe\u0301/x.txt', 'x').file(`/r/${NFD}`, 'd');
    const asked: string[] = [];
    const w = await walkTree('/r', filter, {
      fs,
      vouch: (path, st) => {
        asked.push(path);
        return path !== 'a.txt' && st.size > 0;
      },
    });
    // Names stored in NFD (a macOS client) have another disk path: always looked at whole.
    expect(asked.sort()).toEqual(['a.txt', 'locked/secret.txt', 'ok/b.md']);
    expect([...w.vouched].sort()).toEqual(['locked/secret.txt', 'ok/b.md']);
    expect([...w.files.keys()].sort()).toEqual(['Caf\u00e9/x.txt', 'a.txt', NFC].sort());
  });

  it('is not asked in a walk of subtrees', async () => {
    const w = await walkTree('/r', filter, { fs: tree(), subtrees: ['ok'], vouch: () => true });
    expect([...w.vouched]).toEqual([]);
    expect([...w.files.keys()]).toEqual(['ok/b.md']);
  });

  it('settles a name collision with a vouched file by disk path, whichever is listed first', async () => {
    for (const reversed of [false, true]) {
      const fs = new FakeLocal().dir('/r').file(`/r/${NFC}`, 'nfc').file(`/r/${NFD}`, 'nfd!');
      // The fake lists by name: the other order is its listing reversed.
      const readdir = fs.readdir;
      if (reversed) fs.readdir = async (p) => (await readdir(p)).reverse();
      const w = await walkTree('/r', filter, { fs, vouch: () => true });
      const [keep, drop] = [`/r/${NFC}`, `/r/${NFD}`].sort();
      expect(w.skipped).toEqual([expect.objectContaining({ path: NFC, reason: 'name-collision', diskPath: drop })]);
      if (keep === `/r/${NFC}`) {
        expect([...w.vouched]).toEqual([NFC]);
        expect(w.files.size).toBe(0);
      } else {
        expect([...w.vouched]).toEqual([]);
        expect(w.files.get(NFC)?.diskPath).toBe(keep);
      }
    }
  });
});

describe('LocalSide: what the engine is told', () => {
  const mapping = { path: '/r', include: DEFAULT_INCLUDE, exclude: [], ignoreFile: '.dssyncignore', maxFileBytes: 5, followSymlinks: false };

  it('keeps documents under unreadable folders and of unreadable or too large files', async () => {
    const fs = tree().file('/r/big.txt', '0123456789').fail('/r/locked', 'readdir', 'EACCES').fail('/r/ok/b.md', 'lstat', 'EIO');
    const scan = await createLocalSide(mapping, { fs }).scan();
    expect([...scan.files.keys()]).toEqual(['a.txt']);
    expect(scan.unreadableDirs).toEqual(['locked']);
    expect(scan.skipped).toEqual([
      // Excluded by a setting: named, yet it does not make the pass incomplete.
      { path: 'big.txt', reason: 'excluded: larger than maxFileBytes (10 > 5 bytes); raise maxFileBytes to mirror it', excluded: true },
      // Reported, so that status says why the files below it are not mirrored.
      { path: 'locked/', reason: 'cannot list the folder: permission denied (EACCES); the documents of its files are kept as they are' },
      { path: 'ok/b.md', reason: 'cannot read its size and time: input/output error (EIO)' },
    ]);
  });

  it('treats an unreadable ignore file as an outage, not as "no rules"', async () => {
    const fs = tree().file('/r/.dssyncignore', 'locked/').fail('/r/.dssyncignore', 'readFile', 'EACCES');
    const scan = await createLocalSide(mapping, { fs }).scan();
    expect(scan.rootStatus).toBe('unreadable');
    expect(scan.files.size).toBe(0);
  });

  it('applies the ignore file', async () => {
    const fs = tree().file('/r/.dssyncignore', 'locked/\n');
    const scan = await createLocalSide(mapping, { fs }).scan();
    expect([...scan.files.keys()].sort()).toEqual(['a.txt', 'ok/b.md']);
  });
});

describe('hashFile on a fake filesystem: typed failures', () => {
  it('throws FileAccessError naming the file on EACCES', async () => {
    const err = await hashFile('/r/a.txt', { fs: tree().fail('/r/a.txt', 'open', 'EACCES') }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(FileAccessError);
    expect((err as Error).message).toBe('/r/a.txt cannot be read: permission denied (EACCES); give the user dssync runs as read access');
  });
  it('throws FileVanishedError when the file is gone', async () => {
    await expect(hashFile('/r/gone.txt', { fs: tree() })).rejects.toBeInstanceOf(FileVanishedError);
  });
  it('throws FileReadError with the code on an I/O error mid-read', async () => {
    const err = await hashFile('/r/a.txt', { fs: tree().fail('/r/a.txt', 'read', 'EIO') }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(FileReadError);
    expect(err).toMatchObject({ code: 'E_LOCAL_IO', errno: 'EIO', path: '/r/a.txt', message: '/r/a.txt cannot be read: input/output error (EIO)' });
  });
});

import { describe, expect, it } from 'vitest';
import { isAbsolute, join, relative } from 'node:path';
import { ancestorsOf, baseName, isInside, joinRel, joinUnder, normalizeRelPath, parentRel, relativeUnder, toRelPath } from '../../../src/local/paths.js';

const NFD = 'Re\u0301union.txt';
const NFC = 'R\u00e9union.txt';

describe('relative paths', () => {
  it('are POSIX, relative to the root, and NFC', () => {
    expect(toRelPath('/srv/share', `/srv/share/a/${NFD}`)).toBe(`a/${NFC}`);
    expect(toRelPath('/srv/share/', '/srv/share/a b/#1%.txt')).toBe('a b/#1%.txt');
  });
  it('are undefined for the root itself and for paths outside it', () => {
    expect(toRelPath('/srv/share', '/srv/share')).toBeUndefined();
    expect(toRelPath('/srv/share', '/srv/shared/x.txt')).toBeUndefined();
    expect(toRelPath('/srv/share', '/srv/x.txt')).toBeUndefined();
  });
  it('map an NFD name and its NFC twin to the same identity', () => {
    expect(joinRel('dir', NFD)).toBe(joinRel('dir', NFC));
    expect(joinRel('', NFD)).toBe(NFC);
    expect(normalizeRelPath(`./x//${NFD}`)).toBe(`x/${NFC}`);
  });
  it('split into name, parent and ancestors', () => {
    expect(baseName('a/b/c.txt')).toBe('c.txt');
    expect(baseName('c.txt')).toBe('c.txt');
    expect(parentRel('a/b/c.txt')).toBe('a/b');
    expect(parentRel('c.txt')).toBe('');
    expect(ancestorsOf('a/b/c.txt')).toEqual(['a', 'a/b']);
    expect(ancestorsOf('c.txt')).toEqual([]);
  });
  it('tell whether a path is inside a folder without prefix confusion', () => {
    expect(isInside('/srv/share', '/srv/share/a')).toBe(true);
    expect(isInside('/srv/share', '/srv/share')).toBe(true);
    expect(isInside('/srv/share', '/srv/shared')).toBe(false);
  });
});

describe('joinUnder and relativeUnder: join() and relative() without their normalising where it changes nothing', () => {
  const roots = ['/srv/share', '/', '/srv/share/', '/srv//share', '/srv/./share', '/srv/x/../share', 'relative/root', '/srv/shäre'];
  const rels = ['a.txt', 'sub/deep/b.txt', '', '.', '..', '../escape.txt', 'a/../b', './a', 'a//b', 'a/', '/abs', 'sub/.hidden', 'sub/..x', '..x', 'é/ü.txt'];

  it('joinUnder(root, rel) is join(root, rel), whatever either is', () => {
    for (const root of roots) for (const rel of rels) expect(joinUnder(root, rel), `${root} + ${rel}`).toBe(join(root, rel));
  });

  it('relativeUnder(root, path) is relative(root, path) for a path under root, undefined for root itself or outside it', () => {
    for (const root of roots) {
      for (const rel of rels) {
        const path = join(root, rel);
        const r = relative(root, path);
        const expected = r === '' || r === '..' || r.startsWith('../') || isAbsolute(r) ? undefined : r;
        expect(relativeUnder(root, path), `${root} / ${path}`).toBe(expected);
        // A path as written, not normalised: the same answer as relative() gives it.
        const raw = `${root}/${rel}`;
        const rr = relative(root, raw);
        expect(relativeUnder(root, raw), `${root} / ${raw}`).toBe(rr === '' || rr === '..' || rr.startsWith('../') || isAbsolute(rr) ? undefined : rr);
      }
    }
    expect(relativeUnder('/srv/share', '/srv/shared/a.txt')).toBeUndefined();
    expect(relativeUnder('/srv/share', '/srv/share')).toBeUndefined();
  });
});

import { describe, expect, it } from 'vitest';
import { ancestorsOf, baseName, isInside, joinRel, normalizeRelPath, parentRel, toRelPath } from '../../../src/local/paths.js';

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

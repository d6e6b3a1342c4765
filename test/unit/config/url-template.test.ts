import { posix } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { renderUrlTemplate } from '../../../src/config/url-template.js';
import { absPathOf } from '../../../src/engine/document-fields.js';
import { parseListenAddress, isLoopbackHost } from '../../../src/config/listen.js';

describe('renderUrlTemplate', () => {
  const values = { absPath: '/srv/share/Q&A #1/100% sure?.txt', relPath: 'Q&A #1/100% sure?.txt', mappingId: 'ds:1' };
  it('percent-encodes each path segment of the default file:// URL and keeps the slashes', () => {
    const url = renderUrlTemplate('file://{absPath}', values);
    expect(url).toBe('file:///srv/share/Q%26A%20%231/100%25%20sure%3F.txt');
    expect(decodeURIComponent(new URL(url).pathname)).toBe(values.absPath);
  });
  it('fills {relPath}, {name} and {mappingId}', () => {
    expect(renderUrlTemplate('https://intra.example.com/{mappingId}/{relPath}?n={name}', values)).toBe(
      'https://intra.example.com/ds%3A1/Q%26A%20%231/100%25%20sure%3F.txt?n=100%25%20sure%3F.txt',
    );
  });
  it('encodes non-ASCII names in their NFC form, whatever form the path came in', () => {
    const nfd = 'Re\u0301union.txt';
    const url = renderUrlTemplate('file://{absPath}', { absPath: `/s/${nfd}`, relPath: nfd, mappingId: 'm' });
    expect(url).toBe('file:///s/R%C3%A9union.txt');
  });
});

/** The rendering as it was written first (a regex replace, every segment encoded): the fast paths must give the same. */
function referenceRender(template: string, v: { absPath: string; relPath: string; mappingId: string }): string {
  const seg = (p: string): string => p.split('/').map((s) => encodeURIComponent(s)).join('/');
  const name = v.relPath.slice(v.relPath.lastIndexOf('/') + 1);
  return template.replace(/\{([^{}]*)\}/g, (whole, key: string) =>
    key === 'absPath' ? seg(v.absPath.normalize('NFC')) : key === 'relPath' ? seg(v.relPath.normalize('NFC')) : key === 'name' ? encodeURIComponent(name.normalize('NFC')) : key === 'mappingId' ? encodeURIComponent(v.mappingId) : whole,
  );
}

describe('the URL of a million documents, rendered fast, is the URL as defined', () => {
  // Segments from an alphabet that mixes the unreserved characters with every kind the fast
  // paths must hand over: reserved ones, spaces, percent signs, NFD accents, non-BMP, dots.
  const segment = fc.string({ unit: fc.constantFrom('a', 'Z', '0', '-', '_', '.', '~', '(', "'", '*', '!', ' ', '#', '%', '?', '&', 'e\u0301', 'é', '😀', '\\', ':'), minLength: 0, maxLength: 6 });
  const relPath = fc.array(segment, { minLength: 1, maxLength: 4 }).map((s) => s.join('/'));
  const root = fc.constantFrom('/srv/share', '/srv/share/', '/', '/srv//a b/./x', 'C:\\share\\docs', '/srv/../srv/share');
  const template = fc.constantFrom('file://{absPath}', 'https://intra.example.com/{mappingId}/{relPath}?n={name}', '{relPath}#{unknown}{name}', 'x{absPath}{absPath}y');

  it('renderUrlTemplate equals the reference rendering', () => {
    fc.assert(
      fc.property(template, root, relPath, fc.constantFrom('m', 'ds:1', 'a b'), (t, r, rel, mappingId) => {
        const absPath = posix.join(r, rel);
        expect(renderUrlTemplate(t, { absPath, relPath: rel, mappingId })).toBe(referenceRender(t, { absPath, relPath: rel, mappingId }));
      }),
      { numRuns: 2000 },
    );
  });

  it('absPathOf equals posix.join of the normalised folder and the path, for any path', () => {
    fc.assert(
      fc.property(root, relPath, (r, rel) => {
        expect(absPathOf(r, rel)).toBe(posix.join(r.split('\\').join('/'), rel));
      }),
      { numRuns: 2000 },
    );
  });
});

describe('status.listen addresses', () => {
  it.each([
    ['127.0.0.1:8787', { host: '127.0.0.1', port: 8787 }],
    ['localhost:0', { host: 'localhost', port: 0 }],
    ['[::1]:9000', { host: '::1', port: 9000 }],
  ])('parses %s', (text, expected) => {
    expect(parseListenAddress(text)).toEqual(expected);
  });
  it.each(['8787', ':8787', '127.0.0.1:99999', '[notv6]:1', 'a:b'])('rejects %s with a reason', (text) => {
    expect(parseListenAddress(text)).toHaveProperty('error');
  });
  it('knows which hosts are loopback', () => {
    expect(['127.0.0.1', '127.1.2.3', '::1', 'localhost'].map(isLoopbackHost)).toEqual([true, true, true, true]);
    expect(['0.0.0.0', '::', '10.0.0.1', 'example.com'].map(isLoopbackHost)).toEqual([false, false, false, false]);
  });
});

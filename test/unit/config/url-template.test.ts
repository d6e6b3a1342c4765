import { describe, expect, it } from 'vitest';
import { renderUrlTemplate } from '../../../src/config/index.js';
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

import { describe, expect, it } from 'vitest';
import { ResponseBody } from '../../../src/api/response-body.js';

/** `whole` cut into chunks at the given offsets. */
function cut(whole: Buffer, at: number[]): Buffer[] {
  const edges = [0, ...at, whole.length];
  return edges.slice(1).map((end, i) => Buffer.from(whole.subarray(edges[i], end)));
}

describe('ResponseBody', () => {
  // What a user depends on: a listing's page read in chunks decodes to the very text one
  // buffer would (names in every script, a character split between two chunks).
  const text = '\ufeff{"items":[{"name":"Fichier été.txt"},{"name":"レポート😀.pdf"}],"next_cursor":"YWZ0ZXI6Mg"}';
  const whole = Buffer.from(text);

  it('decodes chunked UTF-8 as one buffer would, a character split across chunks included', () => {
    for (let a = 1; a < whole.length - 1; a += 3) {
      const body = new ResponseBody(cut(whole, [a, Math.min(whole.length - 1, a + 2)]));
      expect(body.length).toBe(whole.length);
      expect(body.text()).toBe(whole.toString('utf8'));
    }
  });

  it('replaces bytes that are not UTF-8 as Buffer.toString does', () => {
    const bad = Buffer.concat([Buffer.from('{"a":"'), Buffer.from([0xff, 0xc3, 0x28, 0xe2, 0x82]), Buffer.from('"}')]);
    expect(new ResponseBody(cut(bad, [4, 7, 9])).text()).toBe(bad.toString('utf8'));
  });

  it('gives each answer its own text when the scratch buffer is reused, a shorter after a longer', () => {
    const long = Buffer.from('x'.repeat(300_000) + 'end');
    const short = Buffer.from('{"short":true}');
    const a = new ResponseBody(cut(long, [65_536, 131_072])).text();
    const b = new ResponseBody(cut(short, [3])).text();
    expect(a).toBe(long.toString());
    expect(b).toBe('{"short":true}');
    expect(a.endsWith('end')).toBe(true); // the first text is not changed by the second decode
  });

  it('decodes an answer larger than the scratch buffer', () => {
    const big = Buffer.alloc(3 * 1024 * 1024, 'a');
    expect(new ResponseBody(cut(big, [1_000_000, 2_000_000])).text()).toBe(big.toString());
  });

  it('reads the same once made one buffer (a page kept while the state loads)', () => {
    const body = new ResponseBody(cut(whole, [7, 40]));
    body.compact();
    expect(body.length).toBe(whole.length);
    expect(body.text()).toBe(whole.toString('utf8'));
    expect(body.tail(12).equals(whole.subarray(whole.length - 12))).toBe(true);
  });

  it('gives the last bytes across chunks, and all of a short body', () => {
    const body = new ResponseBody(cut(whole, [10, whole.length - 5]));
    expect(body.tail(20).equals(whole.subarray(whole.length - 20))).toBe(true);
    expect(body.tail(5).equals(whole.subarray(whole.length - 5))).toBe(true);
    expect(body.tail(10_000).equals(whole)).toBe(true);
    expect(new ResponseBody([]).tail(8).length).toBe(0);
    expect(new ResponseBody([]).text()).toBe('');
  });
});

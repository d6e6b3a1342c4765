import { describe, expect, it } from 'vitest';
import { decodeCursor, encodeCursor, listBodyBytes, parseListQuery, toListBody } from '../../../packages/emulator/src/paging.js';

describe('list paging parameters', () => {
  it('round-trips cursors and rejects anything it did not hand out', () => {
    expect(decodeCursor(encodeCursor(0))).toBe(0);
    expect(decodeCursor(encodeCursor(123456))).toBe(123456);
    expect(decodeCursor('')).toBeUndefined();
    expect(decodeCursor('not valid!')).toBeUndefined();
    expect(decodeCursor(Buffer.from('after:-1').toString('base64url'))).toBeUndefined();
    expect(decodeCursor(Buffer.from('before:1').toString('base64url'))).toBeUndefined();
  });

  it('applies the default limit, accepts 1..1000, and names the bad parameter', () => {
    expect(parseListQuery({}, 20)).toEqual({ afterSeq: 0, limit: 20 });
    expect(parseListQuery(undefined, 20)).toEqual({ afterSeq: 0, limit: 20 });
    expect(parseListQuery({ limit: '1000', cursor: encodeCursor(7) }, 20)).toEqual({ afterSeq: 7, limit: 1000 });
    for (const limit of ['0', '1001', '-1', '1e3', ' 5', 'ten']) {
      expect(() => parseListQuery({ limit }, 20), limit).toThrow(expect.objectContaining({ statusCode: 400, details: { field: 'limit' } }));
    }
    expect(() => parseListQuery({ cursor: 'zzz' }, 20)).toThrow(expect.objectContaining({ code: 'invalid_cursor' }));
    expect(() => parseListQuery({ cursor: ['a', 'b'] }, 20)).toThrow(expect.objectContaining({ details: { field: 'cursor' } }));
  });

  it('writes a page from its items\' JSON as the very bytes of the serialised body, non-ASCII included', () => {
    const items = [
      { id: 'a', seq: 1, name: 'Réunion d\'équipe – procès-verbal.txt' },
      { id: 'b', seq: 2, name: '日本語/メモ.md', meta: { k: ['v', null, 3] } },
    ];
    const json = (i: (typeof items)[number]): string => JSON.stringify({ ...i });
    for (const page of [{ items, nextAfter: 2 }, { items, nextAfter: null }, { items: items.slice(0, 1), nextAfter: null }, { items: [], nextAfter: null }]) {
      const bytes = listBodyBytes(page, json);
      expect(bytes.toString('utf8')).toBe(JSON.stringify(toListBody(page, (i) => ({ ...i }))));
    }
  });
});

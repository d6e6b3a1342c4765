import { describe, expect, it } from 'vitest';
import { decodeCursor, encodeCursor, parseListQuery } from '../../../src/emulator/paging.js';

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
});

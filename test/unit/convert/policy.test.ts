/** A mapping's `formats` decide each file's fate (docs/formats.md); the converter's identity names what changes its output. */
import { expect, it } from 'vitest';
import { converterIdentity } from '../../../src/convert/formats.js';
import { DEFAULT_LIMITS } from '../../../src/convert/limits.js';
import { conversionOf, policyOf } from '../../../src/convert/policy.js';

it('by default: what the service reads goes as it is, the rest is converted by its converter', () => {
  expect(conversionOf('a/report.PDF', undefined)).toBeUndefined();
  expect(conversionOf('a/deck.pptx', undefined)?.converter).toBe('pptx');
  expect(conversionOf('b/book.xlsm', undefined)?.converter).toBe('xlsx');
  expect(conversionOf('mail/x.eml', {})?.converter).toBe('eml');
  expect(conversionOf('no-extension', undefined)).toBeUndefined();
  expect(conversionOf('.hidden.d/plain', undefined)).toBeUndefined();
});

it("the mapping's setting for an extension wins; convert only where a converter exists", () => {
  expect(conversionOf('t.csv', { '.csv': 'as-is' })).toBeUndefined();
  expect(policyOf('t.csv', { '.csv': 'as-is' })).toBe('as-is');
  expect(conversionOf('t.pdf', { '.pdf': 'convert' })).toBeUndefined();
  expect(policyOf('t.eml', { '.eml': 'skip' })).toBe('skip');
  expect(conversionOf('t.eml', { '.eml': 'skip' })).toBeUndefined();
});

it("the identity changes with the converter's options that change its output", () => {
  const base = converterIdentity('xlsx', DEFAULT_LIMITS);
  expect(base).toMatch(/^xlsx\/r\d+\/fflate@\d+\.\d+\.\d+\/rows=10000,bytes=8388608$/);
  expect(converterIdentity('xlsx', { ...DEFAULT_LIMITS, rowsPerSheet: 10 })).not.toBe(base);
  expect(converterIdentity('doc', DEFAULT_LIMITS)).toMatch(/^doc\/r\d+\/word-extractor@/);
});

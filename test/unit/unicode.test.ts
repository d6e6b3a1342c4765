import { describe, expect, it } from 'vitest';
import { nfc } from '../../src/unicode.js';

describe('nfc, the one normalisation of names', () => {
  it('gives the NFC form of a name stored in NFD (as macOS clients write it)', () => {
    const nfd = 'Re\u0301sume\u0301.pdf';
    expect(nfc(nfd)).toBe('R\u00e9sum\u00e9.pdf');
    expect(nfc(nfd)).toBe(nfd.normalize('NFC'));
  });

  it('returns ASCII and NFC text as it is', () => {
    for (const s of ['', 'a/b c.txt', '~$x.docx', '\u00e9t\u00e9/\u65e5\u672c.txt', 'emoji \u{1F600}.md']) expect(nfc(s)).toBe(s.normalize('NFC'));
  });
});

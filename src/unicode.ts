/**
 * The one Unicode normalisation of names (issue 27.6): dssync identifies a file name, a path
 * and a document's name in NFC, so a name stored in NFD (as macOS clients write it) is the
 * same file (docs/config.md, "Which files are mirrored"). Every comparison of names goes
 * through here.
 *
 * ASCII text is always NFC: it is returned as it is without asking `normalize`, which
 * allocates and, over a million paths, costs more than the test.
 */
/** Any character past ASCII (UTF-16 code units 0x80 and up, surrogates included). */
const NON_ASCII = /[\u0080-\uffff]/;

export function nfc(text: string): string {
  return NON_ASCII.test(text) ? text.normalize('NFC') : text;
}

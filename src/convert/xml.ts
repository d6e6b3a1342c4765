/**
 * A small XML tokenizer for the documents office suites write (well-formed, no DTD): open and
 * close tags with their attribute text, text with entities decoded. Enough to read text out of
 * OOXML, ODF and XHTML without building a tree, so a large sheet costs its text, not a DOM.
 */

export type XmlToken = { kind: 'open'; name: string; attrs: string; selfClosing: boolean } | { kind: 'close'; name: string } | { kind: 'text'; text: string };

const TOKEN_SOURCE = /<!\[CDATA\[([\s\S]*?)\]\]>|<!--[\s\S]*?-->|<[?!][\s\S]*?>|<(\/?)([A-Za-z_][\w:.-]*)((?:[^>"']|"[^"]*"|'[^']*')*?)(\/?)>|([^<]+)/.source;
const NAMED: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: '\u00a0' };

export function decodeEntities(s: string): string {
  if (!s.includes('&')) return s;
  return s.replace(/&(#x[0-9a-fA-F]+|#[0-9]+|[A-Za-z]+);/g, (m, e: string) => {
    if (e.startsWith('#x')) return safeCodePoint(parseInt(e.slice(2), 16)) ?? m;
    if (e.startsWith('#')) return safeCodePoint(parseInt(e.slice(1), 10)) ?? m;
    return NAMED[e] ?? m;
  });
}

function safeCodePoint(n: number): string | undefined {
  return Number.isInteger(n) && n > 0 && n <= 0x10ffff ? String.fromCodePoint(n) : undefined;
}

export function* xmlTokens(xml: string): Generator<XmlToken> {
  // One expression per walk: walks nest (a workbook's, then each sheet's).
  const token = new RegExp(TOKEN_SOURCE, 'g');
  for (let m = token.exec(xml); m !== null; m = token.exec(xml)) {
    if (m[1] !== undefined) yield { kind: 'text', text: m[1] };
    else if (m[6] !== undefined) yield { kind: 'text', text: decodeEntities(m[6]) };
    else if (m[3] !== undefined) {
      if (m[2] === '/') yield { kind: 'close', name: m[3] };
      else yield { kind: 'open', name: m[3], attrs: m[4] ?? '', selfClosing: m[5] === '/' };
    }
  }
}

/** The value of attribute `name` in a tag's attribute text, entities decoded. */
export function attr(attrs: string, name: string): string | undefined {
  const m = new RegExp(`(?:^|\\s)${name.replace(/[.:-]/g, '\\$&')}\\s*=\\s*(?:"([^"]*)"|'([^']*)')`).exec(attrs);
  return m ? decodeEntities(m[1] ?? m[2] ?? '') : undefined;
}

/** The local part of a qualified name (`a:t` → `t`). */
export function local(name: string): string {
  const i = name.indexOf(':');
  return i < 0 ? name : name.slice(i + 1);
}

/**
 * The document URL template of a mapping (`urlTemplate`, default `file://{absPath}`).
 * Placeholders are replaced with percent-encoded values: path placeholders keep their `/`
 * separators and encode each segment, so `/srv/a b#1.txt` becomes `file:///srv/a%20b%231.txt`.
 */
import { nfc } from '../unicode.js';

export const URL_PLACEHOLDERS = ['absPath', 'relPath', 'name', 'mappingId'] as const;

export const DEFAULT_URL_TEMPLATE = 'file://{absPath}';

export interface UrlValues {
  /** Absolute POSIX path of the file (the mapped folder + the NFC relative path). */
  absPath: string;
  /** Path relative to the mapped folder, POSIX separators, NFC. */
  relPath: string;
  /** The mapping id. */
  mappingId: string;
}

/**
 * Characters encodeURIComponent leaves as they are, and `/`: a path made of these alone
 * (ASCII, so NFC already) encodes to itself. Nearly every path is such a path, and a
 * restart renders the URL of every document it confirms (a million at a million files):
 * the test is ~10x cheaper than a split, an encode per segment and a join.
 */
const UNRESERVED_PATH = /^[A-Za-z0-9\-_.!~*'()/]*$/;

/** Encodes each `/`-separated segment; the separators stay. */
export function encodePathSegments(path: string): string {
  if (UNRESERVED_PATH.test(path)) return path;
  return path
    .split('/')
    .map((s) => encodeURIComponent(s))
    .join('/');
}

/** A template split once into its text and its placeholders (a restart renders it a million times). */
type Part = string | { key: string; whole: string };
const compiled = new Map<string, Part[]>();

function partsOf(template: string): Part[] {
  let parts = compiled.get(template);
  if (parts === undefined) {
    parts = [];
    let at = 0;
    for (const m of template.matchAll(/\{([^{}]*)\}/g)) {
      if (m.index > at) parts.push(template.slice(at, m.index));
      parts.push({ key: m[1] ?? '', whole: m[0] });
      at = m.index + m[0].length;
    }
    if (at < template.length) parts.push(template.slice(at));
    // A handful of templates per daemon; bounded all the same.
    if (compiled.size >= 64) compiled.clear();
    compiled.set(template, parts);
  }
  return parts;
}

export function renderUrlTemplate(template: string, values: UrlValues): string {
  let out = '';
  for (const part of partsOf(template)) {
    if (typeof part === 'string') {
      out += part;
      continue;
    }
    switch (part.key) {
      case 'absPath':
        out += encodePathSegments(nfc(values.absPath));
        break;
      case 'relPath':
        out += encodePathSegments(nfc(values.relPath));
        break;
      case 'name':
        out += encodeURIComponent(nfc(values.relPath.slice(values.relPath.lastIndexOf('/') + 1)));
        break;
      case 'mappingId':
        out += encodeURIComponent(values.mappingId);
        break;
      default:
        out += part.whole;
    }
  }
  return out;
}

/** NFC form; an unreserved path is its own (ASCII), without the call. */

/** Returns why a template is unusable, or undefined when it is fine. */
export function checkUrlTemplate(template: string): string | undefined {
  for (const m of template.matchAll(/\{([^{}]*)\}/g)) {
    const key = m[1] ?? '';
    if (!(URL_PLACEHOLDERS as readonly string[]).includes(key)) {
      return `unknown placeholder {${key}}; the placeholders are ${URL_PLACEHOLDERS.map((p) => `{${p}}`).join(', ')}`;
    }
  }
  const sample = renderUrlTemplate(template, { absPath: '/srv/share/a b/c.txt', relPath: 'a b/c.txt', mappingId: 'ds:1' });
  try {
    new URL(sample);
  } catch {
    return `does not produce an absolute URL (with a sample file it gives "${sample}"); start it with a scheme, e.g. "file://{absPath}" or "https://intranet.example.com/share/{relPath}"`;
  }
  return undefined;
}

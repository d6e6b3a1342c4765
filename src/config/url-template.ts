/**
 * The document URL template of a mapping (`urlTemplate`, default `file://{absPath}`).
 * Placeholders are replaced with percent-encoded values: path placeholders keep their `/`
 * separators and encode each segment, so `/srv/a b#1.txt` becomes `file:///srv/a%20b%231.txt`.
 */

export const URL_PLACEHOLDERS = ['absPath', 'relPath', 'name', 'mappingId'] as const;
export type UrlPlaceholder = (typeof URL_PLACEHOLDERS)[number];

export const DEFAULT_URL_TEMPLATE = 'file://{absPath}';

export interface UrlValues {
  /** Absolute POSIX path of the file (the mapped folder + the NFC relative path). */
  absPath: string;
  /** Path relative to the mapped folder, POSIX separators, NFC. */
  relPath: string;
  /** The mapping id. */
  mappingId: string;
}

/** Encodes each `/`-separated segment; the separators stay. */
export function encodePathSegments(path: string): string {
  return path
    .split('/')
    .map((s) => encodeURIComponent(s))
    .join('/');
}

export function renderUrlTemplate(template: string, values: UrlValues): string {
  const name = values.relPath.slice(values.relPath.lastIndexOf('/') + 1);
  return template.replace(/\{([^{}]*)\}/g, (whole, key: string) => {
    switch (key) {
      case 'absPath':
        return encodePathSegments(values.absPath.normalize('NFC'));
      case 'relPath':
        return encodePathSegments(values.relPath.normalize('NFC'));
      case 'name':
        return encodeURIComponent(name.normalize('NFC'));
      case 'mappingId':
        return encodeURIComponent(values.mappingId);
      default:
        return whole;
    }
  });
}

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

/**
 * The document name is the part's filename as the client sent it: a relative path with
 * `/` is kept whole, UTF-8 is decoded (raw `filename=` and RFC 5987 `filename*=`), and the
 * one escape that WHATWG FormData applies to names (`"` sent as `%22`) is undone.
 */
import { EmulatorError } from './errors.js';
import type { FaultOptions, NameRewrite } from './options.js';

/** The name a service that rewrites names (FaultOptions.rewriteNames) stores. */
export function rewriteName(name: string, how: NameRewrite | undefined): string {
  switch (how) {
    case 'quoted':
      return name.replace(/\\(.)/g, '$1');
    case 'basename':
      return name.slice(name.lastIndexOf('/') + 1);
    case 'trim':
      return name.trim();
    case 'nfd':
      return name.normalize('NFD');
    default:
      return name;
  }
}

/**
 * The name a service that rewrites every name it stores keeps (FaultOptions.nameRules, then
 * nameMaxBytes), at an upload as at an update: lower-cased, the extension dropped, " (1)"
 * appended, in that order, then cut to at most nameMaxBytes UTF-8 bytes (on a character's
 * boundary).
 */
export function storedName(name: string, faults: Pick<FaultOptions, 'nameRules' | 'nameMaxBytes'>): string {
  const rules = faults.nameRules ?? [];
  let out = rules.includes('lower') ? name.toLowerCase() : name;
  if (rules.includes('no-extension')) {
    const slash = out.lastIndexOf('/');
    const dot = out.lastIndexOf('.');
    if (dot > slash + 1) out = out.slice(0, dot);
  }
  if (rules.includes('suffix')) out += ' (1)';
  const max = faults.nameMaxBytes;
  if (max === undefined || Buffer.byteLength(out) <= max) return out;
  let cut = '';
  let bytes = 0;
  for (const ch of out) {
    const n = Buffer.byteLength(ch);
    if (bytes + n > max) break;
    bytes += n;
    cut += ch;
  }
  return cut;
}

export const MAX_NAME_LENGTH = 1024;

export function documentNameFromPart(filename: string | undefined): string {
  const name = (filename ?? '').replaceAll('%22', '"');
  if (name.trim() === '') {
    throw new EmulatorError(400, 'invalid_request', 'a documents part has no filename: every file part needs filename="..."', {
      field: 'documents',
    });
  }
  if (name.length > MAX_NAME_LENGTH) {
    throw new EmulatorError(400, 'invalid_request', `file name is longer than ${MAX_NAME_LENGTH} characters: "${name.slice(0, 80)}..."`, {
      field: 'documents',
      file: name.slice(0, MAX_NAME_LENGTH),
    });
  }
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(name)) {
    throw new EmulatorError(400, 'invalid_request', `file name ${JSON.stringify(name)} contains control characters`, {
      field: 'documents',
      file: name,
    });
  }
  return name;
}

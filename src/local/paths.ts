/**
 * Relative paths, the identity of a file within a mapping: POSIX separators, no leading
 * "./", Unicode NFC. A name stored on disk in NFD (as macOS clients often write it onto
 * shares) maps to the same NFC relative path as its NFC twin, so the document keeps its
 * identity whichever form the bytes on disk use; the on-disk form is kept separately
 * (`diskPath`) for reading, only where it is not join(root, path): see diskPathOf.
 */
import { isAbsolute, join, relative, sep } from 'node:path';
import { nfc } from '../unicode.js';

/**
 * Where a walked file lies on disk: the disk path the walk kept for it when a name on its way
 * is stored in another Unicode form, else join(root, path). Not stored for every file: a
 * million records would hold ~110 MB of disk paths through a first mirror.
 */
export function diskPathOf(root: string, file: { path: string; diskPath?: string | undefined }): string {
  return file.diskPath ?? join(root, file.path);
}

/** Joins a relative directory path ('' = the root) and an entry name, normalised. */
export function joinRel(dir: string, name: string): string {
  return dir === '' ? nfc(name) : `${dir}/${nfc(name)}`;
}

/**
 * The relative path of `absPath` under `root`, POSIX and NFC; undefined when `absPath` is
 * the root itself or lies outside it.
 */
export function toRelPath(root: string, absPath: string): string | undefined {
  const rel = relative(root, absPath);
  if (rel === '' || rel === '..' || rel.startsWith(`..${sep}`) || isAbsolute(rel)) return undefined;
  return normalizeRelPath(rel);
}

/** Normalises a relative path: POSIX separators, no empty or "." segments, NFC. */
export function normalizeRelPath(rel: string): string {
  return nfc(rel.split(sep === '/' ? '/' : /[\\/]/).filter((s) => s !== '' && s !== '.').join('/'));
}

/** True when `child` is `parent` or lies below it (both absolute, normalised). */
export function isInside(parent: string, child: string): boolean {
  if (child === parent) return true;
  const withSep = parent.endsWith(sep) ? parent : parent + sep;
  return child.startsWith(withSep);
}

/** Last segment of a relative path. */
export function baseName(rel: string): string {
  return rel.slice(rel.lastIndexOf('/') + 1);
}

/** Parent of a relative path; '' for a top-level entry. */
export function parentRel(rel: string): string {
  const i = rel.lastIndexOf('/');
  return i < 0 ? '' : rel.slice(0, i);
}

/** The ancestors of a relative path, outermost first: 'a/b/c' -> ['a', 'a/b']. */
export function ancestorsOf(rel: string): string[] {
  const out: string[] = [];
  let i = rel.indexOf('/');
  while (i >= 0) {
    out.push(rel.slice(0, i));
    i = rel.indexOf('/', i + 1);
  }
  return out;
}

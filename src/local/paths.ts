/**
 * Relative paths, the identity of a file within a mapping: POSIX separators, no leading
 * "./", Unicode NFC. A name stored on disk in NFD (as macOS clients often write it onto
 * shares) maps to the same NFC relative path as its NFC twin, so the document keeps its
 * identity whichever form the bytes on disk use; the on-disk form is kept separately
 * (`diskPath`) for reading, only where it is not join(root, path): see diskPathOf.
 */
import { isAbsolute, join, normalize, relative, sep } from 'node:path';
import { nfc } from '../unicode.js';

/**
 * Where a walked file lies on disk: the disk path the walk kept for it when a name on its way
 * is stored in another Unicode form, else join(root, path). Not stored for every file: a
 * million records would hold ~110 MB of disk paths through a first mirror.
 */
export function diskPathOf(root: string, file: { path: string; diskPath?: string | undefined }): string {
  return file.diskPath ?? joinUnder(root, file.path);
}

/** An empty, "." or ".." segment, a leading or a trailing "/": a path join() would change. */
const NOT_NORMAL_SEGMENT = /(?:^|\/)\.{0,2}(?:\/|$)/;

/** Roots seen, and whether each is absolute and normal without a trailing "/" (or "/" itself). */
const normalRoots = new Map<string, boolean>();

function isNormalRoot(root: string): boolean {
  let ok = normalRoots.get(root);
  if (ok === undefined) {
    if (normalRoots.size >= 64) normalRoots.clear();
    ok = isAbsolute(root) && normalize(root) === root && (root === sep || !root.endsWith(sep));
    normalRoots.set(root, ok);
  }
  return ok;
}

/**
 * join(root, rel), as a concatenation when it would change neither (a normal root, a walked
 * relative path): join() normalises both, character by character, and it ran several times
 * per file (each open's disk path and confinement; ~5 KB of garbage per file of a first mirror).
 */
export function joinUnder(root: string, rel: string): string {
  if (sep !== '/' || !isNormalRoot(root) || NOT_NORMAL_SEGMENT.test(rel)) return join(root, rel);
  return `${withSep(root)}${rel}`;
}

/**
 * relative(root, path) for a path under root: undefined for root itself or a path outside it.
 * A plain slice when root is normal and the rest needs no normalising (as joinUnder's paths).
 */
export function relativeUnder(root: string, path: string): string | undefined {
  if (sep === '/' && isNormalRoot(root)) {
    const prefix = withSep(root);
    if (path.startsWith(prefix)) {
      const rest = path.slice(prefix.length);
      if (!NOT_NORMAL_SEGMENT.test(rest)) return rest;
    }
  }
  const rel = relative(root, path);
  return rel === '' || rel === '..' || rel.startsWith(`..${sep}`) || isAbsolute(rel) ? undefined : rel;
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
  const rel = relativeUnder(root, absPath);
  return rel === undefined ? undefined : normalizeRelPath(rel);
}

/** Normalises a relative path: POSIX separators, no empty or "." segments, NFC. */
export function normalizeRelPath(rel: string): string {
  return nfc(rel.split(sep === '/' ? '/' : /[\\/]/).filter((s) => s !== '' && s !== '.').join('/'));
}

/** True when `child` is `parent` or lies below it (both absolute, normalised). */
export function isInside(parent: string, child: string): boolean {
  return child === parent || child.startsWith(withSep(parent));
}

/** A folder's path ending in one separator: what every path beneath it starts with. */
function withSep(dir: string): string {
  return dir.endsWith(sep) ? dir : dir + sep;
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

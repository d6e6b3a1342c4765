/**
 * Which paths of a mapped folder are mirrored. Pure: the ignore file's text is read by
 * loadFilter (the one function here that touches the disk) and handed in.
 *
 * Rules, in order (the first that excludes wins; an excluded folder hides everything below):
 * 1. built-in excludes, by entry name: hidden entries (a name starting with "."), office
 *    lock/temp files, editor swap/backup files, OS litter (Thumbs.db, desktop.ini...);
 * 2. the mapping's `exclude` globs;
 * 3. the ignore file (gitignore syntax) at the mapped folder's root;
 * 4. for files only: the mapping's `include` globs.
 * Globs match relative POSIX paths, case-insensitively (shared drives are often used from
 * Windows, where "Report.PDF" and "report.pdf" are the same kind of file). A glob without
 * "/" matches the entry name at any depth; a glob ending in "/" matches folders only.
 */
import ignore, { type Ignore } from 'ignore';
import picomatch from 'picomatch';
import { join } from 'node:path';
import { nodeFs, errorCode, errorMessage, type LocalFs } from './fs.js';
import { ancestorsOf, baseName, normalizeRelPath } from './paths.js';
import { registryCode } from '../errors/codes.js';

export type ExcludeReason = 'hidden' | 'temporary' | 'system' | 'exclude' | 'ignore-file' | 'not-included';

export interface PathFilter {
  /** Full check of a relative path, its parent folders included (for watcher events). */
  includes(relPath: string, isDir: boolean): boolean;
  /** Check of one entry whose parent folder is known to be included (for a walk). */
  includesEntry(relPath: string, isDir: boolean): boolean;
  /** Why a path is excluded (parents included in the check); undefined when it is included. */
  reason(relPath: string, isDir: boolean): ExcludeReason | undefined;
}

export interface FilterSpec {
  include: readonly string[];
  exclude: readonly string[];
  /** Name of the ignore file, relative to the mapped folder (it is never mirrored itself). */
  ignoreFile?: string | undefined;
}

/** Office lock/temp files and editor swap/backup files: never documents, often short-lived. */
export const TEMPORARY_NAME_GLOBS = ['~$*', '.~lock.*#', '~*.tmp', '*.swp', '*.swx', '*~', '#*#', '4913'] as const;

/** Litter that operating systems leave in shared folders. */
export const SYSTEM_NAMES = ['Thumbs.db', 'desktop.ini', '.DS_Store', '$RECYCLE.BIN', 'System Volume Information', 'lost+found'] as const;

const GLOB_OPTIONS = { dot: true, nocase: true } as const;

/**
 * Whether a relative path matches any of the globs, as picomatch's own matcher answers: the
 * glob itself, or its regex. The regexes are joined into one and tested directly (what
 * picomatch's matcher does besides, a result object per call and one regex after the other,
 * cost ~1 µs an entry, a tenth of a restart's main thread). A glob made of `**`, a slash and
 * an X without "/" (how `toPathGlob` writes a glob of entry names; the default include) is
 * tested as X against the entry's name: the same answer for a path without "." or ".."
 * segments (all a walk or an event makes), without the look at each character of the path
 * that the leading `**` costs. test/unit/local/filters.test.ts compares every answer with
 * picomatch's.
 */
function matcher(globs: readonly string[]): (path: string) => boolean {
  if (globs.length === 0) return () => false;
  const literal = new Set(globs);
  const nameGlobs: string[] = [];
  const pathGlobs: string[] = [];
  for (const g of globs) {
    const name = g.startsWith('**/') ? g.slice(3) : undefined;
    if (name !== undefined && name !== '' && !name.includes('/') && !name.startsWith('**')) nameGlobs.push(name);
    else pathGlobs.push(g);
  }
  const byName = anyOf(nameGlobs);
  const byPath = anyOf(pathGlobs);
  return (path) => byName(baseName(path)) || byPath(path) || literal.has(path);
}

/** A test of any of the globs' regexes: one regex, their alternation (each is anchored). */
function anyOf(globs: readonly string[]): (s: string) => boolean {
  if (globs.length === 0) return () => false;
  const regexes = globs.map((g) => picomatch.makeRe(g, GLOB_OPTIONS));
  // Joined only without back-references (their numbers would move) and with one set of flags.
  if (regexes.some((re) => re.flags !== regexes[0]!.flags || /\\[1-9k]/.test(re.source))) return (s) => regexes.some((re) => re.test(s));
  const one = new RegExp(regexes.map((re) => `(?:${re.source})`).join('|'), regexes[0]!.flags);
  return (s) => one.test(s);
}

export function createFilter(spec: FilterSpec, ignoreText?: string): PathFilter {
  const isTemporary = matcher(TEMPORARY_NAME_GLOBS);
  const systemNames = new Set(SYSTEM_NAMES.map((n) => n.toLowerCase()));

  const anyExcludes: string[] = [];
  const dirExcludes: string[] = [];
  for (const raw of spec.exclude) {
    const glob = raw.trim();
    if (glob === '' || glob === '/') continue;
    if (glob.endsWith('/')) dirExcludes.push(toPathGlob(glob.replace(/\/+$/, '')));
    else anyExcludes.push(toPathGlob(glob));
  }
  const matchExclude = matcher(anyExcludes);
  const matchDirExclude = matcher(dirExcludes);
  const matchInclude = matcher(spec.include.map((g) => g.trim()).filter((g) => g !== '').map(toPathGlob));

  const ig: Ignore | undefined = ignoreText?.trim() ? ignore({ ignorecase: true }).add(ignoreText) : undefined;
  const ignoreFileRel = spec.ignoreFile ? normalizeRelPath(spec.ignoreFile).toLowerCase() : undefined;

  const entryReason = (rel: string, isDir: boolean): ExcludeReason | undefined => {
    const name = baseName(rel);
    if (name.startsWith('.')) return 'hidden';
    if (systemNames.has(name.toLowerCase())) return 'system';
    if (isTemporary(name)) return 'temporary';
    if (matchExclude(rel) || (isDir && (matchExclude(`${rel}/`) || matchDirExclude(rel)))) return 'exclude';
    if (ig?.ignores(isDir ? `${rel}/` : rel)) return 'ignore-file';
    // (Lowercase is never shorter: a longer path cannot be the ignore file's.)
    if (!isDir && ignoreFileRel !== undefined && rel.length <= ignoreFileRel.length && rel.toLowerCase() === ignoreFileRel) return 'ignore-file';
    if (!isDir && !matchInclude(rel)) return 'not-included';
    return undefined;
  };

  const reason = (relPath: string, isDir: boolean): ExcludeReason | undefined => {
    const rel = normalizeRelPath(relPath);
    if (rel === '') return undefined; // the mapped folder itself
    for (const dir of ancestorsOf(rel)) {
      const r = entryReason(dir, true);
      if (r) return r;
    }
    return entryReason(rel, isDir);
  };

  return {
    includes: (relPath, isDir) => reason(relPath, isDir) === undefined,
    includesEntry: (relPath, isDir) => entryReason(relPath, isDir) === undefined,
    reason,
  };
}

/**
 * A mapping glob as matched against relative paths: a glob without "/" matches the entry
 * name at any depth ("*.pdf" matches "a/b/x.pdf"); a leading "/" anchors at the mapped folder.
 */
function toPathGlob(glob: string): string {
  if (glob.startsWith('/')) return glob.replace(/^\/+/, '');
  return glob.includes('/') ? glob : `**/${glob}`;
}

export class IgnoreFileError extends Error {
  override readonly name = 'IgnoreFileError';
  /** The registry's code (errors/codes.ts: E_LOCAL_*); the system's errno in `errno`. */
  readonly code: string;
  constructor(readonly path: string, readonly errno: string, message: string) {
    super(message);
    this.code = registryCode(errno);
  }
}

/**
 * Reads the mapping's ignore file (absent = no rules) and builds its filter. An ignore file
 * that exists but cannot be read throws IgnoreFileError: mirroring without it could publish
 * exactly the files the operator meant to keep out.
 */
export async function loadFilter(mapping: FilterSpec & { path: string }, fs: LocalFs = nodeFs): Promise<PathFilter> {
  const file = mapping.ignoreFile ? join(mapping.path, mapping.ignoreFile) : undefined;
  let text: string | undefined;
  if (file) {
    try {
      text = await fs.readFile(file);
    } catch (e) {
      const code = errorCode(e);
      if (code !== 'ENOENT' && code !== 'ENOTDIR') throw new IgnoreFileError(file, code, `cannot read the ignore file ${file}: ${errorMessage(e)}`);
    }
  }
  return createFilter(mapping, text);
}

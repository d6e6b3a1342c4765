/**
 * What a mapped folder would give: whether it can be read, how many folders (the inotify
 * budget) and files it holds, and what would be left out. Looked at before anything
 * else — an unreadable folder is named as such, not as a missing ignore file inside it.
 */
import { constants } from 'node:fs';
import { access, stat } from 'node:fs/promises';
import type { CheckResult } from '../check-result.js';
import type { MappingConfig } from '../config/types.js';
import { loadFilter } from './filters.js';
import { walkTree } from './walk.js';

/**
 * Why the folder cannot be mirrored now (missing, not a folder, unreadable), with the fix;
 * undefined when it can be listed.
 */
export async function folderProblem(path: string): Promise<string | undefined> {
  const unreadable = (e: unknown): string => `${cannotRead(path, (e as NodeJS.ErrnoException).code)}; ${READ_ACCESS_FIX}`;
  let isDir: boolean;
  try {
    isDir = (await stat(path)).isDirectory();
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    return code === 'ENOENT' || code === 'ENOTDIR' ? `the folder ${path} does not exist (not mounted?); check "path"` : unreadable(e);
  }
  if (!isDir) return notAFolder(path);
  return access(path, constants.R_OK | constants.X_OK).then(() => undefined, unreadable);
}

const READ_ACCESS_FIX = 'give the user dssync runs as read access to it (systemd: ReadOnlyPaths= and the folder permissions)';
const cannotRead = (path: string, code: string | undefined): string => `the folder ${path} cannot be read by this user (${code ?? 'error'})`;
const notAFolder = (path: string): string => `${path} is not a folder; "path" must name the folder to mirror`;

/**
 * The check's verdict, the folder count (the inotify budget) and the included files'
 * relative paths (how many each polled mount holds), when the folder could be walked.
 */
export async function checkFolder(m: MappingConfig): Promise<{ result: CheckResult; folders?: number | undefined; files?: readonly string[] | undefined }> {
  const base = { check: 'folder', mapping: m.id };
  // The folder first: an unreadable one would otherwise be reported as its ignore file.
  const problem = await folderProblem(m.path);
  if (problem) return { result: { ...base, level: 'fail', message: problem } };
  let filter;
  try {
    filter = await loadFilter(m);
  } catch (e) {
    return { result: { ...base, level: 'fail', message: e instanceof Error ? e.message : String(e), fix: 'make the ignore file readable by the user dssync runs as' } };
  }
  const walk = await walkTree(m.path, filter, { maxFileBytes: m.maxFileBytes, followSymlinks: m.followSymlinks });
  switch (walk.rootStatus) {
    case 'missing':
      return { result: { ...base, level: 'fail', message: `the folder ${m.path} does not exist (not mounted?); nothing would be mirrored (and nothing deleted)` } };
    case 'not-a-directory':
      return { result: { ...base, level: 'fail', message: notAFolder(m.path) } };
    case 'unreadable':
      return { result: { ...base, level: 'fail', message: cannotRead(m.path, walk.rootError?.code), fix: READ_ACCESS_FIX } };
    case 'ok':
      break;
  }
  const files = walk.files.size;
  const paths = [...walk.files.keys()];
  const tooLarge = walk.skipped.filter((s) => s.reason === 'too-large').length;
  const otherSkipped = walk.skipped.length - tooLarge;
  const notes = [
    tooLarge ? `${tooLarge} larger than maxFileBytes (${m.maxFileBytes} bytes) skipped` : '',
    otherSkipped ? `${otherSkipped} other entr${otherSkipped === 1 ? 'y' : 'ies'} skipped (links, special files, name collisions)` : '',
  ].filter(Boolean);
  // The mapped folder itself counts: it is watched like the ones below it.
  const dirs = walk.dirCount + 1;
  const counts = `${m.path}: ${dirs} folder${dirs === 1 ? '' : 's'}, ${files} file${files === 1 ? '' : 's'} included${notes.length ? `; ${notes.join('; ')}` : ''}`;
  const walked = (result: CheckResult): { result: CheckResult; folders: number; files: readonly string[] } => ({ folders: dirs, files: paths, result });
  if (walk.errors.length) {
    const first = walk.errors[0];
    const message = `${counts}; ${walk.errors.length} unreadable entr${walk.errors.length === 1 ? 'y' : 'ies'}, e.g. ${first?.path ?? ''} (${first?.code ?? ''})`;
    return walked({ ...base, level: 'warn', message, fix: 'dssync leaves what it cannot read alone; give the user dssync runs as read access to mirror it' });
  }
  if (files === 0) return walked({ ...base, level: 'warn', message: `${counts}: no file would be mirrored; check "include", "exclude" and the ignore file` });
  return walked({ ...base, level: 'ok', message: counts });
}

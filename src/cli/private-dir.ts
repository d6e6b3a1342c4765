/**
 * Files a command writes into a folder the operator names (`probe --save DIR`), safe in a
 * folder that another local user could have prepared (issue 24.9): the folder must be the
 * running user's and writable by no one else, and each file is created afresh, exclusively,
 * without following a link, mode 0600. A link or a 0666 file planted beforehand is
 * replaced, never written through or kept.
 */
import { closeSync, constants, mkdirSync, openSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { usageError } from './exit.js';

/** Creates `dir` (0700) when missing; refuses one that is not ours alone. */
export function preparePrivateDir(dir: string, option: string): void {
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  } catch (e) {
    throw usageError(`${option} ${dir}: cannot create the folder (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
  }
  const st = statSync(dir);
  if (!st.isDirectory()) throw usageError(`${option} ${dir}: not a folder`);
  const uid = process.getuid?.();
  if (uid !== undefined && st.uid !== uid) {
    throw usageError(`${option} ${dir}: the folder belongs to uid ${st.uid}, not to you (uid ${uid}); another user could replace what is written there: name a folder of your own, or a new one`);
  }
  if ((st.mode & 0o022) !== 0) {
    throw usageError(`${option} ${dir}: the folder is writable by ${st.mode & 0o002 ? 'every user' : 'its group'} (mode ${(st.mode & 0o7777).toString(8)}); others could plant links there: chmod go-w it, or name a new folder`);
  }
}

/** Writes `name` in `dir` (prepared above) as a new 0600 file, whatever was there before. */
export function writePrivateFile(dir: string, name: string, text: string): void {
  const path = join(dir, name);
  try {
    // Our folder, writable by us alone: removing the entry (a link is removed, not its target) is safe.
    unlinkSync(path);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw usageError(`${path}: cannot replace it (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
  }
  let fd: number;
  try {
    fd = openSync(path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
  } catch (e) {
    throw usageError(`${path}: cannot create it (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
  }
  try {
    writeSync(fd, text);
  } finally {
    closeSync(fd);
  }
}

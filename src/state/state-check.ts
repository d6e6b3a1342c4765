/**
 * Whether the state file can be kept where the config says: its folder writable (or
 * creatable) by this user, the file private, and readable. Used by `dssync config check`.
 */
import { unsafeStateFolder } from './folder-safety.js';
import { constants } from 'node:fs';
import { access, stat } from 'node:fs/promises';
import { userInfo } from 'node:os';
import { dirname } from 'node:path';
import type { CheckResult } from '../check-result.js';
import { StateCorruptError } from './errors.js';
import { journalPathOf } from './journal.js';
import { readStateFile } from './store.js';

function currentUser(): string {
  try {
    const u = userInfo();
    return `${u.username} (uid ${u.uid})`;
  } catch {
    return typeof process.getuid === 'function' ? `uid ${process.getuid()}` : 'this user';
  }
}

async function isWritableDir(path: string): Promise<boolean> {
  try {
    await access(path, constants.W_OK | constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The nearest folder at or above `path` that exists. */
async function nearestExisting(path: string): Promise<{ path: string; isDir: boolean }> {
  let p = path;
  for (;;) {
    try {
      const s = await stat(p);
      return { path: p, isDir: s.isDirectory() };
    } catch {
      const up = dirname(p);
      if (up === p) return { path: p, isDir: false };
      p = up;
    }
  }
}

export async function checkStatePath(statePath: string): Promise<CheckResult[]> {
  const base = { check: 'state' };
  const dir = dirname(statePath);
  const results: CheckResult[] = [];
  const existing = await nearestExisting(dir);
  if (existing.path === dir) {
    if (!existing.isDir) results.push({ ...base, level: 'fail', message: `${dir} (the state file's folder) is not a folder` });
    else if (await isWritableDir(dir)) results.push({ ...base, level: 'ok', message: `state file ${statePath}: its folder is writable` });
    else results.push({ ...base, level: 'fail', message: `state file ${statePath}: its folder ${dir} is not writable by ${currentUser()}`, fix: 'run dssync as a user that can write it (systemd: StateDirectory=dssync), or set "statePath"' });
  } else if (existing.isDir && (await isWritableDir(existing.path))) {
    results.push({ ...base, level: 'ok', message: `state file ${statePath}: its folder ${dir} will be created (under ${existing.path}, writable)` });
  } else {
    const message = `state file ${statePath}: its folder ${dir} does not exist and ${existing.path} is not writable by ${currentUser()}`;
    results.push({ ...base, level: 'fail', message, fix: `create it for the user dssync runs as (systemd: StateDirectory=dssync), or set "statePath"` });
  }

  const unsafe = unsafeStateFolder(statePath);
  if (unsafe !== undefined) results.push({ ...base, level: 'fail', message: `state file ${statePath}: ${unsafe}` });

  let st;
  try {
    st = await stat(statePath);
  } catch {
    return results; // No state file yet: the first sync writes it.
  }
  if (!st.isFile()) {
    results.push({ ...base, level: 'fail', message: `${statePath} exists and is not a file` });
    return results;
  }
  if ((st.mode & 0o004) !== 0) {
    results.push({ ...base, level: 'warn', message: `the state file ${statePath} is readable by every user (it lists file names and document ids)`, fix: `chmod 600 ${statePath}` });
  }
  try {
    await readStateFile(statePath);
  } catch (e) {
    if (e instanceof StateCorruptError) {
      results.push({ ...base, level: 'warn', message: `the state file ${statePath} is corrupt (${e.detail}): the next sync moves it aside and rebuilds the state from the service` });
    } else {
      results.push({ ...base, level: 'warn', message: `cannot read the state file: ${e instanceof Error ? e.message : String(e)}` });
    }
  }
  return results;
}

/** When the state was last written: the newer of the snapshot and its journal (the snapshot changes only at a fold). */
export async function stateWrittenAt(statePath: string): Promise<Date | undefined> {
  const times = await Promise.all([statePath, journalPathOf(statePath)].map((p) => stat(p).then((s) => s.mtimeMs, () => undefined)));
  const known = times.filter((t): t is number => t !== undefined);
  return known.length === 0 ? undefined : new Date(Math.max(...known));
}

/**
 * The state's folder must be one that no other user can write to (issue 36.4): in a folder
 * writable by others and not sticky, another user can plant `state.json.journal` (or the
 * lock, the token) as a link and have the daemon write file names and ids through it.
 * Checked where the state is locked (every writer locks first) and by `config check`; the
 * same rule as `probe --save`'s folder. A folder reached through a symbolic link is judged by
 * the folder it leads to.
 */
import { statSync } from 'node:fs';
import { dirname } from 'node:path';
import { ConfigError } from '../errors/config.js';

/** Why the folder of `statePath` is unsafe, or undefined. A folder still to be made is judged by its nearest existing parent (where it will be made). */
export function unsafeStateFolder(statePath: string): string | undefined {
  let dir = dirname(statePath);
  for (;;) {
    let mode: number;
    try {
      // Through a link: the files are made in its target, whose mode is what protects them (a
      // link's own mode is always 777). systemd's StateDirectory= under DynamicUser= is a link
      // /var/lib/dssync -> private/dssync, a folder of mode 0700.
      mode = statSync(dir).mode;
    } catch (e) {
      const parent = dirname(dir);
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT' || parent === dir) return undefined;
      dir = parent;
      continue;
    }
    const sticky = (mode & 0o1000) !== 0;
    if ((mode & 0o022) === 0 || sticky) return undefined;
    const who = mode & 0o002 ? 'every user' : 'its group';
    return `the state's folder ${dir} is writable by ${who} and not sticky (mode ${(mode & 0o7777).toString(8)}): another user could plant links at the state's files there. Fix: chmod go-w ${dir}, or set "statePath" in a folder of the user dssync runs as (systemd: StateDirectory=dssync)`;
  }
}

/** Throws a ConfigError (exit 2) naming the folder and the fix when it is unsafe. */
export function assertSafeStateFolder(statePath: string): void {
  const why = unsafeStateFolder(statePath);
  if (why !== undefined) throw new ConfigError(`statePath ${statePath}: ${why}`, 'statePath');
}

/**
 * Node's compile cache for every dssync process: V8's compiled code of dssync and its
 * libraries kept on disk, so a later start compiles nothing it compiled before.
 *
 * The folder: `DSSYNC_COMPILE_CACHE` when it is an absolute path (`0` turns the cache off),
 * else systemd's `CACHE_DIRECTORY` (the units' `CacheDirectory=`), else
 * `$XDG_CACHE_HOME/dssync`, else `~/.cache/dssync`. Code read from it runs as this user, so
 * it is used only when it is a folder of this user's that no one else may enter (0700):
 * dssync creates it so (and `~/.cache` when missing, as any XDG program), and creates
 * nothing else, nowhere else. Anything in the way (no home, a read-only disk, a folder of
 * another user or open to others) leaves the cache off, silently: it is never an error.
 * An operator's own `NODE_COMPILE_CACHE` (or `NODE_DISABLE_COMPILE_CACHE`) wins.
 *
 * Worker threads and the node programs dssync starts learn the folder from
 * `NODE_COMPILE_CACHE`, which is set once the folder passed the checks.
 *
 * Imports nothing but Node's own modules: the entry file calls it before loading the rest.
 */
import { mkdirSync, statSync } from 'node:fs';
// Taken as a namespace: a named import of a function an older Node.js lacks would fail the
// entry file's loading before main.ts could say which Node.js dssync needs.
import * as nodeModuleAll from 'node:module';
import { isAbsolute, join } from 'node:path';

const nodeModule: Partial<typeof nodeModuleAll> = nodeModuleAll;

/** The folder to use, and the one missing parent dssync may create (`~/.cache`); none: off. */
export interface CacheFolder {
  dir: string;
  parent?: string;
}

/** Where the cache lives for this environment (pure: the rule above). */
export function compileCacheFolder(env: NodeJS.ProcessEnv): CacheFolder | undefined {
  const own = env.DSSYNC_COMPILE_CACHE;
  if (own !== undefined && own !== '') return isAbsolute(own) ? { dir: own } : undefined;
  const systemd = env.CACHE_DIRECTORY?.split(':')[0];
  if (systemd && isAbsolute(systemd)) return { dir: systemd };
  const xdg = env.XDG_CACHE_HOME;
  if (xdg && isAbsolute(xdg)) return { dir: join(xdg, 'dssync') };
  const home = env.HOME;
  if (home && isAbsolute(home)) return { dir: join(home, '.cache', 'dssync'), parent: join(home, '.cache') };
  return undefined;
}

/** Creates `path` as 0700 unless it exists (its parent must exist: never a chain of folders). */
function makeFolder(path: string): void {
  try {
    mkdirSync(path, { mode: 0o700 });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
  }
}

/** Whether `dir` is a folder of this user's alone. */
function isPrivateFolder(dir: string): boolean {
  const st = statSync(dir);
  return st.isDirectory() && st.uid === process.getuid?.() && (st.mode & 0o077) === 0;
}

/** Turns the cache on for this process and what it starts; returns the folder, or undefined when off. */
export function startCompileCache(env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (env.NODE_COMPILE_CACHE !== undefined || env.NODE_DISABLE_COMPILE_CACHE !== undefined) return nodeModule.getCompileCacheDir?.();
  const folder = compileCacheFolder(env);
  if (!folder) return undefined;
  try {
    if (folder.parent !== undefined) makeFolder(folder.parent);
    makeFolder(folder.dir);
    if (!isPrivateFolder(folder.dir)) return undefined;
    if (typeof nodeModule.enableCompileCache !== 'function') return undefined;
    const { directory } = nodeModule.enableCompileCache(folder.dir);
    if (directory === undefined) return undefined;
    env.NODE_COMPILE_CACHE = folder.dir;
    return folder.dir;
  } catch {
    return undefined;
  }
}

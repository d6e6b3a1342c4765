/**
 * glibc's malloc settings of the commands that hold a mapping's files (docs/deploy.md, "Memory"):
 * - `MALLOC_ARENA_MAX=2`: two arenas rather than eight a core, each holding its own free
 *   memory;
 * - `MALLOC_MMAP_THRESHOLD_=131072`: glibc's own starting threshold, held fixed. Left to
 *   itself glibc raises it to the size of each large block freed, and the restart's listing
 *   pages then come from the heap and stay resident behind small blocks allocated after them
 *   (docs/performance.md, "Session 27").
 *
 * glibc reads them once, as the process starts, from its environment. The systemd units and
 * the image set them for the daemon. The commands that hold a mapping's files (`run` at
 * rest, `sync` at its peak) started any other way set them themselves:
 * before anything else the process replaces itself once with the same program, arguments
 * and environment plus what is missing (`process.execve`: the same process id, standard
 * streams and start time). An operator's own value of either wins. Without
 * `process.execve` (Node.js before 22.15) the command runs as it was started.
 */

/** The values, as the units and the image set them (their tests compare with these). */
export const MALLOC_ENV: Readonly<Record<string, string>> = { MALLOC_ARENA_MAX: '2', MALLOC_MMAP_THRESHOLD_: '131072' };

/** The commands that set them: a daemon's memory at rest, a first mirror's peak. */
const MIRROR_COMMANDS: ReadonlySet<string | undefined> = new Set(['run', 'sync']);

/** Whether `command` (the first word of the command line) runs under these settings. */
export function wantsMallocEnv(command: string | undefined): boolean {
  return MIRROR_COMMANDS.has(command);
}

/** `env` with the settings it lacks; undefined when it lacks none. */
export function withMallocEnv(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv | undefined {
  const missing = Object.keys(MALLOC_ENV).filter((k) => env[k] === undefined);
  if (missing.length === 0) return undefined;
  const out = { ...env };
  for (const k of missing) out[k] = MALLOC_ENV[k];
  return out;
}

/**
 * For `command` (see wantsMallocEnv), replaces this process with itself under the settings
 * it lacks (on Linux, where glibc reads them). Returns only when it need not, or when it
 * could not: then the command runs without them, and says so.
 */
export function execWithMallocEnv(command: string | undefined): void {
  if (!wantsMallocEnv(command) || process.platform !== 'linux' || typeof process.execve !== 'function') return;
  const env = withMallocEnv(process.env);
  if (env === undefined) return;
  try {
    process.execve(process.execPath, [process.argv0, ...process.execArgv, ...process.argv.slice(1)], env);
  } catch (e) {
    process.stderr.write(`dssync: warning: could not start again with glibc's malloc settings (${e instanceof Error ? e.message : String(e)}): running without them; set ${Object.entries(MALLOC_ENV).map(([k, v]) => `${k}=${v}`).join(' ')} in the environment (docs/deploy.md, "Memory")\n`);
  }
}

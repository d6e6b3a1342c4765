/**
 * The open-file limit (`ulimit -n`), read before anything else loads: under a very low
 * limit Node cannot even load dssync's modules (EMFILE), and the operator must hear which
 * limit is at fault and what to set, not read a stack trace.
 *
 * Imports nothing but Node's own modules.
 */
import { readFileSync } from 'node:fs';
import { registryCode } from '../errors/codes.js';
import { errnoOf } from '../errors/errno.js';

/** Below this, loading dssync's modules may fail with EMFILE (measured: about 100). */
export const FDS_TO_LOAD = 256;
/** What the daemon wants: each upload in a batch, each watched folder and connection holds one. */
export const FDS_FOR_DAEMON = 65_536;
/** Below this, `dssync run` warns at start. */
export const FDS_WARN_DAEMON = 4_096;

/** The soft limit on open files, from /proc (Linux); undefined when it cannot be told. */
export function openFileLimit(read: (path: string) => string = (p) => readFileSync(p, 'utf8')): number | undefined {
  try {
    const line = read('/proc/self/limits')
      .split('\n')
      .find((l) => l.startsWith('Max open files'));
    const soft = line?.slice('Max open files'.length).trim().split(/\s+/)[0];
    if (soft === undefined || soft === 'unlimited') return undefined;
    const n = Number(soft);
    return Number.isInteger(n) && n > 0 ? n : undefined;
  } catch {
    return undefined;
  }
}

/** The sentence that names the limit and the fix. */
export function fdLimitAdvice(limit: number | undefined): string {
  const now = limit === undefined ? 'too low' : String(limit);
  return (
    `the open-file limit (ulimit -n) is ${now}: dssync needs at least ${FDS_TO_LOAD} to start, ` +
    `and the daemon ${FDS_FOR_DAEMON} (the systemd units set LimitNOFILE=${FDS_FOR_DAEMON}). ` +
    `Raise it: ulimit -n ${FDS_FOR_DAEMON} in the shell, or LimitNOFILE= in the unit.`
  );
}

export function isFdExhaustion(err: unknown): boolean {
  const code = errnoOf(err);
  return code !== undefined && registryCode(code) === 'E_TOO_MANY_OPEN_FILES';
}

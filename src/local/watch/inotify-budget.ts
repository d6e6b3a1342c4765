/**
 * The inotify budget: dssync watches folders only (one watch per folder: files are reported
 * by their folder's events), so what it needs is the folder count of every mapping, against
 * the kernel's per-user limits. Used by `dssync config check`.
 */
import { readFile } from 'node:fs/promises';
import type { CheckResult } from '../../check-result.js';

export interface InotifyLimits {
  maxUserWatches?: number | undefined;
  maxUserInstances?: number | undefined;
  /** Why the limits could not be read. */
  error?: string | undefined;
}

export const INOTIFY_DIR = '/proc/sys/fs/inotify';
/** Share of max_user_watches above which the budget is tight (other programs watch too). */
export const INOTIFY_WARN_SHARE = 0.8;

export async function readInotifyLimits(read: (path: string) => Promise<string> = (p) => readFile(p, 'utf8')): Promise<InotifyLimits> {
  const one = async (name: string): Promise<number> => {
    const n = Number((await read(`${INOTIFY_DIR}/${name}`)).trim());
    if (!Number.isSafeInteger(n)) throw new Error(`${INOTIFY_DIR}/${name} does not hold a number`);
    return n;
  };
  try {
    return { maxUserWatches: await one('max_user_watches'), maxUserInstances: await one('max_user_instances') };
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    const platform = process.platform === 'linux' ? '' : ` (this is ${process.platform}, not Linux)`;
    return { error: `cannot read ${INOTIFY_DIR}${platform}: ${code ?? (e instanceof Error ? e.message : String(e))}` };
  }
}

/** Watches to plan for: the folders, plus room for growth and for the other mapped trees. */
export function watchesNeeded(folders: number): number {
  return Math.ceil(folders * 1.1) + 100;
}

/** A limit with room to grow: twice what is needed, rounded up, never below the usual 524288. */
export function suggestedWatchLimit(folders: number): number {
  const step = 65_536;
  return Math.max(524_288, Math.ceil((watchesNeeded(folders) * 2) / step) * step);
}

/** The budget's check (pure): the folders to watch against max_user_watches and max_user_instances. */
export function inotifyCheck(folders: number, uncounted: number, limits: InotifyLimits): CheckResult {
  const base = { check: 'inotify' };
  const partial = uncounted ? ` (${uncounted} mapping${uncounted === 1 ? '' : 's'} not counted: folder unavailable)` : '';
  if (limits.error !== undefined || limits.maxUserWatches === undefined) {
    return { ...base, level: 'warn', message: `${limits.error ?? 'inotify limits unknown'}: cannot check the watch budget for ${folders} folders${partial}` };
  }
  const limit = limits.maxUserWatches;
  const needed = watchesNeeded(folders);
  const share = limit > 0 ? Math.round((needed / limit) * 100) : Infinity;
  const instances = limits.maxUserInstances === undefined ? '' : `, max_user_instances ${limits.maxUserInstances}`;
  const summary = `${folders} folder${folders === 1 ? '' : 's'} to watch${partial}, ${needed} with a margin: ${share}% of max_user_watches ${limit}${instances}`;
  if (needed > limit * INOTIFY_WARN_SHARE) {
    const n = suggestedWatchLimit(folders);
    const fix = `raise it now: sudo sysctl -w fs.inotify.max_user_watches=${n}\nand at boot: echo 'fs.inotify.max_user_watches=${n}' | sudo tee /etc/sysctl.d/90-dssync.conf`;
    return { ...base, level: 'warn', message: `${summary}: too tight; the folders past the limit would be polled instead of watched (changes seen within a poll cycle, at some CPU)`, fix };
  }
  if (limits.maxUserInstances !== undefined && limits.maxUserInstances < 1) {
    return { ...base, level: 'warn', message: `${summary}: max_user_instances is 0, so no folder can be watched`, fix: 'sudo sysctl -w fs.inotify.max_user_instances=128' };
  }
  return { ...base, level: 'ok', message: summary };
}

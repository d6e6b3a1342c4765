/**
 * One process per state file: `<statePath>.lock`, created with O_EXCL, holds
 * `{pid, hostname, startedAt, bootId, procStart}`. A lock whose process is gone (or which
 * predates the last reboot, or whose pid now belongs to another process) is stale and taken
 * over; a live one makes acquireLock throw StateLockedError naming the pid. The rule is
 * judgeLock's: the boot id first (same kernel: pid and start time decide, the host name
 * plays no part), the host name only between boots.
 *
 * bootId and procStart (Linux /proc; absent elsewhere) matter under systemd: after a
 * reboot the daemon often gets the very pid its predecessor had, or the old pid belongs to
 * some unrelated process, and a bare "is the pid alive" would refuse to start.
 */
import { assertSafeStateFolder } from './folder-safety.js';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import * as fsp from 'node:fs/promises';
import { hostname as osHostname } from 'node:os';
import { resolve } from 'node:path';
import { silentLogger, type Logger } from '../log.js';
import { errnoOf } from '../errors/errno.js';
import { StateLockedError } from './errors.js';
import { FILE_MODE, unlessMissing } from './atomic-file.js';
import { realClock, type Clock, type TimerHandle } from '../time/clock.js';

export interface LockInfo {
  pid: number;
  hostname: string;
  startedAt: string;
  /** Linux boot id when the lock was taken. */
  bootId?: string;
  /** Start time of the holding process (clock ticks since boot, /proc/<pid>/stat). */
  procStart?: string;
}

export interface Lock {
  /** Path of the lock file. */
  readonly path: string;
  readonly info: LockInfo;
  /** Removes the lock file if it is still ours. Idempotent. */
  release(): Promise<void>;
}

export interface AcquireLockOptions {
  /** Wall readings (startedAt, the mtime age, the heartbeat's touch) and the heartbeat's timer; default the real clock, as StateStore.open's. */
  clock?: Clock;
  logger?: Logger;
}

/** Lock files held by this process: opening the same state twice in one process is a bug. */
const held = new Set<string>();

export function lockPathOf(statePath: string): string {
  return `${resolve(statePath)}.lock`;
}

export async function acquireLock(statePath: string, opts: AcquireLockOptions = {}): Promise<Lock> {
  // Every writer of the state locks it first: the one place its folder is judged.
  assertSafeStateFolder(statePath);
  const lockPath = lockPathOf(statePath);
  const logger = opts.logger ?? silentLogger;
  const clock = opts.clock ?? realClock;
  const me: LockInfo = { pid: process.pid, hostname: osHostname(), startedAt: new Date(clock.now()).toISOString() };
  const bootId = readBootId();
  const procStart = procStartOf(process.pid);
  if (bootId) me.bootId = bootId;
  if (procStart) me.procStart = procStart;
  if (held.has(lockPath)) {
    throw new StateLockedError(lockPath, me.pid, me.hostname, undefined, 'this process already holds it (the state is opened twice)');
  }
  const content = `${JSON.stringify(me)}\n`;

  for (let attempt = 0; attempt < 5; attempt++) {
    if (await tryCreate(lockPath, content)) {
      held.add(lockPath);
      return makeLock(lockPath, me, content, logger, clock);
    }
    const existing = await readLock(lockPath, clock);
    if (existing === undefined) continue; // removed between our attempt and the read
    const verdict = judgeLock(existing.info, nodeLockProbe, lockPath, existing.refreshedAgoMs);
    if (verdict.alive) {
      const info = existing.info as LockInfo;
      throw new StateLockedError(lockPath, info.pid, info.hostname, info.startedAt, verdict.reason);
    }
    logger.warn(
      { lock: lockPath, holder: existing.info ?? existing.text.slice(0, 200), reason: verdict.reason },
      `taking over stale state lock ${lockPath}: ${verdict.reason}`,
    );
    await takeOver(lockPath, existing.text);
  }
  throw new Error(`could not acquire lock ${lockPath}: it kept changing (is another dssync starting at the same time?)`);
}

async function tryCreate(lockPath: string, content: string): Promise<boolean> {
  let fh: fsp.FileHandle;
  try {
    fh = await fsp.open(lockPath, 'wx', FILE_MODE);
  } catch (err) {
    if (errnoOf(err) === 'EEXIST') return false;
    throw new Error(`cannot create lock file ${lockPath}: ${(err as Error).message}`, { cause: err });
  }
  try {
    await fh.writeFile(content);
    await fh.close();
  } catch (err) {
    await fh.close().catch(() => undefined);
    await fsp.unlink(lockPath).catch(() => undefined);
    throw new Error(`cannot write lock file ${lockPath}: ${(err as Error).message}`, { cause: err });
  }
  return true;
}

interface ExistingLock {
  text: string;
  /** How long ago the holder last refreshed it (its mtime against our wall clock), if known. */
  refreshedAgoMs: number | undefined;
  /** Undefined when the file cannot be understood. */
  info: LockInfo | undefined;
}

async function readLock(lockPath: string, clock: Clock): Promise<ExistingLock | undefined> {
  // The creator writes its content right after the O_EXCL create: an empty or partial file
  // is given a moment before being judged unreadable.
  let text = '';
  for (let i = 0; i < 10; i++) {
    try {
      text = await fsp.readFile(lockPath, 'utf8');
    } catch (err) {
      if (errnoOf(err) === 'ENOENT') return undefined;
      throw new Error(`cannot read lock file ${lockPath}: ${(err as Error).message}`, { cause: err });
    }
    const info = parseLockInfo(text);
    if (info) return { text, info, refreshedAgoMs: await refreshedAgo(lockPath, clock) };
    await clock.sleep(50);
  }
  return { text, info: undefined, refreshedAgoMs: await refreshedAgo(lockPath, clock) };
}

export function parseLockInfo(text: string): LockInfo | undefined {
  try {
    const v: unknown = JSON.parse(text);
    if (typeof v !== 'object' || v === null) return undefined;
    const o = v as Record<string, unknown>;
    if (typeof o['pid'] !== 'number' || !Number.isInteger(o['pid']) || o['pid'] <= 0) return undefined;
    if (typeof o['hostname'] !== 'string') return undefined;
    const info: LockInfo = { pid: o['pid'], hostname: o['hostname'], startedAt: typeof o['startedAt'] === 'string' ? o['startedAt'] : '' };
    if (typeof o['bootId'] === 'string') info.bootId = o['bootId'];
    if (typeof o['procStart'] === 'string') info.procStart = o['procStart'];
    return info;
  } catch {
    return undefined;
  }
}

/**
 * The holder's heartbeat: a lock held by a live process is touched every
 * LOCK_HEARTBEAT_MS (its mtime), so one that another machine took and has not touched for
 * LOCK_LEASE_MS is known to be abandoned (a pod recreated on another node with the same
 * volume, a server restored from a backup). The lease tolerates clocks of the two
 * machines apart by up to LOCK_LEASE_MS - LOCK_HEARTBEAT_MS; a lock dated in the future
 * (a clock ahead) is never taken for abandoned.
 */
export const LOCK_HEARTBEAT_MS = 30_000;
export const LOCK_LEASE_MS = 5 * 60_000;

async function refreshedAgo(lockPath: string, clock: Clock): Promise<number | undefined> {
  try {
    // Compared with a file time: the wall clock is the right one here (docs/reliability.md, "Time").
    return clock.now() - (await fsp.stat(lockPath)).mtimeMs;
  } catch {
    return undefined;
  }
}

export type LockVerdict = { alive: boolean; reason: string };

/** What the judgement reads of this machine (a seam: tests give a fake /proc). */
export interface LockProbe {
  hostname: string;
  /** This boot's id (/proc/sys/kernel/random/boot_id), undefined where there is none. */
  bootId: string | undefined;
  /** This process's pid. */
  pid: number;
  alive(pid: number): boolean;
  /** Start time of the process holding `pid` (/proc/<pid>/stat), undefined when unknown. */
  procStart(pid: number): string | undefined;
}

export const nodeLockProbe: LockProbe = {
  get hostname() {
    return osHostname();
  },
  get bootId() {
    return readBootId();
  },
  pid: process.pid,
  alive: pidAlive,
  procStart: procStartOf,
};

/**
 * Whether a lock's holder may still run (docs/reliability.md, "The state lock"):
 * - same boot id: the same kernel, so its pid and start time decide, whatever the host
 *   name says (a container recreated after `kill -9` has a new host name, the same kernel,
 *   and may even get the dead holder's pid: its start time then differs);
 * - another boot id, same host name: taken before the last reboot, stale;
 * - another boot id and another host name: another machine sharing the state's volume,
 *   whose processes cannot be seen from here: its heartbeat decides (a lock not refreshed
 *   for LOCK_LEASE_MS is abandoned: a pod recreated on another node, a restore); a fresh
 *   one is refused, naming the fix;
 * - no boot id (not Linux): the host name, then the pid decide, as before.
 */
export function judgeLock(info: LockInfo | undefined, probe: LockProbe, lockPath = 'the lock file', refreshedAgoMs?: number): LockVerdict {
  if (!info) return { alive: false, reason: 'the lock file is unreadable (left by a crash while it was created)' };
  const sameBoot = info.bootId !== undefined && probe.bootId !== undefined && info.bootId === probe.bootId;
  if (!sameBoot) {
    if (info.hostname !== probe.hostname) {
      if (refreshedAgoMs !== undefined && refreshedAgoMs > LOCK_LEASE_MS) {
        const reason = `it was taken on another host (${info.hostname}) and not refreshed for ${Math.round(refreshedAgoMs / 60_000)} min (a running dssync refreshes it every ${LOCK_HEARTBEAT_MS / 1000} s): its holder is gone`;
        return { alive: false, reason };
      }
      const refreshed = refreshedAgoMs === undefined ? 'at an unknown time' : `${Math.max(0, Math.round(refreshedAgoMs / 1000))} s ago`;
      const reason = `it was taken on another host (${info.hostname}${info.bootId ? `, boot ${info.bootId}` : ''}), another machine whose processes cannot be checked from here and which refreshed it ${refreshed}; it is taken over once it has not been refreshed for ${LOCK_LEASE_MS / 60_000} min. If no dssync runs there with this state, delete ${lockPath} now (two hosts must not share one state file: give each its own statePath)`;
      return { alive: true, reason };
    }
    if (info.bootId !== undefined && probe.bootId !== undefined) {
      return { alive: false, reason: `it was taken before the last reboot (process ${info.pid})` };
    }
  }
  if (info.pid === probe.pid) {
    return { alive: false, reason: `its pid ${info.pid} is this process's own: a leftover of an earlier run` };
  }
  if (!probe.alive(info.pid)) return { alive: false, reason: `process ${info.pid} is no longer running` };
  const start = probe.procStart(info.pid);
  if (info.procStart && start && info.procStart !== start) {
    return { alive: false, reason: `pid ${info.pid} now belongs to another process` };
  }
  return { alive: true, reason: `process ${info.pid} is still running: stop it first (systemctl stop dssync) or use another state file` };
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: it exists but belongs to another user.
    return errnoOf(err) !== 'ESRCH';
  }
}

/**
 * Removes a stale lock without removing a fresh one that a concurrent starter may have put
 * in its place after we read it: move it aside, check it is the one judged stale, and put
 * it back otherwise.
 */
async function takeOver(lockPath: string, staleText: string): Promise<void> {
  const aside = `${lockPath}.stale-${process.pid}-${randomBytes(4).toString('hex')}`;
  try {
    await fsp.rename(lockPath, aside);
  } catch (err) {
    if (errnoOf(err) === 'ENOENT') return;
    throw new Error(`cannot remove stale lock file ${lockPath}: ${(err as Error).message}`, { cause: err });
  }
  const moved = await fsp.readFile(aside, 'utf8').catch(() => undefined);
  if (moved !== staleText) {
    // Not the one we judged: restore it unless yet another lock exists now.
    await fsp.link(aside, lockPath).catch(() => undefined);
  }
  await fsp.unlink(aside).catch(() => undefined);
}

function makeLock(lockPath: string, info: LockInfo, content: string, logger: Logger, clock: Clock): Lock {
  let released = false;
  // The heartbeat (LOCK_LEASE_MS): touch the lock while it is held; a failure is logged
  // once and retried at the next beat (a full disk does not stop the sync). Unref'd: it
  // keeps no process alive.
  let beatFailed = false;
  let heartbeat: TimerHandle;
  const beat = (): void => {
    heartbeat = clock.setTimeout(beat, LOCK_HEARTBEAT_MS);
    const now = new Date(clock.now());
    fsp.utimes(lockPath, now, now).then(
      () => {
        beatFailed = false;
      },
      (err: unknown) => {
        if (!beatFailed) logger.warn({ lock: lockPath, err: (err as Error).message }, `cannot refresh the state lock ${lockPath}; another host may take it over after ${LOCK_LEASE_MS / 60_000} min`);
        beatFailed = true;
      },
    );
  };
  heartbeat = clock.setTimeout(beat, LOCK_HEARTBEAT_MS);
  return {
    path: lockPath,
    info,
    async release() {
      if (released) return;
      released = true;
      clock.clearTimeout(heartbeat);
      held.delete(lockPath);
      const text = await unlessMissing(fsp.readFile(lockPath, 'utf8'));
      if (text === undefined) return;
      if (text !== content) {
        logger.warn({ lock: lockPath }, `lock file ${lockPath} was replaced by another process; leaving it`);
        return;
      }
      await fsp.unlink(lockPath).catch((err: unknown) => {
        if (errnoOf(err) !== 'ENOENT') throw err;
      });
    },
  };
}

/** A file of /proc, or undefined where it cannot be read (not Linux, a process gone). */
function readProc(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

function readBootId(): string | undefined {
  return readProc('/proc/sys/kernel/random/boot_id')?.trim() || undefined;
}

/** Field 22 (starttime) of /proc/<pid>/stat; the command name (field 2) may hold spaces. */
function procStartOf(pid: number): string | undefined {
  const stat = readProc(`/proc/${pid}/stat`);
  return stat?.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
}

import { closeSync, constants, fstatSync, lstatSync, openSync, readdirSync, readlinkSync, readSync, realpathSync, statSync } from 'node:fs';
import { errnoOf } from '../errors/errno.js';

/**
 * The small synchronous system-call interface the listing and the hashing are written
 * against (list-steps.ts, hash-steps.ts), after Syncthing's lib/fs: the production worker
 * makes these calls with node:fs (lister-worker.ts), the main thread and the fakes with
 * their own asynchronous calls (fs.ts `LocalFs`). The steps never call anything: each
 * yields the call it needs (`call`) and a driver (`runSync`, `runAsync`) makes it and hands
 * back its result, or throws its error into the steps, so one piece of code decides what a
 * listing and a hash are on every filesystem.
 */

export interface FsStats {
  isFile(): boolean;
  isDirectory(): boolean;
  isSymbolicLink(): boolean;
  isFIFO?(): boolean;
  isSocket?(): boolean;
  isCharacterDevice?(): boolean;
  isBlockDevice?(): boolean;
  size: number;
  mtimeMs: number;
  /** Inode change time: moves on every content or metadata change, and cannot be set back. */
  ctimeMs?: number;
  dev: number;
  ino: number;
}

export interface FsDirent {
  name: string;
  isFile(): boolean;
  isDirectory(): boolean;
  isSymbolicLink(): boolean;
}

export interface SysCalls {
  /**
   * Opens for reading without blocking (`O_NONBLOCK | O_NOCTTY`); `folder`: only a folder
   * (`O_DIRECTORY`); `noFollow`: a symbolic link as the last component is ELOOP.
   */
  open(path: string, opts: { folder: boolean; noFollow: boolean }): number;
  fstat(fd: number): FsStats;
  read(fd: number, buffer: Buffer, offset: number, length: number, position: number | null): number;
  close(fd: number): void;
  /** The kernel's path of an open descriptor; undefined when the system does not tell. */
  fdPath(fd: number): string | undefined;
  readdir(path: string): FsDirent[];
  lstat(path: string): FsStats;
  stat(path: string): FsStats;
  realpath(path: string): string;
}

const { O_RDONLY, O_DIRECTORY, O_NONBLOCK, O_NOFOLLOW, O_NOCTTY } = constants;

/** node:fs's synchronous calls (the worker's; start-up files read before anything runs). */
export const nodeCalls: SysCalls = {
  open: (path, o) => openSync(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | (o.folder ? O_DIRECTORY : 0) | (o.noFollow ? O_NOFOLLOW : 0)),
  fstat: (fd) => fstatSync(fd),
  read: (fd, buffer, offset, length, position) => readSync(fd, buffer, offset, length, position),
  close: (fd) => closeSync(fd),
  fdPath: (fd) => {
    try {
      return readlinkSync(`/proc/self/fd/${fd}`);
    } catch {
      return undefined;
    }
  },
  readdir: (path) => readdirSync(path, { withFileTypes: true }),
  lstat: (path) => lstatSync(path),
  stat: (path) => statSync(path),
  realpath: (path) => realpathSync(path),
};

export type AsyncSysCalls = { [K in keyof SysCalls]: (...args: Parameters<SysCalls[K]>) => Promise<ReturnType<SysCalls[K]>> };

export type SysCall = { [K in keyof SysCalls]: { name: K; args: Parameters<SysCalls[K]> } }[keyof SysCalls];

/** Steps that end in an R, asking for one system call at a time. */
export type Steps<R> = Generator<SysCall, R, unknown>;

/** One system call, as a step: `const fd = yield* call('open', path, opts)`. */
export function* call<K extends keyof SysCalls>(name: K, ...args: Parameters<SysCalls[K]>): Generator<SysCall, ReturnType<SysCalls[K]>, unknown> {
  return (yield { name, args } as SysCall) as ReturnType<SysCalls[K]>;
}

/** Looks at each call: `before` may throw (a stop, an abort), which the steps get as that call's error; `after` once it returned or threw. */
export interface CallObserver {
  before?(c: SysCall): void;
  after?(): void;
}

export function runSync<R>(steps: Steps<R>, sys: SysCalls, observe: CallObserver = {}): R {
  let r = steps.next();
  while (!r.done) {
    const c = r.value;
    r = resume(steps, observe, () => ({ value: (sys[c.name] as (...a: unknown[]) => unknown)(...c.args) }), c);
  }
  return r.value;
}

export async function runAsync<R>(steps: Steps<R>, sys: AsyncSysCalls, observe: CallObserver = {}): Promise<R> {
  let r = steps.next();
  while (!r.done) {
    const c = r.value;
    let outcome: Outcome;
    try {
      observe.before?.(c);
      outcome = { value: await (sys[c.name] as (...a: unknown[]) => Promise<unknown>)(...c.args) };
    } catch (error) {
      outcome = { error };
    }
    r = resume(steps, observe, () => outcome);
  }
  return r.value;
}

type Outcome = { value: unknown } | { error: unknown };

/** The steps go on with a call's outcome: its result, or its error thrown into them. */
function resume<R>(steps: Steps<R>, observe: CallObserver, make: () => Outcome, before?: SysCall): IteratorResult<SysCall, R> {
  let outcome: Outcome;
  try {
    if (before !== undefined) observe.before?.(before);
    outcome = make();
  } catch (error) {
    outcome = { error };
  }
  observe.after?.();
  return 'error' in outcome ? steps.throw(outcome.error) : steps.next(outcome.value);
}

/** The errno code of a filesystem error ('EIO', 'ENOENT'...), or 'EUNKNOWN'. */
export function errorCode(e: unknown): string {
  return errnoOf(e) ?? 'EUNKNOWN';
}

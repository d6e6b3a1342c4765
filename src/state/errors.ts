/**
 * Typed errors of the state store. Callers branch on the class (or `code`), never on the
 * message; messages name the file and say what the operator can do.
 */

import type { ErrorCode } from '../errors/codes.js';
import { errnoOf } from '../errors/errno.js';
import { FORMAT_RELEASES, RETIRED_FORMATS_LAST_READ_BY } from './schema.js';

export type StateErrorCode = Extract<ErrorCode, `E_STATE_${string}`>;

export abstract class StateError extends Error {
  abstract readonly code: StateErrorCode;
  /** The file concerned (the state file, or its lock file). */
  readonly file: string;

  constructor(file: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.file = file;
  }

  /** The errno of the cause when there is one (ENOSPC, EACCES, EROFS...). */
  get errno(): string | undefined {
    return errnoOf(this.cause);
  }
}

/** The state file is not JSON, is truncated, or does not have the expected shape. */
export class StateCorruptError extends StateError {
  override readonly name = 'StateCorruptError';
  readonly code = 'E_STATE_CORRUPT' as const;
  /** What exactly is wrong (e.g. "mappings.docs.files[12]: size is not a number"). */
  readonly detail: string;

  constructor(file: string, detail: string, options?: { cause?: unknown }) {
    super(file, `state file ${file} is corrupt (${detail}); the next "dssync sync" or "dssync run" moves it aside and rebuilds the state from the service`, options);
    this.detail = detail;
  }
}

/**
 * The state file was written by a newer dssync: refusing to read (or overwrite) it, since
 * reading a format it does not know could drop what it does not understand (docs/upgrading.md).
 */
export class StateVersionError extends StateError {
  override readonly name = 'StateVersionError';
  readonly code = 'E_STATE_NEWER' as const;

  constructor(
    file: string,
    /** The file's state format. */
    readonly version: number,
    /** The newest format this dssync reads. */
    readonly supported: number,
    /** The dssync release the file says its reader needs (its header's "needs"), when it says. */
    readonly needs?: string,
  ) {
    const mine = FORMAT_RELEASES[supported];
    super(
      file,
      `state file ${file} is in state format ${version}${needs ? `, written by dssync ${needs} or newer` : ', written by a newer dssync'}; ` +
        `this dssync reads formats up to ${supported}${mine ? ` (that of dssync ${mine})` : ''}: ` +
        `install dssync ${needs ?? 'newer than this one'}${needs ? ' or newer' : ''}, or restore the state backup taken before the upgrade (docs/upgrading.md, "Rolling back")`,
    );
  }
}

/**
 * The state file is one JSON object (first byte `{`): state format 1 or 2, no longer read.
 * Refused and left as it is, not treated as corrupt: a state this old has no identity file
 * to rebuild through, and the last release that reads the format migrates it whole.
 */
export class StateFormatRetiredError extends StateError {
  override readonly name = 'StateFormatRetiredError';
  readonly code = 'E_STATE_RETIRED' as const;

  constructor(file: string) {
    super(
      file,
      `state file ${file} is one JSON object: state format 1 or 2 (development builds of dssync 0.1.0), which this dssync no longer reads; ` +
        `the file was left as it is. Run dssync ${RETIRED_FORMATS_LAST_READ_BY} once with this state (it rewrites it in the current format), then this dssync (docs/upgrading.md, "Which versions read which state files"); ` +
        `or move the file aside to start afresh, and the documents it records are then another installation's until "dssync adopt"`,
    );
  }
}

/** Another live process holds the state file's lock. */
export class StateLockedError extends StateError {
  override readonly name = 'StateLockedError';
  readonly code = 'E_STATE_LOCKED' as const;

  constructor(
    lockFile: string,
    readonly pid: number,
    readonly hostname: string,
    readonly startedAt: string | undefined,
    /** Why the holder is considered alive (shown to the operator). */
    reason: string,
  ) {
    super(lockFile, `state file is in use: lock ${lockFile} is held by process ${pid} on ${hostname}${startedAt ? ` (since ${startedAt})` : ''}; ${reason}`);
  }
}

/** Reading the state file failed (permission, I/O). */
export class StateReadError extends StateError {
  override readonly name = 'StateReadError';
  readonly code = 'E_STATE_READ' as const;

  constructor(file: string, cause: unknown) {
    const denied = errnoOf(cause) === 'EACCES' || errnoOf(cause) === 'EPERM' ? '; run as the user dssync runs as, or root' : '';
    super(file, `cannot read state file ${file}: ${cause instanceof Error ? cause.message : String(cause)}${denied}`, { cause });
  }
}

/** Writing the state file failed (disk full, permission...). The previous file is intact. */
export class StateWriteError extends StateError {
  override readonly name = 'StateWriteError';
  readonly code = 'E_STATE_WRITE' as const;

  constructor(file: string, cause: unknown) {
    super(file, `could not write state file ${file}: ${cause instanceof Error ? cause.message : String(cause)} (the previous state file is intact; the write will be retried)`, { cause });
  }
}

export function isStateError(e: unknown): e is StateError {
  return e instanceof StateError;
}

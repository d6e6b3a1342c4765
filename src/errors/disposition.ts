/**
 * One error disposition (issues 9 and 27.2): a single pure function decides, from any error
 * dssync meets, what to do about it — retry it later, refuse it for this file only, stop the
 * mapping, or stop the process — and with which exit code a command ends. It decides by the
 * error's stable `code` alone (every error class of dssync has one, as undici's do; an
 * ApiError's family of codes, errno codes of the system), never by class names or messages,
 * so it imports no other dssync folder and every layer may ask it (the lint enforces both).
 * The exit codes it gives are the table of docs/cli.md ("Exit codes").
 */

export type DispositionKind =
  /** Transient: try again later (the pacer already retried what it could). */
  | 'retry'
  /** The service or the disk refuses this file: skip it until it changes; the rest goes on. */
  | 'refusedForFile'
  /** This mapping cannot go on until the operator acts (its data source is gone...). */
  | 'fatalForMapping'
  /** Nothing can go on: credentials refused, bad configuration, unusable state, shutdown. */
  | 'fatalForProcess';

/** 0 ok, 1 failure, 2 usage/configuration, 3 credentials refused (cli/exit.ts). */
export type DispositionExit = 1 | 2 | 3;

export interface Disposition {
  kind: DispositionKind;
  exitCode: DispositionExit;
  /** Short and stable, for logs and tests. */
  reason: string;
  /**
   * A write whose answer was lost: not a failure of the service but an unknown outcome,
   * which the next full pass (a listing) settles; no back-off, no "degraded".
   */
  settledByListing?: true;
}

/** Where the error happened: an operation on one file, or the mapping as a whole. */
export type ErrorScope = 'file' | 'mapping';

/**
 * The codes of dssync's own error classes (one class, one code; src/<layer>/ names the class)
 * and what each means wherever it happens. The service's codes (ApiError) and the system's
 * errno codes are decided below, since scope and status matter for them.
 */
const CLASS_CODES = {
  /** ConfigError (errors/config.ts): a missing or bad setting. */
  E_CONFIG: d('fatalForProcess', 2, 'configuration'),
  /** ConfigFileError (config/load.ts): the config file cannot be used. */
  E_CONFIG_FILE: d('fatalForProcess', 2, 'configuration file'),
  /** SecretFileError (auth/secret-file.ts): a token, password or secret file cannot be read. */
  E_SECRET_FILE: d('fatalForProcess', 2, 'configuration: secret file'),
  /** CredentialsRefusedError (auth/renewing.ts): the token endpoint or command refused. */
  E_AUTH_REFUSED: d('fatalForProcess', 3, 'credentials refused'),
  /** StateCorruptError: the operator must move the file aside (restarting cannot fix it). */
  E_STATE_CORRUPT: d('fatalForProcess', 2, 'state file: E_STATE_CORRUPT'),
  /** StateVersionError: written by a newer dssync (docs/upgrading.md). */
  E_STATE_NEWER: d('fatalForProcess', 2, 'state file: E_STATE_NEWER'),
  /** StateFormatRetiredError: format 1 or 2 (one JSON object), read by dssync 0.3.0 alone (docs/upgrading.md). */
  E_STATE_RETIRED: d('fatalForProcess', 2, 'state file: E_STATE_RETIRED'),
  /** StateLockedError: another process holds the lock; a later start may find it free. */
  E_STATE_LOCKED: d('fatalForProcess', 1, 'state file: E_STATE_LOCKED'),
  /** StateWriteError: the previous file is intact; the write is retried. */
  E_STATE_WRITE: d('retry', 1, 'state write failed'),
  /** FolderUnavailableError (daemon/build-mirror.ts): the folder cannot be listed, nothing created. */
  E_FOLDER_UNAVAILABLE: d('fatalForMapping', 2, 'folder unavailable'),
  /** FolderChangedError: the state records another folder for the mapping. */
  E_FOLDER_CHANGED: d('fatalForMapping', 2, 'configuration: folder changed'),
  /** SharedDataSourceError: two mappings write into one data source. */
  E_SHARED_DATA_SOURCE: d('fatalForMapping', 2, 'configuration of the mapping'),
  /** DataSourceMissingError (engine/data-source.ts). */
  E_DATA_SOURCE_MISSING: d('fatalForMapping', 2, 'configuration of the mapping'),
  /** ListingIncompleteError (engine/mirror.ts): planning from it would duplicate documents. */
  E_LISTING_INCOMPLETE: d('fatalForMapping', 1, 'incomplete listing'),
  /** LocalFileChangedError / LocalFileVanishedError (engine/mirror.ts). */
  E_LOCAL_FILE_CHANGED: d('retry', 1, 'file changed while read'),
  E_LOCAL_FILE_VANISHED: d('retry', 1, 'file changed while read'),
  /** LeaseNotHeldError (daemon/lease-gate.ts): a write refused while another process holds the mapping's lease. */
  E_LEASE_NOT_HELD: d('retry', 1, 'lease not held'),
} as const satisfies Record<string, Disposition>;

/** The code of each of dssync's own error classes. */
export type ErrorCode = keyof typeof CLASS_CODES;

/** Whether `code` is one of dssync's own error classes' codes. */
export function isClassCode(code: string): code is ErrorCode {
  return Object.hasOwn(CLASS_CODES, code);
}

/** LocalFileError's codes (local/errors.ts): errno, or its own for what errno cannot say. */
const LOCAL_FILE_REFUSED = new Set(['EACCES', 'EPERM', 'EISDIR', 'ENOTDIR', 'ELOOP', 'EFBIG', 'ENAMETOOLONG', 'EINVAL', 'ENXIO']);
const LOCAL_FILE_TRANSIENT = new Set(['ENOENT', 'EBUSY', 'EAGAIN', 'EMFILE', 'ENFILE', 'EIO', 'ESTALE', 'ENOSPC', 'EDQUOT', 'EROFS', 'ECHANGED', 'ENOTREG', 'EOUTSIDE']);

/** WatchError's codes (local/watcher.ts): the watch is set up again, a rescan settles the rest. */
const WATCH_CODES = new Set(['root-gone', 'root-unusable', 'watch-limit', 'watch-failed', 'watch-degraded', 'mounts-changed', 'queue-overflow', 'root-moved']);

/** What disposition() reads of an error: its code, and the fields of a service error. */
interface Coded {
  code?: unknown;
  status?: unknown;
  ambiguous?: unknown;
  /** CliError: the command chose its exit code itself. */
  exitCode?: unknown;
}

export function disposition(e: unknown, scope: ErrorScope = 'mapping'): Disposition {
  const err = (typeof e === 'object' && e !== null ? e : {}) as Coded;
  const code = err.code;
  if (typeof code !== 'string') return unexpected(scope);
  if (code === 'E_CLI') return d('fatalForProcess', exitOf(err.exitCode), 'command');
  if (isClassCode(code)) return CLASS_CODES[code];
  // A service error, or a failure recorded in a pass report ({ code, status }: FileFailure),
  // which decides as its error did.
  if (code.startsWith('E_') && code !== 'E_UNEXPECTED') {
    const status = typeof err.status === 'number' ? err.status : undefined;
    return serviceDisposition(code, status, err.ambiguous === true || code === 'E_AMBIGUOUS', scope);
  }
  if (LOCAL_FILE_REFUSED.has(code)) return scope === 'file' ? d('refusedForFile', 1, `local file: ${code}`) : d('fatalForMapping', 1, `local: ${code}`);
  if (LOCAL_FILE_TRANSIENT.has(code)) return d('retry', 1, `local: ${code}`);
  if (WATCH_CODES.has(code)) return d('retry', 1, `watch: ${code}`);
  return unexpected(scope);
}

/** The service's errors (an ApiError, or its code recorded in a pass report). */
function serviceDisposition(code: string, status: number | undefined, ambiguous: boolean, scope: ErrorScope): Disposition {
  switch (code) {
    case 'E_UNAUTHORIZED':
    case 'E_FORBIDDEN':
      return d('fatalForProcess', 3, 'credentials refused');
    case 'E_ABORTED':
      return d('fatalForProcess', 1, 'interrupted');
    case 'E_PAYLOAD_TOO_LARGE':
    case 'E_UNSUPPORTED_TYPE':
    case 'E_BAD_REQUEST':
    case 'E_CONVERT_FAILED':
      // 400/413/415/422 to a file's request: the service refuses something of that file; or
      // its converter cannot read it (api/upload.ts). It waits until the file changes.
      return scope === 'file' ? d('refusedForFile', 1, `refused by the service (HTTP ${status ?? '?'})`) : d('fatalForMapping', 1, `request refused (HTTP ${status ?? '?'})`);
    case 'E_NOT_FOUND':
      // A document gone under us: the next plan looks again. The data source gone: the mapping stops.
      return scope === 'file' ? d('retry', 1, 'document gone') : d('fatalForMapping', 2, 'data source not found');
    case 'E_FILE_CHANGED':
      return d('retry', 1, 'file changed while sent');
    case 'E_HEADER_REFUSED':
      // A header refused (the organization's): no request can succeed until the config changes.
      return d('fatalForProcess', 2, 'configuration: organizationHeader');
    case 'E_WRONG_ADDRESS':
      // baseUrl leads nowhere the service answers: the operator must correct it.
      return d('fatalForMapping', 2, 'configuration: baseUrl');
    default:
      // 408/409/429/5xx, timeouts, connections, answers not understood, lost answers.
      return ambiguous ? { ...d('retry', 1, 'answer lost'), settledByListing: true } : d('retry', 1, `service: ${code}`);
  }
}

/**
 * The same decision for a failure already recorded in a pass report (code only): true when
 * the file is set aside until it changes rather than retried.
 */
export function isRefusedForFile(code: string): boolean {
  return disposition({ code }, 'file').kind === 'refusedForFile';
}

function unexpected(scope: ErrorScope): Disposition {
  return d(scope === 'file' ? 'retry' : 'fatalForMapping', 1, 'unexpected');
}

function exitOf(n: unknown): DispositionExit {
  return n === 2 || n === 3 ? n : 1;
}

function d(kind: DispositionKind, exitCode: DispositionExit, reason: string): Disposition {
  return { kind, exitCode, reason };
}

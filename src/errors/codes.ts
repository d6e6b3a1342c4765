/**
 * The registry of every error code dssync gives (issue 38.2, after undici's error codes and
 * rclone's fserrors): each code once, with what it means for a pass (`kind`), for one file's
 * operation when that differs (`file`), and the exit code a command ends with. Every thrower
 * types its code from here and `disposition()` decides from here alone; docs/cli.md's
 * exit-code table is checked against it by a test (test/unit/errors/codes.test.ts).
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

export interface CodeEntry {
  /** What it means for a mapping's pass, and for a command. */
  kind: DispositionKind;
  /** The exit code of every command that meets it. */
  exit: DispositionExit;
  /** What it means for one file's operation, when not `kind` (the exit stays 1 there). */
  file?: DispositionKind;
  /** Short and stable, for logs and tests. */
  reason: string;
}

const c = (kind: DispositionKind, exit: DispositionExit, reason: string, file?: DispositionKind): CodeEntry => (file === undefined ? { kind, exit, reason } : { kind, exit, reason, file });

/** A service's refusal of one file's request: that file waits until it changes. */
const refused = (reason: string): CodeEntry => c('fatalForMapping', 1, reason, 'refusedForFile');
const transient = (reason: string): CodeEntry => c('retry', 1, reason);
/** The disk refuses one file of the folder: that file waits until it changes. */
const localRefused = (reason: string): CodeEntry => c('fatalForMapping', 1, `local: ${reason}`, 'refusedForFile');

export const ERROR_CODES = {
  // Configuration: the operator must change a setting (exit 2: a systemd unit does not restart).
  /** ConfigError (errors/config.ts): a missing or bad setting. */
  E_CONFIG: c('fatalForProcess', 2, 'configuration'),
  /** ConfigFileError (config/load.ts): the config file cannot be used. */
  E_CONFIG_FILE: c('fatalForProcess', 2, 'configuration file'),
  /** SecretFileError (auth/secret-file.ts): a token, password or secret file cannot be read. */
  E_SECRET_FILE: c('fatalForProcess', 2, 'configuration: secret file'),
  /** CliError (cli/exit.ts usageError): a command's own check of its arguments. */
  E_USAGE: c('fatalForProcess', 2, 'usage'),
  /** FolderUnavailableError (daemon/mapping/build-mirror.ts): the folder cannot be listed, nothing created. */
  E_FOLDER_UNAVAILABLE: c('fatalForMapping', 2, 'folder unavailable'),
  /** FolderChangedError: the state records another folder for the mapping. */
  E_FOLDER_CHANGED: c('fatalForMapping', 2, 'configuration: folder changed'),
  /** SharedDataSourceError: two mappings write into one data source. */
  E_SHARED_DATA_SOURCE: c('fatalForMapping', 2, 'configuration of the mapping'),
  /** DataSourceMissingError (engine/data-source.ts): by id, gone; by name, several or none (dry run). */
  E_DATA_SOURCE_MISSING: c('fatalForMapping', 2, 'configuration of the mapping'),
  /** ApiError: baseUrl leads nowhere the service answers (a route 404, no TLS). */
  E_WRONG_ADDRESS: c('fatalForMapping', 2, 'configuration: baseUrl'),
  /** ApiError: a 400 to a request without a body: a header refused, the organization's. */
  E_HEADER_REFUSED: c('fatalForProcess', 2, 'configuration: organizationHeader'),
  /** ApiError 404 of the data source (mapping scope); of a document, looked at again. */
  E_NOT_FOUND: c('fatalForMapping', 2, 'data source not found', 'retry'),
  /** Out of file descriptors (errno EMFILE, ENFILE): the limit is the fix; a daemon retries the file. */
  E_TOO_MANY_OPEN_FILES: c('retry', 2, 'out of file descriptors'),

  // Credentials refused (exit 3).
  /** CredentialsRefusedError (auth/renewing.ts): the token endpoint or command refused. */
  E_AUTH_REFUSED: c('fatalForProcess', 3, 'credentials refused'),
  /** ApiError 401 / 403. */
  E_UNAUTHORIZED: c('fatalForProcess', 3, 'credentials refused'),
  E_FORBIDDEN: c('fatalForProcess', 3, 'credentials refused'),

  // The state file: the operator must act (2), or a later start may find it free (1).
  /** StateCorruptError (without onCorrupt 'reset'). */
  E_STATE_CORRUPT: c('fatalForProcess', 2, 'state file: E_STATE_CORRUPT'),
  /** StateVersionError: written by a newer dssync (docs/upgrading.md). */
  E_STATE_NEWER: c('fatalForProcess', 2, 'state file: E_STATE_NEWER'),
  /** StateFormatRetiredError: format 1 or 2 (one JSON object), read by dssync 0.3.0 alone. */
  E_STATE_RETIRED: c('fatalForProcess', 2, 'state file: E_STATE_RETIRED'),
  /** StateLockedError: another process holds the lock. */
  E_STATE_LOCKED: c('fatalForProcess', 1, 'state file: E_STATE_LOCKED'),
  /** StateReadError: the state file cannot be read (its errno in `errno`). */
  E_STATE_READ: c('fatalForProcess', 1, 'state file: E_STATE_READ'),
  /** StateWriteError: the previous file is intact; the write is retried. */
  E_STATE_WRITE: transient('state write failed'),

  // Failures: the work could not be done (exit 1).
  /** CliError (cli/exit.ts): a command's work could not be done. */
  E_FAILED: c('fatalForProcess', 1, 'command'),
  /** ApiError: a stop (shutdown, Ctrl-C) cut the request off. */
  E_ABORTED: c('fatalForProcess', 1, 'interrupted'),
  /** ListingIncompleteError (engine/mirror.ts): planning from it would duplicate documents. */
  E_LISTING_INCOMPLETE: c('fatalForMapping', 1, 'incomplete listing'),
  /** DataSourceGoneError (daemon/mapping/build-mirror.ts): a mapping by name's data source deleted; the next pass finds or creates it. */
  E_DATA_SOURCE_GONE: transient('data source gone'),
  /** An error without a registered code (a defect): a file's operation is retried, a mapping stops. */
  E_UNEXPECTED: c('fatalForMapping', 1, 'unexpected', 'retry'),
  /** ApiError 400/422, 413, 415, or the file's converter failed: that file is refused. */
  E_BAD_REQUEST: refused('refused by the service'),
  E_PAYLOAD_TOO_LARGE: refused('refused by the service'),
  E_UNSUPPORTED_TYPE: refused('refused by the service'),
  E_CONVERT_FAILED: refused('refused by the service'),
  /** LocalFileChangedError / LocalFileVanishedError (engine/local-side.ts), LocalFileError; ApiError: a file changed while sent. */
  E_LOCAL_FILE_CHANGED: transient('file changed while read'),
  E_LOCAL_FILE_VANISHED: transient('file changed while read'),
  E_FILE_CHANGED: transient('file changed while sent'),
  /** LocalFileError, IgnoreFileError (local/): a file of the folder refused until it changes; its errno in `errno`. */
  E_LOCAL_ACCESS: localRefused('permission denied'),
  E_LOCAL_NOT_A_FILE: localRefused('not a file'),
  E_LOCAL_LINK_LOOP: localRefused('too many symbolic links'),
  E_LOCAL_BAD_NAME: localRefused('name not usable'),
  E_LOCAL_TOO_LARGE: localRefused('too large'),
  /** LocalFileError: retried (an I/O error, busy, a stale handle, a full or read-only disk; a file not regular or outside its folder now). */
  E_LOCAL_IO: transient('local: I/O error'),
  E_LOCAL_NOT_REGULAR: transient('local: not a regular file now'),
  E_LOCAL_OUTSIDE: transient('local: outside the folder now'),
  /** WatchError (local/watch/watcher.ts): the watch is set up again, a rescan settles the rest. */
  E_WATCH_ROOT_GONE: transient('watch: root gone'),
  E_WATCH_ROOT_UNUSABLE: transient('watch: root unusable'),
  E_WATCH_ROOT_MOVED: transient('watch: root moved'),
  E_WATCH_LIMIT: transient('watch: limit reached'),
  E_WATCH_FAILED: transient('watch: failed'),
  E_WATCH_DEGRADED: transient('watch: degraded'),
  E_WATCH_MOUNTS_CHANGED: transient('watch: mounts changed'),
  E_WATCH_QUEUE_OVERFLOW: transient('watch: queue overflow'),
  /** LeaseNotHeldError (daemon/mapping/lease-gate.ts): another process holds the mapping's lease. */
  E_LEASE_NOT_HELD: transient('lease not held'),
  /** ApiError: 409, 429, 5xx, other 4xx, timeouts, connections, answers not understood (an `ambiguous` one is settled by a listing). */
  E_CONFLICT: transient('service: E_CONFLICT'),
  E_RATE_LIMITED: transient('service: E_RATE_LIMITED'),
  E_SERVER: transient('service: E_SERVER'),
  E_HTTP: transient('service: E_HTTP'),
  E_TIMEOUT: transient('service: E_TIMEOUT'),
  E_CONNECTION: transient('service: E_CONNECTION'),
  E_BAD_RESPONSE: transient('service: E_BAD_RESPONSE'),
  E_LIST_TOO_LONG: transient('service: E_LIST_TOO_LONG'),
} as const satisfies Record<string, CodeEntry>;

/**
 * The system's errno of a local failure, and the names before issue 38.2 (the errno itself,
 * ECHANGED, ENOTREG, EOUTSIDE, the watch's kebab-case codes), as the registry's code: the
 * code a user sees and filters by is E_*; a LocalFileError keeps the errno as its `errno`.
 */
const AS_REGISTERED: Readonly<Record<string, ErrorCode>> = {
  EACCES: 'E_LOCAL_ACCESS',
  EPERM: 'E_LOCAL_ACCESS',
  EISDIR: 'E_LOCAL_NOT_A_FILE',
  ENOTDIR: 'E_LOCAL_NOT_A_FILE',
  ENXIO: 'E_LOCAL_NOT_A_FILE',
  ELOOP: 'E_LOCAL_LINK_LOOP',
  ENAMETOOLONG: 'E_LOCAL_BAD_NAME',
  EINVAL: 'E_LOCAL_BAD_NAME',
  EFBIG: 'E_LOCAL_TOO_LARGE',
  ENOENT: 'E_LOCAL_FILE_VANISHED',
  ...Object.fromEntries(['EBUSY', 'EAGAIN', 'EIO', 'ESTALE', 'ENOSPC', 'EDQUOT', 'EROFS'].map((e) => [e, 'E_LOCAL_IO'] as const)),
  EMFILE: 'E_TOO_MANY_OPEN_FILES',
  ENFILE: 'E_TOO_MANY_OPEN_FILES',
  ECHANGED: 'E_LOCAL_FILE_CHANGED',
  ENOTREG: 'E_LOCAL_NOT_REGULAR',
  EOUTSIDE: 'E_LOCAL_OUTSIDE',
  'root-gone': 'E_WATCH_ROOT_GONE',
  'root-unusable': 'E_WATCH_ROOT_UNUSABLE',
  'root-moved': 'E_WATCH_ROOT_MOVED',
  'watch-limit': 'E_WATCH_LIMIT',
  'watch-failed': 'E_WATCH_FAILED',
  'watch-degraded': 'E_WATCH_DEGRADED',
  'mounts-changed': 'E_WATCH_MOUNTS_CHANGED',
  'queue-overflow': 'E_WATCH_QUEUE_OVERFLOW',
};

export type ErrorCode = keyof typeof ERROR_CODES;
export type WatchErrorCode = Extract<ErrorCode, `E_WATCH_${string}`>;

/** The registry's code for `code`: itself, or the E_* code of an errno or an older name (unknown ones stay as they are). */
export function registryCode(code: string): string {
  return Object.hasOwn(AS_REGISTERED, code) ? (AS_REGISTERED[code] as ErrorCode) : code;
}

/** The registered entry of `code` (an errno through its E_* code), or undefined when none is registered. */
export function codeEntry(code: string): CodeEntry | undefined {
  const registered = registryCode(code);
  return Object.hasOwn(ERROR_CODES, registered) ? ERROR_CODES[registered as ErrorCode] : undefined;
}

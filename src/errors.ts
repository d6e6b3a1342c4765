/**
 * One error disposition (issue 9): a single pure function decides, from any error dssync
 * meets, what to do about it — retry it later, refuse it for this file only, stop the
 * mapping, or stop the process — and with which exit code `dssync sync` ends. The executor,
 * the mirror, `sync`'s exit code and the runner ask it instead of keeping their own lists of
 * codes (before, nine places decided and their lists disagreed: the executor refused 400/422
 * per file while the runner retried them as failures).
 */
import { isApiError } from './api/errors.js';
import { ConfigError } from './config/connection.js';
import { StateError } from './state/errors.js';

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

const LOCAL_FILE_REFUSED = new Set(['EACCES', 'EPERM', 'EISDIR', 'ENOTDIR', 'ELOOP', 'EFBIG', 'ENAMETOOLONG', 'EINVAL', 'ENXIO']);
const LOCAL_FILE_TRANSIENT = new Set(['ENOENT', 'EBUSY', 'EAGAIN', 'EMFILE', 'ENFILE', 'EIO', 'ESTALE']);

export function disposition(e: unknown, scope: ErrorScope = 'mapping'): Disposition {
  if (e instanceof ConfigError) return d('fatalForProcess', 2, 'configuration');
  const name = e instanceof Error ? e.name : undefined;
  if (name === 'SharedDataSourceError' || name === 'DataSourceMissingError') return d('fatalForMapping', 2, 'configuration of the mapping');
  if (name === 'ListingIncompleteError') return d('fatalForMapping', 1, 'incomplete listing');
  if (name === 'LocalFileChangedError' || name === 'LocalFileVanishedError') return d('retry', 1, 'file changed while read');
  if (e instanceof StateError) {
    if (e.code === 'E_STATE_WRITE') return d('retry', 1, 'state write failed');
    return d('fatalForProcess', 2, `state file: ${e.code}`);
  }
  if (isApiError(e)) return serviceDisposition(e.code, e.status, e.ambiguous, scope);
  const code = (e as { code?: unknown } | undefined)?.code;
  if (typeof code === 'string') {
    // A failure recorded in a pass report ({ code, status }: FileFailure) decides as its error did.
    if (code.startsWith('E_') && code !== 'E_UNEXPECTED') {
      const status = (e as { status?: unknown }).status;
      return serviceDisposition(code, typeof status === 'number' ? status : undefined, code === 'E_AMBIGUOUS', scope);
    }
    if (LOCAL_FILE_REFUSED.has(code)) return scope === 'file' ? d('refusedForFile', 1, `local file: ${code}`) : d('fatalForMapping', 1, `local: ${code}`);
    if (LOCAL_FILE_TRANSIENT.has(code)) return d('retry', 1, `local: ${code}`);
    if (code === 'ENOSPC' || code === 'EDQUOT' || code === 'EROFS') return d('retry', 1, `local: ${code}`);
  }
  return d(scope === 'file' ? 'retry' : 'fatalForMapping', 1, 'unexpected');
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
      // 400/413/415/422 to a file's request: the service refuses something of that file.
      return scope === 'file' ? d('refusedForFile', 1, `refused by the service (HTTP ${status ?? '?'})`) : d('fatalForMapping', 1, `request refused (HTTP ${status ?? '?'})`);
    case 'E_NOT_FOUND':
      // A document gone under us: the next plan looks again. The data source gone: the mapping stops.
      return scope === 'file' ? d('retry', 1, 'document gone') : d('fatalForMapping', 2, 'data source not found');
    case 'E_FILE_CHANGED':
      return d('retry', 1, 'file changed while sent');
    case 'E_WRONG_ADDRESS':
      // baseUrl leads nowhere the service answers: the operator must correct it.
      return d('fatalForMapping', 2, 'configuration: baseUrl');
    case 'E_STATE_WRITE':
      return d('retry', 1, 'state write failed');
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

function d(kind: DispositionKind, exitCode: DispositionExit, reason: string): Disposition {
  return { kind, exitCode, reason };
}

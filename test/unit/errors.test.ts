import { describe, expect, it } from 'vitest';
import { ApiError, type ApiErrorCode } from '../../src/api/errors.js';
import { ConfigError } from '../../src/config/connection.js';
import { ListingIncompleteError } from '../../src/engine/mirror.js';
import { LocalFileChangedError } from '../../src/engine/local-side.js';
import { SharedDataSourceError } from '../../src/daemon/mapping/build-mirror.js';
import { disposition, type ErrorScope } from '../../src/errors/disposition.js';
import { StateWriteError } from '../../src/state/errors.js';

const api = (code: ApiErrorCode, status?: number, extra: { ambiguous?: boolean } = {}) => new ApiError({ code, status, message: code, ...extra });
const sys = (code: string) => Object.assign(new Error(code), { code });

describe('disposition (one decision for every error, issue 9)', () => {
  const cases: [string, unknown, ErrorScope, string, number][] = [
    ['401 anywhere stops the process, exit 3', api('E_UNAUTHORIZED', 401), 'file', 'fatalForProcess', 3],
    ['403 likewise', api('E_FORBIDDEN', 403), 'mapping', 'fatalForProcess', 3],
    ['400 to a file is refused for that file', api('E_BAD_REQUEST', 400), 'file', 'refusedForFile', 1],
    ['422 to a file likewise', api('E_BAD_REQUEST', 422), 'file', 'refusedForFile', 1],
    ['413 to a file', api('E_PAYLOAD_TOO_LARGE', 413), 'file', 'refusedForFile', 1],
    ['415 to a file', api('E_UNSUPPORTED_TYPE', 415), 'file', 'refusedForFile', 1],
    ['400 to the mapping (a listing) stops the mapping', api('E_BAD_REQUEST', 400), 'mapping', 'fatalForMapping', 1],
    ['400 to a GET (a header refused: the organization header) stops the process, exit 2', api('E_HEADER_REFUSED', 400), 'mapping', 'fatalForProcess', 2],
    ['404 of a document: looked at again', api('E_NOT_FOUND', 404), 'file', 'retry', 1],
    ['404 of the data source: the mapping stops, exit 2', api('E_NOT_FOUND', 404), 'mapping', 'fatalForMapping', 2],
    ['429', api('E_RATE_LIMITED', 429), 'file', 'retry', 1],
    ['5xx', api('E_SERVER', 502), 'mapping', 'retry', 1],
    ['409', api('E_CONFLICT', 409), 'file', 'retry', 1],
    ['a lost answer', api('E_CONNECTION', undefined, { ambiguous: true }), 'file', 'retry', 1],
    ['a timeout', api('E_TIMEOUT'), 'mapping', 'retry', 1],
    ['shutdown', api('E_ABORTED'), 'file', 'fatalForProcess', 1],
    ['a file changed while sent', api('E_FILE_CHANGED'), 'file', 'retry', 1],
    ['baseUrl leads nowhere the service answers (route 404, no TLS): the mapping stops, exit 2', api('E_WRONG_ADDRESS', 404), 'file', 'fatalForMapping', 2],
    ['a bad config', new ConfigError('no base URL'), 'mapping', 'fatalForProcess', 2],
    ['two mappings on one data source', new SharedDataSourceError('x'), 'mapping', 'fatalForMapping', 2],
    ['an incomplete listing', new ListingIncompleteError('x'), 'mapping', 'fatalForMapping', 1],
    ['a file changed while hashed', new LocalFileChangedError('x'), 'file', 'retry', 1],
    ['a state write failing (disk full)', new StateWriteError('/s', sys('ENOSPC')), 'file', 'retry', 1],
    ['an unreadable file', sys('EACCES'), 'file', 'refusedForFile', 1],
    ['a file gone', sys('ENOENT'), 'file', 'retry', 1],
    ['something unexpected in a file op', new Error('boom'), 'file', 'retry', 1],
    ['something unexpected in the mapping', new Error('boom'), 'mapping', 'fatalForMapping', 1],
  ];
  for (const [name, e, scope, kind, exitCode] of cases) {
    it(name, () => {
      expect(disposition(e, scope)).toMatchObject({ kind, exitCode });
    });
  }

  it('a recorded failure code: refused files are not retried as failures (the runner used to retry 400/422)', () => {
    expect(disposition({ code: 'E_BAD_REQUEST' }, 'file').kind === 'refusedForFile').toBe(true);
    expect(disposition({ code: 'E_PAYLOAD_TOO_LARGE' }, 'file').kind === 'refusedForFile').toBe(true);
    expect(disposition({ code: 'E_UNSUPPORTED_TYPE' }, 'file').kind === 'refusedForFile').toBe(true);
    expect(disposition({ code: 'E_SERVER' }, 'file').kind === 'refusedForFile').toBe(false);
  });

  it('a failure recorded in a pass report ({ code, status }) decides as the error it records', () => {
    expect(disposition({ code: 'E_UNAUTHORIZED', status: 401 }, 'file')).toMatchObject({ kind: 'fatalForProcess', exitCode: 3 });
    expect(disposition({ code: 'E_BAD_REQUEST', status: 422 }, 'file')).toMatchObject({ kind: 'refusedForFile', reason: 'refused by the service (HTTP 422)' });
    expect(disposition({ code: 'E_SERVER', status: 503 }, 'file')).toMatchObject({ kind: 'retry' });
    expect(disposition({ code: 'E_STATE_WRITE' }, 'file')).toMatchObject({ kind: 'retry', reason: 'state write failed' });
    expect(disposition({ code: 'E_UNEXPECTED' }, 'file')).toMatchObject({ kind: 'retry', reason: 'unexpected' });
  });

  it('a lost answer is settled by a listing (no back-off), recorded or not; other retries are not', () => {
    expect(disposition({ code: 'E_CONNECTION', ambiguous: true }, 'file').settledByListing).toBe(true);
    expect(disposition(api('E_CONNECTION', undefined, { ambiguous: true }), 'file').settledByListing).toBe(true);
    expect(disposition(api('E_SERVER', 503), 'file').settledByListing).toBeUndefined();
  });
});

/**
 * What to say when baseUrl does not lead to the service's interface (issue 14.6): a 404 for
 * a route the service does not have, told apart from a 404 for a missing data source or
 * document by the client (it asks for the list of data sources, which exists whatever the
 * organization holds). Every command, the daemon and `config check` say the same words.
 */
import { ApiError } from './errors.js';

/** The collection every service has: a 404 for it means the route, never a missing record. */
export const DATA_SOURCES_PATH = '/datastore/v1/data-sources';

/** The fix for a baseUrl under which the service has no such route. */
export function baseUrlFix(baseUrl: string): string {
  let u: URL;
  try {
    u = new URL(baseUrl);
  } catch {
    return 'check baseUrl';
  }
  const path = u.pathname.replace(/\/+$/, '');
  const at = path.indexOf('/datastore/');
  if (at >= 0 || path.endsWith('/datastore')) {
    const root = `${u.origin}${path.slice(0, at >= 0 ? at : path.length - '/datastore'.length)}`;
    return `set baseUrl to "${root}": dssync adds /datastore/v1/... itself`;
  }
  if (path !== '') return `check the path "${path}" of baseUrl: dssync adds /datastore/v1/... to it (the service's address is often just "${u.origin}")`;
  return "check baseUrl's host and port: is the document service served there?";
}

/** The 404 `e`, for a route the service does not have, told as the wrong address it is. */
export function wrongAddressError(baseUrl: string, e: ApiError): ApiError {
  return new ApiError({
    code: 'E_WRONG_ADDRESS',
    message: `baseUrl "${baseUrl}" looks wrong: the service has no route ${e.method ?? 'GET'} ${e.path ?? ''} (404 Not Found); ${baseUrlFix(baseUrl)}`,
    status: e.status,
    method: e.method,
    path: e.path,
    retryable: false,
    attempts: e.attempts,
    cause: e,
  });
}

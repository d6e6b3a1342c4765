/**
 * Ids the service hands out go back into request paths (`/documents/{id}`). One that is
 * `..`, empty or holds a separator would address another resource: `PUT .../documents/..`
 * is `PUT .../data-sources/<ds>/` once the URL is normalised (issue 24.7). Every id is
 * checked here, where records are decoded and again where a path is built, so that no
 * request goes to a URL the id was not meant to name.
 */
import { ApiError } from './errors.js';

/** Longer than any id a service hands out (UUIDs are 36, Mongo ids 24). */
export const MAX_ID_LENGTH = 256;

/** Why `id` cannot be one segment of a URL path; undefined when it can. */
export function idProblem(id: string): string | undefined {
  if (id === '') return 'it is empty';
  if (id === '.' || id === '..') return 'it is a relative path segment';
  if (id.length > MAX_ID_LENGTH) return `it is ${id.length} characters long (at most ${MAX_ID_LENGTH})`;
  // eslint-disable-next-line no-control-regex
  const bad = /[/\\?#%\u0000-\u001f\u007f-\u009f\u2028\u2029]/.exec(id);
  if (bad) return `it contains ${JSON.stringify(bad[0])}`;
  return undefined;
}

/** The id quoted for a message: escaped, and cut when absurdly long. */
export function quoteId(id: string): string {
  const shown = id.length > 60 ? `${id.slice(0, 60)}…` : id;
  return JSON.stringify(shown);
}

/** `id` encoded as one path segment, or an error naming it and the reason. */
export function pathSegment(id: string, kind: string): string {
  const problem = idProblem(id);
  if (problem !== undefined) {
    throw new ApiError({ code: 'E_BAD_REQUEST', retryable: false, message: `the ${kind} id ${quoteId(id)} cannot be part of a request's URL: ${problem}` });
  }
  return encodeURIComponent(id);
}

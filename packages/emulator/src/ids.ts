/**
 * Identifiers: `ds_`, `doc_`, `chk_` + 32 hex digits of a random UUID. Ids arriving in a
 * path are checked before any lookup, so a traversal attempt (`..`, `%2F`) or an odd
 * character is a 400 naming the parameter, never a lookup.
 */
import { randomUUID } from 'node:crypto';
import { EmulatorError } from './errors.js';

export type IdPrefix = 'ds' | 'doc' | 'chk';

export function newId(prefix: IdPrefix): string {
  return `${prefix}_${randomUUID().replaceAll('-', '')}`;
}

/** Letters, digits, `_`, `-`, `.`, `:`; starts with a letter or digit; at most 128. */
const PATH_ID = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/;

export function isValidPathId(value: string): boolean {
  return PATH_ID.test(value) && !value.includes('..');
}

/** Returns the id, or throws 400 invalid_id naming the parameter. */
export function checkPathId(param: string, value: string | undefined): string {
  if (value === undefined || !isValidPathId(value)) {
    throw new EmulatorError(
      400,
      'invalid_id',
      `path parameter ${param} is not a valid identifier (letters, digits, "_", "-", ".", ":"; at most 128 characters)`,
      { field: param },
    );
  }
  return value;
}

import { registryCode } from './codes.js';

/**
 * The one errno getter (issue 27.6): the system's code of an error (ENOENT, EACCES...), or
 * undefined when it carries none. Every layer reads errno through this.
 */
export function errnoOf(err: unknown): string | undefined {
  if (typeof err === 'object' && err !== null && 'code' in err && typeof err.code === 'string') return err.code;
  return undefined;
}

/** The code a user sees and filters by (`/status`, the page): an errno as its E_* code (codes.ts `registryCode`). */
export function shownCodeOf(err: unknown): string | undefined {
  const code = errnoOf(err);
  return code === undefined ? undefined : registryCode(code);
}

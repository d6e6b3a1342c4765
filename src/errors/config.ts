import type { ErrorCode } from './codes.js';

/**
 * A usage or configuration problem (exit 2), naming the setting at fault. It lives beside the
 * disposition, in the folder every layer may import, so that config/ and auth/ (which both
 * throw it) need not import each other.
 */
export class ConfigError extends Error {
  override readonly name: string = 'ConfigError';
  /** Stable, for disposition() (errors/disposition.ts); each subclass has its own. */
  readonly code: Extract<ErrorCode, 'E_CONFIG' | 'E_CONFIG_FILE' | 'E_SECRET_FILE'> = 'E_CONFIG';
  constructor(
    message: string,
    /** The setting at fault, e.g. `mappings[0].path` or `baseUrl`. */
    readonly field?: string,
  ) {
    super(message);
  }
}

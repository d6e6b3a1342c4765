/** A usage or configuration problem (exit 2), naming the setting at fault. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  constructor(
    message: string,
    /** The setting at fault, e.g. `mappings[0].path` or `baseUrl`. */
    readonly field?: string,
  ) {
    super(message);
  }
}

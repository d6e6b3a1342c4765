/** The config layer's public surface. */
export { ConfigError, resolveConnection, CREDENTIAL_NAMES } from './connection.js';
export type { Connection, ConnectionFlags, ConnectionFileSettings, ResolveConnectionInput } from './connection.js';
export {
  loadConfig,
  loadSettings,
  requireMappings,
  defaultStatePath,
  ConfigFileError,
  type ConfigFlags,
  type ConfigIssue,
  type LoadConfigOptions,
} from './load.js';
export { describeConfig, type ConfigDescription } from './describe.js';
export { DEFAULTS, DEFAULT_INCLUDE, LOG_LEVELS } from './schema.js';
export { renderUrlTemplate, encodePathSegments, DEFAULT_URL_TEMPLATE, type UrlValues } from './url-template.js';
export { formatListenAddress, isLoopbackHost, type ListenAddress } from './listen.js';
export type * from './types.js';

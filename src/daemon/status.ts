/**
 * What `/status` answers and `dssync status` shows: the daemon and each mapping. The shape
 * is the zod schema in status-schema.ts; these names stay for existing importers.
 */
export type { DaemonStatus, MappingStatus } from './status-schema.js';
export { DaemonStatusSchema, parseDaemonStatus } from './status-schema.js';

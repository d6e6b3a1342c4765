/**
 * What `/status` answers and `dssync status` shows: the daemon and each mapping. The shape
 * is the zod schema in status/schema.ts; these names stay for existing importers.
 */
import type { InstallationStatus } from './schema.js';
import type { StateIdentity } from '../../state/schema.js';
import type { StateRecovery } from '../../state/store.js';
export type { DaemonStatus, MappingStatus } from './schema.js';
export { DaemonStatusSchema, parseDaemonStatus } from './schema.js';

/** The status's view of the installation's identity (undefined until it is established). */
export function installationStatus(identity: StateIdentity | undefined, recovery: StateRecovery | undefined): InstallationStatus | undefined {
  if (identity === undefined) return undefined;
  return {
    id: identity.installationId,
    origin: identity.origin,
    formerIds: identity.formerIds.length,
    ...(recovery ? { stateRebuilt: { kind: recovery.kind, identity: recovery.identity, ...(recovery.movedTo !== undefined ? { movedTo: recovery.movedTo } : {}) } } : {}),
  };
}

/**
 * `/readyz` (docs/status.md): this process is mirroring, every mapping of it. Not ready:
 * a mapping that does not hold its lease (a standby, or a claim under way), is paused, or
 * is stopped until the operator acts. `/healthz` stays liveness: the process works.
 */
import type { DaemonStatus, MappingStatus } from './schema.js';

export interface Readiness {
  ready: boolean;
  /** Why not, one line per mapping (ids, hosts and sessions only: no file names). */
  reasons: string[];
}

export function readiness(s: DaemonStatus): Readiness {
  if (s.stopping) return { ready: false, reasons: ['stopping'] };
  const reasons = s.mappings.flatMap((m) => notMirroring(m) ?? []);
  return { ready: reasons.length === 0, reasons };
}

/** Why this mapping is not mirroring, or undefined when it is. */
function notMirroring(m: MappingStatus): string | undefined {
  const lease = m.lease;
  if (lease?.state === 'standby' && lease.holder) {
    return `${m.id}: standby: the lease is held by ${lease.holder.host} (session ${lease.holder.session}${lease.holder.since ? `, since ${lease.holder.since}` : ''})`;
  }
  if (m.paused) return `${m.id}: paused since ${m.paused.since}`;
  if (m.phase === 'stopped') return `${m.id}: stopped`;
  if (m.halted) return `${m.id}: stopped until the configuration is fixed`;
  if (lease === undefined) return `${m.id}: starting (data source not resolved yet)`;
  if (lease.state !== 'held') return `${m.id}: lease ${lease.state}`;
  return undefined;
}

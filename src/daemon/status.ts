/** What `/status` answers and `dssync status` shows: the daemon and each mapping. */
import type { MappingStatus } from './mapping-runner.js';

export interface DaemonStatus {
  version: string;
  pid: number;
  startedAt: string;
  configFile?: string | undefined;
  statePath: string;
  /** The service's address (never the token). */
  baseUrl: string;
  organizationId: string;
  stopping: boolean;
  requests: { total: number; retries: number; throttled: number; inFlight: number; queued: number };
  mappings: MappingStatus[];
}

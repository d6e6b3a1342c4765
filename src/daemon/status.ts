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
  requests: {
    total: number;
    retries: number;
    throttled: number;
    inFlight: number;
    queued: number;
    /** The rate learned from the service's 429s (requests per second), when one was. */
    learnedRps?: number | undefined;
  };
  /** This process's memory (MB): resident set, JS heap used and reserved, outside the heap. */
  memory?: { rssMB: number; heapUsedMB: number; heapTotalMB: number; externalMB: number } | undefined;
  /** The state file: its last write (wall time incl. fsync, bytes, longest event-loop block) and load. */
  state?: { writes: number; lastWriteMs: number; lastBytes: number; lastMaxBlockMs: number; loadMs?: number | undefined } | undefined;
  mappings: MappingStatus[];
}

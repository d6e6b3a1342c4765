/**
 * Prometheus metrics of the daemon (prom-client), on a registry of its own so several
 * daemons in one test process do not share counters. Gauges that mirror the runners'
 * state are computed at scrape time.
 */
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { PacerEvent } from '../../api/pacer.js';
import { contentBytesRead } from '../../local/hash.js';
import { inotifyQueue } from '../../local/watch/queue-overflow.js';
import type { OpEvent } from '../../engine/executor.js';
import type { MappingStatus } from './schema.js';
import type { WatchStatusView } from './schema.js';

type WatchedMountView = WatchStatusView['mounts'][number];

/**
 * Mounts of one mapping with series of their own; the others (a folder holding many mounts)
 * share the series mount="other" (files and cycle times summed, flags and intervals the
 * largest): the series count stays bounded.
 */
export const MOUNT_SERIES = 20;

export class DaemonMetrics {
  readonly registry = new Registry();
  private readonly ops: Counter<'mapping' | 'kind' | 'outcome'>;
  private readonly requestSeconds: Histogram<'method' | 'status'>;
  private readonly retries: Counter<'code'>;
  private readonly throttled: Counter<'status'>;
  private readonly lag: Histogram<'mapping'>;

  constructor(statuses: () => MappingStatus[]) {
    const registers = [this.registry];
    this.ops = new Counter({
      name: 'dssync_operations_total',
      help: 'Document operations by kind (upload, replace, rename, update-meta, delete, adopt, forget) and outcome',
      labelNames: ['mapping', 'kind', 'outcome'],
      registers,
    });
    this.requestSeconds = new Histogram({
      name: 'dssync_request_duration_seconds',
      help: 'Latency of requests to the service, by method and HTTP status (or error code)',
      labelNames: ['method', 'status'],
      buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    });
    this.retries = new Counter({ name: 'dssync_request_retries_total', help: 'Requests retried, by error code', labelNames: ['code'], registers });
    this.throttled = new Counter({
      name: 'dssync_throttled_total',
      help: 'Answers 429/503 that paused every request (shared back-off)',
      labelNames: ['status'],
      registers,
    });
    this.lag = new Histogram({
      name: 'dssync_sync_lag_seconds',
      help: "Time from a file's change (first watcher event) to the service's answer for it",
      labelNames: ['mapping'],
      buckets: [0.25, 0.5, 1, 2, 5, 10, 30, 60, 300],
      registers,
    });
    const perMapping = (name: string, help: string, value: (s: MappingStatus) => number | undefined): void => {
      new Gauge({
        name,
        help,
        labelNames: ['mapping'],
        registers,
        collect() {
          this.reset();
          for (const s of statuses()) {
            const v = value(s);
            if (v !== undefined) this.set({ mapping: s.id }, v);
          }
        },
      });
    };
    const perProcess = (name: string, help: string, value: () => number): void => {
      new Counter({ name, help, registers, collect() { this.reset(); this.inc(value()); } });
    };
    perProcess('dssync_content_bytes_read_total', 'Bytes of file content read to hash files (a restart over an unchanged tree reads none)', contentBytesRead);
    perProcess(
      'dssync_inotify_queue_overflows_total',
      "Overflows of the process's inotify queue (fs.inotify.max_queued_events), reported by the kernel (or, under fs.watch, inferred): each one made every mapping look at everything again",
      () => inotifyQueue.view().overflows,
    );
    perMapping('dssync_queue_depth', 'Paths waiting to be looked at', (s) => s.pending);
    perMapping('dssync_files_tracked', 'Files mirrored (entries in the state)', (s) => s.filesTracked);
    perMapping('dssync_mapping_degraded', '1 when the mapping is degraded', (s) => (s.degraded.length > 0 ? 1 : 0));
    new Gauge({
      name: 'dssync_mapping_phase',
      help: "1 for the mapping's phase now (starting, syncing, watching, degraded, paused, stopped, and any phase status adds), one series per mapping",
      labelNames: ['mapping', 'phase'],
      registers,
      collect() {
        this.reset();
        for (const s of statuses()) this.set({ mapping: s.id, phase: s.phase }, 1);
      },
    });
    perMapping('dssync_mapping_paused', '1 when the operator paused the mapping (dssync pause): it makes no request', (s) => (s.paused ? 1 : 0));
    perMapping('dssync_pending_deletes', 'Deletions stopped by the mass-delete guard, waiting for dssync confirm-delete (0 when none waits)', (s) => s.pendingDeletes?.total ?? 0);
    perMapping('dssync_last_successful_pass_timestamp_seconds', 'End of the last full pass that left the data source in sync', (s) =>
      s.lastFullPassOkAt ? Date.parse(s.lastFullPassOkAt) / 1000 : undefined,
    );
    perMapping('dssync_files_skipped', 'Files not mirrored for now (too large, refused, unreadable)', (s) => s.skipped.length);
    perMapping('dssync_documents_not_ingested', 'Uploaded documents with no chunks after the ingestion delay', (s) => s.notIngested.length);
    perMapping('dssync_watched_folders', 'Folders under inotify watch', (s) => s.watchedDirs);
    perMapping('dssync_watch_folders_over_limit', 'Folders polled because the inotify watch limit (fs.inotify.max_user_watches) was reached', (s) => s.watch?.overLimit.length);
    perMapping('dssync_watch_problems', 'Current watch problems: a hung or unmounted share, a folder the poller may not read, the watch limit', (s) => s.watch?.problems.length);
    perMapping('dssync_poll_cycles', 'Poll cycles completed since the mapping started watching', (s) => s.watch?.poll?.cycles);
    // Per mount (labels mapping, mount): mount="N:fstype", the N-th mount of the mapping's watch
    // block in `dssync status` (0: the one holding the folder); at most MOUNT_SERIES per
    // mapping, the rest as mount="other".
    const perMount = (name: string, combine: 'sum' | 'max', help: string, value: (m: WatchedMountView, w: WatchStatusView) => number | undefined): void => {
      new Gauge({
        name,
        help,
        labelNames: ['mapping', 'mount'],
        registers,
        collect() {
          this.reset();
          for (const s of statuses()) {
            if (!s.watch) continue;
            const totals = new Map<string, number>();
            for (const [i, m] of s.watch.mounts.entries()) {
              const v = value(m, s.watch);
              if (v === undefined) continue;
              // No path: /metrics answers other machines without a token (docs/status.md).
              const mount = i < MOUNT_SERIES ? `${i}:${m.fsType}` : 'other';
              const prev = totals.get(mount);
              totals.set(mount, prev === undefined ? v : combine === 'sum' ? prev + v : Math.max(prev, v));
            }
            for (const [mount, v] of totals) this.set({ mapping: s.id, mount }, v);
          }
        },
      });
    };
    perMount('dssync_watch_polled', 'max', '1 when the mount is polled (network, FUSE, unknown, or watch.mode "poll"), 0 when watched by events only', (m) => (m.kind === 'poll' ? 1 : 0));
    perMount('dssync_poll_files', 'sum', 'Files looked at under the mount in the last complete poll cycle', (m) => m.files);
    perMount('dssync_poll_last_cycle_seconds', 'sum', 'Time the last complete poll cycle spent on the mount', (m) => (m.lastCycleMs === undefined ? undefined : m.lastCycleMs / 1000));
    perMount('dssync_poll_interval_seconds', 'max', "Time between the starts of the last two poll cycles (the interval achieved; the mapping's poller serves all its polled mounts)", (m, w) =>
      m.kind === 'poll' && w.poll?.achievedIntervalMs !== undefined ? w.poll.achievedIntervalMs / 1000 : undefined,
    );
  }

  onOp(mappingId: string, e: OpEvent, lagMs: number | undefined): void {
    this.ops.inc({ mapping: mappingId, kind: e.kind, outcome: e.outcome });
    if (lagMs !== undefined) this.lag.observe({ mapping: mappingId }, lagMs / 1000);
  }

  onPacer(e: PacerEvent): void {
    // A success carries no status from the pacer (any 2xx is a success): label it '2xx'.
    if (e.type === 'response') this.requestSeconds.observe({ method: e.method, status: String(e.status ?? e.code ?? (e.ok ? '2xx' : 'error')) }, e.ms / 1000);
    else if (e.type === 'retry') this.retries.inc({ code: e.code });
    else if (e.type === 'throttle') this.throttled.inc({ status: String(e.status) });
  }

  text(): Promise<string> {
    return this.registry.metrics();
  }
}

/**
 * A printable view of the configuration for `dssync config check` and logs: every setting
 * with its effective value, never the token (only where it comes from).
 */
import { formatListenAddress } from './listen.js';
import type { Config, Settings } from './types.js';

export interface ConfigDescription {
  file: string | null;
  baseUrl: string | null;
  organizationId: string | null;
  /** Where the token comes from ("the file /etc/dssync/token"), when resolved. */
  tokenSource: string | null;
  tokenFile: string | null;
  statePath: string;
  appId: string | null;
  logLevel: string;
  queue: Settings['queue'];
  status: { listen: string | false };
  tls: { caFile: string | null };
  rescanIntervalSeconds: number;
  debounceMs: number;
  ingestionCheck: Settings['ingestionCheck'];
  mappings: {
    id: string;
    path: string;
    dataSource: string;
    include: string[];
    exclude: string[];
    ignoreFile: string;
    maxFileBytes: number;
    urlTemplate: string;
    metadata: Record<string, string | number | boolean>;
    prune: string;
    maxDeletePercent: number;
    followSymlinks: boolean;
  }[];
}

export function describeConfig(config: Settings | Config): ConfigDescription {
  const connection = 'connection' in config ? config.connection : undefined;
  return {
    file: config.file ?? null,
    baseUrl: connection?.baseUrl ?? config.baseUrl ?? null,
    organizationId: connection?.organizationId ?? config.organizationId ?? null,
    tokenSource: connection?.tokenSource ?? null,
    tokenFile: config.fileConnection.tokenFile ?? null,
    statePath: config.statePath,
    appId: config.appId ?? null,
    logLevel: config.logLevel,
    queue: { ...config.queue, timeouts: { ...config.queue.timeouts } },
    status: { listen: config.status.listen === false ? false : formatListenAddress(config.status.listen) },
    tls: { caFile: config.tls.caFile ?? null },
    rescanIntervalSeconds: config.rescanIntervalSeconds,
    debounceMs: config.debounceMs,
    ingestionCheck: { ...config.ingestionCheck },
    mappings: config.mappings.map((m) => ({
      id: m.id,
      path: m.path,
      dataSource:
        m.dataSourceId !== undefined
          ? `id ${m.dataSourceId}`
          : `name "${m.dataSource.name}" (created with connectors ${m.dataSource.llmConnectorIds.join(', ')} when absent)`,
      include: [...m.include],
      exclude: [...m.exclude],
      ignoreFile: m.ignoreFile,
      maxFileBytes: m.maxFileBytes,
      urlTemplate: m.urlTemplate,
      metadata: { ...m.metadata },
      prune: m.prune,
      maxDeletePercent: m.maxDeletePercent,
      followSymlinks: m.followSymlinks,
    })),
  };
}

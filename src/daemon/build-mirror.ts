/**
 * Builds a mapping's Mirror from the configuration: resolves its data source, wires the
 * local side, the client and the state. Shared by `dssync sync` and the daemon.
 */
import type { DatastoreApi } from '../api/api.js';
import type { Config, MappingConfig } from '../config/types.js';
import { createLocalSide } from '../local/side.js';
import type { Logger } from '../log.js';
import { resolveDataSource } from '../engine/data-source.js';
import { installationIdFor, sharedDataSourceProblems } from '../engine/installation.js';
import type { OpEvent } from '../engine/executor.js';
import { Mirror, type MirrorState } from '../engine/mirror.js';

/** Deleting fewer documents than this never trips the mass-delete share check. */
export const MASS_DELETE_MINIMUM = 10;

export interface BuildMirrorDeps {
  api: DatastoreApi;
  state: MirrorState;
  logger: Logger;
  now?: () => number;
  onOp?: ((e: OpEvent) => void) | undefined;
  signal?: AbortSignal | undefined;
  /** Create a data source named by `dataSource` when absent (sync and run: yes; dry run: no). */
  create?: boolean;
}

/** Two mappings of one config writing into one data source: refused (issue 9, defect 6). */
export class SharedDataSourceError extends Error {
  override readonly name = 'SharedDataSourceError';
}

export async function buildMirror(config: Config, mapping: MappingConfig, index: number, deps: BuildMirrorDeps): Promise<Mirror> {
  const shared = sharedDataSourceProblems(config.mappings).find((p) => p.includes(JSON.stringify(mapping.id)));
  if (shared !== undefined) throw new SharedDataSourceError(`${shared} (config mappings[${index}])`);
  const ds = await resolveDataSource(deps.api, mapping, `mappings[${index}]`, { create: deps.create ?? true, signal: deps.signal });
  if (ds.created) deps.logger.info({ mapping: mapping.id, dataSourceId: ds.id, name: mapping.dataSource?.name }, 'created the data source');
  return new Mirror({
    spec: {
      mappingId: mapping.id,
      installationId: installationIdFor(config.statePath),
      root: mapping.path,
      dataSourceId: ds.id,
      urlTemplate: mapping.urlTemplate,
      metadata: mapping.metadata,
      prune: mapping.prune,
      maxDeletePercent: mapping.maxDeletePercent,
      massDeleteMinimum: MASS_DELETE_MINIMUM,
      batchFiles: config.queue.uploadBatchFiles,
      batchBytes: config.queue.uploadBatchBytes,
      concurrency: config.queue.concurrency,
    },
    api: deps.api,
    state: deps.state,
    local: createLocalSide(mapping, { signal: deps.signal }),
    logger: deps.logger.child({ mapping: mapping.id }),
    now: deps.now ?? Date.now,
    onOp: deps.onOp,
  });
}

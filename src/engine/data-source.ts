/**
 * Finds the data source a mapping names: by id (it must exist), or by name (found, or
 * created with the mapping's connector ids when absent). DESIGN §6.
 */
import type { DatastoreApi } from '../api/api.js';
import { isApiError } from '../api/errors.js';
import type { DataSourceRecord } from '../api/records.js';

export class DataSourceMissingError extends Error {
  override readonly name = 'DataSourceMissingError';
  constructor(
    message: string,
    /** True when a sync would create it (named by `dataSource`, creation not allowed now). */
    readonly wouldCreate = false,
  ) {
    super(message);
  }
}

export interface DataSourceRef {
  dataSourceId?: string | undefined;
  dataSource?: { name: string; llmConnectorIds: readonly string[] } | undefined;
}

export interface ResolvedDataSource {
  id: string;
  record?: DataSourceRecord | undefined;
  created: boolean;
}

export async function resolveDataSource(
  api: DatastoreApi,
  ref: DataSourceRef,
  where: string,
  opts: { create: boolean; signal?: AbortSignal | undefined } = { create: true },
): Promise<ResolvedDataSource> {
  if (ref.dataSourceId) {
    try {
      const record = await api.getDataSource(ref.dataSourceId, { signal: opts.signal });
      return { id: record.id || ref.dataSourceId, record, created: false };
    } catch (e) {
      if (isApiError(e) && e.code === 'E_NOT_FOUND') {
        throw new DataSourceMissingError(
          `data source ${ref.dataSourceId} (${where}.dataSourceId) does not exist for this organization; check the id with: dssync datasources list`,
        );
      }
      throw e;
    }
  }
  if (!ref.dataSource) throw new DataSourceMissingError(`${where} names no data source (dataSourceId or dataSource)`);
  const { name, llmConnectorIds } = ref.dataSource;
  const all = await api.listDataSources({ signal: opts.signal });
  const matches = all.filter((d) => d.name === name);
  if (matches.length > 1) {
    throw new DataSourceMissingError(
      `${matches.length} data sources are named "${name}" (${matches.map((m) => m.id).join(', ')}); set ${where}.dataSourceId to the one to use`,
    );
  }
  if (matches[0]) return { id: matches[0].id, record: matches[0], created: false };
  if (!opts.create) throw new DataSourceMissingError(`no data source is named "${name}" yet (${where}.dataSource): a sync would create it and upload every file`, true);
  const record = await api.createDataSource({ name, llmConnectorIds: [...llmConnectorIds] }, { signal: opts.signal });
  return { id: record.id, record, created: true };
}

/**
 * Finds the data source a mapping names: by id (it must exist), or by name (found, or
 * created with the mapping's connector ids when absent). DESIGN §6.
 *
 * A mapping by name that the state already records is followed by the recorded id: a data
 * source renamed in the App keeps being mirrored (and the rename is reported) instead of a
 * second, empty one being created under the old name; a recorded data source that no longer
 * exists is reported and replaced by the one the name finds or creates now.
 *
 * A data source made for a mapping whose writes need its lease is born under a provisional
 * name (provisionalName), which no lookup by name finds: until it takes its configured name,
 * only its creator knows it, so the creator's first claim needs no settle wait
 * (mapping/lease.ts; docs/reliability.md, "A data source dssync creates").
 */
import type { DatastoreApi } from '../api/api.js';
import { isApiError, unlessGone } from '../api/errors.js';
import type { DataSourceRecord } from '../api/records.js';

export class DataSourceMissingError extends Error {
  override readonly name = 'DataSourceMissingError';
  readonly code = 'E_DATA_SOURCE_MISSING';
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

/** What the state records of the mapping's data source (MappingState). */
export interface RecordedDataSource {
  dataSourceId: string;
  /** The configured name it was resolved by; absent in older states and for mappings by id. */
  configuredName?: string | undefined;
}

export interface ResolvedDataSource {
  id: string;
  record?: DataSourceRecord | undefined;
  created: boolean;
  /**
   * What the operator must hear (log, status, sync report): the recorded data source was
   * renamed in the App and is followed by id, or it no longer exists and was replaced.
   */
  notice?: string | undefined;
  /** The recorded data source that no longer exists, which this one replaces. */
  replaces?: string | undefined;
  /** Still under its provisional name: it takes `birth.name` once its lease holds. */
  birth?: DataSourceBirth | undefined;
}

/** A data source under its provisional name, and the name it takes. */
export interface DataSourceBirth {
  name: string;
  /** Made by this process just now (no other process can know it): its first claim needs no settle wait. */
  fresh: boolean;
  /** Named by id in the config: it takes its name only while no other data source has it, and never gives way (it is never deleted). */
  byId?: true | undefined;
}

const PROVISIONAL = ' (dssync: being set up)';

/** The name a data source is created under: one no lookup by name (byName) finds. */
export function provisionalName(name: string): string {
  return `${name}${PROVISIONAL}`;
}

/** A data source reached by id while under its provisional name: the name it is to take, else undefined. */
export function pendingBirth(record: Pick<DataSourceRecord, 'name'>): DataSourceBirth | undefined {
  const name = record.name;
  return name !== undefined && name.endsWith(PROVISIONAL) && name.length > PROVISIONAL.length ? { name: name.slice(0, -PROVISIONAL.length), fresh: false, byId: true } : undefined;
}

/**
 * Once the lease of a data source born under its provisional name holds: take the name, or
 * give way to a data source another process gave that name meanwhile (it is the one every
 * lookup finds; this one, ours alone, is deleted).
 */
export function birthOutcome(mine: string, name: string, all: readonly Pick<DataSourceRecord, 'id' | 'name'>[]): { kind: 'name' } | { kind: 'giveWay'; to: string } {
  const other = all.find((d) => d.name === name && d.id !== mine);
  return other === undefined ? { kind: 'name' } : { kind: 'giveWay', to: other.id };
}

export interface ResolveOptions {
  create: boolean;
  signal?: AbortSignal | undefined;
  /** The state's record of the mapping: followed by id for a mapping by name. */
  recorded?: RecordedDataSource | undefined;
  /** The mapping's id (named in the fix of a rename). */
  mappingId?: string | undefined;
  /** Create under the provisional name (a lease will name it): true for a mirror that takes a lease. */
  provisional?: boolean | undefined;
}

export async function resolveDataSource(api: DatastoreApi, ref: DataSourceRef, where: string, opts: ResolveOptions = { create: true }): Promise<ResolvedDataSource> {
  if (ref.dataSourceId) {
    const record = await unlessGone(api.getDataSource(ref.dataSourceId, { signal: opts.signal }));
    // Still under its provisional name: its creator's first claim is awaited as for a copied state (mapping/lease.ts).
    if (record !== undefined) return { id: record.id || ref.dataSourceId, record, created: false, birth: pendingBirth(record) };
    // Named by id, it cannot be created: which one to use instead is the operator's call.
    throw new DataSourceMissingError(
      `data source ${ref.dataSourceId} (${where}.dataSourceId) does not exist for this organization; check the id with: dssync datasources list. ` +
        `If it was deleted in the App, the mapping stops until the config names another (${where}.dataSourceId), or names it by "dataSource": { "name", "llmConnectorIds" } to have it created`,
    );
  }
  if (!ref.dataSource) throw new DataSourceMissingError(`${where} names no data source (dataSourceId or dataSource)`);
  const { name } = ref.dataSource;
  let gone: string | undefined;
  if (opts.recorded) {
    const followed = await followRecorded(api, name, opts.recorded, where, opts);
    if (followed.kind === 'follow') return followed.resolved;
    if (followed.kind === 'gone') gone = opts.recorded.dataSourceId;
  }
  const found = await byName(api, ref.dataSource, where, opts, gone);
  if (gone === undefined) return found;
  const now = found.created ? `created a new one, ${found.id}, named "${name}"` : `now mirroring into ${found.id}, found by the name "${name}"`;
  return { ...found, replaces: gone, notice: `data source ${gone}, recorded for this mapping, no longer exists (deleted in the App?); ${now}` };
}

type Followed = { kind: 'follow'; resolved: ResolvedDataSource } | { kind: 'gone' } | { kind: 'configChanged' };

/** The recorded data source of a mapping by name: followed, gone, or no longer what the config names. */
async function followRecorded(api: DatastoreApi, name: string, recorded: RecordedDataSource, where: string, opts: ResolveOptions): Promise<Followed> {
  const id = recorded.dataSourceId;
  const record = await unlessGone(api.getDataSource(id, { signal: opts.signal }));
  if (record === undefined) return { kind: 'gone' };
  if (record.name === name) return { kind: 'follow', resolved: { id: record.id || id, record, created: false } };
  // Made by an earlier run that stopped before naming it: its lease, taken again, names it.
  if (record.name === provisionalName(name)) return { kind: 'follow', resolved: { id: record.id || id, record, created: false, birth: { name, fresh: false } } };
  // The operator changed the name in the config: a new choice, looked up by name.
  if (recorded.configuredName !== undefined && recorded.configuredName !== name) return { kind: 'configChanged' };
  // Renamed in the App (or a state older than the recorded name): never a second data source.
  const others = (await api.listDataSources({ signal: opts.signal })).filter((d) => d.name === name && d.id !== id).map((d) => d.id);
  const mappingId = opts.mappingId !== undefined ? `, keeping "id": ${JSON.stringify(opts.mappingId)} so that its documents stay this mapping's` : '';
  const notice =
    `data source ${id} was renamed to ${JSON.stringify(record.name)} in the App (${where}.dataSource names ${JSON.stringify(name)}); dssync follows it by id` +
    (others.length > 0 ? `; ${others.join(', ')}, now named ${JSON.stringify(name)}, is not used` : '') +
    `. Rename it back, or replace ${where}.dataSource with "dataSourceId": ${JSON.stringify(id)}${mappingId}, to silence this`;
  return { kind: 'follow', resolved: { id: record.id || id, record, created: false, notice } };
}

async function byName(api: DatastoreApi, spec: NonNullable<DataSourceRef['dataSource']>, where: string, opts: ResolveOptions, gone: string | undefined): Promise<ResolvedDataSource> {
  const { name, llmConnectorIds } = spec;
  const all = await api.listDataSources({ signal: opts.signal });
  const matches = all.filter((d) => d.name === name);
  if (matches.length > 1) {
    throw new DataSourceMissingError(
      `${matches.length} data sources are named "${name}" (${matches.map((m) => m.id).join(', ')}); set ${where}.dataSourceId to the one to use`,
    );
  }
  if (matches[0]) return { id: matches[0].id, record: matches[0], created: false };
  if (!opts.create) {
    const why = gone !== undefined ? `data source ${gone}, recorded for this mapping, no longer exists (deleted in the App?) and ` : '';
    throw new DataSourceMissingError(`${why}no data source is named "${name}" yet (${where}.dataSource): a sync would create it and upload every file`, true);
  }
  const record = await api.createDataSource({ name: opts.provisional === true ? provisionalName(name) : name, llmConnectorIds: [...llmConnectorIds] }, { signal: opts.signal });
  return { id: record.id, record, created: true, ...(opts.provisional === true ? { birth: { name, fresh: true } } : {}) };
}

/**
 * True when the data source is known to be gone (the service answers 404 for it); false
 * when it exists or when the question could not be answered (the pass's own error stands).
 */
export async function dataSourceGone(api: DatastoreApi, id: string, signal?: AbortSignal): Promise<boolean> {
  try {
    await api.getDataSource(id, { signal });
    return false;
  } catch (e) {
    return isApiError(e) && e.code === 'E_NOT_FOUND';
  }
}

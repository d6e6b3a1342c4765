/**
 * Builds a mapping's Mirror from the configuration: resolves its data source, wires the
 * local side, the client and the state. Shared by `dssync sync` and the daemon.
 */
import { realpath } from 'node:fs/promises';
import type { DatastoreApi } from '../../api/api.js';
import type { MappingState } from '../../state/schema.js';
import type { Config, MappingConfig } from '../../config/types.js';
import { folderProblem } from '../../local/folder-check.js';
import { createLocalSide } from '../../local/side.js';
import type { ObservedStats } from '../../local/observed-stats.js';
import { DEFAULT_AGGREGATOR_OPTIONS } from '../../local/watch/aggregator.js';
import type { Logger } from '../../log.js';
import { DataSourceMissingError, dataSourceGone, resolveDataSource, type DataSourceBirth, type ResolvedDataSource } from '../../engine/data-source.js';
import { establishIdentity, sharedDataSourceProblems, type IdentityHolder } from '../../engine/installation.js';
import type { OpEvent } from '../../engine/executor.js';
import type { Op } from '../../engine/plan.js';
import { Mirror, type MirrorDeps, type MirrorState } from '../../engine/mirror.js';
import { rebuildFromListing, type RebuildState } from '../../engine/rebuild.js';
import type { Clock } from '../../time/clock.js';
import type { LeaseView } from '../../engine/lease-view.js';
import type { LeaseRecord } from '../../engine/lease.js';
import { leaseGated, LeaseNotHeldError } from './lease-gate.js';

/** The mapping's lease as a mirror uses it (mapping/lease.ts): only while it holds it does it write. */
export interface MirrorLease {
  /** The writer session its record names: the one the mirror's documents carry. */
  readonly session: string;
  holds(): boolean;
  view(): LeaseView;
  /** Waits for a claim under way; true when the lease is held after it. */
  settled(): Promise<boolean>;
  /** Waits until a claim under way has read the marker; true when it found no live holder. */
  claimRead(): Promise<boolean>;
  /** That read found the lease free with exactly this record on the marker (mapping/lease.ts). */
  claimReadShowed(record: LeaseRecord): boolean;
}

/**
 * The stability window of every full pass, the daemon's and `dssync sync`'s: the
 * aggregator's for a file being written, or the configured quiet time when longer (a file
 * changed this recently is set aside by the pass and looked at again after it).
 */
export function passStabilityMs(config: Pick<Config, 'debounceMs'>): number {
  return Math.max(DEFAULT_AGGREGATOR_OPTIONS.settleMs, config.debounceMs);
}

/** Deleting fewer documents than this never trips the mass-delete share check. */
export const MASS_DELETE_MINIMUM = 10;

export interface BuildMirrorDeps {
  api: DatastoreApi;
  state: MirrorState &
    IdentityHolder &
    Pick<RebuildState, 'needsRebuild' | 'rebuilt'> & {
      mapping(id: string): MappingState | undefined;
      /** Keeps the configured name the data source was resolved by (absent in a dry run's state). */
      recordDataSourceName?(mappingId: string, name: string): void;
    };
  logger: Logger;
  /** The one clock: its wall reading for the state's timestamps, its monotonic one for the mirror's own windows. */
  clock: Clock;
  /** The stability window of full passes (MirrorDeps.stabilityMs); none by default. */
  stabilityMs?: number | undefined;
  onOp?: ((e: OpEvent) => void) | undefined;
  /** Each round's plan, before it is carried out (a progress display's total). */
  onPlan?: ((ops: readonly Op[]) => void) | undefined;
  signal?: AbortSignal | undefined;
  /** The watcher's stats of changed files (the daemon's; `sync` has no watcher). */
  observed?: ObservedStats | undefined;
  /** Create a data source named by `dataSource` when absent (sync and run: yes; dry run: no). */
  create?: boolean;
  /**
   * A dry run: a data source that a sync would create is planned as an empty one (every
   * file an upload), so that the plan — and the filters — can be previewed before it exists.
   */
  dryRun?: boolean;
  /**
   * The operator says the mapping's folder really moved (`dssync sync --folder-moved`):
   * the new folder is recorded; otherwise a changed folder is refused (FolderChangedError).
   */
  folderMoved?: boolean;
  /**
   * What the operator must hear about the data source (renamed in the App and followed by
   * id, deleted and replaced): logged here, and shown by the caller (status, sync report).
   */
  onNotice?: ((message: string) => void) | undefined;
  /**
   * The mapping's lease for its data source, once resolved (not in a dry run): the mirror's
   * writes are refused while it is not held (lease-gate.ts). Absent: no lease (tests).
   */
  lease?: ((dataSourceId: string, installationId: string, birth?: DataSourceBirth) => MirrorLease) | undefined;
}

/** The mapped folder cannot be listed, so its data source was not created. */
export class FolderUnavailableError extends Error {
  override readonly name = 'FolderUnavailableError';
  readonly code = 'E_FOLDER_UNAVAILABLE';
}

/** The id a dry run shows for a data source a sync would create. */
export function wouldCreateId(name: string | undefined): string {
  return `(new data source "${name ?? ''}")`;
}

/**
 * The state records this mapping with another folder: two configs
 * sharing one state file, or a real move. Never switched silently.
 */
export class FolderChangedError extends Error {
  override readonly name = 'FolderChangedError';
  readonly code = 'E_FOLDER_CHANGED';
}

/**
 * A refusal when the folder the state records for the mapping is not the configured one.
 * Real paths are compared: another spelling of the same folder (a symlink) is no change.
 */
export async function folderChangeProblem(statePath: string, mappingId: string, recordedRoot: string | undefined, configured: string): Promise<string | undefined> {
  if (recordedRoot === undefined || recordedRoot === configured) return undefined;
  const real = (p: string): Promise<string | undefined> => realpath(p).catch(() => undefined);
  const [a, b] = await Promise.all([real(recordedRoot), real(configured)]);
  if (a !== undefined && a === b) return undefined;
  return (
    `mapping ${JSON.stringify(mappingId)}: the state file ${statePath} records the folder ${recordedRoot}, but the config maps ${configured}; nothing was changed. ` +
    `Two configs sharing one state file? Give each its own "statePath". A real move? Run 'dssync sync --config F --folder-moved' once (the mass-delete guard counts what it would delete)`
  );
}

/** Two mappings of one config writing into one data source: refused. */
export class SharedDataSourceError extends Error {
  override readonly name = 'SharedDataSourceError';
  readonly code = 'E_SHARED_DATA_SOURCE';
}

export async function buildMirror(config: Config, mapping: MappingConfig, index: number, deps: BuildMirrorDeps): Promise<Mirror> {
  const shared = sharedDataSourceProblems(config.mappings).find((p) => p.includes(JSON.stringify(mapping.id)));
  if (shared !== undefined) throw new SharedDataSourceError(`${shared} (config mappings[${index}])`);
  let api = deps.api;
  const ds: ResolvedDataSource = await resolveMappingDataSource(mapping, index, deps).catch((e: unknown) => {
    if (!(e instanceof DataSourceMissingError && e.wouldCreate && deps.dryRun)) throw e;
    // A dry run plans a data source a sync would create as an empty one.
    api = emptyListing(deps.api);
    return { id: wouldCreateId(mapping.dataSource?.name), created: false } satisfies ResolvedDataSource;
  });
  const sharedResolved = await sharedAfterResolution(config, mapping, ds.id, deps);
  if (sharedResolved !== undefined) throw new SharedDataSourceError(`${sharedResolved} (config mappings[${index}])`);
  if (!deps.folderMoved) {
    const recorded = deps.state.mapping(mapping.id);
    const problem = recorded && recorded.dataSourceId === ds.id ? await folderChangeProblem(config.statePath, mapping.id, recorded.root, mapping.path) : undefined;
    if (problem !== undefined) throw new FolderChangedError(problem);
  }
  const identity = establishIdentity(deps.state, { pinned: config.installationId, statePath: config.statePath });
  if (ds.created) deps.logger.info({ mapping: mapping.id, dataSourceId: ds.id, name: mapping.dataSource?.name }, ds.birth ? 'created the data source (under its provisional name until its lease holds)' : 'created the data source');
  if (!deps.dryRun) {
    recordResolution(deps, mapping, ds);
    // A state rebuilt with its identity kept (corrupt or missing): its documents are recorded again first.
    await rebuildFromListing({
      api,
      state: deps.state,
      mappingId: mapping.id,
      dataSourceId: ds.id,
      installationId: identity.installationId,
      formerInstallationIds: identity.formerIds,
      logger: deps.logger,
      now: () => deps.clock.now(),
      signal: deps.signal,
    });
  }
  const lease = deps.dryRun ? undefined : deps.lease?.(ds.id, identity.installationId, ds.birth);
  return new Mirror({
    spec: {
      mappingId: mapping.id,
      installationId: identity.installationId,
      formerInstallationIds: identity.formerIds,
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
      formats: mapping.formats,
    },
    ...leaseDeps(lease, api, mapping.id),
    state: deps.state,
    local: createLocalSide(mapping, { signal: deps.signal, observed: deps.observed }),
    logger: deps.logger.child({ mapping: mapping.id }),
    now: () => deps.clock.now(),
    monotonic: () => deps.clock.monotonic(),
    stabilityMs: deps.stabilityMs,
    onOp: deps.onOp,
    onPlan: deps.onPlan,
  });
}

/**
 * The refusal when another mapping of the config resolves to the data source `mapping`
 * resolved to (`dataSourceId`), whichever way each names it. The others are resolved
 * without creating anything and without a request where the config or the state knows the
 * id: by id as written; by name, the id the state recorded for that name, else the service's
 * data source of that name (none yet: no collision).
 */
async function sharedAfterResolution(config: Config, mapping: MappingConfig, dataSourceId: string, deps: BuildMirrorDeps): Promise<string | undefined> {
  if (config.mappings.length < 2) return undefined;
  const ids = new Map<string, string | undefined>([[mapping.id, dataSourceId]]);
  for (const [i, m] of config.mappings.entries()) {
    if (m.id !== mapping.id) ids.set(m.id, await resolvedIdOf(m, i, deps));
  }
  return sharedDataSourceProblems(config.mappings, (m) => ids.get(m.id)).find((p) => p.includes(JSON.stringify(mapping.id)));
}

async function resolvedIdOf(m: MappingConfig, index: number, deps: BuildMirrorDeps): Promise<string | undefined> {
  if (m.dataSourceId !== undefined) return m.dataSourceId;
  const recorded = deps.state.mapping(m.id);
  if (recorded !== undefined && recorded.dataSourceName === m.dataSource.name) return recorded.dataSourceId;
  return resolveDataSource(deps.api, m, `mappings[${index}]`, { create: false, signal: deps.signal }).then(
    (r) => r.id,
    () => undefined,
  );
}

/**
 * The mapping's data source, looked up as buildMirror does: a mapping by name follows the
 * data source the state records (by id), reports a rename made in the App, and replaces
 * one that no longer exists (found or created by name). A notice is logged and handed to
 * `deps.onNotice`; a replacement names how many of the state's records it drops.
 */
export async function resolveMappingDataSource(mapping: MappingConfig, index: number, deps: BuildMirrorDeps): Promise<ResolvedDataSource> {
  const where = `mappings[${index}]`;
  const create = !deps.dryRun && (deps.create ?? true);
  const saved = mapping.dataSource ? deps.state.mapping(mapping.id) : undefined;
  const opts = {
    signal: deps.signal,
    mappingId: mapping.id,
    recorded: saved ? { dataSourceId: saved.dataSourceId, configuredName: saved.dataSourceName } : undefined,
    // Its lease names a data source it creates (data-source.ts provisionalName).
    provisional: deps.lease !== undefined,
  };
  const ds = await resolveDataSource(deps.api, mapping, where, { ...opts, create: false }).catch(async (e: unknown) => {
    if (!(e instanceof DataSourceMissingError && e.wouldCreate)) throw e;
    // Nothing is created for a folder that cannot be mirrored: an empty data source
    // would be left behind, and the folder's problem is what the operator must hear.
    const problem = await folderProblem(mapping.path);
    if (problem) throw new FolderUnavailableError(`${where}.path: ${problem} (no data source was created)`);
    if (create) return resolveDataSource(deps.api, mapping, where, { ...opts, create: true });
    throw e;
  });
  if (ds.notice === undefined) return ds;
  const dropped = ds.replaces !== undefined ? (saved?.files.size ?? 0) : 0;
  const notice = ds.replaces !== undefined ? `${ds.notice}; the state's ${dropped} record(s) of ${ds.replaces} are dropped and every file is uploaded again` : ds.notice;
  const fields = { mapping: mapping.id, dataSourceId: ds.id, name: mapping.dataSource?.name, ...(ds.replaces !== undefined ? { replaces: ds.replaces, droppedRecords: dropped } : {}) };
  if (ds.replaces !== undefined) deps.logger.error(fields, notice);
  else deps.logger.warn(fields, notice);
  deps.onNotice?.(notice);
  return { ...ds, notice };
}

/** The data source of a mapping by name was deleted (in the App): the next pass finds or creates it by name. */
export class DataSourceGoneError extends Error {
  override readonly name = 'DataSourceGoneError';
  readonly code = 'E_DATA_SOURCE_GONE';
}

/**
 * After a pass that met a 404 (a listing, an upload), or failed with one: is the mapping's
 * data source itself gone? Then the error that says so, in the same words for `dssync sync`
 * and the daemon: by name, DataSourceGoneError (the next pass finds or creates it: exit 1);
 * by id, DataSourceMissingError (the mapping stops until the config names another: exit 2).
 * Undefined when it is not gone: the pass's own outcome stands.
 */
export async function lostDataSource(api: DatastoreApi, mapping: MappingConfig, index: number, dataSourceId: string, signal?: AbortSignal): Promise<DataSourceGoneError | DataSourceMissingError | undefined> {
  if (!(await dataSourceGone(api, dataSourceId, signal))) return undefined;
  const gone = `data source ${dataSourceId} of mapping ${mapping.id} no longer exists (deleted in the App?)`;
  return mapping.dataSource
    ? new DataSourceGoneError(`${gone}: looked up again by the name ${JSON.stringify(mapping.dataSource.name)} (and created when absent) at the next pass; every file is uploaded again`)
    : new DataSourceMissingError(`${gone}: the mapping stops until the config names another data source (mappings[${index}].dataSourceId)`);
}

/** The state records the data source now used, and the configured name it was found by. */
function recordResolution(deps: BuildMirrorDeps, mapping: MappingConfig, ds: ResolvedDataSource): void {
  const name = mapping.dataSource?.name;
  if (name === undefined || !deps.state.recordDataSourceName) return;
  // A replaced data source's records are dropped here (ensureMapping resets them, and logs it).
  deps.state.ensureMapping(mapping.id, ds.id, mapping.path);
  // The config's name, also when a rename is followed: a config naming another later is a new choice.
  deps.state.recordDataSourceName(mapping.id, name);
}

/** The client, except that listings answer empty: a data source that does not exist yet. */
function emptyListing(api: DatastoreApi): DatastoreApi {
  return new Proxy(api, {
    get(target, key, receiver) {
      if (key === 'listDocuments') return () => Promise.resolve([]);
      const value: unknown = Reflect.get(target, key, receiver);
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}

/**
 * What a mirror takes of the mapping's lease: a client whose writes need the lease held
 * (lease-gate.ts), the owner rule's view, the wait before a plan (a claim under way settled
 * with the lease held, else LeaseNotHeldError: the round plans nothing), the writer session.
 */
export function leaseDeps(lease: MirrorLease | undefined, api: DatastoreApi, mappingId: string): Pick<MirrorDeps, 'api' | 'lease' | 'leaseRead' | 'leaseReadShowed' | 'leaseSettled' | 'session'> {
  if (lease === undefined) return { api };
  return {
    api: leaseGated(api, () => lease.holds(), mappingId),
    lease: () => lease.view(),
    leaseRead: async () => {
      if (!(await lease.claimRead())) throw new LeaseNotHeldError(`mapping ${mappingId}: another process holds the lease; nothing is listed`);
    },
    leaseReadShowed: (record) => lease.claimReadShowed(record),
    leaseSettled: async () => {
      const waited = !lease.holds();
      if (!(await lease.settled())) throw new LeaseNotHeldError(`mapping ${mappingId}: this process does not hold the lease; nothing is written`);
      return waited;
    },
    session: lease.session,
  };
}

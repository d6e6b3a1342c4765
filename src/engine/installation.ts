/**
 * Who owns a document (docs/reliability.md, "Identity: who owns a document"): a document
 * carrying dssync metadata is ours only when it names this mapping id AND this
 * installation. Two configs (two hosts, or a copy of a config with its own state file) may
 * give a mapping the same id (the default `ds:<id>`); the installation id keeps them apart.
 *
 * The installation id is drawn, not derived: a random id created once with the state and
 * kept in it (StateFile.identity), so a host rename, a recreated container or another
 * spelling of the state's path changes nothing. It used to be a hash of the host name and
 * the state file's path (installationIdFor): a state written before ids were stored keeps
 * that value, so its documents stay its own. The operator may pin it (config
 * "installationId", DSSYNC_INSTALLATION_ID): the pin wins and is stored; the ids it
 * replaced are kept as formerIds, and a document the state records by id that carries one
 * of them is still ours (its metadata is rewritten). A corrupt or deleted state keeps its
 * id from the identity file beside it (state/identity-file.ts) and rebuilds itself
 * (engine/rebuild.ts); a state lost with that file draws a new id and so recognises nothing
 * as its own: `dssync adopt` settles it, explicitly.
 */
import { createHash, randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { resolve } from 'node:path';
import type { StateIdentity } from '../state/schema.js';

/** The id of states written before ids were stored (host name + the state's path). */
export function installationIdFor(statePath: string, host: string = hostname()): string {
  return createHash('sha256').update(`dssync-installation\0${host}\0${resolve(statePath)}`).digest('hex').slice(0, 16);
}

/** A new id: 16 hex digits (64 random bits), the shape of the derived ones. */
export function drawInstallationId(): string {
  return randomBytes(8).toString('hex');
}

/** The state's side of the identity (StateStore and the dry run's ReadOnlyState). */
export interface IdentityHolder {
  readonly identity: StateIdentity | undefined;
  setIdentity(identity: StateIdentity): void;
  /** True when the state records any mapping (an existing state, not a new one). */
  hasRecords(): boolean;
}

export interface IdentityInputs {
  /** The pinned id (config "installationId" or DSSYNC_INSTALLATION_ID), if any. */
  pinned?: string | undefined;
  /** The state path as configured: the derived id of an older state is computed from it. */
  statePath: string;
  host?: string | undefined;
  draw?: (() => string) | undefined;
}

/**
 * The identity this state runs under, stored in the state when it changed: the pin when
 * there is one (the ids it replaces become former ids); else the stored one; else, for a
 * state written before ids were stored, the id the old rule derives (nothing changes for
 * its documents); else (a new or lost state) a random one.
 */
export function establishIdentity(state: IdentityHolder, inputs: IdentityInputs): StateIdentity {
  const stored = state.identity;
  const legacy = (): string => installationIdFor(inputs.statePath, inputs.host ?? hostname());
  let next: StateIdentity;
  if (inputs.pinned !== undefined) {
    if (stored?.installationId === inputs.pinned) {
      next = { ...stored, origin: 'pinned' };
    } else {
      const before = stored ? [...stored.formerIds, stored.installationId] : state.hasRecords() ? [legacy()] : [];
      next = { installationId: inputs.pinned, origin: 'pinned', formerIds: [...new Set(before)].filter((id) => id !== inputs.pinned) };
    }
  } else if (stored) {
    // An unpinned config keeps what the state holds (a removed pin included): the documents carry it.
    next = stored;
  } else if (state.hasRecords()) {
    next = { installationId: legacy(), origin: 'derived', formerIds: [] };
  } else {
    next = { installationId: (inputs.draw ?? drawInstallationId)(), origin: 'drawn', formerIds: [] };
  }
  state.setIdentity(next);
  return next;
}

/**
 * `dssync identity reset`: a new drawn id, no former ids (the old one now belongs to the
 * other host), and every mapping's records dropped (they describe the other host's documents).
 */
export function resetIdentity(state: IdentityHolder & { mappingIds(): string[]; dropMapping(id: string): void }, draw: () => string = drawInstallationId): StateIdentity {
  for (const id of state.mappingIds()) state.dropMapping(id);
  const next: StateIdentity = { installationId: draw(), origin: 'drawn', formerIds: [] };
  state.setIdentity(next);
  return next;
}

/** A mapping as far as data-source sharing goes. */
export interface DataSourceRef {
  id: string;
  dataSourceId?: string | undefined;
  dataSource?: { name: string } | undefined;
}

/**
 * Mappings of one config that write into the same data source (same id, or same name to
 * create/find; with `resolvedId`, the data source each one's reference resolved to, so that
 * one by name and one by id of the same data source are found too): they would take each
 * other's documents for foreign ones. One message per group, naming the mappings and the fix.
 */
export function sharedDataSourceProblems(mappings: readonly DataSourceRef[], resolvedId: (m: DataSourceRef) => string | undefined = () => undefined): string[] {
  const groups = new Map<string, string[]>();
  for (const m of mappings) {
    const resolved = resolvedId(m);
    const key =
      resolved !== undefined ? `id ${JSON.stringify(resolved)}` : m.dataSourceId !== undefined ? `id ${JSON.stringify(m.dataSourceId)}` : m.dataSource ? `name ${JSON.stringify(m.dataSource.name)}` : undefined;
    if (key === undefined) continue;
    groups.set(key, [...(groups.get(key) ?? []), m.id]);
  }
  const out: string[] = [];
  for (const [key, ids] of groups) {
    if (ids.length < 2) continue;
    out.push(
      `mappings ${ids.map((i) => JSON.stringify(i)).join(', ')} write into the same data source (${key}): each would treat the other's documents as not its own. Give each mapping its own data source`,
    );
  }
  return out;
}

/**
 * The data source a mapping's reference names in a listing of the service's data sources:
 * its id as written, or the one data source of its name (none, or several: unknown).
 */
export function resolvedIn(dataSources: readonly { id: string; name?: string | undefined }[]): (m: DataSourceRef) => string | undefined {
  return (m) => {
    if (m.dataSourceId !== undefined) return m.dataSourceId;
    const named = m.dataSource === undefined ? [] : dataSources.filter((d) => d.name === m.dataSource!.name);
    return named.length === 1 ? named[0]!.id : undefined;
  };
}

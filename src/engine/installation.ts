/**
 * Who owns a document (docs/reliability.md, "What is ours"): a document carrying dssync
 * metadata is ours only when it names this mapping id AND this installation. Two configs
 * (two hosts, or a copy of a config with its own state file) may give a mapping the same id
 * (the default `ds:<id>`); the installation id keeps them apart.
 *
 * The installation id is derived, not drawn at random and stored: it is a hash of the host
 * name and the state file's absolute path. A lost or corrupt state file then still
 * recognises its documents from the listing alone (a stored random id would be lost with the
 * file, and every document would look like another owner's); a second state file, or the
 * same path on another host, is another installation. Moving a state file changes the id:
 * its documents are still claimed (and re-marked) through the document ids it records.
 * Pure apart from reading the host name.
 */
import { createHash } from 'node:crypto';
import { hostname } from 'node:os';
import { resolve } from 'node:path';

export function installationIdFor(statePath: string, host: string = hostname()): string {
  return createHash('sha256').update(`dssync-installation\0${host}\0${resolve(statePath)}`).digest('hex').slice(0, 16);
}

/** A mapping as far as data-source sharing goes. */
export interface DataSourceRef {
  id: string;
  dataSourceId?: string | undefined;
  dataSource?: { name: string } | undefined;
}

/**
 * Mappings of one config that write into the same data source (same id, or same name to
 * create/find): they would take each other's documents for foreign ones. One message per
 * group, naming the mappings and the fix.
 */
export function sharedDataSourceProblems(mappings: readonly DataSourceRef[]): string[] {
  const groups = new Map<string, string[]>();
  for (const m of mappings) {
    const key = m.dataSourceId !== undefined ? `id ${JSON.stringify(m.dataSourceId)}` : m.dataSource ? `name ${JSON.stringify(m.dataSource.name)}` : undefined;
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

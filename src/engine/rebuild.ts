/**
 * The rebuild of a mapping whose state was corrupt or missing but whose identity survived
 * (state/identity-file.ts; docs/reliability.md, "Identity"): its documents are recognised
 * from the listing and recorded by id, as if this state had never lost them, before the
 * first pass plans. The planner then does the rest as usual: a file unchanged is kept
 * (hashed once: the records carry no stat of the file), a file gone has its document
 * deleted (mass-delete guard included), a file changed is replaced.
 *
 * Recognised: what the owner rule (owner.ts) calls `recovered` while rebuilding — this
 * mapping's id, this installation's id (or a former one) and a writer session this state
 * recorded. Not recognised, so still held and reported as the planner does: a document
 * without a session (an older dssync's, or a clone's that runs one), or of a session this
 * state never recorded, until a pass that holds the lease recovers it. One document a path: of the newest recorded session, then
 * the lowest id; another version of the path is then the planner's "older version" (of a
 * recorded session: deleted as stale).
 */
import type { DatastoreApi } from '../api/api.js';
import type { FileEntry, MappingState } from '../state/schema.js';
import type { Logger } from '../log.js';
import { readMeta, type DssyncMeta } from './metadata.js';
import { documentSize, ownerOfListing } from './plan.js';
import type { DocumentRecord } from '../api/records.js';

export interface RebuildState {
  mapping(mappingId: string): MappingState | undefined;
  setFile(mappingId: string, path: string, entry: FileEntry): void;
  flush(): Promise<void>;
  /** True while the mapping awaits its rebuild (StateStore.needsRebuild); absent: never. */
  needsRebuild?(mappingId: string): boolean;
  /** The rebuild is recorded (StateStore.rebuilt). */
  rebuilt?(mappingId: string): Promise<void>;
}

export interface RebuildInput {
  api: DatastoreApi;
  state: RebuildState;
  mappingId: string;
  dataSourceId: string;
  installationId: string;
  formerInstallationIds: readonly string[];
  logger: Logger;
  now: () => number;
  signal?: AbortSignal | undefined;
}

/** Documents recorded, or undefined when the mapping needed no rebuild. */
export async function rebuildFromListing(input: RebuildInput): Promise<{ recorded: number } | undefined> {
  const { state, mappingId } = input;
  if (!state.needsRebuild?.(mappingId)) return undefined;
  const m = state.mapping(mappingId);
  if (m === undefined || m.dataSourceId !== input.dataSourceId) {
    // Another data source now (the recorded one was replaced): nothing of ours to recognise there.
    await state.rebuilt?.(mappingId);
    return { recorded: 0 };
  }
  const sessions = m.sessions ?? {};
  const listing = await input.api.listDocuments(input.dataSourceId, { signal: input.signal, form: 'sync' });
  const whose = ownerOfListing({ mappingId, installationId: input.installationId, formerInstallationIds: input.formerInstallationIds, state: m, remote: listing, rebuilding: true });
  const byPath = new Map<string, { doc: DocumentRecord; meta: DssyncMeta; at: number }>();
  for (const doc of listing) {
    const o = whose(doc);
    const meta = readMeta(doc);
    if ((o.kind !== 'recovered' && o.kind !== 'own-write') || meta === undefined || m.files.documentIdOf(o.path) !== undefined) continue;
    const at = sessions[meta.session ?? ''] ?? 0;
    const other = byPath.get(meta.path);
    if (other === undefined || at > other.at || (at === other.at && doc.id < other.doc.id)) byPath.set(meta.path, { doc, meta, at });
  }
  const syncedAt = new Date(input.now()).toISOString();
  for (const [path, { doc, meta }] of byPath) {
    state.setFile(mappingId, path, { documentId: doc.id, size: meta.size ?? documentSize(doc) ?? 0, mtimeMs: meta.mtimeMs ?? 0, sha256: meta.sha256, syncedAt });
  }
  await state.flush();
  await state.rebuilt?.(mappingId);
  input.logger.warn(
    { mapping: mappingId, dataSourceId: input.dataSourceId, recorded: byPath.size, listed: listing.length },
    `mapping ${mappingId}: recognised ${byPath.size} document(s) of this installation from the listing after the state was rebuilt (nothing is uploaded again for them)`,
  );
  return { recorded: byPath.size };
}

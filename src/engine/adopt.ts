/**
 * `dssync adopt` (docs/reliability.md, "Identity: who owns a document"): documents of a
 * mapping id written by another installation — what a lost state, or a new drawn id, finds
 * in its data source — are recorded in this state as ours, and their metadata is rewritten
 * with our id. Nothing is uploaded; the next sync's plan does the rest (a document whose
 * file is gone is deleted, subject to the mass-delete guard).
 *
 * How: an upload intent that names the documents (as if an upload's answer had named them)
 * is made durable first, then their metadata is rewritten with our id. The next full pass
 * finds documents of ours that an open intent names: it records them ('adopt', counted as
 * adopted) and closes the intent once settled — the same path as a crash after an upload.
 * A crash before the metadata is rewritten leaves them another installation's: run adopt
 * again.
 */
import type { DatastoreApi } from '../api/api.js';
import type { DocumentRecord } from '../api/records.js';
import type { Intent, MappingState } from '../state/schema.js';
import { documentFields, newSession, type DocumentFieldsSpec } from './document-fields.js';
import { establishIdentity, type IdentityHolder } from './installation.js';
import type { LeaseView } from './lease-view.js';
import { readMeta } from './metadata.js';
import { documentSize, ownerOfListing } from './plan.js';
import { FileTable } from '../state/file-table.js';

/** What an adopt into a mapping the state does not record (yet) plans against. */
const NO_RECORDS = { files: FileTable.of({}), intents: {}, rejected: {} };

export interface AdoptState extends IdentityHolder {
  mapping(mappingId: string): MappingState | undefined;
  ensureMapping(mappingId: string, dataSourceId: string, root: string): MappingState;
  beginIntent(mappingId: string, intent: Omit<Extract<Intent, { kind: 'upload' }>, 'id' | 'startedAt'>): Promise<string>;
  /** Records this process's writer session (StateStore.recordSession); made durable by the intent that follows. */
  recordSession?(mappingId: string, session: string, at: number): boolean;
}

export interface AdoptInput {
  api: DatastoreApi;
  state: AdoptState;
  config: { statePath: string; installationId?: string | undefined };
  mapping: Omit<DocumentFieldsSpec, 'mappingId' | 'installationId' | 'root'> & { id: string; path: string };
  dataSourceId: string;
  /** Only this installation's documents. */
  from?: string | undefined;
  dryRun: boolean;
  /** The mapping's lease as observed (lease-view.ts): a live holder's documents are refused without `force`. */
  lease?: LeaseView | undefined;
  /** Take the live lease holder's documents too (`--force`). */
  force?: boolean | undefined;
  /** The wall clock (the session's record). */
  now: () => number;
}

export interface AdoptResult {
  installationId: string;
  /** The installation whose documents were taken over ('' for documents of an older dssync without one). */
  from: string | undefined;
  adopted: { path: string; documentId: string }[];
  /** Documents of theirs left alone: a document of ours (or another of theirs) holds the path. */
  left: string[];
  failed: number;
  /** Why nothing was done. */
  refused?: string | undefined;
}

export async function adoptDocuments(input: AdoptInput): Promise<AdoptResult> {
  const { api, state, mapping, dataSourceId } = input;
  const identity = establishIdentity(state, { pinned: input.config.installationId, statePath: input.config.statePath });
  const me = identity.installationId;
  const listing = await api.listDocuments(dataSourceId, { form: 'sync' });
  // Candidates, by the owner rule: documents of this mapping id that the plan would not take
  // as its own — another installation's, another writer's with our identity — and those it
  // recovers (their writer gone). The plan's own paths are left to the plan.
  const recorded = state.mapping(mapping.id);
  const whose = ownerOfListing({ mappingId: mapping.id, installationId: me, formerInstallationIds: identity.formerIds, state: recorded?.dataSourceId === dataSourceId ? recorded : NO_RECORDS, remote: listing, lease: input.lease });
  const theirs: { doc: DocumentRecord; meta: NonNullable<ReturnType<typeof readMeta>> }[] = [];
  const oursByPath = new Set<string>();
  for (const doc of listing) {
    const o = whose(doc);
    const meta = readMeta(doc);
    if (o.kind === 'ours' || o.kind === 'own-write') oursByPath.add(o.path);
    if (meta === undefined || (o.kind !== 'other-installation' && o.kind !== 'same-identity' && o.kind !== 'recovered')) continue;
    if (input.from === undefined || meta.installationId === input.from || (input.from === '' && meta.installationId === undefined)) theirs.push({ doc, meta });
  }
  const owners = [...new Set(theirs.map((t) => t.meta.installationId ?? ''))];
  const result: AdoptResult = { installationId: me, from: owners[0], adopted: [], left: [], failed: 0 };
  if (owners.length > 1) {
    const counts = owners.map((o) => `${o || '(an older dssync, no id)'}: ${theirs.filter((t) => (t.meta.installationId ?? '') === o).length}`);
    return { ...result, from: undefined, refused: `documents of mapping ${mapping.id} were written by ${owners.length} other installations (${counts.join('; ')}): choose one with --from ID` };
  }
  const live = input.lease?.liveSession;
  const held = live === undefined || input.force ? 0 : theirs.filter((t) => t.meta.session === live).length;
  if (held > 0) {
    return { ...result, refused: `${held} document(s) of mapping ${mapping.id} were written by session ${live}, which holds the mapping's lease and is live: another dssync is writing them; stop it first, or run adopt again with --force` };
  }
  const m = input.dryRun ? undefined : state.ensureMapping(mapping.id, dataSourceId, mapping.path);
  // One document per path: the lowest id; the rest (duplicates of theirs) stay theirs.
  theirs.sort((a, b) => (a.doc.id < b.doc.id ? -1 : a.doc.id > b.doc.id ? 1 : 0));
  const taken = new Set<string>();
  const picked: typeof theirs = [];
  for (const t of theirs) {
    const recorded = m?.files.documentIdOf(t.meta.path);
    if (oursByPath.has(t.meta.path) || taken.has(t.meta.path) || (recorded !== undefined && recorded !== t.doc.id)) {
      result.left.push(t.doc.id);
      continue;
    }
    taken.add(t.meta.path);
    picked.push(t);
    result.adopted.push({ path: t.meta.path, documentId: t.doc.id });
  }
  if (input.dryRun || picked.length === 0) return result;

  const facts = (t: (typeof picked)[number]) => ({ path: t.meta.path, sha256: t.meta.sha256, size: t.meta.size ?? documentSize(t.doc) ?? 0, mtimeMs: t.meta.mtimeMs ?? 0 });
  // This process's writer session, in every document it takes (the next rebuild recognises
  // them): recorded, and made durable by the intent, before any document carries it.
  const session = state.recordSession === undefined ? undefined : newSession();
  if (session !== undefined) state.recordSession?.(mapping.id, session, input.now());
  await state.beginIntent(mapping.id, { kind: 'upload', files: picked.map((t) => ({ ...facts(t), documentId: t.doc.id })) });
  const spec: DocumentFieldsSpec = { ...mapping, mappingId: mapping.id, installationId: me, session, root: mapping.path };
  for (const t of picked) {
    try {
      await api.updateDocument(dataSourceId, t.doc.id, documentFields(spec, facts(t)));
    } catch {
      // Recorded under a former id: the next pass re-marks it.
      result.failed++;
    }
  }
  return result;
}

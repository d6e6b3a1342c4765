/**
 * The owner rule (DESIGN §7; docs/reliability.md, "Identity: who owns a document", the
 * decision table): whose a listed document is, from its fields, this installation's
 * identity, the state and the mapping's lease. The planner, the stability window, the
 * rebuild and adopt ask `whose` and decide nothing of their own. Pure.
 *
 * Its rows, in the order `ownerRule` tries them, are the table of docs/reliability.md ("The
 * owner rule", O1-O23); test/unit/engine/owner.test.ts holds one test per row.
 */
import type { DocumentRecord } from '../api/records.js';
import type { ReadonlyFileTable } from '../state/file-table.js';
import type { IntentFile } from '../state/schema.js';
import { nonceSession, unmarkedName, uploadTag } from './document-fields.js';
import { findUploadMark } from './upload-mark.js';
import { isLeaseDocument, type LeaseView } from './lease-view.js';
import { readMeta, type DssyncMeta } from './metadata.js';

/** What open upload intents say of a document (plan.ts openUploads). */
export interface OpenUploadLookup<U extends { file: IntentFile }> {
  /** The open file whose upload's answer named this document id. */
  byId(documentId: string): U | undefined;
  /** The open file whose marked upload name carries this nonce. */
  byMark(nonce: string, documentId: string): U | undefined;
  /** True when an open upload intent sent this path. */
  sentPath(path: string): boolean;
}

export interface OwnerInput<U extends { file: IntentFile }> {
  mappingId: string;
  /** This installation's id; undefined: the mapping id alone decides (tests). */
  installationId?: string | undefined;
  /** Ids this installation used before (installation.ts). */
  formerInstallationIds?: readonly string[] | undefined;
  state: {
    files: ReadonlyFileTable;
    /** The writer sessions this state recorded (MappingState.sessions). */
    sessions?: Readonly<Record<string, number>> | undefined;
  };
  /** The state's path of a document id (an index built on demand). */
  recordedPathOf: (documentId: string) => string | undefined;
  uploads: OpenUploadLookup<U>;
  /** The mapping's lease as this process sees it; undefined: not known (no recovery). */
  lease?: LeaseView | undefined;
  /** The state is being rebuilt from the listing (rebuild.ts): a recorded session vouches for a document. */
  rebuilding?: boolean | undefined;
  /** The listing: the installation ids of the documents the state records there become former ids. */
  remote?: readonly DocumentRecord[] | undefined;
}

export type Owner<U> =
  | { kind: 'lease' }
  | { kind: 'ours'; path: string; sha256: string; rewrite: boolean }
  | { kind: 'own-write'; path: string; sha256: string }
  | { kind: 'recovered'; path: string; sha256: string }
  | { kind: 'other-mapping' | 'other-installation' | 'same-identity'; path: string; sha256: string | undefined; mappingId: string; installationId: string | undefined }
  | { kind: 'open-upload'; upload: U }
  | { kind: 'lost-upload' }
  | { kind: 'foreign-upload' }
  | { kind: 'person' };

export type OwnerOf<U> = (doc: DocumentRecord) => Owner<U>;

/** The owner rule for one listing (see the module's rows). */
export function ownerRule<U extends { file: IntentFile }>(input: OwnerInput<U>): OwnerOf<U> {
  const { mappingId, installationId, state, uploads, lease } = input;
  const sessions = state.sessions;
  const former = new Set([...(input.formerInstallationIds ?? []), ...formerIdsIn(input)]);
  const tag = installationId === undefined ? undefined : uploadTag(mappingId, installationId);
  const formerTags = tag === undefined ? [] : [...former].map((id) => uploadTag(mappingId, id));
  /** A session this state recorded, or none at all (written before sessions: the older rule). */
  const recordedSession = (s: string | undefined): boolean => s === undefined || s === '' || sessions === undefined || sessions[s] !== undefined;
  /** Its writer is gone: we hold the lease and it is not the live holder, or a rebuild vouches for its session. */
  const writerGone = (s: string | undefined): boolean =>
    (lease?.held === true && (s === undefined || s !== lease.liveSession)) || (input.rebuilding === true && s !== undefined && s !== '' && sessions?.[s] !== undefined);
  const ours = (id: string | undefined): boolean => installationId === undefined || id === installationId;
  /** A mark of a former id's tag is ours as that id's documents are (O12): a lost upload once its writer is gone (O23), else another installation's (O21). */
  const formerLostUpload = (nonce: string): boolean => formerTags.map((t) => nonceSession(nonce, t)).some((s) => s !== undefined && writerGone(s));

  return (doc) => {
    if (isLeaseDocument(doc)) return { kind: 'lease' };
    const meta = readMeta(doc);
    // The state's record at the path the metadata names, else anywhere (the index).
    const recordedAt = meta !== undefined && state.files.documentIdOf(meta.path) === doc.id ? meta.path : input.recordedPathOf(doc.id);
    if (recordedAt !== undefined && (meta === undefined || meta.mappingId === mappingId)) {
      if (meta !== undefined && ours(meta.installationId)) return { kind: 'ours', path: meta.path, sha256: meta.sha256, rewrite: false };
      // A former id's metadata is written last, as ours is: its path is the newest (a state older than the service).
      if (meta?.installationId !== undefined && former.has(meta.installationId)) return { kind: 'ours', path: meta.path, sha256: meta.sha256, rewrite: true };
      return { kind: 'ours', path: recordedAt, sha256: state.files.sha256Of(recordedAt)!, rewrite: true };
    }
    if (meta !== undefined) return ownerOfMeta(meta, doc.id);
    const nonce = doc.name === undefined ? undefined : findUploadMark(doc.name);
    const upload = uploads.byId(doc.id) ?? (nonce === undefined ? undefined : uploads.byMark(nonce, doc.id));
    if (upload !== undefined) return { kind: 'open-upload', upload };
    if (nonce === undefined) return { kind: 'person' };
    const session = tag === undefined ? undefined : nonceSession(nonce, tag);
    if (session === undefined) return formerLostUpload(nonce) ? { kind: 'lost-upload' } : { kind: 'foreign-upload' };
    if (recordedSession(session) || writerGone(session)) return { kind: 'lost-upload' };
    return { kind: 'same-identity', path: unmarkedName(doc.name ?? doc.id), sha256: undefined, mappingId, installationId };
  };

  function ownerOfMeta(meta: DssyncMeta, documentId: string): Owner<U> {
    const who = { path: meta.path, sha256: meta.sha256, mappingId: meta.mappingId, installationId: meta.installationId };
    if (meta.mappingId !== mappingId) return { kind: 'other-mapping', ...who };
    const isFormer = meta.installationId !== undefined && former.has(meta.installationId);
    if (!ours(meta.installationId) && !isFormer) return { kind: 'other-installation', ...who };
    if (ours(meta.installationId) && (installationId === undefined || ownWrite(meta, documentId))) return { kind: 'own-write', path: meta.path, sha256: meta.sha256 };
    if (writerGone(meta.session)) return { kind: 'recovered', path: meta.path, sha256: meta.sha256 };
    return { kind: isFormer ? 'other-installation' : 'same-identity', ...who };
  }

  /**
   * Our own write, unrecorded: an open upload intent named it or sent its path (its metadata
   * may be written before the state's entry reaches the disk), or it is an older version of
   * a path the state tracks with other content (a replace whose delete failed), by a session
   * this state recorded. A path the state does not track, or a second document of the
   * content it records, was written by someone else under our identity.
   */
  function ownWrite(meta: DssyncMeta, documentId: string): boolean {
    if (uploads.byId(documentId) !== undefined) return true;
    if (!recordedSession(meta.session)) return false;
    if (uploads.sentPath(meta.path)) return true;
    const tracked = state.files.sha256Of(meta.path);
    return tracked !== undefined && tracked !== meta.sha256;
  }
}

/**
 * The installation ids, other than ours, that listed documents of this mapping carry while
 * the state records them by id: former ids of ours (O4: a 0.1.0 state upgraded under a new
 * host name, a state that lost its identity but kept its records). The mirror keeps them in
 * the state's identity, so that a later process, or a state rebuilt from the listing, still
 * knows them once no recorded document carries them any more.
 */
export function formerIdsIn(input: Pick<OwnerInput<never>, 'mappingId' | 'installationId' | 'formerInstallationIds' | 'remote' | 'recordedPathOf'>): string[] {
  if (input.installationId === undefined) return [];
  const known = new Set([input.installationId, ...(input.formerInstallationIds ?? [])]);
  const found = new Set<string>();
  for (const doc of input.remote ?? []) {
    const meta = readMeta(doc);
    if (meta?.installationId !== undefined && meta.mappingId === input.mappingId && !known.has(meta.installationId) && input.recordedPathOf(doc.id) !== undefined) found.add(meta.installationId);
  }
  return [...found].sort();
}

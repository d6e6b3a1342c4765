/**
 * The planner: a PURE function from (local snapshot, state, remote listing) to the
 * operations that make the data source hold exactly the mapping's files (DESIGN §2, §4).
 * It does no I/O and reads no clock; the executor carries the operations out.
 *
 * Facts it relies on:
 * - A document's content never changes under its id (the interface can only update name,
 *   url and metadata), so the state's `documentId -> sha256` is authoritative for content.
 * - dssync's metadata on a document (metadata.ts) names its path, hash and mapping, so a
 *   remote listing alone is enough to rebuild the state.
 * - An upload lands without metadata (the update that adds it is a second request); until
 *   the upload's intent is resolved, the documents its answer named are ours, and when the
 *   answer was lost, an unmarked document of a file's full name and size that did not exist
 *   before the upload, when a listing of the upload's own pass says so (openUploads below).
 */
import { formNameForms } from '../api/form-name.js';
import { DOCUMENT_SIZE_KEYS } from '../api/listing-form.js';
import type { DocumentRecord, DocumentUpdate } from '../api/records.js';
import type { ReadonlyFileTable } from '../state/file-table.js';
import type { EntryStat, FileEntry, Intent, IntentFile, MappingState } from '../state/schema.js';
import { documentName } from './document-fields.js';
import { findUploadMark } from './upload-mark.js';
import { isLeaseDocument, type LeaseView } from './lease-view.js';
import { fieldsMatch, META, readMeta, sentConversion } from './metadata.js';
import { formerIdsIn, ownerRule, type OpenUploadLookup, type OwnerOf } from './owner.js';
import { storedName, type NameRule, type ServiceNames } from './service-names.js';
import { needsHash, type StatNow } from './racy.js';
import { nfc } from '../unicode.js';

/** A local file as the walk saw it; `sha256` is set when it was hashed for this pass. */
export interface LocalFileInfo {
  path: string;
  /** Where it lies on disk, when that is not join(root, path) (local/paths.ts diskPathOf). */
  diskPath?: string | undefined;
  size: number;
  mtimeMs: number;
  sha256?: string | undefined;
  /** Identity of the file the walk saw (device, inode, ctime): an upload sends only that file. */
  dev?: number | undefined;
  ino?: number | undefined;
  ctimeMs?: number | undefined;
  /** When `sha256` was computed (the engine's clock, before the read): racy.ts. */
  hashedAt?: number | undefined;
}

/** What a document's desired fields may depend on. */
export type DesiredOf = Pick<HashedFile, 'path' | 'size' | 'mtimeMs' | 'sha256'>;

/** PlanInput.vouched's rule: the quick check (racy.ts, its one stat rule) vouches for the entry at `now`. */
export function vouchedByEntry(entry: EntryStat | undefined, st: StatNow, now: number): boolean {
  return !needsHash(entry, st, now);
}

/**
 * A set of paths as a plan reads it: a Set, or the state's marks (state/file-table.ts
 * EntryMarks: a restart's million paths, a byte each).
 */
export interface PathSet extends Iterable<string> {
  readonly size: number;
  has(path: string): boolean;
  /** How many paths are in both sets, when this set counts them without looking each up (EntryMarks of one table). */
  sharedWith?(other: PathSet): number | undefined;
}

/** A PathSet a scan fills (ScanOptions.vouched, the walk's WalkOptions.vouched). */
export interface MutablePathSet extends PathSet {
  add(path: string): unknown;
  delete(path: string): boolean;
}

/**
 * PlanInput.confirmed's rule: the path whose state entry the listed `doc` is exactly (ours
 * by the owner rule, recorded at the path its metadata names with the entry's content,
 * every field as desired), else undefined.
 */
export function confirmedPath(doc: DocumentRecord, whose: OwnerOf<unknown>, input: Pick<PlanInput, 'desired' | 'serviceNames'> & { files: ReadonlyFileTable }): string | undefined {
  const o = whose(doc);
  if (o.kind !== 'ours' || o.rewrite || o.sha256 === undefined) return undefined;
  const entry = input.files.recording(o.path, doc.id, o.sha256);
  if (entry === undefined) return undefined;
  return fieldsMatch(doc, input.desired({ path: entry.path, size: entry.size, mtimeMs: entry.mtimeMs, sha256: o.sha256 }), input.serviceNames) ? entry.path : undefined;
}

/** The owner rule (owner.ts) over this state, its open upload intents and the lease: what the plan asks of each listed document. */
export function ownerOfListing(input: Pick<PlanInput, 'mappingId' | 'installationId' | 'formerInstallationIds' | 'state' | 'lease'> & { remote?: readonly DocumentRecord[] | undefined; rebuilding?: boolean }): OwnerOf<unknown> {
  return ownerRule({ ...input, recordedPathOf: pathsByDocument(input.state.files), uploads: uploadLookup(openUploads(input.state.intents)) });
}

/** A local file whose content hash is known. */
export interface HashedFile extends LocalFileInfo {
  sha256: string;
}

/** A new file planned without its hash (PlanInput.newFilesUnhashed). */
export type UnhashedFile = LocalFileInfo & { sha256?: undefined };

/**
 * A file's record once its content is hashed: `file` with what the hash saw (a field the
 * hash does not know keeps the walk's value). One literal, every field always present and
 * in one order: an object spread gives each of a million records a hidden class of its own.
 */
export function hashedRecord(
  file: LocalFileInfo,
  h: { size: number; mtimeMs: number; sha256: string; ctimeMs?: number | undefined; dev?: number | undefined; ino?: number | undefined },
  hashedAt: number | undefined,
): HashedFile {
  return {
    path: file.path,
    diskPath: file.diskPath,
    size: h.size,
    mtimeMs: h.mtimeMs,
    sha256: h.sha256,
    dev: h.dev ?? file.dev,
    ino: h.ino ?? file.ino,
    ctimeMs: h.ctimeMs ?? file.ctimeMs,
    hashedAt,
  };
}

export interface PlanInput {
  mappingId: string;
  /**
   * This installation (installation.ts): a document is ours only when its metadata names
   * both the mapping and the installation. Undefined: the mapping id alone decides (tests).
   */
  installationId?: string | undefined;
  /**
   * Ids this installation used before (a pin replaced them, installation.ts): a document the
   * state records by id that carries one is still ours (its metadata is rewritten).
   */
  formerInstallationIds?: readonly string[] | undefined;
  /** Local files in scope, by relative path. */
  local: ReadonlyMap<string, LocalFileInfo>;
  /**
   * Local files too, kept as paths only: each as if `local` held it with its state entry's
   * stat (size, mtime, ctime, device, inode: the walk found exactly those) at
   * join(root, path). A restart over a million unchanged files holds the state's marks, a
   * byte an entry, not a million records. Each is a path the state holds (the walk vouches
   * by the path's entry; EntryMarks holds entries only): so as many as the state holds are
   * all of them (planMirror skips a loop on that).
   */
  vouched?: PathSet | undefined;
  state: { files: ReadonlyFileTable } & Pick<MappingState, 'intents' | 'rejected' | 'sessions'>;
  /**
   * The data source's documents (a full listing). Undefined for an incremental plan: the
   * state then stands in for the service (a full pass corrects it periodically).
   */
  remote?: readonly DocumentRecord[] | undefined;
  /**
   * Documents of the listing kept as paths only: for each path, the listing held the state
   * entry's document, with this mapping's and installation's metadata naming that path and
   * the entry's hash, and the name, url and metadata `desired` asks for (confirmedPath).
   * As if `remote` held each of them.
   */
  confirmed?: PathSet | undefined;
  /**
   * Paths the plan covers. Undefined: everything (a full pass). Otherwise only these
   * paths are considered (an incremental plan after watcher events).
   */
  scope?: ReadonlySet<string> | undefined;
  /** What a file's document should carry. */
  desired: (file: DesiredOf) => DocumentUpdate;
  /** 'ours': documents without dssync metadata are left alone; 'all': they are deleted. */
  prune: 'ours' | 'all';
  /**
   * Paths that exist locally but cannot be looked at now (unreadable, too large, being
   * written, under an unreadable folder); undefined: none. Their state is left as it is, and
   * so are their documents, except older versions of ours beside the state's document (see
   * planMirror).
   */
  untouchable?: ((path: string) => boolean) | undefined;
  /**
   * Of the untouchable paths, those left out by a setting (larger than maxFileBytes, a link
   * leading outside the folder, a FIFO): excluded, not waiting to be read. Their state entry
   * and documents of ours stay as they are (docs/config.md), but what an open upload intent
   * made for them and nobody marked (the answer's ids, or a lost answer's document by name
   * and size) is deleted like any document of an excluded file, and they no longer keep
   * their intent open: nothing would ever adopt that upload.
   */
  excluded?: ((path: string) => boolean) | undefined;
  /**
   * True when an open intent's settle window has passed at the time of this listing (the
   * mirror decides, from its clock): a request whose answer was lost may still be committed
   * by the service after the client gave up, so a listing taken too soon does not show its
   * outcome. Undefined: every intent is settled (tests of the content rules).
   */
  settled?: ((intent: Intent) => boolean) | undefined;
  /**
   * What the service does to names (service-names.ts), as learned and kept in the state: a
   * name it always rewrites is compared as it stores it, never "corrected" on every pass.
   * With renames ignored, a document of ours still under its marked upload name is
   * replaced — sent again under the right name, the old one deleted — since an update would
   * change nothing; any other name it keeps is left as it is (the App keeps the old name).
   */
  serviceNames?: ServiceNames | undefined;
  /**
   * The mapping's lease as this process sees it (lease-view.ts): while we hold it, a
   * document of our identity whose writer is gone is ours (owner.ts). Undefined: not known,
   * and such a document is another writer's.
   */
  lease?: LeaseView | undefined;
  /**
   * True when files without an entry come unhashed (newFilesNeedNoContent held for this
   * listing): each is planned as an upload, hashed as it is sent (executor.ts). Otherwise
   * such a file is a caller's error.
   */
  newFilesUnhashed?: boolean | undefined;
}

/** 'lost-upload': a marked upload of ours that the service committed after its intent was closed. */
export type DeleteReason = 'deleted-locally' | 'duplicate' | 'stale-version' | 'not-in-folder' | 'excluded' | 'lost-upload';

export type Op =
  /** A new file: upload it, then set its metadata (unhashed: hashed as it is sent, PlanInput.newFilesUnhashed). */
  | { kind: 'upload'; path: string; file: HashedFile | UnhashedFile }
  /** Changed content: upload the new version, set its metadata, then delete the old documents. */
  | { kind: 'replace'; path: string; file: HashedFile; oldDocumentIds: string[]; unmarkedOld?: number }
  /** Same content at a new path: update name, url and metadata of the existing document. */
  | { kind: 'rename'; from: string; path: string; documentId: string; file: HashedFile }
  /** The document is right but its name, url or metadata are not (`listedName`: its name as listed). */
  | { kind: 'update-meta'; path: string; documentId: string; file: HashedFile; listedName?: string }
  /** `unmarked`: the document carries no dssync metadata (ours by an intent or the state). */
  | { kind: 'delete'; path: string; documentId: string; reason: DeleteReason; unmarked?: boolean }
  /** State only: record that `documentId` holds this file (no remote write). */
  | { kind: 'adopt'; path: string; documentId: string; file: HashedFile }
  /** State only: drop the entry of a path that has neither a file nor a document. */
  | { kind: 'forget'; path: string };

export interface PlanResult {
  ops: Op[];
  /** Files in scope that need nothing. */
  unchanged: number;
  /**
   * Unchanged files (same document, same content) whose entry is out of date: hashed again
   * after a touch or because it was racy (racy.ts). State only, never a remote write; the
   * mirror records them (counted as unchanged).
   */
  refreshed: { path: string; documentId: string; file: HashedFile }[];
  /** Files skipped because the service refused them before and they have not changed. */
  skippedRejected: string[];
  /** Open upload intents fully accounted for by this plan (the executor may close them). */
  resolvedIntentIds: string[];
  /** Documents of ours in the data source (for the mass-delete guard). */
  ourDocumentCount: number;
  /**
   * Documents nobody owns that this full pass may prune (`prune: "all"`; else 0): with
   * prune "all" they are the mapping's too, so the mass-delete guard's base counts them
   * (else a pass holding none of ours would prune any number unguarded).
   */
  prunableCount: number;
  /**
   * Documents of our identity that the state never recorded, taken as ours because their
   * writer is gone (owner.ts `recovered`: we hold the lease): recorded, their metadata
   * rewritten with our session.
   */
  recovered: number;
  /**
   * Documents carrying dssync metadata of another mapping or another installation: another
   * owner's, never deleted or renamed (not even with prune "all"); reported as conflicts.
   */
  otherOwners: OtherOwner[];
  /**
   * Documents that the first listing after a lost upload answer ties to one file of its
   * intent, and to nothing else: to be recorded in the intent (the state's
   * setIntentDocuments), as if the answer had named them.
   */
  intentPins: IntentPin[];
  /**
   * Unmarked documents named like a file whose upload answer was lost, more of them than
   * the upload can have made: one is someone else's, so none is taken for ours.
   */
  doubtful: DocumentRecord[];
  /**
   * Documents carrying this mapping's AND this installation's ids that the state never
   * recorded and no open upload intent made: another live writer with our identity (a
   * cloned host, a copied state, a pinned id used twice). When any is found the plan holds
   * no operation at all: nothing is deleted or uploaded until the operator settles it.
   */
  sameIdentity: OtherOwner[];
  /**
   * Files not uploaded because a document of another installation for this mapping id holds
   * the same path and content (a lost or new state: `dssync adopt` takes them over); an
   * upload would be a duplicate.
   */
  held: { path: string; owner: OtherOwner }[];
  /**
   * Documents without metadata whose name bears our upload mark with a nonce of this
   * installation and mapping (document-fields.ts uploadTag) that no open intent names: an
   * upload of ours the service committed after its intent was closed (a late commit). Each
   * is deleted ('lost-upload'): the file keeps, or gets, its document with metadata.
   */
  lostUploads: DocumentRecord[];
  /**
   * Documents without metadata whose name bears an upload mark that is not provably ours
   * (another installation's upload in progress, an older dssync's nonce): reported, never
   * touched, not even with prune "all".
   */
  foreignMarked: DocumentRecord[];
  /**
   * Files of upload intents this plan settles whose answer was lost and whose document the
   * listing does not show under the mark they were sent with: the upload never landed, or
   * the service renamed it past recognition. Reported, never silent.
   */
  unfoundUploads: { path: string; uploadName: string }[];
  /** Ids this listing shows to be former ids of ours, not known as such yet (owner.ts formerIdsIn): the mirror keeps them. */
  formerIds: string[];
}

export interface OtherOwner {
  documentId: string;
  path: string;
  mappingId: string;
  installationId: string | undefined;
  sha256?: string | undefined;
}

/** Paths whose content must be hashed before planning (racy.ts: the quick check), at `now`. */
export function pathsToHash(local: ReadonlyMap<string, LocalFileInfo>, files: ReadonlyFileTable, now: number): string[] {
  const out: string[] = [];
  for (const [path, file] of local) {
    if (file.sha256 === undefined && needsHash(files.statOf(path), file, now)) out.push(path);
  }
  return out;
}

/**
 * Whether a full pass may plan its files without an entry unhashed (PlanInput.newFilesUnhashed):
 * when nothing their content could be matched with exists, each is an upload whatever it
 * holds, and is hashed as it is sent, from the bytes sent (executor.ts), not read once to
 * plan and again to send. That holds when the listing shows nothing but documents the state
 * confirms and lease markers (no document at a new path, no other owner's to hold as a
 * duplicate, no lost upload to recognise), no intent is open, and every entry's file is
 * there (`entriesSeen`: entries whose path the walk found), so no document can be renamed
 * onto a new path. A first mirror into a data source of its own is the case it is for.
 */
export function newFilesNeedNoContent(remote: readonly DocumentRecord[], state: Pick<MappingState, 'files' | 'intents'>, entriesSeen: () => number): boolean {
  return remote.every(isLeaseDocument) && Object.keys(state.intents).length === 0 && entriesSeen() === state.files.size;
}

/** The entry as recorded, field for field: writing it again changes nothing (not a file's change: racy.ts sameStat). */
function sameRecord(entry: FileEntry, file: HashedFile): boolean {
  return (
    entry.size === file.size &&
    entry.mtimeMs === file.mtimeMs &&
    entry.ctimeMs === file.ctimeMs &&
    entry.dev === file.dev &&
    entry.ino === file.ino &&
    entry.hashedAt === file.hashedAt
  );
}

const NO_DOCS: readonly KnownDoc[] = Object.freeze([]);
const NO_UPLOADS: RemoteView['uploadsOf'] = { unfound: () => [] };
/** No path (a plan without vouched or confirmed paths; a round without a listing). */
export const NO_PATHS: PathSet = new Set<string>();

/** A remote document as the planner understands it. */
interface KnownDoc {
  doc: DocumentRecord | undefined;
  id: string;
  path: string;
  /** Content hash; undefined for an unmarked upload whose intent we cannot tie to content. */
  sha256: string | undefined;
  /** Known from an upload intent, not from metadata: its metadata must still be written. */
  fromIntent: boolean;
  /** Made by an open intent's upload (not in the state, no metadata): nobody marked it yet. */
  byIntent?: true;
  /** Of those, tied to the upload only by name and size (a lost answer), not by its id. */
  byName?: true;
  /**
   * The conversion it was sent with (metadata.ts sentConversion: '' as it is); undefined
   * when its metadata does not say (the state or an upload's intent stands in for it).
   */
  conversion?: string | undefined;
}

export function planMirror(input: PlanInput): PlanResult {
  const { state, scope } = input;
  const inScope = (p: string): boolean => scope === undefined || scope.has(p);
  const untouchable = input.untouchable ?? ((): boolean => false);
  const excluded = input.excluded ?? ((): boolean => false);
  const vouched = input.vouched ?? NO_PATHS;
  const confirmed = input.remote === undefined ? NO_PATHS : (input.confirmed ?? NO_PATHS);

  const recordedPathOf = pathsByDocument(state.files);
  const remoteView = classifyRemote(input, recordedPathOf);
  const { byPath, foreign, otherOwners, recovered, intentPins, doubtful, sameIdentity, lostUploads, foreignMarked, uploadsOf } = remoteView;
  const ourDocumentCount = remoteView.ourDocumentCount + confirmed.size;

  // A path found exactly as its entry says on both sides (vouched for by the walk, confirmed
  // by the listing), with no other document and not set aside, needs nothing: counted, never
  // looked at again (a restart's million files). The two loops over those sets each ask the
  // other one: one lookup in a set of a million paths per path, not two.
  const alone = (p: string): boolean => (byPath.size === 0 || !byPath.has(p)) && !untouchable(p);
  // A restart's case, counted without a path: every confirmed path vouched for (the marks'
  // rows say so), no other document, nothing set aside, the whole folder in scope.
  const allAlone = byPath.size === 0 && input.untouchable === undefined && scope === undefined && confirmed.sharedWith?.(vouched) === confirmed.size;
  const decided = allAlone
    ? { unchanged: confirmed.size, needNothing: confirmed.size }
    : addConfirmed(confirmed, state.files, byPath, (p) => vouched.has(p) && alone(p), inScope);
  const plan: PlanAccumulator = { ops: [], refreshed: [], skippedRejected: [], unchanged: decided.unchanged };

  // Every path the plan must consider, sorted so that the plan is deterministic. The two
  // loops over a million paths are skipped when counts say they add nothing: every vouched
  // path needs nothing (each was counted once above), and every entry is vouched for (the
  // vouched paths are entries of the state: PlanInput.vouched).
  const paths = new Set<string>();
  for (const p of input.local.keys()) if (inScope(p)) paths.add(p);
  if (decided.needNothing < vouched.size) for (const p of vouched) if (inScope(p) && !(confirmed.has(p) && alone(p))) paths.add(p);
  // A vouched path was decided just above (only a vouched path can need nothing).
  if (vouched.size < state.files.size) for (const p of state.files.keys()) if (inScope(p) && !vouched.has(p)) paths.add(p);
  for (const p of byPath.keys()) if (inScope(p)) paths.add(p);
  plan.ops.push(...setAsideOps(input, [...paths].filter(untouchable).sort(), byPath, excluded, recordedPathOf));
  const sorted = [...paths].filter((p) => !untouchable(p)).sort();

  const hashedFile = hashedFileOf(input);
  const holds = contentRule(input.desired);
  const renames = pickRenames(input, sorted, hashedFile, byPath, holds);
  for (const path of sorted) planPath(plan, { input, path, file: hashedFile(path), byPath, renames, recordedPathOf, untouchable, holds });

  const full = input.remote !== undefined && scope === undefined;
  const prunableCount = full && input.prune === 'all' ? foreign.length : 0;
  if (full && input.prune === 'all') {
    for (const d of foreign) plan.ops.push({ kind: 'delete', path: d.name ?? d.id, documentId: d.id, reason: 'not-in-folder' });
  }
  // Our own uploads committed after their intent was closed go, whenever one appears. It has
  // no hash, so it is never taken for the file's document: the file keeps (or is sent as) its own.
  for (const d of lostUploads) plan.ops.push({ kind: 'delete', path: d.name ?? d.id, documentId: d.id, reason: 'lost-upload', unmarked: true });

  // A full listing taken after an intent's settle window accounts for everything its write
  // may have done: once this plan's operations are carried out, the intent is closed. An
  // upload intent with a file set aside in this pass (too large, unreadable, being written)
  // stays open: what its earlier upload left must still be recognised when the file returns.
  // An excluded file (too large, ...) does not hold it: its intent's uploads were deleted above.
  const settled = input.settled ?? ((): boolean => true);
  const resolvedIntents = full
    ? Object.values(state.intents).filter((i) => settled(i) && (i.kind !== 'upload' || !i.files.some((f) => untouchable(f.path) && !excluded(f.path))))
    : [];
  const resolvedIntentIds = resolvedIntents.map((i) => i.id);
  // A lost answer whose document this listing does not show under its mark: said, not hidden.
  const unfoundUploads = resolvedIntents.flatMap((i) => (i.kind === 'upload' ? uploadsOf.unfound(i) : []));
  const { unchanged, skippedRejected } = plan;
  const formerIds = formerIdsIn({ ...input, recordedPathOf });

  if (sameIdentity.length > 0) {
    // Another writer with our identity: whatever we would do may undo its work, or it ours.
    return { ops: [], unchanged, refreshed: [], skippedRejected, resolvedIntentIds: [], ourDocumentCount, prunableCount, recovered: 0, otherOwners, intentPins: [], doubtful, sameIdentity, held: [], lostUploads: [], foreignMarked, unfoundUploads: [], formerIds };
  }
  const held = holdDuplicates(plan.ops, otherOwners, input.mappingId);
  return { ops: held.ops, unchanged, refreshed: plan.refreshed, skippedRejected, resolvedIntentIds, ourDocumentCount, prunableCount, recovered, otherOwners, intentPins, doubtful, sameIdentity, held: held.held, lostUploads, foreignMarked, unfoundUploads, formerIds };
}

/** What the plan gathers path by path. */
interface PlanAccumulator {
  ops: Op[];
  refreshed: PlanResult['refreshed'];
  skippedRejected: string[];
  unchanged: number;
}

/**
 * The confirmed documents take their place among the listing's (their record is what the
 * entry says: ours, at that path, of the entry's content, fields as desired), but those that
 * need nothing (`needsNothing`, asked of confirmed paths only): counted as unchanged when in
 * scope. Returns that count, and how many needed nothing in or out of scope.
 */
function addConfirmed(confirmed: PathSet, files: ReadonlyFileTable, byPath: Map<string, KnownDoc[]>, needsNothing: (p: string) => boolean, inScope: (p: string) => boolean): { unchanged: number; needNothing: number } {
  let unchanged = 0;
  let needNothing = 0;
  for (const p of confirmed) {
    // Asked before the entry is read: at a restart, every path of the state needs nothing.
    // A confirmed path has its entry (confirmedPath read it; nothing removes one between a
    // pass's listing and its plan: mirror.ts checkListing counts on it too).
    if (needsNothing(p)) {
      needNothing++;
      if (inScope(p)) unchanged++;
      continue;
    }
    const entry = files.get(p);
    if (entry === undefined) continue;
    const doc: KnownDoc = { doc: undefined, id: entry.documentId, path: p, sha256: entry.sha256, fromIntent: false };
    const list = byPath.get(p);
    if (list) list.unshift(doc);
    else byPath.set(p, [doc]);
  }
  return { unchanged, needNothing };
}

/**
 * The documents of files this plan leaves alone (`setAside`, sorted). An excluded file keeps
 * one document of ours, its last synced version (the state's, else the first listed); its
 * intents' unmarked uploads and other versions go: nothing would ever settle them while it
 * stays excluded.
 *
 * A file set aside in this pass (unreadable, being written) keeps its documents, but not
 * two of them: a replace cut between its upload and its delete (a crash, a failure) left
 * the older version beside the state's document, and nothing else would ever remove it
 * while the file cannot be read. With a full listing showing the state's document, the
 * other documents of ours that carry our metadata or that an upload's answer named are
 * removed; a document tied to an upload by name and size only is left alone (it may be a
 * person's, uploaded since), and so is everything when the state's document is not listed.
 *
 * A state's record of any set-aside file whose document the full listing shows nowhere is
 * forgotten, or replaced by the record of another document of ours listed at the path.
 */
function setAsideOps(input: PlanInput, setAside: readonly string[], byPath: ReadonlyMap<string, KnownDoc[]>, excluded: (p: string) => boolean, recordedPathOf: (documentId: string) => string | undefined): Op[] {
  const ops: Op[] = [];
  const files = input.state.files;
  const remote = input.scope === undefined ? input.remote : undefined;
  let listed: Set<string> | undefined;
  for (const path of setAside) {
    const docs = byPath.get(path) ?? NO_DOCS;
    let stateId = files.documentIdOf(path);
    // Its document is gone (deleted in the App, a state older than the service): the record
    // goes, so that the file is sent once it can be (read, included again), not taken as
    // synced (seeds 9304, 9932).
    const gone = stateId !== undefined && remote !== undefined && !docs.some((d) => d.id === stateId) && !(listed ??= new Set(remote.map((d) => d.id))).has(stateId);
    if (gone) stateId = undefined;
    const keep = docs.find((d) => d.id === stateId) ?? docs.find((d) => !d.byIntent);
    if (excluded(path)) {
      for (const d of docs) {
        if (d.byIntent) ops.push(deleteOp(path, d, 'excluded'));
        else if (d !== keep) ops.push(deleteOp(path, d, 'stale-version'));
      }
    } else if (remote !== undefined && docs.length > 1 && docs.some((d) => d.id === stateId)) {
      for (const d of docs) if (d.id !== stateId && !d.byName) ops.push(deleteOp(path, d, 'stale-version'));
    }
    // Recording the kept document replaces a gone record; else the gone record is forgotten.
    const kept = stateId === undefined && keep !== undefined ? recordKept(path, keep, recordedPathOf) : [];
    ops.push(...kept);
    if (gone && kept.length === 0) ops.push({ kind: 'forget', path });
  }
  return ops;
}

/**
 * The kept document of a set-aside path (excluded, unreadable, being written) that the state
 * records nowhere (recovered after a lost journal, an own write) is recorded as its metadata
 * describes it, so that an incremental pass deletes it when the file goes (seed 9942). The
 * entry has no hash time: it never vouches for the local file.
 */
function recordKept(path: string, keep: KnownDoc, recordedPathOf: (documentId: string) => string | undefined): Op[] {
  const meta = keep.doc === undefined ? undefined : readMeta(keep.doc);
  if (meta === undefined || recordedPathOf(keep.id) !== undefined) return [];
  return [{ kind: 'adopt', path, documentId: keep.id, file: { path, size: meta.size ?? -1, mtimeMs: meta.mtimeMs ?? -1, sha256: meta.sha256 } }];
}

/**
 * A file's content hash: this pass's, else the state's (the caller's quick check,
 * pathsToHash, vouched for it), in a copy (the caller's object stays as it was). Made
 * when asked, not kept for every file: a map of a million copies is ~150 MB.
 */
function hashedFileOf(input: PlanInput): (path: string) => HashedFile | UnhashedFile | undefined {
  const { state, vouched } = input;
  const localFile = (path: string): LocalFileInfo | undefined => {
    const found = input.local.get(path);
    if (found !== undefined || vouched === undefined || !vouched.has(path)) return found;
    const entry = state.files.get(path);
    if (entry === undefined) return undefined;
    return { path, diskPath: undefined, size: entry.size, mtimeMs: entry.mtimeMs, ctimeMs: entry.ctimeMs, dev: entry.dev, ino: entry.ino };
  };
  return (path) => {
    const file = localFile(path);
    if (!file) return undefined;
    if (file.sha256 !== undefined) return file as HashedFile;
    const entry = state.files.get(path);
    if (!entry && input.newFilesUnhashed === true) return file as UnhashedFile;
    if (!entry || entry.size !== file.size || entry.mtimeMs !== file.mtimeMs) throw new Error(`planMirror: ${path} needs a content hash (see pathsToHash)`);
    return hashedRecord(file, { size: file.size, mtimeMs: file.mtimeMs, sha256: entry.sha256, ctimeMs: file.ctimeMs, dev: file.dev, ino: file.ino }, entry.hashedAt);
  };
}

/**
 * Documents of ours whose path no longer exists locally can be renamed, by content hash, to
 * a file without a document of the right content (and not rejected before).
 */
function pickRenames(input: PlanInput, sorted: readonly string[], hashedFile: (path: string) => HashedFile | UnhashedFile | undefined, byPath: ReadonlyMap<string, KnownDoc[]>, holds: ContentRule): Renames {
  const { state } = input;
  const vouched = input.vouched ?? NO_PATHS;
  const sources = new Map<string, KnownDoc[]>();
  for (const path of sorted) {
    if (input.local.has(path) || vouched.has(path)) continue;
    // The state's document first (the one it tracks moves; other copies go as stale), then
    // the listing's order: the same choice whether a document came as a record or confirmed.
    const stateId = state.files.documentIdOf(path);
    const docs = byPath.get(path) ?? NO_DOCS;
    for (const d of [...docs.filter((x) => x.id === stateId), ...docs.filter((x) => x.id !== stateId)]) {
      if (d.sha256 === undefined) continue;
      const list = sources.get(d.sha256) ?? [];
      list.push(d);
      sources.set(d.sha256, list);
    }
  }
  const consumed = new Map<string, string>();
  const renames = new Map<string, KnownDoc>();
  for (const path of sorted) {
    const file = hashedFile(path);
    if (file?.sha256 === undefined) continue;
    const fits = (d: KnownDoc): boolean => holds(d, path, file.sha256);
    if (pickGood(byPath.get(path) ?? [], fits, state.files.documentIdOf(path))) continue;
    if (refusedAsItIs(input, path, file)) continue;
    const source = sources.get(file.sha256)?.find((d) => !consumed.has(d.id) && fits(d));
    if (source) {
      consumed.set(source.id, source.path);
      renames.set(path, source);
    }
  }
  return { to: renames, taken: consumed };
}

/** The renames of a plan: path -> the document it takes there, and the ids of those documents -> the path each is moved from. */
interface Renames {
  to: ReadonlyMap<string, KnownDoc>;
  taken: ReadonlyMap<string, string>;
}

/** One path the plan may touch: its file (undefined: gone locally) and its documents. */
interface PathToPlan {
  input: PlanInput;
  path: string;
  file: HashedFile | UnhashedFile | undefined;
  byPath: ReadonlyMap<string, KnownDoc[]>;
  renames: Renames;
  recordedPathOf: (documentId: string) => string | undefined;
  untouchable: (path: string) => boolean;
  holds: ContentRule;
}

/** What one path needs: delete or forget (gone), keep, adopt or update, rename, skip, replace or upload. */
function planPath(plan: PlanAccumulator, { input, path, file, byPath, renames, recordedPathOf, untouchable, holds }: PathToPlan): void {
  const { ops } = plan;
  const known = byPath.get(path);
  const docs = known === undefined ? NO_DOCS : renames.taken.size === 0 ? known : known.filter((d) => !renames.taken.has(d.id));
  const entry = input.state.files.get(path);

  if (!file) {
    for (const d of docs) {
      ops.push(deleteOp(path, d, 'deleted-locally'));
      // Its record at a path set aside (a state older than the listing) goes with it, or the
      // file there is later taken for synced with a document that is gone.
      ops.push(...recordSetAside(recordedPathOf(d.id), path, untouchable));
    }
    // A rename moves the state entry of the path it moves the document from; a record of
    // that document at another path (a state older than the listing) goes.
    if (docs.length === 0 && entry && renames.taken.get(entry.documentId) !== path) ops.push({ kind: 'forget', path });
    return;
  }

  if (file.sha256 === undefined) {
    // Nothing here can depend on its content (newFilesNeedNoContent): an upload, hashed as sent.
    if (docs.length > 0 || entry !== undefined) throw new Error(`planMirror: ${path} needs a content hash (see newFilesNeedNoContent)`);
    if (refusedAsItIs(input, path, file)) plan.skippedRejected.push(path);
    else ops.push({ kind: 'upload', path, file });
    return;
  }
  const fits = (d: KnownDoc): boolean => holds(d, path, file.sha256);
  const good = pickGood(docs, fits, entry?.documentId);
  if (good && input.serviceNames?.renamesIgnored && good.doc?.name !== undefined && findUploadMark(good.doc.name) !== undefined) {
    const unmarkedOld = docs.filter((d) => d.fromIntent).length;
    ops.push({ kind: 'replace', path, file, oldDocumentIds: docs.map((d) => d.id), ...(unmarkedOld > 0 ? { unmarkedOld } : {}) });
    return;
  }
  if (good) {
    for (const d of docs) {
      if (d.id === good.id) continue;
      ops.push(deleteOp(path, d, fits(d) ? 'duplicate' : 'stale-version'));
    }
    const needsMeta = good.fromIntent || (good.doc !== undefined && !fieldsMatch(good.doc, input.desired(file), input.serviceNames));
    ops.push(...recordSetAside(entry?.documentId === good.id ? path : recordedPathOf(good.id), path, untouchable));
    if (needsMeta) {
      ops.push({ kind: 'update-meta', path, documentId: good.id, file, ...(good.doc?.name === undefined ? {} : { listedName: good.doc.name }) });
    } else if (!entry || entry.documentId !== good.id || entry.sha256 !== file.sha256) {
      ops.push({ kind: 'adopt', path, documentId: good.id, file });
    } else {
      // Hashed again (touched, racy) and found the same: only the entry is brought up to date.
      if (!sameRecord(entry, file)) plan.refreshed.push({ path, documentId: good.id, file });
      plan.unchanged++;
    }
    return;
  }

  const source = renames.to.get(path);
  if (source) {
    ops.push(...recordSetAside(recordedPathOf(source.id), source.path, untouchable));
    ops.push({ kind: 'rename', from: source.path, path, documentId: source.id, file });
    for (const d of docs) ops.push(deleteOp(path, d, 'stale-version'));
    return;
  }

  if (refusedAsItIs(input, path, file)) {
    // Stale documents for it stay until the file can be sent: the App keeps the old
    // version rather than nothing.
    plan.skippedRejected.push(path);
    return;
  }

  const unmarkedOld = docs.filter((d) => d.fromIntent).length;
  if (docs.length > 0) ops.push({ kind: 'replace', path, file, oldDocumentIds: docs.map((d) => d.id), ...(unmarkedOld > 0 ? { unmarkedOld } : {}) });
  else ops.push({ kind: 'upload', path, file });
}

/** The service refused this file as it is now (same size and mtime): skipped until it changes. */
function refusedAsItIs(input: PlanInput, path: string, file: LocalFileInfo): boolean {
  const rejected = input.state.rejected[path];
  return rejected !== undefined && rejected.size === file.size && rejected.mtimeMs === file.mtimeMs;
}

/**
 * One record per document. A document the plan keeps, moves or deletes from `listedAt`, that
 * the state records at a path this plan leaves alone (set aside), while the listing shows it
 * at `listedAt` (a rename whose answer was lost, the old path written anew since; a state
 * older than the listing): the record goes with the document, or two paths would hold one
 * document, and every later listing would "lack" the set-aside path's (or, the document
 * deleted, the set-aside file would be taken for synced). (A record at a path whose file is
 * gone is forgotten by that path's own plan.)
 */
function recordSetAside(recordedAt: string | undefined, listedAt: string, untouchable: (path: string) => boolean): Op[] {
  return recordedAt !== undefined && recordedAt !== listedAt && untouchable(recordedAt) ? [{ kind: 'forget', path: recordedAt }] : [];
}

/**
 * Uploads that would duplicate another installation's document of this mapping id (same
 * path, same content): held, for `dssync adopt` to settle. Documents of other paths or
 * other content are not a duplicate (two installations mapping different folders into one
 * data source each keep their own).
 */
function holdDuplicates(ops: Op[], otherOwners: readonly OtherOwner[], mappingId: string): { ops: Op[]; held: PlanResult['held'] } {
  const byPath = new Map<string, OtherOwner[]>();
  for (const o of otherOwners) {
    if (o.mappingId !== mappingId || o.sha256 === undefined) continue;
    byPath.set(o.path, [...(byPath.get(o.path) ?? []), o]);
  }
  if (byPath.size === 0) return { ops, held: [] };
  const held: PlanResult['held'] = [];
  const kept = ops.filter((op) => {
    if (op.kind !== 'upload') return true;
    const owner = byPath.get(op.path)?.find((o) => o.sha256 === op.file.sha256);
    if (owner === undefined) return true;
    held.push({ path: op.path, owner });
    return false;
  });
  return { ops: kept, held };
}

/**
 * The documents a listing ties to files of open upload intents whose answer was lost (as
 * planMirror's intentPins), without planning: what the mirror records right after a lost
 * answer, before anyone else can upload a document of the same name and size.
 */
export function lostUploadPins(input: Pick<PlanInput, 'mappingId' | 'installationId' | 'formerInstallationIds' | 'state' | 'remote' | 'lease' | 'serviceNames'> & { remote: readonly DocumentRecord[] }): IntentPin[] {
  return classifyRemote(input, pathsByDocument(input.state.files)).intentPins;
}

/**
 * The state's path of a document id (the path alone: its entry is one lookup away). The
 * index is built at the first question: a listing whose documents were all confirmed
 * (PlanInput.confirmed) asks none, and a million-entry map is not made for nothing.
 */
function pathsByDocument(files: ReadonlyFileTable): (documentId: string) => string | undefined {
  let index: ((documentId: string) => string | undefined) | undefined;
  return (documentId) => (index ??= files.documentIndex())(documentId);
}

function deleteOp(path: string, d: KnownDoc, reason: DeleteReason): Op {
  return { kind: 'delete', path, documentId: d.id, reason, ...(d.fromIntent ? { unmarked: true } : {}) };
}

/**
 * `holds(d, path, sha256)`: the document holds what the file at `path` with that content is
 * sent as, the same content converted the same way (the converter `desired` names for the
 * path, metadata.ts META.converter; it depends on the path alone). A document whose
 * conversion is not known (the state stands in for it) was sent as its own path is today.
 */
type ContentRule = (d: KnownDoc, path: string, sha256: string) => boolean;

function contentRule(desired: PlanInput['desired']): ContentRule {
  const conversionAt = (path: string): string => String(desired({ path, size: 0, mtimeMs: 0, sha256: '' }).metadata?.[META.converter] ?? '');
  return (d, path, sha256) => d.sha256 === sha256 && (d.conversion === undefined ? d.path === path || conversionAt(d.path) === conversionAt(path) : d.conversion === conversionAt(path));
}

/** The document to keep for a file: one that `holds` it; the state's choice first, then the lowest id. */
function pickGood(docs: readonly KnownDoc[], holds: (d: KnownDoc) => boolean, preferredId: string | undefined): KnownDoc | undefined {
  const same = docs.filter(holds);
  return same.find((d) => d.id === preferredId) ?? same.find((d) => !d.fromIntent) ?? same[0];
}

interface RemoteView {
  byPath: Map<string, KnownDoc[]>;
  foreign: DocumentRecord[];
  otherOwners: OtherOwner[];
  ourDocumentCount: number;
  recovered: number;
  intentPins: IntentPin[];
  doubtful: DocumentRecord[];
  sameIdentity: OtherOwner[];
  lostUploads: DocumentRecord[];
  foreignMarked: DocumentRecord[];
  /** What the open intents found in this listing (unfound: files whose lost upload it does not show). */
  uploadsOf: { unfound(intent: Extract<Intent, { kind: 'upload' }>): { path: string; uploadName: string }[] };
}

/**
 * Sorts the remote documents into ours (by path) and foreign ones. Without a remote
 * listing, the state stands in for it.
 */
function classifyRemote(input: Pick<PlanInput, 'mappingId' | 'installationId' | 'formerInstallationIds' | 'state' | 'remote' | 'scope' | 'lease' | 'serviceNames'>, stateByDoc: (documentId: string) => string | undefined): RemoteView {
  const byPath = new Map<string, KnownDoc[]>();
  const add = (d: KnownDoc): void => {
    const list = byPath.get(d.path);
    if (list) list.push(d);
    else byPath.set(d.path, [d]);
  };
  const foreign: DocumentRecord[] = [];

  if (input.remote === undefined) {
    // Only paths in scope are ever looked at: an incremental pass over a million-file state
    // makes a handful of these, not a million.
    const files = input.state.files;
    const standIn = (path: string): void => {
      const entry = files.get(path);
      if (entry !== undefined) add({ doc: undefined, id: entry.documentId, path, sha256: entry.sha256, fromIntent: false });
    };
    if (input.scope === undefined) for (const path of files.keys()) standIn(path);
    else for (const path of input.scope) standIn(path);
    return { byPath, foreign, otherOwners: [], ourDocumentCount: files.size, recovered: 0, intentPins: [], doubtful: [], sameIdentity: [], lostUploads: [], foreignMarked: [], uploadsOf: NO_UPLOADS };
  }

  const uploads = openUploads(input.state.intents, input.serviceNames?.rule);
  const whose = ownerRule({ ...input, recordedPathOf: stateByDoc, uploads: uploadLookup(uploads) });
  const lostUploads: DocumentRecord[] = [];
  const foreignMarked: DocumentRecord[] = [];
  let ourDocumentCount = 0;
  let recovered = 0;
  const otherOwners: OtherOwner[] = [];
  const sameIdentity: OtherOwner[] = [];
  for (const doc of input.remote) {
    const o = whose(doc);
    switch (o.kind) {
      case 'lease':
        continue;
      case 'ours':
      case 'own-write':
      case 'recovered':
        // Metadata is written last by every update, so its path is the newest; the content
        // of an id never changes, so the state's hash (when it knows the id) is as good. A
        // document the state alone vouches for, or recovered, gets its metadata written.
        add({ doc, id: doc.id, path: o.path, sha256: o.sha256, fromIntent: o.kind === 'recovered' || (o.kind === 'ours' && o.rewrite), conversion: sentConversion(doc) });
        uploads.witness(doc, o.path, o.sha256);
        if (o.kind === 'recovered') recovered++;
        ourDocumentCount++;
        continue;
      case 'other-mapping':
      case 'other-installation':
      case 'same-identity':
        (o.kind === 'same-identity' ? sameIdentity : otherOwners).push({ documentId: doc.id, path: o.path, mappingId: o.mappingId, installationId: o.installationId, sha256: o.sha256 });
        continue;
      case 'open-upload':
        // The upload's answer named it, or it bears the nonce only that upload used (its answer
        // lost), wherever the service's rewriting left it in the name: ours, whatever its size.
        add({ doc, id: doc.id, path: o.upload.file.path, sha256: o.upload.file.sha256, fromIntent: true, byIntent: true });
        ourDocumentCount++;
        continue;
      case 'lost-upload':
        lostUploads.push(doc);
        ourDocumentCount++;
        continue;
      case 'foreign-upload':
        foreignMarked.push(doc);
        continue;
      case 'person':
        if (!uploads.claimByName(doc)) foreign.push(doc);
    }
  }
  // Documents that only a name and size tie to an upload whose answer was lost.
  const { claimed, doubtful, pins } = uploads.settleByName();
  for (const { doc, file } of claimed) {
    add({ doc, id: doc.id, path: file.path, sha256: file.sha256, fromIntent: true, byIntent: true, byName: true });
    ourDocumentCount++;
  }
  foreign.push(...doubtful);
  return { byPath, foreign, otherOwners, ourDocumentCount, recovered, intentPins: pins, doubtful, sameIdentity, lostUploads, foreignMarked, uploadsOf: uploads };
}

/** One file of an open upload intent, with where it sits in the intent. */
interface OpenFile {
  intentId: string;
  index: number;
  file: IntentFile;
  /** Unmarked documents that existed before the upload was sent (undefined: not known). */
  before: ReadonlySet<string> | undefined;
  /**
   * `before` comes from a listing of the pass that sent the upload (the intent's
   * preexistingFresh): a document not in it appeared since, so it is the upload's (or was
   * uploaded within the request itself). Otherwise it may be a person's of the same full
   * name and size, uploaded since the last listing: undecidable, so never claimed.
   */
  fresh: boolean;
}

/** A document the upload of a file may have created (recorded in the intent once sure). */
export interface IntentPin {
  intentId: string;
  /** The file's index in the intent. */
  index: number;
  documentId: string;
}

/**
 * What open upload intents say about unmarked documents. A file whose upload answer named
 * its document owns exactly that id. A file whose answer was lost may own one document of
 * its full name (in every form the multipart encoding may leave it, form-name.ts) and its
 * size, that did not exist before the upload was sent — which only a listing of the pass
 * that sent it can say (a full pass; an incremental pass has none, and a person may have
 * uploaded such a document since the last listing: it is then doubtful, never claimed);
 * and since one request creates at most one document per file, more such documents than files that could have made them
 * means one of them is someone else's, unknowable which: none is claimed (at worst a
 * duplicate of ours stays, never a person's document renamed or deleted).
 */
function openUploads(intents: Readonly<Record<string, Intent>>, rule?: NameRule) {
  const byId = new Map<string, OpenFile>();
  /** Open files by the nonce of their marked upload name. */
  const marked = new Map<string, OpenFile>();
  /** Documents found by their marked name, per file: pinned when one file made exactly one. */
  const byMarkFound = new Map<OpenFile, string[]>();
  const byName = new Map<string, OpenFile[]>();
  /** The same files by the path they sent. */
  const byPath = new Map<string, OpenFile[]>();
  /** Every path an open upload intent sent. */
  const paths = new Set<string>();
  // Oldest first: the newest intent's file wins a name (the last of the list).
  const byAge = Object.values(intents).sort((a, b) => (a.startedAt < b.startedAt ? -1 : a.startedAt > b.startedAt ? 1 : 0));
  for (const intent of byAge) {
    if (intent.kind !== 'upload') continue;
    const before = intent.preexisting === undefined ? undefined : new Set(intent.preexisting);
    const fresh = before !== undefined && intent.preexistingFresh === true;
    intent.files.forEach((file, index) => {
      paths.add(file.path);
      const open: OpenFile = { intentId: intent.id, index, file, before, fresh };
      if (file.documentId !== undefined) {
        byId.set(file.documentId, open);
        return;
      }
      const nonce = file.uploadName === undefined ? undefined : findUploadMark(file.uploadName);
      if (nonce !== undefined) {
        marked.set(nonce, open);
        return;
      }
      // Sent unmarked: told by name and size only.
      byPath.set(file.path, [...(byPath.get(file.path) ?? []), open]);
      for (const key of intentNameKeys(file.path, rule)) {
        const list = byName.get(key) ?? [];
        list.push(open);
        byName.set(key, list);
      }
    });
  }
  /** Candidates by the newest file they could be: path and size. */
  const groups = new Map<OpenFile, { docs: DocumentRecord[]; files: Set<OpenFile> }>();
  /** Candidates that only files without a fresh "before" could have made: undecidable. */
  const unknowable: DocumentRecord[] = [];
  /** Our documents (by metadata or the state) of the content of a file sent unmarked, per newest file that can have made them. */
  const witnessed = new Map<OpenFile, string[]>();
  /** The files sent unmarked whose lost answer a document of this name and size may be, oldest first. */
  const couldHaveMade = (doc: DocumentRecord): OpenFile[] => {
    // Asked of every document of ours in a listing: no unmarked upload open, nothing to find.
    if (byName.size === 0) return [];
    const size = doc.name === undefined ? undefined : documentSize(doc);
    // A service that reports no size gives no evidence: left alone.
    if (size === undefined) return [];
    return (byName.get(nfc(doc.name!)) ?? []).filter((f) => f.file.size === size && !f.before?.has(doc.id));
  };
  return {
    byId,
    paths,
    /**
     * Notes a document of ours whose metadata names the path and content of a file sent
     * unmarked, other than the one it replaces and not listed before the upload: that
     * upload's answer, found (its metadata is written after it), whatever name the service
     * gave it. Its request then lost no answer: a document without metadata of the name
     * and size of any of its files is never claimed (settleByName).
     */
    witness(doc: DocumentRecord, path: string, sha256: string): void {
      const could = (byPath.get(path) ?? []).filter((f) => f.file.sha256 === sha256 && f.file.replacesDocumentId !== doc.id && !f.before?.has(doc.id));
      const newest = could[could.length - 1];
      if (newest) witnessed.set(newest, [...(witnessed.get(newest) ?? []), doc.id]);
    },
    /** The open file whose upload nonce a document's name bears (documentId not yet known). */
    byMark(nonce: string, documentId: string): OpenFile | undefined {
      const open = marked.get(nonce);
      if (open) byMarkFound.set(open, [...(byMarkFound.get(open) ?? []), documentId]);
      return open;
    },
    /** The files of `intent` sent marked whose answer was lost and whose document this listing did not show. */
    unfound(intent: Extract<Intent, { kind: 'upload' }>): { path: string; uploadName: string }[] {
      const out: { path: string; uploadName: string }[] = [];
      for (const file of intent.files) {
        if (file.documentId !== undefined || file.uploadName === undefined) continue;
        const nonce = findUploadMark(file.uploadName);
        const open = nonce === undefined ? undefined : marked.get(nonce);
        if (open === undefined || !byMarkFound.has(open)) out.push({ path: file.path, uploadName: file.uploadName });
      }
      return out;
    },
    /** Notes an unmarked document as a candidate; false when no lost upload can have made it. */
    claimByName(doc: DocumentRecord): boolean {
      const could = couldHaveMade(doc);
      const newest = could[could.length - 1];
      if (!newest) return false;
      if (!could.some((f) => f.fresh)) {
        // Not in the last listing, but that listing is older than the upload's pass: the
        // upload's lost answer or a person's document uploaded since, unknowable which.
        unknowable.push(doc);
        return true;
      }
      const group = groups.get(newest) ?? { docs: [], files: new Set<OpenFile>() };
      group.docs.push(doc);
      for (const f of could) group.files.add(f);
      groups.set(newest, group);
      return true;
    },
    settleByName() {
      const claimed: { doc: DocumentRecord; file: IntentFile }[] = [];
      const doubtful: DocumentRecord[] = [...unknowable];
      const pins: IntentPin[] = [];
      for (const [open, ids] of byMarkFound) if (ids.length === 1) pins.push({ intentId: open.intentId, index: open.index, documentId: ids[0]! });
      for (const [open, ids] of witnessed) if (ids.length === 1) pins.push({ intentId: open.intentId, index: open.index, documentId: ids[0]! });
      // A request one of whose documents is listed marked (metadata follows the answer) lost
      // no answer: an unmarked namesake of its files is not that answer (at worst ours, its
      // mark and recorded answer lost, stays a duplicate). An id in the intent may be a pin.
      const answered = new Set([...witnessed.keys()].map((f) => f.intentId));
      for (const [newest, { docs, files }] of groups) {
        const lost = [...files].filter((f) => !answered.has(f.intentId)).length;
        if (answered.has(newest.intentId) || docs.length > lost) {
          doubtful.push(...docs);
          continue;
        }
        for (const doc of docs) claimed.push({ doc, file: newest.file });
        // One document, one file that can have made it: that is the upload's answer.
        if (docs.length === 1 && lost === 1) pins.push({ intentId: newest.intentId, index: newest.index, documentId: docs[0]!.id });
      }
      return { claimed, doubtful, pins };
    },
  };
}

/** The owner rule's view of the open upload intents. */
function uploadLookup(uploads: ReturnType<typeof openUploads>): OpenUploadLookup<OpenFile> {
  return { byId: (id) => uploads.byId.get(id), byMark: (nonce, id) => uploads.byMark(nonce, id), sentPath: (path) => uploads.paths.has(path) };
}

/**
 * Every name under which the service may list the upload of `path`: each form the multipart
 * encoding may leave it in, as the service stores it (`rule`: how it was seen to rewrite
 * names; a document under a name the rule never gives cannot be that upload).
 */
export function intentNameKeys(path: string, rule?: NameRule): string[] {
  const forms = [path, documentName(path)].flatMap((k) => formNameForms(k));
  return [...new Set(forms.map((f) => nfc(storedName(f, rule))))];
}

/** The document's size in bytes as the service reports it, if it does. */
export function documentSize(doc: DocumentRecord): number | undefined {
  for (const k of DOCUMENT_SIZE_KEYS) {
    const v = doc.raw[k];
    if (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0) return v;
    if (typeof v === 'string' && /^\d+$/.test(v)) return Number(v);
  }
  return undefined;
}

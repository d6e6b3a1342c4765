/**
 * Carries out a plan's operations against the service and records each result in the
 * state (DESIGN §2 executor, §4 correctness rules).
 *
 * - Uploads are batched (count and bytes) into one request each. Before a batch is sent,
 *   an upload intent is made durable; it stays open until every uploaded document has its
 *   metadata, so a crash or a lost answer at any instant is settled by the next full pass.
 * - Renames, metadata updates and deletes are idempotent and self-describing (the
 *   document's metadata says whose and where it is), so a full listing settles them without
 *   an intent; they only record their result.
 * - A replace uploads the new version, gives it its metadata, then deletes the old one:
 *   the App is never left without the file.
 * - A plan may hold several operations for one path (keep one document and delete its
 *   duplicates, rename one and delete a stale version), but no two of them touch the same
 *   document, and a mirror runs one plan at a time: two operations never touch one
 *   document at once.
 */
import { forEachAtMost } from '../at-most.js';
import type { DatastoreApi } from '../api/api.js';
import { apiErrorWith, isApiError, type ApiError } from '../api/errors.js';
import type { DocumentRecord, DocumentUpdate, OpenedFile } from '../api/records.js';
import { codeEntry } from '../errors/codes.js';
import { disposition } from '../errors/disposition.js';
import type { Logger } from '../log.js';
import type { FileEntry, Intent, RejectedFile } from '../state/schema.js';
import { documentName, markUploadName, uploadNonce } from './document-fields.js';
import { findUploadMark } from './upload-mark.js';
import { conversionOf, type Conversion, type Formats } from '../convert/policy.js';
import { LocalFileChangedError, LocalFileVanishedError, type SkippedFile } from './local-side.js';
import type { HashedFile, Op, UnhashedFile } from './plan.js';
import { learnNameRule, nameAsStored, type ServiceNames } from './service-names.js';

/** The state operations the executor needs (StateStore implements them). */
export interface StateWriter {
  setFile(mappingId: string, path: string, entry: FileEntry): void;
  deleteFile(mappingId: string, path: string): void;
  renameFile(mappingId: string, from: string, to: string, entry: FileEntry): void;
  beginIntent(mappingId: string, intent: DistributiveOmit<Intent, 'id' | 'startedAt'>): Promise<string>;
  /** The documents an upload created, by file of its intent (undefined: not known). */
  setIntentDocuments(mappingId: string, intentId: string, documentIds: readonly (string | undefined)[]): void;
  endIntent(mappingId: string, intentId: string): void;
  /** Makes every change so far durable (StateStore.flush). */
  flush?(): Promise<void>;
  setRejected(mappingId: string, path: string, rejected: RejectedFile): void;
  clearRejected(mappingId: string, path: string): void;
}

type DistributiveOmit<T, K extends keyof never> = T extends unknown ? Omit<T, K> : never;

export interface ExecutorOptions {
  api: DatastoreApi;
  state: StateWriter;
  mappingId: string;
  dataSourceId: string;
  desired: (file: HashedFile) => DocumentUpdate;
  /** Upload batch bounds. */
  batchFiles: number;
  batchBytes: number;
  /** Operations in progress at once (the client's pacer bounds the requests themselves). */
  concurrency: number;
  now: () => number;
  logger: Logger;
  signal?: AbortSignal | undefined;
  /** Called once per finished operation (progress, metrics, the demo's output). */
  onOp?: ((event: OpEvent) => void) | undefined;
  /** Opens a file to upload, checked by the local side (LocalSide.open); `content`: the bytes its hash kept. */
  open: (file: HashedFile, content?: Uint8Array) => Promise<OpenedFile>;
  /**
   * Hashes a file planned unhashed (plan.ts newFilesNeedNoContent), with its bytes kept when
   * small (LocalSide.hash): its batch's intent records the hash, the upload sends the bytes.
   * Throws as LocalSide.hash does. Without it, such a file fails.
   */
  hash?: ((file: UnhashedFile) => Promise<{ file: HashedFile; content?: Uint8Array | undefined }>) | undefined;
  /**
   * Unmarked documents that the last full listing showed under the name a file is uploaded
   * as (people's, never this upload's); undefined when no listing is known. Recorded in the
   * upload's intent.
   */
  preexisting?: ((path: string) => readonly string[]) | undefined;
  /**
   * True when `preexisting` comes from a listing of this pass, taken before these uploads
   * (a full pass): recorded in the intent, it lets a lost answer's document be told by name
   * and size. An incremental pass has none: a person may have uploaded since the last one.
   */
  preexistingFresh?: boolean | undefined;
  /**
   * This installation's tag (document-fields.ts uploadTag): every upload's nonce starts with
   * it, so that a late-committed upload is known as ours after its intent is closed.
   */
  uploadTag?: string | undefined;
  /** This process's writer session, carried in each nonce after the tag (document-fields.ts). */
  session?: string | undefined;
  /** The nonce of each upload's marked name (document-fields.ts). @default uploadNonce(uploadTag, session) */
  uploadNonce?: (() => string) | undefined;
  /**
   * What the service does to names (service-names.ts), as far as the state and this run
   * know: taught by the answers to metadata updates (an upload's, whose name the first one
   * without it is read back for; a rename's or an update's when it carries the name). Once
   * renames are ignored, later batches are sent under their real names (no mark: a lost
   * answer is told by name and size, plan.ts). Shared with the caller, which keeps it in
   * the state.
   */
  names?: NameCheck | undefined;
  /** The mapping's formats (convert/policy.ts): which files are sent converted to Markdown. */
  formats?: Formats | undefined;
}

/** What the service was seen to do to names (ExecutorOptions.names). */
export interface NameCheck {
  known: ServiceNames;
  /** Whether an upload's new name was seen in an answer (or read back) yet. */
  verified: boolean;
  /** The marked name the service kept, once renames are seen ignored (for the log). */
  shown?: string | undefined;
}

export type OpOutcome = 'done' | 'failed' | 'rejected' | 'changed' | 'ambiguous';

export interface OpEvent {
  kind: Op['kind'];
  path: string;
  outcome: OpOutcome;
  documentId?: string | undefined;
  error?: ApiError | Error | undefined;
  /** An upload's document as the service reported it (its ingestion status, when it gives one). */
  record?: DocumentRecord | undefined;
}

export interface FileFailure {
  path: string;
  op: Op['kind'];
  code: string;
  status?: number | undefined;
  /** A write whose answer was lost: the next listing settles it (errors/disposition.ts). */
  ambiguous?: true | undefined;
  message: string;
}

export interface ExecutionResult {
  counts: Record<Op['kind'], number>;
  failures: FileFailure[];
  /** Files the service refused (413/415): skipped until they change. */
  rejected: FileFailure[];
  /** Files that changed or vanished while being sent: the next plan looks again. */
  changed: string[];
  /** Files planned unhashed that could not be read when sent: skipped for now, as a pass's hash skips them. */
  skipped: SkippedFile[];
  /** Some write's answer was lost: list the data source and plan again before retrying. */
  ambiguous: boolean;
  /**
   * Operations cut off mid-request by a stop (shutdown, Ctrl-C), per kind: each is still one
   * of `failures`, but they are logged as one summary line with what never started.
   */
  interrupted: Partial<Record<Op['kind'], number>>;
}

type UploadOp = Extract<Op, { kind: 'upload' | 'replace' }>;
/** An upload whose file is hashed: what its intent records and its request sends. */
type HashedUpload = UploadOp & { file: HashedFile };
type SingleOp = Extract<Op, { kind: 'rename' | 'update-meta' | 'delete' }>;
/** An upload with the name it is sent under: marked (document-fields.ts markUploadName), unless renames are ignored. */
interface NamedUpload {
  op: HashedUpload;
  /** The bytes the file's hash kept, sent instead of a new read (ExecutorOptions.hash). */
  content?: Uint8Array | undefined;
  uploadName: string;
  /** Sent as Markdown converted from the file (its upload name then ends in `.md`). */
  conversion?: Conversion | undefined;
  marked: boolean;
}

/**
 * Carries out `ops`, which it takes over: the array is emptied, and each operation is held
 * only until it ends, so a first mirror's million file records are let go as their uploads
 * land instead of at the end of the pass (docs/performance.md, "Session 22").
 */
export async function executePlan(ops: Op[], o: ExecutorOptions): Promise<ExecutionResult> {
  const result: ExecutionResult = {
    counts: { upload: 0, replace: 0, rename: 0, 'update-meta': 0, delete: 0, adopt: 0, forget: 0 },
    failures: [],
    rejected: [],
    changed: [],
    skipped: [],
    ambiguous: false,
    interrupted: {},
  };
  const { uploads, singles } = takeOps(ops, o, result);
  // Each task is made as a worker is free (at-most.ts: a first mirror of a million files has
  // 50,000 batches). Once stopped (Ctrl-C, shutdown), what has not started is not started:
  // no intent is begun for it (each would stay open in the state until a full pass settles
  // it) and its files are counted, not each failed and logged.
  const notStarted = new Map<Op['kind'], number>();
  const nonce = o.uploadNonce ?? ((): string => uploadNonce(o.uploadTag, o.session));
  function* tasks(): Generator<{ ops: readonly Op[]; run: () => Promise<void> }> {
    for (const op of drain(singles)) yield { ops: [op], run: () => runSingle(op, o, result) };
    for (const batch of makeBatches(drain(uploads), o.batchFiles, o.batchBytes)) {
      yield {
        ops: batch,
        run: async () => {
          const hashed = await hashUnhashed(batch, o, result);
          if (hashed.length > 0) await runUploadBatch(nameUploads(hashed, o, nonce), o, result);
        },
      };
    }
  }
  await forEachAtMost(tasks(), o.concurrency, async (task) => {
    if (!o.signal?.aborted) return task.run();
    for (const op of task.ops) notStarted.set(op.kind, (notStarted.get(op.kind) ?? 0) + 1);
  });
  for (const [kind, n] of notStarted) {
    result.failures.push({ path: '', op: kind, code: 'E_ABORTED', message: `stopped before ${n} ${kind} operation(s) started; the next pass carries them out` });
  }
  logAbandoned(o, result.interrupted, notStarted);
  return result;
}

/**
 * Empties `ops`: the state-only operations are carried out at once, the writes sorted into
 * the uploads (sent in batches) and the single requests, each list drained as it is fed.
 */
function takeOps(ops: Op[], o: ExecutorOptions, result: ExecutionResult): { uploads: (UploadOp | undefined)[]; singles: (SingleOp | undefined)[] } {
  const uploads: UploadOp[] = [];
  const singles: SingleOp[] = [];
  for (const op of ops) {
    switch (op.kind) {
      case 'adopt':
        o.state.setFile(o.mappingId, op.path, entryFor(op.file, op.documentId, o.now));
        o.state.clearRejected(o.mappingId, op.path);
        done(o, result, op, op.documentId);
        break;
      case 'forget':
        o.state.deleteFile(o.mappingId, op.path);
        o.state.clearRejected(o.mappingId, op.path);
        done(o, result, op);
        break;
      case 'upload':
      case 'replace':
        uploads.push(op);
        break;
      case 'rename':
      case 'update-meta':
      case 'delete':
        singles.push(op);
        break;
    }
  }
  ops.length = 0;
  return { uploads, singles };
}

/**
 * The one line a stop mid-pass leaves: what was abandoned, per kind of operation (cut off
 * in flight, never started), and that the next pass (at the next start) carries it out.
 * Nothing is lost: an interrupted upload's intent stays open for that pass to adopt.
 */
function logAbandoned(o: ExecutorOptions, interrupted: ExecutionResult['interrupted'], notStarted: ReadonlyMap<Op['kind'], number>): void {
  const kinds = new Set<Op['kind']>([...(Object.keys(interrupted) as Op['kind'][]), ...notStarted.keys()]);
  if (kinds.size === 0) return;
  let total = 0;
  const parts: string[] = [];
  const abandoned: Record<string, { inFlight: number; notStarted: number }> = {};
  for (const kind of kinds) {
    const inFlight = interrupted[kind] ?? 0;
    const waiting = notStarted.get(kind) ?? 0;
    total += inFlight + waiting;
    abandoned[kind] = { inFlight, notStarted: waiting };
    parts.push(`${kind}: ${[inFlight > 0 ? `${inFlight} in flight` : '', waiting > 0 ? `${waiting} not started` : ''].filter(Boolean).join(', ')}`);
  }
  o.logger.warn({ abandoned }, `stopped: ${total} operation(s) abandoned (${parts.join('; ')}); left to the next pass, at the next start`);
}

/**
 * A batch under the names its intent records and its request sends, named right before it is
 * sent (the names of a million files are never all held at once): marked (markUploadName),
 * unless the service ignores new names (the marked name would show for good). A converted
 * file is sent as Markdown under a name ending in .md; the metadata update gives the real name.
 */
function nameUploads(batch: readonly { op: HashedUpload; content?: Uint8Array | undefined }[], o: ExecutorOptions, nonce: () => string): NamedUpload[] {
  const marked = o.names?.known.renamesIgnored !== true;
  return batch.map(({ op, content }) => {
    const conversion = conversionOf(op.path, o.formats);
    const name = `${o.desired(op.file).name}${conversion ? '.md' : ''}`;
    return { op, content, uploadName: marked ? markUploadName(name, nonce()) : name, marked, conversion };
  });
}

/**
 * The batch with every file hashed: one planned unhashed is hashed now, before its intent
 * records the hash, its bytes kept for its upload. A file gone, changed while read, or
 * changed since the walk (its size or mtime: the plan was made with them) is left to the
 * next round's look, like a file that changes while it is sent.
 */
async function hashUnhashed(batch: readonly UploadOp[], o: ExecutorOptions, r: ExecutionResult): Promise<{ op: HashedUpload; content?: Uint8Array | undefined }[]> {
  const out = await Promise.all(
    batch.map(async (op) => {
      if (op.file.sha256 !== undefined) return { op: op as HashedUpload };
      if (o.hash === undefined) {
        fail(o, r, op.kind, op.path, new Error(`${op.path} was planned unhashed, and nothing here hashes it`));
        return undefined;
      }
      try {
        const { file, content } = await o.hash(op.file);
        if (file.size !== op.file.size || file.mtimeMs !== op.file.mtimeMs) throw new LocalFileChangedError(`${op.path} changed since it was listed`);
        return { op: { ...op, file }, content };
      } catch (e) {
        if (e instanceof LocalFileChangedError || e instanceof LocalFileVanishedError) {
          changedWhileSent(o, r, op);
        } else {
          const reason = e instanceof Error ? e.message : String(e);
          r.skipped.push({ path: op.path, reason });
          o.logger.warn({ path: op.path, err: reason }, 'file skipped for now');
        }
        return undefined;
      }
    }),
  );
  return out.filter((x) => x !== undefined);
}

function uploadIntent(batch: readonly NamedUpload[], o: ExecutorOptions): DistributiveOmit<Intent, 'id' | 'startedAt'> {
  const files = batch.map(({ op, uploadName, marked }) => ({
    path: op.path,
    size: op.file.size,
    mtimeMs: op.file.mtimeMs,
    sha256: op.file.sha256,
    ...(marked ? { uploadName } : {}),
    ...(op.kind === 'replace' && op.oldDocumentIds[0] !== undefined ? { replacesDocumentId: op.oldDocumentIds[0] } : {}),
  }));
  // Only a file sent under its real name is told by name and size after a lost answer
  // (plan.ts openUploads), so the documents that existed before are journalled for it alone.
  if (!o.preexisting || batch.every((n) => n.marked)) return { kind: 'upload', files };
  const preexisting = [...new Set(batch.flatMap(({ op }) => o.preexisting!(op.path)))];
  return { kind: 'upload', files, preexisting, ...(o.preexistingFresh ? { preexistingFresh: true } : {}) };
}

/** Groups uploads into batches bounded by count and bytes (a single large file goes alone), made as they are taken. */
export function* makeBatches<T extends { file: { size: number } }>(items: Iterable<T>, maxFiles: number, maxBytes: number): Generator<T[]> {
  let current: T[] = [];
  let bytes = 0;
  for (const item of items) {
    if (current.length > 0 && (current.length >= maxFiles || bytes + item.file.size > maxBytes)) {
      yield current;
      current = [];
      bytes = 0;
    }
    current.push(item);
    bytes += item.file.size;
  }
  if (current.length > 0) yield current;
}

/** Yields each item once and clears its slot: an item handed on is held only by whoever took it. */
function* drain<T>(items: (T | undefined)[]): Generator<T> {
  for (let i = 0; i < items.length; i++) {
    const item = items[i]!;
    items[i] = undefined;
    yield item;
  }
  items.length = 0;
}

async function runSingle(op: SingleOp, o: ExecutorOptions, r: ExecutionResult): Promise<void> {
  const opts = { signal: o.signal };
  try {
    if (op.kind === 'delete') {
      await o.api.deleteDocument(o.dataSourceId, op.documentId, opts);
      if (op.reason === 'deleted-locally') o.state.deleteFile(o.mappingId, op.path);
      o.logger.info({ path: op.path, documentId: op.documentId, reason: op.reason }, 'deleted');
      done(o, r, op, op.documentId);
      return;
    }
    const desired = o.desired(op.file);
    const answer = await o.api.updateDocument(o.dataSourceId, op.documentId, desired, opts);
    if (o.names) {
      checkUpdateName(o.names, op, answer, desired.name);
      checkUrl(o.names, answer, desired.url);
    }
    const entry = entryFor(op.file, op.documentId, o.now);
    if (op.kind === 'rename') {
      o.state.renameFile(o.mappingId, op.from, op.path, entry);
      o.logger.info({ path: op.path, from: op.from, documentId: op.documentId }, 'renamed');
    } else {
      o.state.setFile(o.mappingId, op.path, entry);
      o.logger.info({ path: op.path, documentId: op.documentId }, 'metadata updated');
    }
    done(o, r, op, op.documentId);
  } catch (e) {
    if (isApiError(e) && e.code === 'E_NOT_FOUND' && op.kind !== 'delete') {
      // The document vanished under us (deleted remotely): the next plan uploads again.
      o.state.deleteFile(o.mappingId, op.kind === 'rename' ? op.from : op.path);
    }
    fail(o, r, op.kind, op.path, e);
  }
}

/**
 * Every upload needs a durable intent first, begun right before its own batch is sent, not
 * ahead of it: the intent's start is what an earlier process's settle window counts from
 * (mirror.ts settledAt). Batches running side by side begin theirs in the same turn, and the
 * store writes those together (group commit).
 */
async function runUploadBatch(named: readonly NamedUpload[], o: ExecutorOptions, r: ExecutionResult): Promise<void> {
  const batch = named.map((n) => n.op);
  let intentId: string;
  try {
    intentId = await o.state.beginIntent(o.mappingId, uploadIntent(named, o));
  } catch (e) {
    // The intent could not be made durable (disk full...): an upload whose answer got lost
    // could then not be recognised after a crash, so nothing is sent; a later pass retries.
    for (const op of batch) fail(o, r, op.kind, op.path, e);
    return;
  }
  let records: DocumentRecord[];
  try {
    records = await o.api.uploadDocuments(
      o.dataSourceId,
      named.map(({ op, content, uploadName, conversion }) => ({
        path: op.path,
        name: uploadName,
        ...(conversion ? { convert: conversion } : {}),
        expectedSize: op.file.size,
        expectedMtimeMs: op.file.mtimeMs,
        // The bytes sent must be the file walked and hashed (api/upload.ts).
        expectedSha256: op.file.sha256,
        open: () => o.open(op.file, content),
      })),
      { signal: o.signal },
    );
  } catch (e) {
    await uploadFailed(named, intentId, e, o, r);
    return;
  }

  // The answer names our documents: recorded before anything else, so that a later pass
  // tells them by id from a person's document of the same name and size.
  o.state.setIntentDocuments(o.mappingId, intentId, batch.map((_, i) => records[i]?.id));
  if (!o.preexistingFresh && named.some((n) => !n.marked) && o.state.flush) {
    // Sent unmarked without a fresh listing: should the process die before the metadata is
    // written, nothing else could tell these documents from a person's of the same name and
    // size (plan.ts openUploads), so their ids reach the disk first (one journal fsync). A
    // marked upload is told by the nonce its intent journalled before it was sent.
    await o.state.flush().catch((e: unknown) => o.logger.warn({ err: e instanceof Error ? e.message : String(e) }, 'could not record the uploaded documents durably'));
  }
  // Each uploaded document gets its metadata; the intent stays open until all have it.
  let allMarked = true;
  await Promise.all(
    batch.map(async (op, i) => {
      const record = records[i];
      if (!record) {
        allMarked = false;
        return;
      }
      try {
        const desired = o.desired(op.file);
        const answer = await o.api.updateDocument(o.dataSourceId, record.id, desired, { signal: o.signal });
        if (named[i]!.marked && o.names) await checkUploadName(o, o.names, answer, desired.name);
        if (o.names) checkUrl(o.names, answer, desired.url);
      } catch (e) {
        allMarked = false;
        fail(o, r, op.kind, op.path, e);
        return;
      }
      o.state.setFile(o.mappingId, op.path, entryFor(op.file, record.id, o.now));
      o.state.clearRejected(o.mappingId, op.path);
      if (op.kind === 'replace') {
        for (const old of op.oldDocumentIds) {
          try {
            await o.api.deleteDocument(o.dataSourceId, old, { signal: o.signal });
          } catch (e) {
            // The new version is in; the old one is a stale version the next pass deletes.
            fail(o, r, 'delete', op.path, e);
          }
        }
      }
      o.logger.info({ path: op.path, documentId: record.id }, op.kind === 'replace' ? 'replaced' : 'uploaded');
      done(o, r, op, record.id, record);
    }),
  );
  if (allMarked) o.state.endIntent(o.mappingId, intentId);
}

/**
 * What the answer to a marked upload's metadata update shows of the service's names: its
 * name, else (once per run) the document read back. A name that still carries the mark
 * means the service ignores a new name (docs/probe.md); another name than the one sent, a
 * rewrite it makes (service-names.ts). An unreadable answer proves nothing.
 */
async function checkUploadName(o: ExecutorOptions, check: NameCheck, answer: DocumentRecord, wanted: string): Promise<void> {
  let shown = typeof answer.raw['name'] === 'string' ? answer.name : undefined;
  if (shown === undefined && !check.verified) {
    check.verified = true;
    try {
      shown = (await o.api.getDocument(o.dataSourceId, answer.id, { signal: o.signal })).name;
    } catch {
      shown = undefined;
    }
    if (shown === undefined) check.verified = false;
  }
  if (shown === undefined) return;
  check.verified = true;
  if (nameAsStored(shown, wanted, { rule: check.known.rule })) return;
  if (findUploadMark(shown) !== undefined) {
    check.known = { ...check.known, renamesIgnored: true };
    check.shown = shown;
    return;
  }
  learnRule(check, wanted, shown);
}

/**
 * What the answer to an update shows: the name sent, the name the learned rule gives, else
 * a new rule; a rename's answer showing its old name (as the service stores it), a rename
 * the service ignores (a rename's old name is never taken for a rewrite of its new one, and
 * a name still marked as its upload's is a rename ignored).
 */
function checkUpdateName(check: NameCheck, op: Extract<Op, { kind: 'rename' | 'update-meta' }>, answer: DocumentRecord, wanted: string): void {
  if (typeof answer.raw['name'] !== 'string' || answer.name === undefined) return;
  const shown = answer.name;
  if (nameAsStored(shown, wanted, { rule: check.known.rule })) return;
  if (op.kind === 'update-meta') {
    // A document still under its upload's marked name after an update naming it, or under
    // the name it was listed with that no rule makes of the name sent: a rename ignored.
    if (findUploadMark(shown) === undefined) learnRule(check, wanted, shown);
    if (findUploadMark(shown) !== undefined || (shown === op.listedName && !nameAsStored(shown, wanted, { rule: check.known.rule }))) check.known = { ...check.known, renamesIgnored: true };
    return;
  }
  if (!check.known.renamesIgnored && nameAsStored(shown, documentName(op.from), { rule: check.known.rule })) check.known = { ...check.known, renamesIgnored: true };
}

/**
 * An update's answer showing another url than the one sent (or null): the service ignores
 * (or rewrites) a new url, so urls are not compared again (metadata.ts fieldsMatch). An
 * answer without the field proves nothing.
 */
function checkUrl(check: NameCheck, answer: DocumentRecord, wanted: string): void {
  const shown = answer.raw['url'];
  if (check.known.urlsIgnored || !(typeof shown === 'string' || shown === null) || (shown ?? '') === wanted) return;
  check.known = { ...check.known, urlsIgnored: true };
}

function learnRule(check: NameCheck, wanted: string, shown: string): void {
  const rule = learnNameRule(wanted, shown, check.known.rule);
  if (rule !== undefined) check.known = { ...check.known, rule };
}

async function uploadFailed(named: readonly NamedUpload[], intentId: string, e: unknown, o: ExecutorOptions, r: ExecutionResult): Promise<void> {
  const batch = named.map((n) => n.op);
  if (isApiError(e) && e.ambiguous) {
    // The service may have created some documents: the intent stays open, and the caller
    // lists the data source and plans again, adopting what landed.
    r.ambiguous = true;
    for (const op of batch) o.onOp?.({ kind: op.kind, path: op.path, outcome: 'ambiguous', error: e });
    o.logger.warn({ files: batch.length, code: e.code }, 'upload answer lost; will list the data source and adopt what landed');
    return;
  }
  if (isApiError(e) && e.code === 'E_ABORTED') {
    // Stopped mid-request (shutdown): the body may have reached the service. The intent
    // stays open so that the next full pass adopts what landed instead of uploading again.
    for (const op of batch) fail(o, r, op.kind, op.path, e);
    return;
  }
  o.state.endIntent(o.mappingId, intentId);
  // 400/422 to an upload: the service refused something in the files (a name, a content);
  // like 413/415 it is isolated to the file at fault, which waits until it changes, so one
  // file can never hold back the others of its batch forever.
  const refused = isApiError(e) && disposition(e, 'file').kind === 'refusedForFile';
  const changed = isApiError(e) && e.code === 'E_FILE_CHANGED';
  if ((refused || changed) && batch.length > 1) {
    // The service (or the disk) names no file: send the halves apart until the culprit is alone.
    const mid = Math.ceil(batch.length / 2);
    await runUploadBatch(named.slice(0, mid), o, r);
    await runUploadBatch(named.slice(mid), o, r);
    return;
  }
  for (const [i, op] of batch.entries()) {
    if (refused) {
      const err = refusalOf(e as ApiError, named[i]!);
      o.state.setRejected(o.mappingId, op.path, {
        size: op.file.size,
        mtimeMs: op.file.mtimeMs,
        ...(err.status !== undefined ? { status: err.status } : {}),
        reason: err.message,
        at: new Date(o.now()).toISOString(),
      });
      r.rejected.push(failure(op.kind, op.path, err));
      o.logger.warn({ path: op.path, status: err.status, reason: err.message }, 'the service refused the file; skipped until it changes');
      o.onOp?.({ kind: op.kind, path: op.path, outcome: 'rejected', error: err });
    } else if (changed) {
      changedWhileSent(o, r, op);
    } else {
      fail(o, r, op.kind, op.path, e);
    }
  }
}

/** A file that changed (or went) while being sent: the next round looks at it again. */
function changedWhileSent(o: ExecutorOptions, r: ExecutionResult, op: UploadOp): void {
  r.changed.push(op.path);
  o.logger.info({ path: op.path }, 'file changed while being sent; will look again');
  o.onOp?.({ kind: op.kind, path: op.path, outcome: 'changed' });
}

/**
 * The service's refusal of one file, in the operator's words: the service names what it
 * received, the marked upload name (`x.dssync-upload-<nonce>.pdf`), which is replaced by the
 * file's path in the folder; a 413 adds the file's size beside the limit the service states.
 */
function refusalOf(err: ApiError, n: NamedUpload): ApiError {
  let message = n.marked ? err.message.split(n.uploadName).join(n.op.path) : err.message;
  if (!message.includes(n.op.path)) message = `${n.op.path}: ${message}`;
  if (err.status === 413) message = `${message}; the file is ${n.op.file.size} bytes, over the service's size limit`;
  return message === err.message ? err : apiErrorWith(err, { message });
}

/**
 * The state's entry of a file now held by `documentId`, with what the racy check needs
 * (racy.ts). Its `syncedAt` is to the whole second: nothing decides by it, and the table
 * keeps each distinct value once (file-table.ts), so a first mirror's million uploads share
 * a few hundred values instead of one a millisecond.
 */
export function entryFor(file: HashedFile, documentId: string, now: () => number): FileEntry {
  const entry: FileEntry = { documentId, size: file.size, mtimeMs: file.mtimeMs, sha256: file.sha256, syncedAt: new Date(Math.floor(now() / 1000) * 1000).toISOString() };
  if (file.hashedAt !== undefined) entry.hashedAt = file.hashedAt;
  if (file.ctimeMs !== undefined) entry.ctimeMs = file.ctimeMs;
  if (file.dev !== undefined) entry.dev = file.dev;
  if (file.ino !== undefined) entry.ino = file.ino;
  return entry;
}

function failure(kind: Op['kind'], path: string, e: unknown): FileFailure {
  if (isApiError(e)) return { path, op: kind, code: e.code, status: e.status, ...(e.ambiguous ? { ambiguous: true } : {}), message: e.message };
  // Typed errors of other layers (the state store's E_STATE_WRITE) keep their registered code.
  const code = (e as { code?: unknown } | undefined)?.code;
  return { path, op: kind, code: typeof code === 'string' && code.startsWith('E_') && codeEntry(code) !== undefined ? code : 'E_UNEXPECTED', message: e instanceof Error ? e.message : String(e) };
}

/**
 * A failed write. One whose answer was lost, whatever the write, may have happened: a listing
 * settles it, so the caller lists again now or asks for a full pass (`ambiguous`).
 */
function fail(o: ExecutorOptions, r: ExecutionResult, kind: Op['kind'], path: string, e: unknown): void {
  const f = failure(kind, path, e);
  r.failures.push(f);
  if (f.ambiguous) r.ambiguous = true;
  o.onOp?.({ kind, path, outcome: 'failed', error: e instanceof Error ? e : undefined });
  if (f.code === 'E_ABORTED' || o.signal?.aborted === true) {
    // Cut off by the stop: counted for executePlan's one summary line, not an error each.
    r.interrupted[kind] = (r.interrupted[kind] ?? 0) + 1;
    return;
  }
  o.logger.error({ path, op: kind, code: f.code, status: f.status, err: f.message }, `${kind} failed`);
}

function done(o: ExecutorOptions, r: ExecutionResult, op: Op, documentId?: string, record?: DocumentRecord): void {
  r.counts[op.kind]++;
  o.onOp?.({ kind: op.kind, path: op.path, outcome: 'done', documentId, ...(record ? { record } : {}) });
}

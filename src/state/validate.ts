/**
 * The state's values: constructors, the compact form of a file entry (FileTuple, shared by
 * the snapshot and the journal), and the validation of what is set or read (zod for the
 * small parts, plain checks for file entries).
 */
import { z } from 'zod';
import { StateCorruptError } from './errors.js';
import { FileTable } from './file-table.js';
import { STATE_VERSION, type FileEntry, type Intent, type MappingState, type PassRecord, type RejectedFile, type StateFile } from './schema.js';

/**
 * A record without prototype: file paths, intent ids and mapping ids are data, and a file
 * named `__proto__` or `constructor` must be an ordinary key.
 */
export function emptyRecord<T>(): Record<string, T> {
  return Object.create(null) as Record<string, T>;
}

/**
 * A FileEntry's fields in order, without the path: how the snapshot and the journal store
 * it. The stat fields of the racy check (hashedAt, ctimeMs, dev, ino) follow, null when
 * unknown; entries written before they existed have the first five only (still read).
 */
export type FileTuple =
  | [documentId: string, size: number, mtimeMs: number, sha256: string, syncedAt: string]
  | [documentId: string, size: number, mtimeMs: number, sha256: string, syncedAt: string, hashedAt: number | null, ctimeMs: number | null, dev: number | null, ino: number | null];

export function entryToTuple(e: FileEntry): FileTuple {
  if (e.hashedAt === undefined && e.ctimeMs === undefined && e.dev === undefined && e.ino === undefined) return [e.documentId, e.size, e.mtimeMs, e.sha256, e.syncedAt];
  return [e.documentId, e.size, e.mtimeMs, e.sha256, e.syncedAt, e.hashedAt ?? null, e.ctimeMs ?? null, e.dev ?? null, e.ino ?? null];
}

/**
 * True when `t[at]` starts a FileTuple: documentId, size, mtimeMs, sha256, syncedAt, then
 * either nothing (files of older versions: hashed again once) or the four stat fields, each
 * a number or null. The hot check of a load and a replay: plain checks, no allocation.
 */
export function isFileTuple(t: readonly unknown[], at: number): boolean {
  return typeof t[at] === 'string' && typeof t[at + 1] === 'number' && typeof t[at + 2] === 'number' && typeof t[at + 3] === 'string' && typeof t[at + 4] === 'string' && isTupleTail(t, at + 5);
}

/** The stat fields of a tuple (from index `at`): absent, or four numbers or nulls. */
export function isTupleTail(t: readonly unknown[], at: number): boolean {
  if (t.length === at) return true;
  if (t.length !== at + 4) return false;
  for (let i = at; i < at + 4; i++) if (t[i] !== null && typeof t[i] !== 'number') return false;
  return true;
}

type UploadIntent = Extract<Intent, { kind: 'upload' }>;

/**
 * The intent with the documents its upload created, by file (undefined: not known; a file
 * keeps what it had). Returns the same object when nothing changes.
 */
export function withIntentDocuments(intent: UploadIntent, documentIds: readonly (string | undefined)[]): UploadIntent {
  let changed = false;
  const files = intent.files.map((f, i) => {
    const id = documentIds[i];
    if (id === undefined || f.documentId === id) return f;
    changed = true;
    return { ...f, documentId: id };
  });
  return changed ? { ...intent, files } : intent;
}

export function newMappingState(dataSourceId: string, root: string): MappingState {
  return { dataSourceId, root, files: new FileTable(), intents: emptyRecord(), rejected: emptyRecord() };
}

export function newState(): StateFile {
  return { version: STATE_VERSION, journalSeq: 0, mappings: emptyRecord() };
}

// ---------------------------------------------------------------------------------------
// Validation of the parts other than files (small; zod gives precise messages).

const IntentFileSchema = z.object({
  path: z.string(),
  size: z.number(),
  mtimeMs: z.number(),
  sha256: z.string(),
  replacesDocumentId: z.string().optional(),
  uploadName: z.string().optional(),
  documentId: z.string().optional(),
});

/**
 * The one kind of intent: an upload (renames, metadata updates and deletes are idempotent
 * and settle without one, executor.ts). A `kind` still tells a future kind from it.
 */
export const IntentSchema = z.object({
  kind: z.literal('upload'),
  id: z.string(),
  startedAt: z.string(),
  files: z.array(IntentFileSchema),
  preexisting: z.array(z.string()).optional(),
  preexistingFresh: z.boolean().optional(),
});

export const RejectedSchema = z.object({
  size: z.number(),
  mtimeMs: z.number(),
  status: z.number().int().optional(),
  reason: z.string(),
  at: z.string(),
});

export const PassRecordSchema = z.object({
  startedAt: z.string(),
  finishedAt: z.string(),
  ok: z.boolean(),
  summary: z.record(z.string(), z.number()),
  error: z.string().optional(),
  serviceNames: z
    .object({
      renamesIgnored: z.literal(true).optional(),
      urlsIgnored: z.literal(true).optional(),
      rule: z.object({ lower: z.literal(true).optional(), noExtension: z.literal(true).optional(), suffix: z.string().optional(), maxBytes: z.number().int().positive().optional() }).optional(),
    })
    .optional(),
});

// The zod schemas must describe exactly the schema.ts types (checked at compile time).
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const _schemasMatch: [Same<z.infer<typeof IntentSchema>, Intent>, Same<z.infer<typeof RejectedSchema>, RejectedFile>, Same<z.infer<typeof PassRecordSchema>, PassRecord>] = [true, true, true];
void _schemasMatch;

export function firstIssue(err: z.ZodError): string {
  const issue = err.issues[0];
  if (!issue) return 'invalid';
  const where = issue.path.length ? `${issue.path.join('.')}: ` : '';
  return `${where}${issue.message}`;
}

/**
 * Describes what makes a file entry unwritable (a value JSON cannot carry, such as NaN,
 * would make the next load fail), or undefined when it is fine.
 */
export function fileEntryProblem(e: FileEntry): string | undefined {
  if (typeof e !== 'object' || e === null) return 'entry is not an object';
  if (typeof e.documentId !== 'string' || e.documentId === '') return 'documentId must be a non-empty string';
  if (!Number.isFinite(e.size)) return `size must be a finite number (got ${String(e.size)})`;
  if (!Number.isFinite(e.mtimeMs)) return `mtimeMs must be a finite number (got ${String(e.mtimeMs)})`;
  if (typeof e.sha256 !== 'string') return 'sha256 must be a string';
  if (typeof e.syncedAt !== 'string') return 'syncedAt must be a string';
  for (const k of ['hashedAt', 'ctimeMs', 'dev', 'ino'] as const) {
    if (e[k] !== undefined && !Number.isFinite(e[k])) return `${k} must be a finite number when set (got ${String(e[k])})`;
  }
  return undefined;
}

/**
 * Validates a zod-described part as it is set, returning a copy holding only the known
 * fields (so nothing else, such as a secret passed by mistake, reaches the file), or the
 * problem.
 */
export function checked<T>(schema: z.ZodType<T>, value: unknown): { ok: true; value: T } | { ok: false; problem: string } {
  const r = schema.safeParse(value);
  if (!r.success) return { ok: false, problem: firstIssue(r.error) };
  // JSON turns non-finite numbers into null: refuse them here rather than at the next load.
  if (hasNonFinite(r.data)) return { ok: false, problem: 'contains a non-finite number' };
  return { ok: true, value: r.data };
}

function hasNonFinite(v: unknown): boolean {
  if (typeof v === 'number') return !Number.isFinite(v);
  if (Array.isArray(v)) return v.some(hasNonFinite);
  if (typeof v === 'object' && v !== null) return Object.values(v).some(hasNonFinite);
  return false;
}

// ---------------------------------------------------------------------------------------
// Reading a snapshot (decode.ts).

export interface DecodedState {
  state: StateFile;
  /** Set when the file had an older version and was migrated (the store rewrites it). */
  migratedFrom?: number;
}

/** True when `t` is a file as the snapshot stores it, `[path, …FileTuple]` (its path is `t[0]`). */
export function isFileLine(t: unknown): t is unknown[] {
  return Array.isArray(t) && typeof t[0] === 'string' && isFileTuple(t, 1);
}

/**
 * A mapping without its files, from the fields of `v` (dataSourceId, root, intents,
 * rejected, lastPass), validated. `at` names it in the error (StateCorruptError).
 */
export function mappingFromHead(file: string, at: string, v: Record<string, unknown>): MappingState {
  const bad = (detail: string): never => {
    throw new StateCorruptError(file, `${at}${detail}`);
  };
  const { dataSourceId, root, dataSourceName, intents, rejected, lastPass, sessions } = v;
  if (typeof dataSourceId !== 'string') return bad('.dataSourceId: not a string');
  if (typeof root !== 'string') return bad('.root: not a string');
  if (dataSourceName !== undefined && typeof dataSourceName !== 'string') return bad('.dataSourceName: not a string');
  if (!isRecord(intents)) return bad('.intents: not an object');
  if (!isRecord(rejected)) return bad('.rejected: not an object');
  if (sessions !== undefined && (!isRecord(sessions) || !Object.values(sessions).every((t) => typeof t === 'number'))) return bad('.sessions: not an object of numbers');
  const m = newMappingState(dataSourceId, root);
  if (dataSourceName !== undefined) m.dataSourceName = dataSourceName;
  if (sessions !== undefined) m.sessions = Object.assign(emptyRecord<number>(), sessions);
  const parse = <T>(schema: z.ZodType<T>, value: unknown, where: string): T => {
    const r = schema.safeParse(value);
    return r.success ? r.data : bad(`${where}: ${firstIssue(r.error)}`);
  };
  for (const key of Object.keys(intents)) {
    const intent = parse(IntentSchema, intents[key], `.intents.${key}`);
    if (intent.id !== key) return bad(`.intents.${key}: id ${JSON.stringify(intent.id)} differs from its key`);
    m.intents[key] = intent;
  }
  for (const key of Object.keys(rejected)) m.rejected[key] = parse(RejectedSchema, rejected[key], `.rejected.${JSON.stringify(key)}`);
  if (lastPass !== undefined) m.lastPass = parse(PassRecordSchema, lastPass, '.lastPass');
  return m;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

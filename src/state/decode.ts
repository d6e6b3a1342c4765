/**
 * Decoding of the snapshot file, with validation and migration (its format: encoder.ts).
 */
import { StateCorruptError, StateVersionError } from './errors.js';
import { STATE_VERSION, type MappingState, type StateFile } from './schema.js';
import { IntentSchema, PassRecordSchema, RejectedSchema, entryFromTuple, firstIssue, isTupleTail, newMappingState, newState, type FileTuple } from './validate.js';

export interface DecodedState {
  state: StateFile;
  /** Set when the file had an older version and was migrated (the store rewrites it). */
  migratedFrom?: number;
}

/**
 * Migrations from version n to n+1, applied in order on the parsed JSON before decoding.
 * None yet: version 1 is the first. When the format changes, bump STATE_VERSION in
 * schema.ts and add `MIGRATIONS[old] = (raw) => …` returning the next version's shape.
 */
type Migration = (raw: Record<string, unknown>) => Record<string, unknown>;
const MIGRATIONS: Partial<Record<number, Migration>> = {
  // Version 2 added the journal (journal.ts): the snapshot says which of its ops it holds.
  1: (raw) => ({ ...raw, version: 2, journalSeq: 0 }),
};

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Parses and validates the text of a state file. Throws StateCorruptError / StateVersionError. */
export function decodeState(file: string, text: string): DecodedState {
  if (text.trim() === '') throw new StateCorruptError(file, 'the file is empty');
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    throw new StateCorruptError(file, `not valid JSON, possibly truncated: ${why}`, { cause: err });
  }
  if (!isObject(raw)) throw new StateCorruptError(file, 'the top level is not an object');
  const version = raw['version'];
  if (typeof version !== 'number' || !Number.isInteger(version) || version < 1) {
    throw new StateCorruptError(file, `"version" is missing or invalid (${JSON.stringify(version) ?? 'undefined'})`);
  }
  if (version > STATE_VERSION) throw new StateVersionError(file, version, STATE_VERSION);
  let migratedFrom: number | undefined;
  let current = raw;
  for (let v = version; v < STATE_VERSION; v++) {
    const migrate = MIGRATIONS[v];
    if (!migrate) throw new StateCorruptError(file, `version ${version} is not one this dssync can migrate`);
    current = migrate(current);
    migratedFrom = version;
  }
  const mappingsRaw = current['mappings'];
  if (!isObject(mappingsRaw)) throw new StateCorruptError(file, '"mappings" is missing or not an object');
  const journalSeq = current['journalSeq'];
  if (typeof journalSeq !== 'number' || !Number.isSafeInteger(journalSeq) || journalSeq < 0) {
    throw new StateCorruptError(file, `"journalSeq" is missing or invalid (${JSON.stringify(journalSeq) ?? 'undefined'})`);
  }
  const state = newState();
  state.journalSeq = journalSeq;
  for (const id of Object.keys(mappingsRaw)) {
    state.mappings[id] = decodeMapping(file, id, mappingsRaw[id]);
  }
  return migratedFrom === undefined ? { state } : { state, migratedFrom };
}

function decodeMapping(file: string, id: string, v: unknown): MappingState {
  const at = `mappings.${id}`;
  const bad = (detail: string): never => {
    throw new StateCorruptError(file, `${at}${detail}`);
  };
  if (!isObject(v)) return bad(': not an object');
  const { dataSourceId, root, files, intents, rejected, lastPass } = v;
  if (typeof dataSourceId !== 'string') return bad('.dataSourceId: not a string');
  if (typeof root !== 'string') return bad('.root: not a string');
  if (!Array.isArray(files)) return bad('.files: not an array');
  if (!isObject(intents)) return bad('.intents: not an object');
  if (!isObject(rejected)) return bad('.rejected: not an object');

  const m = newMappingState(dataSourceId, root);
  // The hot loop of a load: plain checks, no allocation beyond the entry itself.
  for (let i = 0; i < files.length; i++) {
    const t: unknown = files[i];
    if (
      !Array.isArray(t) ||
      typeof t[0] !== 'string' ||
      typeof t[1] !== 'string' ||
      typeof t[2] !== 'number' ||
      typeof t[3] !== 'number' ||
      typeof t[4] !== 'string' ||
      typeof t[5] !== 'string' ||
      // Files of older versions have no stat fields: read as they are, hashed again once.
      !isTupleTail(t, 6)
    ) {
      return bad(`.files[${i}]: not a [path, documentId, size, mtimeMs, sha256, syncedAt, hashedAt, ctimeMs, dev, ino] tuple`);
    }
    m.files[t[0]] = entryFromTuple(t.slice(1) as FileTuple);
  }
  for (const key of Object.keys(intents)) {
    const r = IntentSchema.safeParse(intents[key]);
    if (!r.success) return bad(`.intents.${key}: ${firstIssue(r.error)}`);
    if (r.data.id !== key) return bad(`.intents.${key}: id ${JSON.stringify(r.data.id)} differs from its key`);
    m.intents[key] = r.data;
  }
  for (const key of Object.keys(rejected)) {
    const r = RejectedSchema.safeParse(rejected[key]);
    if (!r.success) return bad(`.rejected.${JSON.stringify(key)}: ${firstIssue(r.error)}`);
    m.rejected[key] = r.data;
  }
  if (lastPass !== undefined) {
    const r = PassRecordSchema.safeParse(lastPass);
    if (!r.success) return bad(`.lastPass: ${firstIssue(r.error)}`);
    m.lastPass = r.data;
  }
  return m;
}


/**
 * Decoding of the snapshot files of versions 1 and 2: one JSON object,
 * `{"version":2,"journalSeq":N,"mappings":{"<id>":{"dataSourceId":…,"root":…,"intents":{…},
 * "rejected":{…},"lastPass":{…},"files":[[path, …FileTuple],…]}}}`. Read (whole: these
 * files come from drives small enough for it) and migrated; the store then rewrites the
 * state in the line format of version 3 (encoder.ts) at once.
 */
import { StateCorruptError, StateVersionError } from './errors.js';
import { STATE_VERSION, type MappingState } from './schema.js';
import { isFileLine, mappingFromHead, newState, type DecodedState } from './validate.js';

/**
 * Migrations from version n to n+1, applied in order on the parsed JSON before decoding.
 * None yet: version 1 is the first. When the format changes, bump STATE_VERSION in
 * schema.ts and add `MIGRATIONS[old] = (raw) => …` returning the next version's shape.
 */
type Migration = (raw: Record<string, unknown>) => Record<string, unknown>;
const MIGRATIONS: Partial<Record<number, Migration>> = {
  // Version 2 added the journal (journal.ts): the snapshot says which of its ops it holds.
  1: (raw) => ({ ...raw, version: 2, journalSeq: 0 }),
  // Version 3 is the line format (encoder.ts): the same content.
  2: (raw) => ({ ...raw, version: 3 }),
  // Version 4 stores the installation identity in the header: absent here, the first open stores one.
  3: (raw) => ({ ...raw, version: 4 }),
  // Version 5 keeps each mapping's writer sessions: none in a file this old.
  4: (raw) => ({ ...raw, version: 5 }),
};

/** The last version written as one JSON object. */
const LAST_JSON_VERSION = 2;

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Parses and validates a state file of version 1 or 2. Throws StateCorruptError / StateVersionError. */
export function decodeLegacyState(file: string, text: string): DecodedState {
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
  if (version > LAST_JSON_VERSION) throw new StateCorruptError(file, `a file of version ${version} is not one JSON object`);
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
  if (!isObject(v)) throw new StateCorruptError(file, `${at}: not an object`);
  const files = v['files'];
  if (!Array.isArray(files)) throw new StateCorruptError(file, `${at}.files: not an array`);
  const m = mappingFromHead(file, at, v);
  for (let i = 0; i < files.length; i++) {
    const t: unknown = files[i];
    if (!isFileLine(t)) throw new StateCorruptError(file, `${at}.files[${i}]: not a [path, documentId, size, mtimeMs, sha256, syncedAt, hashedAt, ctimeMs, dev, ino] tuple`);
    m.files.setTuple(t[0] as string, t, 1);
  }
  return m;
}

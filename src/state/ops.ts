/**
 * Every change of the state, as a value (DESIGN §4). The store turns each mutation into an
 * op and hands it to applyOp, which is the only code that changes the in-memory state. A
 * mapping's files keep a snapshot being encoded right themselves (file-table.ts, copy-on-
 * write), so a change can never forget it. The same op is then appended to the
 * journal (journal.ts), and replayed through applyOp again at the next start.
 *
 * Ops are JSON arrays (compact in the journal). Each one assigns or removes a value, so the
 * result of a replay is the result of the original calls.
 */
import { z } from 'zod';
import type { StateCodec } from './encoder.js';
import { IntentSchema, PassRecordSchema, RejectedSchema, emptyRecord, entryToTuple, isFileTuple, newMappingState, type FileTuple } from './validate.js';
import type { FileEntry, Intent, PassRecord, RejectedFile, StateFile, StateIdentity } from './schema.js';

export type StateOp =
  /** ensureMapping: the same data source keeps the mapping (root updated); another resets it. */
  | ['map', mappingId: string, dataSourceId: string, root: string]
  /** The configured name the mapping's data source was resolved by (store.ts recordDataSourceName). */
  | ['dsname', mappingId: string, name: string]
  | ['set', mappingId: string, path: string, entry: FileTuple]
  | ['del', mappingId: string, path: string]
  | ['intent', mappingId: string, intent: Intent]
  | ['endIntent', mappingId: string, intentId: string]
  | ['reject', mappingId: string, path: string, rejected: RejectedFile]
  | ['unreject', mappingId: string, path: string]
  | ['pass', mappingId: string, pass: PassRecord]
  /** The installation's identity (store.ts setIdentity); the second field is not a mapping. */
  | ['identity', installationId: string, origin: StateIdentity['origin'], formerIds: string[]]
  /** A mapping's records dropped (`dssync identity reset`). */
  | ['unmap', mappingId: string]
  /** A writer session of this mapping (store.ts recordSession), with when it was first recorded. */
  | ['session', mappingId: string, session: string, at: number];

/** Writer sessions a mapping keeps (schema.ts MappingState.sessions): the oldest go first. */
export const MAX_SESSIONS = 1000;

export function setFileOp(mappingId: string, path: string, entry: FileEntry): StateOp {
  return ['set', mappingId, path, entryToTuple(entry)];
}

/**
 * Applies one op to `state` (and to the encoder's caches, when given). Ops on a mapping
 * that does not exist are ignored (the store never makes them; a replay may meet one only
 * after the mapping was removed later in the same journal).
 */
export function applyOp(state: StateFile, codec: StateCodec | undefined, op: StateOp): void {
  const id = op[1];
  const mappings = state.mappings;
  if (op[0] === 'identity') {
    state.identity = { installationId: op[1], origin: op[2], formerIds: [...op[3]] };
    return;
  }
  if (op[0] === 'unmap') {
    if (id in mappings) {
      delete mappings[id];
      codec?.headChanged(id);
    }
    return;
  }
  if (op[0] === 'map') {
    const m = mappings[id];
    if (m && m.dataSourceId === op[2]) {
      if (m.root !== op[3]) {
        m.root = op[3];
        codec?.headChanged(id);
      }
      return;
    }
    mappings[id] = newMappingState(op[2], op[3]);
    codec?.headChanged(id);
    return;
  }
  const m = mappings[id];
  if (!m) return;
  switch (op[0]) {
    // The table keeps a snapshot being encoded right itself (file-table.ts, copy-on-write).
    case 'set':
      m.files.setTuple(op[2], op[3], 0);
      return;
    case 'dsname':
      m.dataSourceName = op[2];
      break;
    case 'del':
      m.files.delete(op[2]);
      return;
    case 'intent':
      m.intents[op[2].id] = op[2];
      break;
    case 'endIntent':
      if (!(op[2] in m.intents)) return;
      delete m.intents[op[2]];
      break;
    case 'reject':
      m.rejected[op[2]] = op[3];
      break;
    case 'unreject':
      if (!(op[2] in m.rejected)) return;
      delete m.rejected[op[2]];
      break;
    case 'pass':
      m.lastPass = op[2];
      break;
    case 'session': {
      const sessions = (m.sessions ??= emptyRecord<number>());
      if (op[2] in sessions) return;
      sessions[op[2]] = op[3];
      // The oldest go first, never the one just recorded (times can tie; key order is no age).
      const ids = Object.keys(sessions).filter((s) => s !== op[2]);
      if (ids.length >= MAX_SESSIONS) {
        ids.sort((a, b) => sessions[a]! - sessions[b]!);
        for (const old of ids.slice(0, ids.length - MAX_SESSIONS + 1)) delete sessions[old];
      }
      break;
    }
  }
  codec?.headChanged(id);
}

const str = z.string();
/** Every op but 'set', which parseOp checks itself (the hot case of a replay). */
const OpSchema = z.union([
  z.tuple([z.literal('map'), str, str, str]),
  z.tuple([z.literal('dsname'), str, str]),
  z.tuple([z.literal('del'), str, str]),
  z.tuple([z.literal('intent'), str, IntentSchema]),
  z.tuple([z.literal('endIntent'), str, str]),
  z.tuple([z.literal('reject'), str, str, RejectedSchema]),
  z.tuple([z.literal('unreject'), str, str]),
  z.tuple([z.literal('pass'), str, PassRecordSchema]),
  z.tuple([z.literal('identity'), str, z.enum(['drawn', 'derived', 'pinned']), z.array(str)]),
  z.tuple([z.literal('unmap'), str]),
  z.tuple([z.literal('session'), str, str, z.number()]),
]);

/** Checks an op read back from the journal; undefined when it is not one. */
export function parseOp(v: unknown): StateOp | undefined {
  // The hot case of a replay (file changes) without zod.
  if (Array.isArray(v) && v[0] === 'set') {
    const t: unknown = v[3];
    return v.length === 4 && typeof v[1] === 'string' && typeof v[2] === 'string' && Array.isArray(t) && isFileTuple(t, 0) ? (v as StateOp) : undefined;
  }
  const r = OpSchema.safeParse(v);
  return r.success ? (r.data as StateOp) : undefined;
}

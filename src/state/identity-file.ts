/**
 * The identity file, `<statePath>.identity.json` (docs/reliability.md, "Identity"): the part
 * of the state that says who owns the documents — the installation id, its origin and former
 * ids, and per mapping its data source, folder and the writer sessions the state recorded.
 * It is small (at most MAX_SESSIONS sessions a mapping) and rewritten (atomically, 0600) only
 * when one of those changes: about once per process start, when its session is recorded.
 *
 * Why a second file: a corrupt state is moved aside and rebuilt from the service's listing,
 * and without its identity the rebuilt state owns nothing (a new id; every document held as
 * another installation's, waiting for `dssync adopt`), though nobody is there to run it. With
 * this file the reset state keeps the identity and recognises its own documents — those that
 * carry its installation id and a session it recorded — so it converges by itself, and a
 * clone's documents (a session it never recorded) stay someone else's.
 *
 * `rebuild` lists the mappings recovered from it whose documents are not recorded yet: kept
 * here (not in the state) so that a crash between the reset and the rebuild's records
 * repeats the rebuild at the next start instead of leaving the documents unrecognised.
 */
import { z } from 'zod';
import { readIfExists, type StateFs } from './atomic-file.js';
import { parseJsonFile } from './json-file.js';
import type { StateOp } from './ops.js';
import type { StateFile } from './schema.js';

export function identityPathOf(statePath: string): string {
  return `${statePath}.identity.json`;
}

const IdentityFileSchema = z.object({
  version: z.literal(1),
  installationId: z.string().min(1),
  origin: z.enum(['drawn', 'derived', 'pinned']),
  formerIds: z.array(z.string()),
  mappings: z.record(z.string(), z.object({ dataSourceId: z.string(), root: z.string(), dataSourceName: z.string().optional(), sessions: z.record(z.string(), z.number()) })),
  rebuild: z.array(z.string()).optional(),
});

export type IdentityRecord = z.infer<typeof IdentityFileSchema>;

/** The identity file's content for a state (undefined while the state has no identity). */
export function identityRecordOf(state: StateFile, rebuild: ReadonlySet<string>): IdentityRecord | undefined {
  const id = state.identity;
  if (id === undefined) return undefined;
  const mappings: IdentityRecord['mappings'] = {};
  for (const [mid, m] of Object.entries(state.mappings)) {
    mappings[mid] = { dataSourceId: m.dataSourceId, root: m.root, ...(m.dataSourceName !== undefined ? { dataSourceName: m.dataSourceName } : {}), sessions: { ...(m.sessions ?? {}) } };
  }
  const pending = [...rebuild].filter((mid) => mappings[mid] !== undefined).sort();
  return { version: 1, installationId: id.installationId, origin: id.origin, formerIds: [...id.formerIds], mappings, ...(pending.length ? { rebuild: pending } : {}) };
}

/**
 * Reads the identity file: the record, or undefined when there is none; a file that does not
 * parse is reported (`problem`), never trusted.
 */
export async function readIdentityFile(fs: StateFs, path: string): Promise<{ record?: IdentityRecord; problem?: string }> {
  const text = await readIfExists(fs, path);
  if (text === undefined) return {};
  const r = parseJsonFile(IdentityFileSchema, text);
  return r.ok ? { record: r.value } : { problem: r.reason };
}

export function encodeIdentityRecord(record: IdentityRecord): string {
  return `${JSON.stringify(record, null, 1)}\n`;
}

/**
 * The ops that restore what the record keeps and the state lacks: the identity (or the former ids of the same id it lacks), each
 * missing mapping (data source, folder, name) and the writer sessions the state does not
 * record. Never one that changes what the state holds (a mapping it records on another
 * data source stays as the state says): the file is used, never trusted over the state.
 */
export function missingIdentityOps(state: StateFile, record: IdentityRecord): StateOp[] {
  const ops: StateOp[] = [];
  const id = state.identity;
  if (id === undefined) ops.push(['identity', record.installationId, record.origin, [...record.formerIds]]);
  else if (id.installationId === record.installationId && record.formerIds.some((f) => !id.formerIds.includes(f))) {
    ops.push(['identity', id.installationId, id.origin, [...new Set([...id.formerIds, ...record.formerIds])]]);
  }
  for (const [id, m] of Object.entries(record.mappings)) {
    const have = state.mappings[id];
    if (have === undefined) {
      ops.push(['map', id, m.dataSourceId, m.root]);
      if (m.dataSourceName !== undefined) ops.push(['dsname', id, m.dataSourceName]);
    } else if (have.dataSourceId !== m.dataSourceId) {
      continue;
    }
    for (const [session, at] of Object.entries(m.sessions)) if (have?.sessions?.[session] === undefined) ops.push(['session', id, session, at]);
  }
  return ops;
}

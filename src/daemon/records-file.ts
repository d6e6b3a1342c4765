/**
 * The daemon's records beside the state: each mapping's problem list (problem-list.ts),
 * pass history (pass-history.ts) and whether the operator paused it, in `<statePath>.problems.json` (docs/status.md, "The
 * records file"). Written atomically (state/atomic-file.ts, owner-only) after the passes
 * that change them, at most one write at a time and the latest content wins; read once at
 * start. It holds paths, reasons and counts, never a secret (errors are scrubbed).
 *
 * It is a convenience, not the state: a missing, unreadable or malformed file is logged and
 * the daemon starts with empty records; the next full pass finds the problems again.
 */
import { z } from 'zod';
import { nodeStateFs, readIfExists, type StateFs } from '../state/atomic-file.js';
import { parseJsonFile } from '../state/json-file.js';
import { SidecarFile } from './sidecar-file.js';
import type { Logger } from '../log.js';
import type { ProblemListData } from './mapping/problem-list.js';
import type { PassRecord } from './mapping/pass-history.js';
import { ExclusionSchema, PassRecordSchema, ProblemSchema } from './status/schema.js';

export interface MappingRecords {
  problems: ProblemListData;
  history: PassRecord[];
  /** Paused by the operator since then (`dssync pause`): the mapping starts paused. */
  paused?: { since: string } | undefined;
}

const count = z.number().int().nonnegative();
// A problem and a pass are kept as /status shows them: one schema for both (status/schema.ts).
const RecordsFileSchema = z.object({
  version: z.literal(1),
  mappings: z.record(
    z.string(),
    z.object({
      problems: z.object({
        problems: z.array(ProblemSchema),
        excluded: z.array(ExclusionSchema),
        problemsOver: count,
        excludedOver: count,
      }),
      history: z.array(PassRecordSchema),
      paused: z.object({ since: z.string() }).optional(),
    }),
  ),
});

/** Where the records of a state file live. */
export function recordsPath(statePath: string): string {
  return `${statePath}.problems.json`;
}

type RecordsFileContent = z.infer<typeof RecordsFileSchema>;

/** The records in `text`, or why they cannot be used (the first field that does not fit). */
export function parseRecords(text: string): { ok: true; records: Map<string, MappingRecords> } | { ok: false; reason: string } {
  const r = parseJsonFile(RecordsFileSchema, text);
  return r.ok ? { ok: true, records: new Map(Object.entries(r.value.mappings)) } : r;
}

/** For readers without the lock (`dssync status --history`): the records, or none when absent or malformed. */
export async function readRecords(path: string, fs: StateFs = nodeStateFs): Promise<Map<string, MappingRecords>> {
  const text = await readIfExists(fs, path).catch(() => undefined);
  if (text === undefined) return new Map();
  const r = parseRecords(text);
  return r.ok ? r.records : new Map();
}

const MESSAGES = {
  unreadable: 'the records file (problems, pass history) cannot be read: starting with empty records',
  malformed: 'the records file (problems, pass history) is malformed: starting with empty records; the next full pass finds the problems again',
  unwritable: 'the records file (problems, pass history) could not be written; the lists are kept in memory',
};

export class RecordsFile {
  private readonly file: SidecarFile<RecordsFileContent>;

  constructor(path: string, logger: Logger, fs?: StateFs) {
    this.file = new SidecarFile(path, RecordsFileSchema, MESSAGES, logger, fs);
  }

  /** The records as last written, by mapping id; empty when none could be read (logged). */
  async load(): Promise<Map<string, MappingRecords>> {
    const saved = await this.file.load();
    return new Map(saved ? Object.entries(saved.mappings) : []);
  }

  /** Writes `content()` as it is when the write starts, the latest content winning (sidecar-file.ts). */
  save(content: () => Map<string, MappingRecords>): Promise<void> {
    return this.file.save(() => ({ version: 1 as const, mappings: Object.fromEntries(content()) }));
  }
}

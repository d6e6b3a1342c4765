/**
 * The status page's recent history (feed, problems, charts) across restarts: `<statePath>.feed.json`,
 * written atomically (owner-only) every few minutes and at a clean stop, read once at start.
 *
 * Apart from the records file (records-file.ts) on purpose: that one is written after every
 * pass that changes a problem list or a history, and the feed (up to ~300 KB) would make each
 * of those writes large. Losing the last minutes of the feed in a crash costs nothing: the
 * problem lists and pass histories, which matter, are in the records file.
 *
 * A convenience, not the state: a missing, unreadable or malformed file is logged and the
 * page starts empty. It holds paths, outcomes and scrubbed messages, never a secret.
 */
import { z } from 'zod';
import type { StateFs } from '../state/atomic-file.js';
import { SidecarFile } from './sidecar-file.js';
import { registryCode } from '../errors/codes.js';
import type { Logger } from '../log.js';
import type { SavedHistory } from './status/web/history.js';

/** How often a running daemon saves the feed (and at a clean stop). */
export const FEED_SAVE_EVERY_MS = 5 * 60_000;

/** An entry's error code, as the page filters by it: a name of before issue 38.2 reads as its E_* code. */
const code = z.string().transform(registryCode).optional();
const ActivitySchema = z.object({
  at: z.string(),
  mapping: z.string(),
  kind: z.enum(['upload', 'replace', 'rename', 'update-meta', 'delete', 'adopt', 'forget']),
  path: z.string(),
  outcome: z.enum(['done', 'failed', 'rejected', 'changed', 'ambiguous']),
  lagMs: z.number().optional(),
  message: z.string().optional(),
  code,
});
const ProblemSchema = z.object({ at: z.string(), mapping: z.string(), path: z.string().optional(), what: z.string(), message: z.string(), code, next: z.string() });
const count = z.number().int().nonnegative();
const PointSchema = z.object({ t: z.number(), ops: count, failed: count, requests: count, throttled: count, retries: count, lagP50: z.number().optional(), lagP95: z.number().optional() });
const FeedFileSchema = z.object({ version: z.literal(1), activity: z.array(ActivitySchema), problems: z.array(ProblemSchema), points: z.array(PointSchema) });

export function feedPath(statePath: string): string {
  return `${statePath}.feed.json`;
}

const MESSAGES = {
  unreadable: 'the saved activity feed cannot be read: the page starts with an empty feed',
  malformed: 'the saved activity feed is malformed: the page starts with an empty feed',
  unwritable: 'the activity feed could not be saved; it is kept in memory',
};

export class FeedFile {
  private readonly file: SidecarFile<z.infer<typeof FeedFileSchema>>;
  /** What the next write holds: a save asked for while one runs writes the newest history. */
  private latest: SavedHistory | undefined;

  constructor(path: string, logger: Logger, fs?: StateFs) {
    this.file = new SidecarFile(path, FeedFileSchema, MESSAGES, logger, fs);
  }

  /** The saved history, or undefined when there is none to use (logged when unusable). */
  async load(): Promise<SavedHistory | undefined> {
    const saved = await this.file.load();
    return saved && { activity: saved.activity, problems: saved.problems, points: saved.points };
  }

  /** The latest history wins; a failed write is logged and the feed stays in memory. */
  save(history: SavedHistory): Promise<void> {
    this.latest = history;
    return this.file.save(() => ({ version: 1 as const, ...(this.latest ?? history) }));
  }
}

/**
 * The status page's recent history across restarts (issue 25.1: after a restart the feed,
 * the recent problems and the charts were empty): `<statePath>.feed.json`, written
 * atomically (owner-only) every few minutes and at a clean stop, read once at start.
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
import { nodeStateFs, readIfExists, writeFileAtomic, type StateFs } from '../state/atomic-file.js';
import type { Logger } from '../log.js';
import type { SavedHistory } from './web/history.js';

/** How often a running daemon saves the feed (and at a clean stop). */
export const FEED_SAVE_EVERY_MS = 5 * 60_000;

const ActivitySchema = z.object({
  at: z.string(),
  mapping: z.string(),
  kind: z.enum(['upload', 'replace', 'rename', 'update-meta', 'delete', 'adopt', 'forget']),
  path: z.string(),
  outcome: z.enum(['done', 'failed', 'rejected', 'changed', 'ambiguous']),
  lagMs: z.number().optional(),
  message: z.string().optional(),
});
const ProblemSchema = z.object({ at: z.string(), mapping: z.string(), path: z.string().optional(), what: z.string(), message: z.string(), next: z.string() });
const count = z.number().int().nonnegative();
const PointSchema = z.object({ t: z.number(), ops: count, failed: count, requests: count, throttled: count, retries: count, lagP50: z.number().optional(), lagP95: z.number().optional() });
const FeedFileSchema = z.object({ version: z.literal(1), activity: z.array(ActivitySchema), problems: z.array(ProblemSchema), points: z.array(PointSchema) });

export function feedPath(statePath: string): string {
  return `${statePath}.feed.json`;
}

export class FeedFile {
  private writing: Promise<void> = Promise.resolve();

  constructor(
    readonly path: string,
    private readonly logger: Logger,
    private readonly fs: StateFs = nodeStateFs,
  ) {}

  /** The saved history, or undefined when there is none to use (logged when unusable). */
  async load(): Promise<SavedHistory | undefined> {
    let text: string | undefined;
    try {
      text = await readIfExists(this.fs, this.path);
    } catch (e) {
      this.logger.warn({ file: this.path, err: e instanceof Error ? e.message : String(e) }, 'the saved activity feed cannot be read: the page starts with an empty feed');
      return undefined;
    }
    if (text === undefined) return undefined;
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    const r = FeedFileSchema.safeParse(parsed);
    if (!r.success) {
      this.logger.warn({ file: this.path }, 'the saved activity feed is malformed: the page starts with an empty feed');
      return undefined;
    }
    return { activity: r.data.activity, problems: r.data.problems, points: r.data.points };
  }

  /** One write at a time; a failed write is logged and the feed stays in memory. */
  save(history: SavedHistory): Promise<void> {
    this.writing = this.writing.then(async () => {
      try {
        await writeFileAtomic(this.fs, this.path, [Buffer.from(`${JSON.stringify({ version: 1, ...history })}\n`)]);
      } catch (e) {
        this.logger.warn({ file: this.path, err: e instanceof Error ? e.message : String(e) }, 'the activity feed could not be saved; it is kept in memory');
      }
    });
    return this.writing;
  }
}

/**
 * A JSON file the daemon keeps beside the state for its own convenience (the records file,
 * the page's feed): read once at start, written atomically and owner-only
 * (state/atomic-file.ts), one write at a time with the latest content. It is never the
 * state: a missing file is nothing, an unreadable or malformed one is logged (with what the
 * daemon does instead) and read as nothing; a failed write is logged and the content stays
 * in memory until the next save.
 */
import type { z } from 'zod';
import { nodeStateFs, readIfExists, writeFileAtomic, type StateFs } from '../state/atomic-file.js';
import { parseJsonFile } from '../state/json-file.js';
import type { Logger } from '../log.js';

/** What the log says, each ending with what the daemon does instead. */
export interface SidecarMessages {
  unreadable: string;
  malformed: string;
  unwritable: string;
}

export class SidecarFile<T> {
  private writing: Promise<void> = Promise.resolve();
  private dirty = false;

  constructor(
    readonly path: string,
    private readonly schema: z.ZodType<T>,
    private readonly messages: SidecarMessages,
    private readonly logger: Logger,
    private readonly fs: StateFs = nodeStateFs,
  ) {}

  /** The content as last written; undefined when there is none to use (logged when unusable). */
  async load(): Promise<T | undefined> {
    let text: string | undefined;
    try {
      text = await readIfExists(this.fs, this.path);
    } catch (e) {
      this.logger.warn({ file: this.path, err: e instanceof Error ? e.message : String(e) }, this.messages.unreadable);
      return undefined;
    }
    if (text === undefined) return undefined;
    const r = parseJsonFile(this.schema, text);
    if (!r.ok) {
      this.logger.warn({ file: this.path, reason: r.reason }, this.messages.malformed);
      return undefined;
    }
    return r.value;
  }

  /**
   * Writes `content()` as it is when the write starts; asked again while a write runs, one
   * more write follows with the latest content (never two at once, never an older one last).
   */
  save(content: () => T): Promise<void> {
    if (this.dirty) return this.writing;
    this.dirty = true;
    this.writing = this.writing.then(async () => {
      this.dirty = false;
      try {
        await writeFileAtomic(this.fs, this.path, [Buffer.from(`${JSON.stringify(content())}\n`)]);
      } catch (e) {
        this.logger.warn({ file: this.path, err: e instanceof Error ? e.message : String(e) }, this.messages.unwritable);
      }
    });
    return this.writing;
  }
}

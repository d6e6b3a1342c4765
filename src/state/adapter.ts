/**
 * The lowdb adapter of the state file: lowdb's JSONFile pretty-prints the whole object on
 * every write and renames without fsync; this one encodes compactly with cached buckets
 * (codec.ts) and replaces the file durably (atomic-file.ts).
 */
import type { Adapter } from 'lowdb';
import { performance } from 'node:perf_hooks';
import { readIfExists, writeFileAtomic, type StateFs } from './atomic-file.js';
import { decodeState, type StateCodec } from './codec.js';
import type { StateFile } from './schema.js';

export interface WriteStats {
  /** Successful writes since open. */
  writes: number;
  /** Failed writes since open. */
  failures: number;
  /** Size of the last successful write. */
  lastBytes: number;
  /** Event-loop time the last write's encoding blocked (ms). */
  lastEncodeMs: number;
  /** Wall time of the last successful write, encoding to directory fsync (ms). */
  lastWriteMs: number;
}

export interface ReadStats {
  bytes: number;
  /** Time to read, parse, validate and index the file (ms). */
  loadMs: number;
}

export class StateFileAdapter implements Adapter<StateFile> {
  /** Set by read() when the file had an older version. */
  migratedFrom: number | undefined;
  readStats: ReadStats | undefined;
  readonly stats: WriteStats = { writes: 0, failures: 0, lastBytes: 0, lastEncodeMs: 0, lastWriteMs: 0 };

  constructor(
    readonly path: string,
    private readonly fs: StateFs,
    private readonly codec: StateCodec,
  ) {}

  async read(): Promise<StateFile | null> {
    const t0 = performance.now();
    const text = await readIfExists(this.fs, this.path);
    if (text === undefined) return null;
    const decoded = decodeState(this.path, text);
    for (const [id, m] of Object.entries(decoded.state.mappings)) this.codec.indexMapping(id, m);
    this.migratedFrom = decoded.migratedFrom;
    this.readStats = { bytes: Buffer.byteLength(text), loadMs: performance.now() - t0 };
    return decoded.state;
  }

  /**
   * Not `async` on purpose: the encoding (the snapshot) happens synchronously in the call,
   * so mutations made while the bytes go to disk belong to the next write.
   */
  write(data: StateFile): Promise<void> {
    const t0 = performance.now();
    const chunks = this.codec.encode(data);
    const t1 = performance.now();
    const bytes = chunks.reduce((n, c) => n + c.length, 0);
    return writeFileAtomic(this.fs, this.path, chunks).then(
      () => {
        this.stats.writes++;
        this.stats.lastBytes = bytes;
        this.stats.lastEncodeMs = t1 - t0;
        this.stats.lastWriteMs = performance.now() - t0;
      },
      (err: unknown) => {
        this.stats.failures++;
        throw err;
      },
    );
  }
}

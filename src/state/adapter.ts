/**
 * The lowdb adapter of the snapshot: lowdb's JSONFile pretty-prints the whole object on
 * every write and renames without fsync; this one encodes compactly, in slices and
 * copy-on-write (codec.ts), and replaces the file durably (atomic-file.ts). Writes happen
 * only when the journal is folded (store.ts), in the background.
 */
import type { Adapter } from 'lowdb';
import { performance } from 'node:perf_hooks';
import { readIfExists, writeFileAtomic, type StateFs } from './atomic-file.js';
import { decodeState } from './decode.js';
import type { EncodePlan, StateCodec } from './encoder.js';
import type { StateFile } from './schema.js';

/** Longest stretch of encoding between two turns of the event loop. */
const SLICE_MS = 8;

const yieldNow = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** Figures of the snapshot writes (the file that lowdb reads). */
export interface SnapshotStats {
  /** Successful writes since open. */
  writes: number;
  /** Failed writes since open. */
  failures: number;
  /** Size of the last successful write. */
  lastBytes: number;
  /** CPU time of the last write's encoding, snapshot included (ms). */
  lastEncodeMs: number;
  /** Longest stretch the last write blocked the event loop (snapshot or one slice) (ms). */
  lastMaxBlockMs: number;
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
  readonly stats: SnapshotStats = { writes: 0, failures: 0, lastBytes: 0, lastEncodeMs: 0, lastMaxBlockMs: 0, lastWriteMs: 0 };

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
   * Not `async` on purpose: the snapshot is taken synchronously in the call, so mutations
   * made while the write goes on belong to the next write.
   */
  write(data: StateFile): Promise<void> {
    const t0 = performance.now();
    const plan = this.codec.snapshot(data);
    const snapshotMs = performance.now() - t0;
    return this.finish(plan, t0, snapshotMs);
  }

  private async finish(plan: EncodePlan, t0: number, snapshotMs: number): Promise<void> {
    try {
      await yieldNow(); // the snapshot and the first slice are two separate blocks
      const enc = await plan.run({ sliceMs: SLICE_MS, yieldNow, now: () => performance.now() });
      await writeFileAtomic(this.fs, this.path, enc.chunks);
      this.stats.writes++;
      this.stats.lastBytes = enc.bytes;
      this.stats.lastEncodeMs = snapshotMs + enc.totalMs;
      this.stats.lastMaxBlockMs = Math.max(snapshotMs, enc.maxBlockMs);
      this.stats.lastWriteMs = performance.now() - t0;
    } catch (err) {
      this.stats.failures++;
      throw err;
    }
  }
}

/**
 * The snapshot file (`<path>`): read as a stream at start, written in the background when
 * the journal is folded (store.ts), encoded in slices and copy-on-write (encoder.ts; a large
 * one's rows in a worker thread, rows-encoder.ts) and streamed into a temp file that then
 * replaces it durably (atomic-file.ts). Neither the read nor the write holds the whole file
 * in memory or blocks the event loop for long.
 */
import { performance } from 'node:perf_hooks';
import { writeFileAtomic, type StateFs } from './atomic-file.js';
import { readSnapshot } from './decode.js';
import type { EncodePlan, SliceOptions, StateCodec } from './encoder.js';
import { silentLogger, type Logger } from '../log.js';
import { startRowsEncoder, type RowsEncoder } from './rows-encoder.js';
import type { StateFile } from './schema.js';
import { yieldNow } from '../time/yield-now.js';

/** Longest stretch of encoding or decoding between two turns of the event loop. */
const SLICE_MS = 8;

/**
 * Where a snapshot's rows are encoded: in a worker (`start`, resolved once it has started)
 * from `minRows` files, below that in this thread. A worker that cannot start leaves that
 * snapshot to this thread.
 */
export interface SnapshotWorker {
  minRows: number;
  start: () => Promise<RowsEncoder>;
}

/** A worker's start (~30 ms of CPU) costs more than the encoding of fewer files than this. */
const realWorker: SnapshotWorker = { minRows: 50_000, start: () => startRowsEncoder() };

/** The workers whose failure to start was logged: the process's one real worker warns once, not at every fold. */
const warnedOf = new WeakSet<SnapshotWorker>();

const realSlices: SliceOptions = { sliceMs: SLICE_MS, yieldNow, now: () => performance.now() };

/** Figures of the snapshot writes. */
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

export interface SnapshotFileOptions {
  slices?: SliceOptions;
  worker?: SnapshotWorker;
  logger?: Logger;
}

export class SnapshotFile {
  /** Set by read() when the file had an older version. */
  migratedFrom: number | undefined;
  readStats: ReadStats | undefined;
  readonly stats: SnapshotStats = { writes: 0, failures: 0, lastBytes: 0, lastEncodeMs: 0, lastMaxBlockMs: 0, lastWriteMs: 0 };

  private readonly slices: SliceOptions;
  private readonly worker: SnapshotWorker;
  private readonly logger: Logger;

  constructor(
    readonly path: string,
    private readonly fs: StateFs,
    private readonly codec: StateCodec,
    opts: SnapshotFileOptions = {},
  ) {
    this.slices = opts.slices ?? realSlices;
    this.worker = opts.worker ?? realWorker;
    this.logger = opts.logger ?? silentLogger;
  }

  /** The state in the file, or null when there is none. */
  async read(): Promise<StateFile | null> {
    const t0 = performance.now();
    const r = await readSnapshot(this.fs, this.path, this.slices);
    if (r === undefined) return null;
    this.migratedFrom = r.migratedFrom;
    this.readStats = { bytes: r.bytes, loadMs: performance.now() - t0 };
    return r.state;
  }

  /**
   * Not `async` on purpose: the snapshot is taken synchronously in the call, so mutations
   * made while the write goes on belong to the next write.
   *
   * `giveWay`: awaited at every yield between two slices, so that what it returns (the
   * journal's append in flight) goes first. A durable write then waits for at most one
   * slice, not for one slice per step of its own (open, write, fsync, close each take a
   * turn of the event loop).
   */
  write(data: StateFile, giveWay?: () => Promise<void>): Promise<void> {
    const t0 = performance.now();
    const plan = this.codec.snapshot(data);
    const snapshotMs = performance.now() - t0;
    const slices = giveWay ? { ...this.slices, yieldNow: () => this.slices.yieldNow().then(giveWay) } : this.slices;
    return this.finish(plan, slices, t0, snapshotMs);
  }

  private async finish(plan: EncodePlan, slices: SliceOptions, t0: number, snapshotMs: number): Promise<void> {
    let rows: RowsEncoder | undefined;
    try {
      if (plan.rows >= this.worker.minRows) rows = await this.startWorker();
      await slices.yieldNow(); // the snapshot and the first slice are two separate blocks
      let enc: Awaited<ReturnType<EncodePlan['run']>> | undefined;
      await writeFileAtomic(this.fs, this.path, async (write) => {
        enc = await plan.run(slices, write, rows);
      });
      if (!enc) throw new Error('the snapshot was not encoded');
      this.stats.writes++;
      this.stats.lastBytes = enc.bytes;
      this.stats.lastEncodeMs = snapshotMs + enc.totalMs;
      this.stats.lastMaxBlockMs = Math.max(snapshotMs, enc.maxBlockMs);
      this.stats.lastWriteMs = performance.now() - t0;
    } catch (err) {
      plan.release(); // the temp file could not even be opened: the plan never ran
      this.stats.failures++;
      throw err;
    } finally {
      await rows?.close();
    }
  }

  /** A started worker, or undefined when none could start: the rows are then encoded in this thread, in slices. */
  private async startWorker(): Promise<RowsEncoder | undefined> {
    try {
      return await this.worker.start();
    } catch (err) {
      if (!warnedOf.has(this.worker)) {
        warnedOf.add(this.worker);
        this.logger.warn({ file: this.path, err }, `state snapshot ${this.path}: its worker thread could not start (${(err as Error).message}); snapshots are encoded in the main thread until one can (durable writes may wait for the encoding meanwhile)`);
      }
      return undefined;
    }
  }
}

/**
 * The encoding of the snapshot file (decoding: decode.ts).
 *
 * Format (version 4; 3 had no "needs" and no identity): lines, UTF-8, so that the file is
 * written and read as a stream in pieces of a few milliseconds, whatever its size:
 *
 *   dssync-state 5 {"needs":"0.3.0","journalSeq":N,"identity":{…}}     the header (needs: the first release that reads it; identity: schema.ts StateIdentity)
 *   {"mapping":"<id>","dataSourceId":"…","root":"…","intents":{…},"rejected":{…},"lastPass":{…}}
 *   ["<path>","<documentId>",<size>,<mtimeMs>,"<sha256>","<syncedAt>",<hashedAt>,<ctimeMs>,<dev>,<ino>]
 *   …                                                                  one line per file of that mapping
 *   {"mapping":"<id2>",…}                                              the next mapping, its files
 *   end <lines> <crc32>                                                the trailer
 *
 * A mapping line starts with `{`, a file line with `[`; a file belongs to the mapping line
 * above it. A file is the tuple of FileEntry's fields after its path (the last four, the
 * racy check's, null when unknown; entries written before they existed have the first five
 * only: validate.ts FileTuple). JSON never holds a raw newline, so lines split on `\n`.
 * The trailer counts the lines above it and holds the CRC-32 of every byte above it: a
 * snapshot cut short, or damaged, is detected as corrupt (the store then rebuilds the state
 * from the service). Files of versions 1 and 2 were one JSON object (`{"version":2,…}`):
 * no longer read, refused with StateFormatRetiredError (decode.ts).
 *
 * How a snapshot is taken: each mapping's files (file-table.ts) are rows in chunks of
 * CHUNK_ROWS. A snapshot pins them (copy-on-write, kept by the table itself: cheap and
 * synchronous), then encodes them in slices of a few milliseconds and hands the bytes to
 * the file as it goes, so no write blocks the event loop for long nor holds the whole file
 * in memory, however large the state. The lines are in the table's row order: a loaded
 * state is written back in the order it was read. Property tests check that a sliced
 * snapshot is exactly the state at the snapshot.
 */
import { crc32 } from 'node:zlib';
import type { ChunkSink } from './atomic-file.js';
import type { PinnedChunk } from './file-table.js';
import type { RowsData } from './row-lines.js';
import type { EncodedBatch, RowsEncoder } from './rows-encoder.js';
import { FORMAT_RELEASES, STATE_VERSION, type MappingState, type StateFile } from './schema.js';

interface MappingPlan {
  /** The mapping's line (its head: everything but the files). */
  head: Buffer;
  chunks: PinnedChunk[];
}

/** The first word of a snapshot file of this format (one of format 1 or 2 started with `{`). */
export const SNAPSHOT_MAGIC = 'dssync-state';

export interface EncodeResult {
  bytes: number;
  /** Lines written, trailer excluded. */
  lines: number;
  /** Time spent encoding in total, and the longest stretch without yielding (ms). */
  totalMs: number;
  maxBlockMs: number;
}

export interface SliceOptions {
  /** Longest stretch of encoding between two yields. */
  sliceMs: number;
  /** Lets the event loop run (setImmediate). */
  yieldNow: () => Promise<void>;
  now: () => number;
}

/** Encoded bytes are handed to the file once this many are pending. */
const WRITE_BYTES = 1 << 20;

/** The bytes of a snapshot as they are produced, with their line count and CRC-32. */
class Output {
  private chunks: Buffer[] = [];
  pending = 0;
  bytes = 0;
  lines = 0;
  private crc = 0;

  add(buf: Buffer, lines: number): void {
    if (buf.length === 0) return;
    this.chunks.push(buf);
    this.pending += buf.length;
    this.bytes += buf.length;
    this.lines += lines;
    this.crc = crc32(buf, this.crc);
  }

  /** The trailer line, after everything added (not counted in the CRC nor the lines). */
  addTrailer(): void {
    const t = Buffer.from(`end ${this.lines} ${(this.crc >>> 0).toString(16).padStart(8, '0')}\n`);
    this.chunks.push(t);
    this.pending += t.length;
    this.bytes += t.length;
  }

  take(): Buffer[] {
    const out = this.chunks;
    this.chunks = [];
    this.pending = 0;
    return out;
  }
}

/** Chunks of rows sent to a worker at once (~1 MiB of lines). */
const BATCH_CHUNKS = 4;

/** The chunks copied for a worker, sent BATCH_CHUNKS at a time, their lines added to the output in order. */
class Batches {
  private batch: RowsData[] = [];
  private inFlight: Promise<EncodedBatch> | undefined;

  constructor(private readonly rows: RowsEncoder, private readonly out: Output) {}

  /** Adds a chunk; when that fills a batch, sends it and returns the wait for the batch before it. */
  add(r: RowsData): Promise<void> | undefined {
    this.batch.push(r);
    return this.batch.length >= BATCH_CHUNKS ? this.send() : undefined;
  }

  /** Every chunk added so far, in the output. */
  async drain(): Promise<void> {
    if (this.batch.length) await this.send();
    await this.settle();
  }

  private async send(): Promise<void> {
    const next = this.rows.encode(this.batch);
    next.catch(() => undefined); // awaited below, after the batch before it
    this.batch = [];
    await this.settle();
    this.inFlight = next;
  }

  private async settle(): Promise<void> {
    const e = await this.inFlight;
    this.inFlight = undefined;
    if (e) this.out.add(e.bytes, e.lines);
  }
}

/**
 * A snapshot of the state to write. Taking it is cheap and synchronous: heads are encoded,
 * the files' chunks of rows are pinned. The chunks are then encoded in slices between other
 * work; a change to a row of a pinned chunk first copies the chunk's lines (FileTable's
 * copy-on-write), so the result is exactly the state at the snapshot.
 */
export class EncodePlan {
  constructor(
    private readonly header: Buffer,
    private readonly mappings: MappingPlan[],
    /** Files in the snapshot. */
    readonly rows: number,
  ) {}

  /** Encodes without yielding (tests, tools, small states). */
  runSync(): Buffer[] {
    try {
      const out = new Output();
      out.add(this.header, 1);
      for (const m of this.mappings) {
        out.add(m.head, 1);
        for (const c of m.chunks) {
          const e = c.table.encodePinned(c);
          out.add(Buffer.from(e.text), e.lines);
        }
      }
      out.addTrailer();
      return out.take();
    } finally {
      this.release();
    }
  }

  /**
   * Encodes in slices of at most about `sliceMs` (one chunk of rows is the unit), yielding in
   * between, and hands the bytes to `write` about every MiB (which also yields). With
   * `rows` (a worker), the chunks are only copied out of the table here, BATCH_CHUNKS at a
   * time, and their lines are made there: one batch is encoded while the next is copied.
   */
  async run(opts: SliceOptions, write: ChunkSink, rows?: RowsEncoder): Promise<EncodeResult> {
    try {
      const out = new Output();
      let totalMs = 0;
      let maxBlockMs = 0;
      let sliceStart = opts.now();
      /** Ends the slice, awaits `p` (a turn of the event loop at least), starts the next slice. */
      const pause = async (p: Promise<void>): Promise<void> => {
        const elapsed = opts.now() - sliceStart;
        totalMs += elapsed;
        maxBlockMs = Math.max(maxBlockMs, elapsed);
        await p;
        sliceStart = opts.now();
      };
      const batches = rows ? new Batches(rows, out) : undefined;
      out.add(this.header, 1);
      for (const m of this.mappings) {
        out.add(m.head, 1);
        for (const c of m.chunks) {
          if (batches) {
            const sent = batches.add(c.table.takePinned(c));
            if (sent) await pause(sent);
          } else {
            const e = c.table.encodePinned(c);
            out.add(Buffer.from(e.text), e.lines);
          }
          if (out.pending >= WRITE_BYTES) await pause(write(out.take()));
          else if (opts.now() - sliceStart >= opts.sliceMs) await pause(opts.yieldNow());
        }
        if (batches) await pause(batches.drain()); // the next mapping's line comes after these rows
      }
      out.addTrailer();
      await pause(write(out.take()));
      return { bytes: out.bytes, lines: out.lines, totalMs, maxBlockMs };
    } finally {
      this.release();
    }
  }

  /** Unpins what was not encoded (after a failure, or a plan that never ran). Idempotent. */
  release(): void {
    for (const m of this.mappings) for (const c of m.chunks) c.table.unpin(c);
  }
}

/**
 * Takes the snapshots of the state. Nothing is cached (a snapshot is written only when the
 * journal is folded); the copy-on-write of a snapshot being encoded is the files table's.
 */
export class StateCodec {
  /** dataSourceId, root, intents, rejected or lastPass of the mapping changed (heads are encoded at each snapshot). */
  headChanged(_id: string): void {
    // Nothing cached: kept so that every change is reported, should a cache come back.
  }

  /** Forgets what it knows of the state (it was replaced by an empty one). */
  reset(): void {
    // Nothing held.
  }

  /**
   * Takes the snapshot of the state to write: synchronous, and cheap whatever the number of
   * entries (they are encoded by the plan). Only one plan may be running at a time.
   */
  snapshot(state: StateFile): EncodePlan {
    const plans: MappingPlan[] = [];
    let rows = 0;
    for (const id of Object.keys(state.mappings)) {
      const m = state.mappings[id];
      if (!m) continue;
      plans.push({ head: Buffer.from(`${encodeHead(id, m)}\n`), chunks: m.files.pin() });
      rows += m.files.size;
    }
    const head = { needs: FORMAT_RELEASES[STATE_VERSION], journalSeq: state.journalSeq, ...(state.identity ? { identity: state.identity } : {}) };
    const header = Buffer.from(`${SNAPSHOT_MAGIC} ${STATE_VERSION} ${JSON.stringify(head)}\n`);
    return new EncodePlan(header, plans, rows);
  }

  /** Encodes the whole state at once (tests, tools, small states). */
  encode(state: StateFile): Buffer[] {
    return this.snapshot(state).runSync();
  }
}

/** The mapping's line: its id and every field but the files. */
export function encodeHead(id: string, m: MappingState): string {
  const head: { mapping: string } & Omit<MappingState, 'files'> = {
    mapping: id,
    dataSourceId: m.dataSourceId,
    root: m.root,
    ...(m.dataSourceName !== undefined ? { dataSourceName: m.dataSourceName } : {}),
    ...(m.sessions !== undefined ? { sessions: m.sessions } : {}),
    intents: m.intents,
    rejected: m.rejected,
  };
  if (m.lastPass !== undefined) head.lastPass = m.lastPass;
  return JSON.stringify(head);
}

/** The whole encoding as one string (tests, tools). */
export function encodeStateToString(state: StateFile): string {
  return Buffer.concat(new StateCodec().encode(state)).toString('utf8');
}


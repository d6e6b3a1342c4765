/**
 * The encoding of the snapshot file (decoding: decode.ts).
 *
 * Format (version 3): lines, UTF-8, so that the file is written and read as a stream in
 * pieces of a few milliseconds, whatever its size (one JSON document of a million files is
 * a 191 MB string whose parse blocks for minutes: docs/performance.md, "A million files"):
 *
 *   dssync-state 3 {"journalSeq":N}                                     the header
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
 * still read (decode-legacy.ts), and rewritten in this format at once.
 *
 * Why a stateful encoder: each mapping's files are split into BUCKET_COUNT hash buckets.
 * A snapshot pins them (copy-on-write: cheap and synchronous), then encodes them in slices
 * of a few milliseconds and hands the bytes to the file as it goes, so no write blocks the
 * event loop for long nor holds the whole file in memory, however large the state.
 *
 * The store changes files only through StateCodec.setFile and reports its other changes
 * (headChanged, indexMapping); property tests check that a sliced snapshot
 * is exactly the state at the snapshot.
 */
import { crc32 } from 'node:zlib';
import type { ChunkSink } from './atomic-file.js';
import { STATE_VERSION, type FileEntry, type MappingState, type StateFile } from './schema.js';
import { entryToTuple } from './validate.js';

/** Buckets per mapping: the unit of copy-on-write while a snapshot is encoded. */
export const BUCKET_COUNT = 1024;

/** FNV-1a of the path, reduced to a bucket number. Stable across runs (nothing depends on it on disk). */
export function bucketOf(path: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < path.length; i++) {
    h ^= path.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return (h >>> 0) & (BUCKET_COUNT - 1);
}


interface MappingIndex {
  /**
   * Paths per bucket (created on first use): what a pinned bucket has to copy. Arrays, not
   * Sets: a path is added only when the mapping does not hold it yet and removed by a scan
   * of its bucket (a thousand paths at a million files), and an array costs ~10 bytes per
   * path where a Set's hash table cost ~32.
   */
  keys: (string[] | undefined)[];
  /** Stale buckets a snapshot still has to encode (copy-on-write, see setFile). */
  pins: (PendingBucket | undefined)[];
}

/** A bucket of a snapshot, not yet encoded. */
interface PendingBucket {
  index: MappingIndex;
  bucket: number;
  /** The mapping's files object at the snapshot (the store mutates it in place). */
  files: Record<string, FileEntry>;
  /**
   * The bucket's paths and entries as they were at the snapshot, flat. Copied only when a
   * change to the bucket comes before the encoding; until then the live data is the snapshot.
   */
  items: (string | FileEntry)[] | undefined;
}

interface MappingPlan {
  /** The mapping's line (its head: everything but the files). */
  head: Buffer;
  buckets: PendingBucket[];
}

/** The first word of a snapshot file of this format (a legacy one starts with `{`). */
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

/**
 * A snapshot of the state to write. Taking it is cheap and synchronous: heads are encoded,
 * buckets are pinned. The buckets are then encoded in slices between other work; a
 * mutation of a pinned bucket first copies the bucket's snapshot content
 * (StateCodec.setFile), so the result is exactly the state at the snapshot.
 */
export class EncodePlan {
  constructor(
    private readonly header: Buffer,
    private readonly mappings: MappingPlan[],
  ) {}

  /** Encodes without yielding (tests, tools, small states). */
  runSync(): Buffer[] {
    try {
      const out = new Output();
      out.add(this.header, 1);
      for (const m of this.mappings) {
        out.add(m.head, 1);
        for (const b of m.buckets) {
          const e = encodeBucket(b);
          out.add(e.buf, e.lines);
        }
      }
      out.addTrailer();
      return out.take();
    } finally {
      this.release();
    }
  }

  /**
   * Encodes in slices of at most about `sliceMs` (one bucket is the unit), yielding in
   * between, and hands the bytes to `write` about every MiB (which also yields).
   */
  async run(opts: SliceOptions, write: ChunkSink): Promise<EncodeResult> {
    try {
      const out = new Output();
      let totalMs = 0;
      let maxBlockMs = 0;
      let sliceStart = opts.now();
      const endSlice = (): void => {
        const elapsed = opts.now() - sliceStart;
        totalMs += elapsed;
        maxBlockMs = Math.max(maxBlockMs, elapsed);
      };
      out.add(this.header, 1);
      for (const m of this.mappings) {
        out.add(m.head, 1);
        for (const b of m.buckets) {
          const e = encodeBucket(b);
          out.add(e.buf, e.lines);
          if (out.pending >= WRITE_BYTES) {
            endSlice();
            await write(out.take());
            sliceStart = opts.now();
          } else if (opts.now() - sliceStart >= opts.sliceMs) {
            endSlice();
            await opts.yieldNow();
            sliceStart = opts.now();
          }
        }
      }
      out.addTrailer();
      endSlice();
      await write(out.take());
      return { bytes: out.bytes, lines: out.lines, totalMs, maxBlockMs };
    } finally {
      this.release();
    }
  }

  /** Unpins what was not encoded (after a failure, or a plan that never ran). Idempotent. */
  release(): void {
    for (const m of this.mappings) {
      for (const b of m.buckets) if (b.index.pins[b.bucket] === b) b.index.pins[b.bucket] = undefined;
    }
  }
}

/**
 * Keeps the snapshot encoder right while the state changes under it. Nothing but applyOp
 * (ops.ts) calls its mutation methods: setFile performs the change of a file (so that a
 * pinned bucket is copied before it changes); indexMapping and headChanged report the
 * other changes. No encoded bytes are cached: with the journal, a snapshot is
 * written only when the journal is folded, and a cache of every entry's encoding would cost
 * ~150 bytes per file of memory for that rare write.
 */
export class StateCodec {
  private readonly indexes = new Map<string, MappingIndex>();

  /** (Re)builds the bucket index of a mapping: after a load, a creation or a reset. */
  indexMapping(id: string, m: MappingState): void {
    const index: MappingIndex = {
      keys: new Array<string[] | undefined>(BUCKET_COUNT),
      pins: new Array<PendingBucket | undefined>(BUCKET_COUNT),
    };
    for (const path of Object.keys(m.files)) addKey(index, path);
    this.indexes.set(id, index);
  }

  /** Sets (entry) or deletes (undefined) a file of mapping `id`, whose state is `m`. */
  setFile(id: string, m: MappingState, path: string, entry: FileEntry | undefined): void {
    const index = this.indexes.get(id);
    if (index) {
      const b = bucketOf(path);
      const pin = index.pins[b];
      if (pin && !pin.items) pin.items = collect(index.keys[b], pin.files);
      const known = path in m.files;
      if (entry && !known) addKey(index, path, b);
      else if (!entry && known) removeKey(index.keys[b], path);
    }
    // Without an index (not indexed yet) the next snapshot indexes the mapping from its data.
    if (entry) m.files[path] = entry;
    else delete m.files[path];
  }

  /** dataSourceId, root, intents, rejected or lastPass of the mapping changed (heads are encoded at each snapshot). */
  headChanged(_id: string): void {
    // Nothing cached: kept so that every change is reported, should a cache come back.
  }

  /** Forgets every index (the state was replaced by an empty one). */
  reset(): void {
    this.indexes.clear();
  }

  /**
   * Takes the snapshot of the state to write: synchronous, and cheap whatever the number of
   * entries (they are encoded by the plan). Only one plan may be running at a time.
   */
  snapshot(state: StateFile): EncodePlan {
    const plans: MappingPlan[] = [];
    const ids = Object.keys(state.mappings);
    for (const id of ids) {
      const m = state.mappings[id];
      if (!m) continue;
      const index = this.indexOf(id, m);
      const buckets: PendingBucket[] = [];
      for (let b = 0; b < BUCKET_COUNT; b++) {
        const keys = index.keys[b];
        if (!keys || keys.length === 0) continue;
        const pending: PendingBucket = { index, bucket: b, files: m.files, items: undefined };
        index.pins[b] = pending;
        buckets.push(pending);
      }
      plans.push({ head: Buffer.from(`${encodeHead(id, m)}\n`), buckets });
    }
    // Indexes of mappings no longer in the state are dropped (defensive: removeMapping does it).
    if (this.indexes.size > ids.length) {
      for (const id of this.indexes.keys()) if (!(id in state.mappings)) this.indexes.delete(id);
    }
    const header = Buffer.from(`${SNAPSHOT_MAGIC} ${STATE_VERSION} ${JSON.stringify({ journalSeq: state.journalSeq })}\n`);
    return new EncodePlan(header, plans);
  }

  /** Files of mapping `id`, counted from the bucket index (no walk over 100,000 keys). */
  fileCount(id: string, m: MappingState): number {
    const index = this.indexOf(id, m);
    let n = 0;
    for (const keys of index.keys) if (keys) n += keys.length;
    return n;
  }

  /** Encodes the whole state at once (tests, tools, small states). */
  encode(state: StateFile): Buffer[] {
    return this.snapshot(state).runSync();
  }

  private indexOf(id: string, m: MappingState): MappingIndex {
    let index = this.indexes.get(id);
    if (!index) {
      this.indexMapping(id, m);
      index = this.indexes.get(id) as MappingIndex;
    }
    return index;
  }
}

/** Encodes a pinned bucket (one line per file) and unpins it. */
function encodeBucket(p: PendingBucket): { buf: Buffer; lines: number } {
  const items = p.items ?? collect(p.index.keys[p.bucket], p.files);
  let text = '';
  for (let i = 0; i < items.length; i += 2) {
    text += `${JSON.stringify([items[i] as string, ...entryToTuple(items[i + 1] as FileEntry)])}\n`;
  }
  if (p.index.pins[p.bucket] === p) p.index.pins[p.bucket] = undefined;
  return { buf: Buffer.from(text), lines: items.length / 2 };
}

function collect(keys: string[] | undefined, files: Record<string, FileEntry>): (string | FileEntry)[] {
  const items: (string | FileEntry)[] = [];
  if (keys) {
    for (const path of keys) {
      const e = files[path];
      if (e) items.push(path, e);
    }
  }
  return items;
}

/** Adds a path the mapping did not hold (the caller checks: a bucket holds each path once). */
function addKey(index: MappingIndex, path: string, b = bucketOf(path)): void {
  const keys = index.keys[b];
  if (keys) keys.push(path);
  else index.keys[b] = [path];
}

/**
 * Removes a path the mapping held. The others keep their order (the mapping's own, as a Set
 * kept it), so that a snapshot's bytes depend on the state, not on the order of the changes.
 */
function removeKey(keys: string[] | undefined, path: string): void {
  const i = keys ? keys.indexOf(path) : -1;
  if (i >= 0) keys?.splice(i, 1);
}

/** The mapping's line: its id and every field but the files. */
export function encodeHead(id: string, m: MappingState): string {
  const head: { mapping: string } & Omit<MappingState, 'files'> = {
    mapping: id,
    dataSourceId: m.dataSourceId,
    root: m.root,
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


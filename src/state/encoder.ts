/**
 * The encoding of the snapshot file (decoding: decode.ts).
 *
 * Format (version 1): compact JSON, no pretty-printing:
 *
 *   {"version":2,"journalSeq":N,"mappings":{"<id>":{"dataSourceId":"…","root":"…","intents":{…},
 *     "rejected":{…},"lastPass":{…},"files":[["<path>","<documentId>",<size>,<mtimeMs>,"<sha256>","<syncedAt>",
 *     <hashedAt>,<ctimeMs>,<dev>,<ino>],…]}}}
 *
 * Every mapping field is as in schema.ts except `files`, stored as an array of tuples in
 * the order of FileEntry's fields (the last four, the racy check's, null when unknown;
 * entries written before they existed are 6-tuples, still read: validate.ts FileTuple): object keys repeated 100,000 times cost ~20% more bytes,
 * and parsing arrays is markedly faster (see the report of the state store).
 *
 * Why a stateful encoder: JSON.stringify of 100,000 entries blocks the event loop for
 * ~110–140 ms on this machine (more when the machine is busy), every write, several times a
 * second during an initial sync. So each mapping's files are split into BUCKET_COUNT hash
 * buckets whose encoded bytes are cached; a mutation invalidates one bucket, and a write
 * re-encodes only the invalidated buckets, then hands the list of buffers to writev.
 * And when many buckets are stale (after a load, or a burst of changes), the snapshot pins
 * them (copy-on-write) and they are encoded in slices of a few milliseconds, so no write
 * blocks the event loop for long, however large the state.
 *
 * The store changes files only through StateCodec.setFile and reports its other changes
 * (headChanged, mappingRemoved, indexMapping); property tests check that the cached
 * encoding always equals a fresh one, and that a sliced snapshot is exact.
 */
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
  /** Paths per bucket (created on first use): what a pinned bucket has to copy. */
  keys: (Set<string> | undefined)[];
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
  /** `"<id>":{…,"files":[` */
  prefix: Buffer;
  buckets: (Buffer | PendingBucket)[];
}

function isPending(b: Buffer | PendingBucket): b is PendingBucket {
  return !Buffer.isBuffer(b);
}

export interface EncodeResult {
  chunks: Buffer[];
  bytes: number;
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

const B_CLOSE = Buffer.from('}}');
const B_COMMA = Buffer.from(',');
const B_MAPPING_END = Buffer.from(']}');

/**
 * A snapshot of the state to write. Taking it is cheap and synchronous: heads are encoded,
 * buckets are pinned. The buckets are then encoded in slices between other work; a
 * mutation of a pinned bucket first copies the bucket's snapshot content
 * (StateCodec.setFile), so the result is exactly the state at the snapshot.
 */
export class EncodePlan {
  constructor(
    private readonly open: Buffer,
    private readonly mappings: MappingPlan[],
  ) {}

  /** Encodes without yielding. */
  runSync(): Buffer[] {
    try {
      for (const m of this.mappings) {
        for (let i = 0; i < m.buckets.length; i++) {
          const b = m.buckets[i];
          if (b && isPending(b)) m.buckets[i] = encodeBucket(b);
        }
      }
      return this.assemble();
    } finally {
      this.release();
    }
  }

  /** Encodes in slices of at most about `sliceMs`, yielding in between. */
  async run(opts: SliceOptions): Promise<EncodeResult> {
    try {
      let totalMs = 0;
      let maxBlockMs = 0;
      let sliceStart = opts.now();
      for (const m of this.mappings) {
        for (let i = 0; i < m.buckets.length; i++) {
          const b = m.buckets[i];
          if (!b || !isPending(b)) continue;
          m.buckets[i] = encodeBucket(b);
          const elapsed = opts.now() - sliceStart;
          if (elapsed >= opts.sliceMs) {
            totalMs += elapsed;
            maxBlockMs = Math.max(maxBlockMs, elapsed);
            await opts.yieldNow();
            sliceStart = opts.now();
          }
        }
      }
      const chunks = this.assemble();
      const last = opts.now() - sliceStart;
      totalMs += last;
      maxBlockMs = Math.max(maxBlockMs, last);
      return { chunks, bytes: chunks.reduce((n, c) => n + c.length, 0), totalMs, maxBlockMs };
    } finally {
      this.release();
    }
  }

  /** Unpins what was not encoded (only after a failure). */
  private release(): void {
    for (const m of this.mappings) {
      for (const b of m.buckets) if (isPending(b) && b.index.pins[b.bucket] === b) b.index.pins[b.bucket] = undefined;
    }
  }

  private assemble(): Buffer[] {
    const out: Buffer[] = [this.open];
    this.mappings.forEach((m, i) => {
      if (i > 0) out.push(B_COMMA);
      out.push(m.prefix);
      let first = true;
      for (const b of m.buckets) {
        if (isPending(b) || b.length === 0) continue;
        if (!first) out.push(B_COMMA);
        first = false;
        out.push(b);
      }
      out.push(B_MAPPING_END);
    });
    out.push(B_CLOSE);
    return out;
  }
}

/**
 * Keeps the snapshot encoder right while the state changes under it. Nothing but applyOp
 * (ops.ts) calls its mutation methods: setFile performs the change of a file (so that a
 * pinned bucket is copied before it changes); indexMapping, headChanged and mappingRemoved
 * report the other changes. No encoded bytes are cached: with the journal, a snapshot is
 * written only when the journal is folded, and a cache of every entry's encoding would cost
 * ~150 bytes per file of memory for that rare write.
 */
export class StateCodec {
  private readonly indexes = new Map<string, MappingIndex>();

  /** (Re)builds the bucket index of a mapping: after a load, a creation or a reset. */
  indexMapping(id: string, m: MappingState): void {
    const index: MappingIndex = {
      keys: new Array<Set<string> | undefined>(BUCKET_COUNT),
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
      if (entry) addKey(index, path, b);
      else index.keys[b]?.delete(path);
    }
    // Without an index (not indexed yet) the next snapshot indexes the mapping from its data.
    if (entry) m.files[path] = entry;
    else delete m.files[path];
  }

  /** dataSourceId, root, intents, rejected or lastPass of the mapping changed (heads are encoded at each snapshot). */
  headChanged(_id: string): void {
    // Nothing cached: kept so that every change is reported, should a cache come back.
  }

  mappingRemoved(id: string): void {
    this.indexes.delete(id);
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
      const buckets: (Buffer | PendingBucket)[] = [];
      for (let b = 0; b < BUCKET_COUNT; b++) {
        const keys = index.keys[b];
        if (!keys || keys.size === 0) continue;
        const pending: PendingBucket = { index, bucket: b, files: m.files, items: undefined };
        index.pins[b] = pending;
        buckets.push(pending);
      }
      plans.push({ prefix: Buffer.from(`${JSON.stringify(id)}:${encodeHead(m)}`), buckets });
    }
    // Indexes of mappings no longer in the state are dropped (defensive: removeMapping does it).
    if (this.indexes.size > ids.length) {
      for (const id of this.indexes.keys()) if (!(id in state.mappings)) this.indexes.delete(id);
    }
    const open = Buffer.from(`{"version":${STATE_VERSION},"journalSeq":${state.journalSeq},"mappings":{`);
    return new EncodePlan(open, plans);
  }

  /** Files of mapping `id`, counted from the bucket index (no walk over 100,000 keys). */
  fileCount(id: string, m: MappingState): number {
    const index = this.indexOf(id, m);
    let n = 0;
    for (const keys of index.keys) if (keys) n += keys.size;
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

/** Encodes a pinned bucket and unpins it. */
function encodeBucket(p: PendingBucket): Buffer {
  const items = p.items ?? collect(p.index.keys[p.bucket], p.files);
  const tuples: unknown[] = [];
  for (let i = 0; i < items.length; i += 2) {
    const e = items[i + 1] as FileEntry;
    tuples.push([items[i] as string, ...entryToTuple(e)]);
  }
  const buf = tuples.length ? Buffer.from(JSON.stringify(tuples).slice(1, -1)) : Buffer.alloc(0);
  if (p.index.pins[p.bucket] === p) p.index.pins[p.bucket] = undefined;
  return buf;
}

function collect(keys: Set<string> | undefined, files: Record<string, FileEntry>): (string | FileEntry)[] {
  const items: (string | FileEntry)[] = [];
  if (keys) {
    for (const path of keys) {
      const e = files[path];
      if (e) items.push(path, e);
    }
  }
  return items;
}

function addKey(index: MappingIndex, path: string, b = bucketOf(path)): void {
  let set = index.keys[b];
  if (!set) index.keys[b] = set = new Set();
  set.add(path);
}

function encodeHead(m: MappingState): string {
  const head: Omit<MappingState, 'files'> = {
    dataSourceId: m.dataSourceId,
    root: m.root,
    intents: m.intents,
    rejected: m.rejected,
  };
  if (m.lastPass !== undefined) head.lastPass = m.lastPass;
  const json = JSON.stringify(head);
  return `${json.slice(0, -1)},"files":[`;
}

/** The whole encoding as one string (tests, tools). */
export function encodeStateToString(state: StateFile): string {
  return Buffer.concat(new StateCodec().encode(state)).toString('utf8');
}


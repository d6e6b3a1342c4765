/**
 * The files of a mapping in compact form (issue 16, docs/performance.md "A million files").
 *
 * One row per file, in columns: the numbers of a FileEntry in one Float64Array (NaN for a
 * stat field that is unknown) but the device, an index into the table's few; the sha256 as
 * 32 raw bytes; `syncedAt` as the index of one of a few distinct strings (the entries of a
 * pass were synced within seconds); the document id as its hex digits packed by its shape;
 * the path as UTF-8 bytes (path-column.ts): no string of a path is kept, one is made when a
 * path is read. An index finds a path's row; a deleted row goes to a free list and is reused.
 *
 * Readers see `ReadonlyFileTable`: `get` makes a fresh FileEntry (read-only by contract: a
 * change to it changes nothing), `documentIdOf` reads one field without making one. The
 * only writer of a mapping's table is applyOp (ops.ts), through the store.
 *
 * The snapshot encoder (encoder.ts) writes a table by chunks of CHUNK_ROWS rows: `pin()`
 * marks every chunk as part of a snapshot (cheap, synchronous), and a change to a row of a
 * chunk not yet encoded first encodes that chunk as it was (copy-on-write, here, so that no
 * writer can forget it). A loaded table's rows are in the file's order, so a snapshot of
 * an unchanged state has the lines of the file it was loaded from, in the same order.
 */
import { PathColumn } from './path-column.js';
import { CTIME, DEV, DIGIT, encodeRows, HASHED, HEX_CODES, ID_BYTES, idFrom, idIs, INO, MTIME, NUMS, SHA_BYTES, SIZE, type EncodedRows, type RowsData } from './row-lines.js';

export interface FileEntry {
  documentId: string;
  size: number;
  /** As Node reports it: milliseconds with a fraction (sub-microsecond where the filesystem keeps nanoseconds). */
  mtimeMs: number;
  sha256: string;
  /** ISO time of the last successful remote write or verification. */
  syncedAt: string;
  /**
   * When the content was hashed (ms since the epoch, the engine's clock, taken before the
   * read): a file whose mtime is not safely older is hashed again (engine/racy.ts).
   * Absent in entries written by older versions (hashed again once).
   */
  hashedAt?: number | undefined;
  /** Inode change time when hashed: moves on every write and cannot be set back (`touch -r` restores only mtime). */
  ctimeMs?: number | undefined;
  /** Device and inode when hashed: a file swapped in under the name is another inode. */
  dev?: number | undefined;
  ino?: number | undefined;
}

/** A FileEntry's stat fields: what the quick check (engine/racy.ts) compares with a file's stat. */
export type EntryStat = Pick<FileEntry, 'size' | 'mtimeMs' | 'hashedAt' | 'ctimeMs' | 'dev' | 'ino'>;

const CHUNK_SHIFT = 10;
/** Rows per chunk: the unit of a snapshot's copy-on-write and of its encoding slices. */
export const CHUNK_ROWS = 1 << CHUNK_SHIFT;
const FIRST_CAPACITY = 8;
/**
 * Rows per block of the columns. A table grows by doubling up to one block, then block by
 * block: no column is ever copied whole, and a table of a few files stays small.
 */
const BLOCK_SHIFT = 16;
const BLOCK_ROWS = 1 << BLOCK_SHIFT;
const BLOCK_MASK = BLOCK_ROWS - 1;
/**
 * The index is split into 2^(32 - PART_SHIFT) parts by the top bits of a path's hash, each
 * rehashed on its own when it fills: no rehash touches the whole index at once.
 */
const PART_SHIFT = 26;
const PARTS = 1 << (32 - PART_SHIFT);

/**
 * Numbers per row in a block: a snapshot row's (row-lines.ts NUMS: size, mtimeMs, hashedAt,
 * ctimeMs at the same places) but the device, which is one of the table's few (Block.devs);
 * the inode last.
 */
const BLOCK_NUMS = NUMS - 1;
const BLOCK_INO = 4;
/** Block.devs of a device kept in FileTable.oddDevs (-0, or past the 65,534th device). */
const ODD_DEV = 0xffff;

/** The columns of up to BLOCK_ROWS rows. */
interface Block {
  /** size, mtimeMs, hashedAt, ctimeMs, ino per row (BLOCK_NUMS). */
  nums: Float64Array;
  /** The device: an index into FileTable.devices (0: unknown), or ODD_DEV. */
  devs: Uint16Array;
  /** sha256, SHA_BYTES per row (a Buffer for its hex encoding). */
  sha: Buffer;
  /** Index into the table's distinct syncedAt values. */
  synced: Uint32Array;
  /** hashOf(path). */
  hashes: Uint32Array;
  /** The shape of the row's document id (0: the id is in oddIds). */
  idShape: Uint8Array;
  /** The hex digits of the row's document id, two per byte, ID_BYTES per row. */
  idDigits: Uint8Array;
}

function newBlock(rows: number): Block {
  return {
    nums: new Float64Array(rows * BLOCK_NUMS),
    devs: new Uint16Array(rows),
    sha: Buffer.alloc(rows * SHA_BYTES),
    synced: new Uint32Array(rows),
    hashes: new Uint32Array(rows),
    idShape: new Uint8Array(rows),
    idDigits: new Uint8Array(rows * ID_BYTES),
  };
}

/** `b` grown to `rows` rows, its content kept (the first block, below BLOCK_ROWS). */
function grownBlock(b: Block, rows: number): Block {
  const g = newBlock(rows);
  g.nums.set(b.nums);
  g.devs.set(b.devs);
  b.sha.copy(g.sha);
  g.synced.set(b.synced);
  g.hashes.set(b.hashes);
  g.idShape.set(b.idShape);
  g.idDigits.set(b.idDigits);
  return g;
}

/** What readers of the state may use (everything but the engine's writes through the store). */
export interface ReadonlyFileTable extends Iterable<[string, FileEntry]> {
  /** Files held. */
  readonly size: number;
  has(path: string): boolean;
  /** A fresh entry (changing it changes nothing), or undefined when the path has none. */
  get(path: string): FileEntry | undefined;
  /** The entry's stat fields (what the quick check compares), without its strings. */
  statOf(path: string): EntryStat | undefined;
  /** The entry's document id, without making the entry. */
  documentIdOf(path: string): string | undefined;
  /**
   * When the entry records document `documentId` with content `sha256`: the path and the
   * entry's size and mtime (what a listing's confirmation needs); else undefined. Compared in
   * the table's columns: no entry and none of its strings is made.
   */
  recording(path: string, documentId: string, sha256: string): { path: string; size: number; mtimeMs: number } | undefined;
  /** The entry's sha256, without making the entry. */
  sha256Of(path: string): string | undefined;
  /**
   * A new, empty set of this table's entries' paths (EntryMarks): what a pass vouched for or
   * confirmed, a byte a row.
   */
  marks(): EntryMarks;
  /** Paths, in row order (a loaded table: the file's order; a deleted path's row is reused). */
  keys(): IterableIterator<string>;
  /**
   * The path whose entry has a document id (the last in row order when several have it),
   * through an index of the table as it is now: build it, ask, drop it (no string of its own).
   */
  documentIndex(): (documentId: string) => string | undefined;
  entries(): IterableIterator<[string, FileEntry]>;
}

/** Part of a snapshot: one chunk of a table's rows, encoded when its turn comes (FileTable.pin). */
export interface PinnedChunk {
  readonly table: FileTable;
  readonly chunk: number;
  /** The rows of the snapshot end before this one. */
  readonly end: number;
  /** The chunk's rows as they were at the snapshot, taken when a row of it changed first. */
  copy: RowsData | undefined;
}

/** The value of a lowercase hex digit, or -1. */
function nibble(c: number): number {
  if (c >= 48 && c <= 57) return c - 48;
  if (c >= 97 && c <= 102) return c - 87;
  return -1;
}

/** The byte two lowercase hex digits make, by their two 7-bit codes; -1 for anything else. */
const HEX_PAIRS = ((): Int16Array => {
  const pairs = new Int16Array(1 << 14).fill(-1);
  HEX_CODES.forEach((hi, a) => HEX_CODES.forEach((lo, b) => (pairs[(hi << 7) | lo] = (a << 4) | b)));
  return pairs;
})();

/** The byte of the lowercase hex digits at `i` and `i + 1` of `s`, or -1 (one lookup: a million hashes load in ~0.1 s, not ~0.35). */
function hexByte(s: string, i: number): number {
  const a = s.charCodeAt(i);
  const b = s.charCodeAt(i + 1);
  return (a | b) > 127 ? -1 : HEX_PAIRS[(a << 7) | b]!;
}

/**
 * Packs the digits of `id` at `digits[at]` when `id` has the shape `codes` (its length, a hex
 * digit where the shape has DIGIT, the shape's own character elsewhere), two digits a byte
 * where they come in pairs; false when it has not (the digits written are then to be
 * cleared). What packId's general loop does for an id of that shape, in a third of its time.
 */
function packByShape(codes: readonly number[], id: string, digits: Uint8Array, at: number): boolean {
  if (codes.length !== id.length) return false;
  let k = 0;
  for (let i = 0; i < id.length; ) {
    const code = codes[i]!;
    if (code !== DIGIT) {
      if (id.charCodeAt(i) !== code) return false;
      i++;
    } else if ((k & 1) === 0 && codes[i + 1] === DIGIT) {
      const v = hexByte(id, i);
      if (v < 0) return false;
      digits[at + (k >> 1)] = v;
      i += 2;
      k += 2;
    } else {
      const v = nibble(id.charCodeAt(i));
      if (v < 0) return false;
      digits[at + (k >> 1)]! |= k & 1 ? v : v << 4;
      i++;
      k++;
    }
  }
  return true;
}

/** FNV-1a of the path's UTF-16 code units: its slot in the index. */
function hashOf(path: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < path.length; i++) {
    h ^= path.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/**
 * A set of a table's entries' paths, a byte a row (FileTable.marks): what a pass vouched for
 * (the walk) or confirmed (the listing). A restart's million paths then take a byte each,
 * not a set entry, and no string of their own: a Set of the table's paths would internalize
 * each one, and V8 keeps a string table entry for every internalized string while it lives
 * (~16 MB at a million; docs/performance.md, "Session 26"). Only an entry's path can be
 * marked, and its mark ends with the entry (FileTable.delete): every path marked is an entry
 * of the table, which PlanInput.vouched and Mirror.checkListing count on.
 */
export class EntryMarks implements Iterable<string> {
  private bits: Uint8Array;
  private count = 0;

  constructor(
    private readonly rowOf: (path: string) => number,
    private readonly pathAt: (row: number) => string,
    rows: number,
    /** The table whose entries these are: marks of one table are compared row by row (sharedWith). */
    private readonly table: object,
  ) {
    this.bits = new Uint8Array(rows);
  }

  get size(): number {
    return this.count;
  }

  has(path: string): boolean {
    const row = this.rowOf(path);
    return row >= 0 && this.bits[row] === 1;
  }

  /**
   * How many paths are in both this set and `other`, counted row by row when `other` holds
   * marks of the same table (no path made, hashed or looked up); undefined otherwise.
   */
  sharedWith(other: Iterable<string>): number | undefined {
    if (!(other instanceof EntryMarks) || other.table !== this.table) return undefined;
    const a = this.bits;
    const b = other.bits;
    const rows = Math.min(a.length, b.length);
    let n = 0;
    for (let row = 0; row < rows; row++) n += a[row]! & b[row]!;
    return n;
  }

  /** Marks the entry at `path`. A path the table holds no entry for is the caller's error. */
  add(path: string): this {
    const row = this.rowOf(path);
    if (row < 0) throw new Error(`EntryMarks.add: the table holds no entry for ${JSON.stringify(path)}`);
    if (row >= this.bits.length) {
      const grown = new Uint8Array(Math.max(row + 1, 2 * this.bits.length));
      grown.set(this.bits);
      this.bits = grown;
    }
    if (this.bits[row] === 0) {
      this.bits[row] = 1;
      this.count++;
    }
    return this;
  }

  delete(path: string): boolean {
    const row = this.rowOf(path);
    return row >= 0 && this.unmarkRow(row);
  }

  /** The row's entry is gone (FileTable.delete): its mark with it. */
  unmarkRow(row: number): boolean {
    if (this.bits[row] !== 1) return false;
    this.bits[row] = 0;
    this.count--;
    return true;
  }

  *[Symbol.iterator](): IterableIterator<string> {
    const bits = this.bits;
    for (let row = 0; row < bits.length; row++) if (bits[row] === 1) yield this.pathAt(row);
  }
}

/**
 * Document ids are packed by their shape: the id with each lowercase hex digit a
 * placeholder (`doc_` + 32 digits, a UUID's 8-4-4-4-12, a 24-digit ObjectId). A table holds
 * a handful of shapes; the digits of an id, at most ID_DIGITS of them, go in ID_BYTES bytes
 * (`doc_` + 32 digits has 34: the `d` and `c` are digits too).
 * An id of another form (more digits, a 256th shape) is kept as a string.
 */
const ID_DIGITS = 2 * ID_BYTES;
const MAX_SHAPES = 255;

export class FileTable implements ReadonlyFileTable {
  /** Row -> path (none: a free row). */
  private readonly paths = new PathColumn();
  /** The columns, BLOCK_ROWS rows a block (the first one smaller while the table is). */
  private readonly blocks: Block[];
  /**
   * The index: open addressing with linear probing, row + 1 per slot (0: empty), at most
   * half full, rehashed a part at a time from the rows' hashes. One array per part (PARTS).
   */
  private readonly index: Int32Array[] = [];
  /** Rows in each part of the index. */
  private readonly partCounts = new Int32Array(PARTS);
  private count = 0;
  /** Shape -> its char codes, DIGIT where a digit goes (index 0 unused). */
  private readonly shapes: number[][] = [[]];
  private readonly shapeIndex = new Map<string, number>();
  private oddIds: Map<number, string> | undefined;
  /** Rows whose sha256 is not 64 lowercase hex digits (older or hand-made states): kept as strings. */
  private oddSha: Map<number, string> | undefined;
  /**
   * The devices of the rows (index 0: unknown), each once: a table's files are on a few. A
   * device is kept once seen (at most ODD_DEV - 1 of them, then in oddDevs).
   */
  private readonly devices: number[] = [NaN];
  private readonly deviceIndex = new Map<number, number>();
  private oddDevs: Map<number, number> | undefined;
  private readonly syncedValues: string[] = [];
  /** Each distinct value's JSON (for the encoder). */
  private readonly syncedJson: string[] = [];
  private readonly syncedIndex = new Map<string, number>();
  /** Rows using each value: a value no row uses is forgotten and its index reused. */
  private readonly syncedRefs: number[] = [];
  private readonly syncedFree: number[] = [];
  private readonly free: number[] = [];
  /** Rows in use or free are below it. */
  private end = 0;
  private capacity: number;
  /** The chunks of a snapshot not yet encoded (see pin). */
  private pins: (PinnedChunk | undefined)[] | undefined;
  private pinned = 0;
  /** The marks made of this table (marks()) still in use: a deleted entry's mark ends with it. */
  private readonly liveMarks = new Set<WeakRef<EntryMarks>>();

  constructor(capacity = FIRST_CAPACITY) {
    const first = Math.min(Math.max(1, capacity), BLOCK_ROWS);
    this.blocks = [newBlock(first)];
    this.capacity = first;
    while (this.capacity < capacity) this.grow();
    let slots = 2;
    while (slots * PARTS < 2 * this.capacity) slots *= 2;
    for (let p = 0; p < PARTS; p++) this.index.push(new Int32Array(slots));
  }

  /** A table holding the entries of `record` (tests, tools). */
  static of(record: Readonly<Record<string, FileEntry>>): FileTable {
    const t = new FileTable();
    for (const path of Object.keys(record)) t.set(path, record[path] as FileEntry);
    return t;
  }

  get size(): number {
    return this.count;
  }

  has(path: string): boolean {
    return this.rowOf(path) >= 0;
  }

  get(path: string): FileEntry | undefined {
    const row = this.rowOf(path);
    return row < 0 ? undefined : this.entryAt(row);
  }

  statOf(path: string): EntryStat | undefined {
    const row = this.rowOf(path);
    return row < 0 ? undefined : this.statAt(row);
  }

  private statAt(row: number): EntryStat {
    const n = this.blocks[row >>> BLOCK_SHIFT]!.nums;
    const o = (row & BLOCK_MASK) * BLOCK_NUMS;
    const known = (v: number): number | undefined => (v === v ? v : undefined);
    return { size: n[o + SIZE]!, mtimeMs: n[o + MTIME]!, hashedAt: known(n[o + HASHED]!), ctimeMs: known(n[o + CTIME]!), dev: known(this.devAt(row)), ino: known(n[o + BLOCK_INO]!) };
  }

  documentIdOf(path: string): string | undefined {
    const row = this.rowOf(path);
    return row < 0 ? undefined : this.idAt(row);
  }

  sha256Of(path: string): string | undefined {
    const row = this.rowOf(path);
    return row < 0 ? undefined : this.shaAt(row);
  }

  recording(path: string, documentId: string, sha256: string): { path: string; size: number; mtimeMs: number } | undefined {
    const row = this.rowOf(path);
    if (row < 0 || !this.idIs(row, documentId) || !this.shaIs(row, sha256)) return undefined;
    const n = this.blocks[row >>> BLOCK_SHIFT]!.nums;
    const o = (row & BLOCK_MASK) * BLOCK_NUMS;
    return { path, size: n[o + SIZE]!, mtimeMs: n[o + MTIME]! };
  }

  marks(): EntryMarks {
    const m = new EntryMarks((path) => this.rowOf(path), (row) => this.paths.get(row)!, this.end, this);
    for (const ref of this.liveMarks) if (ref.deref() === undefined) this.liveMarks.delete(ref);
    this.liveMarks.add(new WeakRef(m));
    return m;
  }

  *keys(): IterableIterator<string> {
    const paths = this.paths;
    for (let row = 0; row < this.end; row++) {
      const path = paths.get(row);
      if (path !== undefined) yield path;
    }
  }

  documentIndex(): (documentId: string) => string | undefined {
    let size = 2;
    while (size < 2 * this.count) size *= 2;
    const slots = new Int32Array(size);
    const mask = size - 1;
    const idHashes = new Uint32Array(this.end);
    const paths = this.paths;
    for (let row = 0; row < this.end; row++) {
      if (!paths.has(row)) continue;
      const h = hashOf(this.idAt(row));
      idHashes[row] = h;
      let i = h & mask;
      while (slots[i] !== 0) i = (i + 1) & mask;
      slots[i] = row + 1;
    }
    return (documentId) => {
      const h = hashOf(documentId);
      let found: string | undefined;
      // Rows were put in row order: the last match along the probe is the last row.
      for (let i = h & mask; slots[i] !== 0; i = (i + 1) & mask) {
        const row = slots[i]! - 1;
        if (idHashes[row] === h && this.idAt(row) === documentId) found = paths.get(row);
      }
      return found;
    };
  }

  *entries(): IterableIterator<[string, FileEntry]> {
    const paths = this.paths;
    for (let row = 0; row < this.end; row++) {
      const path = paths.get(row);
      if (path !== undefined) yield [path, this.entryAt(row)];
    }
  }

  [Symbol.iterator](): IterableIterator<[string, FileEntry]> {
    return this.entries();
  }

  /** A plain object of the entries (JSON.stringify of a state; tests compare states with it). */
  toJSON(): Record<string, FileEntry> {
    const out = Object.create(null) as Record<string, FileEntry>;
    for (const [path, e] of this.entries()) out[path] = e;
    return out;
  }

  /** A copy (no snapshot pins). */
  clone(): FileTable {
    const t = new FileTable(this.capacity);
    for (const [path, e] of this.entries()) t.set(path, e);
    return t;
  }

  // ---- writes (applyOp, decode) -------------------------------------------------------

  /** Sets the entry of `path` (its fields are copied). */
  set(path: string, e: FileEntry): void {
    this.write(path, e.documentId, e.size, e.mtimeMs, e.sha256, e.syncedAt, e.hashedAt ?? NaN, e.ctimeMs ?? NaN, e.dev ?? NaN, e.ino ?? NaN);
  }

  /**
   * Sets the entry of `path` from the FileTuple at `t[at]` (validate.ts isFileTuple, checked
   * by the caller): a loaded line or a replayed op goes straight into the columns.
   */
  setTuple(path: string, t: readonly unknown[], at: number): void {
    const full = t.length === at + 9;
    const known = (i: number): number => (full ? ((t[at + i] as number | null) ?? NaN) : NaN);
    this.write(path, t[at] as string, t[at + 1] as number, t[at + 2] as number, t[at + 3] as string, t[at + 4] as string, known(5), known(6), known(7), known(8));
  }

  /** Removes the entry of `path`; false when it had none. */
  delete(path: string): boolean {
    const h = hashOf(path);
    const slots = this.index[h >>> PART_SHIFT]!;
    const slot = this.slotOf(path, h);
    const row = slots[slot]! - 1;
    if (row < 0) return false;
    this.beforeChange(row);
    this.unslot(slots, slot);
    this.partCounts[h >>> PART_SHIFT] = this.partCounts[h >>> PART_SHIFT]! - 1;
    this.count--;
    this.paths.clear(row);
    for (const ref of this.liveMarks) ref.deref()?.unmarkRow(row);
    this.oddIds?.delete(row);
    this.oddSha?.delete(row);
    this.oddDevs?.delete(row);
    this.releaseSynced(this.blocks[row >>> BLOCK_SHIFT]!.synced[row & BLOCK_MASK]!);
    this.free.push(row);
    return true;
  }

  private write(path: string, documentId: string, size: number, mtimeMs: number, sha256: string, syncedAt: string, hashedAt: number, ctimeMs: number, dev: number, ino: number): void {
    const h = hashOf(path);
    const part = h >>> PART_SHIFT;
    let slot = this.slotOf(path, h);
    let row = this.index[part]![slot]! - 1;
    const fresh = row < 0;
    if (fresh) {
      const reused = this.free.pop();
      if (reused === undefined) {
        if (this.end === this.capacity) this.grow();
        row = this.end++;
      } else {
        row = reused;
        this.beforeChange(row);
      }
      this.paths.set(row, path);
      const b = this.blocks[row >>> BLOCK_SHIFT]!;
      b.hashes[row & BLOCK_MASK] = h;
      if (2 * (this.partCounts[part]! + 1) > this.index[part]!.length) {
        this.rehash(part);
        slot = this.slotOf(path, h);
      }
      this.index[part]![slot] = row + 1;
      this.partCounts[part] = this.partCounts[part]! + 1;
      this.count++;
    } else {
      this.beforeChange(row);
    }
    this.writeId(row, documentId);
    const synced = this.blocks[row >>> BLOCK_SHIFT]!.synced;
    const held = this.holdSynced(syncedAt);
    if (!fresh) this.releaseSynced(synced[row & BLOCK_MASK]!);
    synced[row & BLOCK_MASK] = held;
    this.writeNums(row, size, mtimeMs, hashedAt, ctimeMs, dev, ino);
    this.writeSha(row, sha256);
  }

  private writeNums(row: number, size: number, mtimeMs: number, hashedAt: number, ctimeMs: number, dev: number, ino: number): void {
    const o = (row & BLOCK_MASK) * BLOCK_NUMS;
    const b = this.blocks[row >>> BLOCK_SHIFT]!;
    const n = b.nums;
    n[o + SIZE] = size;
    n[o + MTIME] = mtimeMs;
    n[o + HASHED] = hashedAt;
    n[o + CTIME] = ctimeMs;
    n[o + BLOCK_INO] = ino;
    let d = 0;
    if (dev === dev) d = Object.is(dev, -0) ? ODD_DEV : (this.deviceIndex.get(dev) ?? this.addDevice(dev));
    b.devs[row & BLOCK_MASK] = d;
    if (d === ODD_DEV) (this.oddDevs ??= new Map()).set(row, dev);
    else this.oddDevs?.delete(row);
  }

  /** The index of a device not seen before, or ODD_DEV once the column's indexes are taken. */
  private addDevice(dev: number): number {
    if (this.devices.length >= ODD_DEV) return ODD_DEV;
    this.deviceIndex.set(dev, this.devices.length);
    return this.devices.push(dev) - 1;
  }

  /** The row's device (NaN: unknown). */
  private devAt(row: number): number {
    const d = this.blocks[row >>> BLOCK_SHIFT]!.devs[row & BLOCK_MASK]!;
    return d === ODD_DEV ? this.oddDevs!.get(row)! : this.devices[d]!;
  }

  private hashAt(row: number): number {
    return this.blocks[row >>> BLOCK_SHIFT]!.hashes[row & BLOCK_MASK]!;
  }

  /** The row of `path`, or -1. */
  private rowOf(path: string): number {
    const h = hashOf(path);
    return this.index[h >>> PART_SHIFT]![this.slotOf(path, h)]! - 1;
  }

  /** The slot holding `path`'s row in its part of the index, or the empty slot where it would go. */
  private slotOf(path: string, h: number): number {
    const slots = this.index[h >>> PART_SHIFT]!;
    const mask = slots.length - 1;
    for (let i = h & mask; ; i = (i + 1) & mask) {
      const r = slots[i]!;
      if (r === 0) return i;
      if (this.hashAt(r - 1) === h && this.paths.equals(r - 1, path)) return i;
    }
  }

  /**
   * Empties slot `i` of a part of the index, moving back the rows after it that probed past
   * it (linear probing without tombstones).
   */
  private unslot(slots: Int32Array, i: number): void {
    const mask = slots.length - 1;
    slots[i] = 0;
    for (let j = (i + 1) & mask; ; j = (j + 1) & mask) {
      const r = slots[j]!;
      if (r === 0) return;
      const home = this.hashAt(r - 1) & mask;
      // The row at j may move to i when i lies on its way from home to j (cyclically).
      if (i <= j ? home <= i || home > j : home <= i && home > j) {
        slots[i] = r;
        slots[j] = 0;
        i = j;
      }
    }
  }

  /** Part `part` of the index, twice as large. */
  private rehash(part: number): void {
    const old = this.index[part]!;
    const slots = new Int32Array(2 * old.length);
    const mask = slots.length - 1;
    for (const r of old) {
      if (r === 0) continue;
      let i = this.hashAt(r - 1) & mask;
      while (slots[i] !== 0) i = (i + 1) & mask;
      slots[i] = r;
    }
    this.index[part] = slots;
  }

  private writeId(row: number, id: string): void {
    const shape = this.packId(row, id);
    this.blocks[row >>> BLOCK_SHIFT]!.idShape[row & BLOCK_MASK] = shape;
    if (shape !== 0) this.oddIds?.delete(row);
    else (this.oddIds ??= new Map()).set(row, id);
  }

  /** Writes the digits of `id` in the row and returns its shape, or 0 when it is not packed. */
  private packId(row: number, id: string): number {
    const digits = this.blocks[row >>> BLOCK_SHIFT]!.idDigits;
    const at = (row & BLOCK_MASK) * ID_BYTES;
    digits.fill(0, at, at + ID_BYTES);
    // Most ids of a table share one shape: the row before's is tried first.
    const before = row === 0 ? 0 : row - 1;
    const shape = this.blocks[before >>> BLOCK_SHIFT]!.idShape[before & BLOCK_MASK]!;
    if (shape !== 0) {
      if (packByShape(this.shapes[shape]!, id, digits, at)) return shape;
      digits.fill(0, at, at + ID_BYTES);
    }
    let k = 0;
    for (let i = 0; i < id.length; i++) {
      const c = id.charCodeAt(i);
      const v = nibble(c);
      if (v < 0) {
        if (c === DIGIT) return 0;
        continue;
      }
      if (k === ID_DIGITS) return 0;
      digits[at + (k >> 1)]! |= k & 1 ? v : v << 4;
      k++;
    }
    const key = Array.from(id, (ch) => (nibble(ch.charCodeAt(0)) < 0 ? ch : '\uffff')).join('');
    const known = this.shapeIndex.get(key);
    if (known !== undefined) return known;
    if (this.shapes.length > MAX_SHAPES) return 0;
    const index = this.shapes.length;
    this.shapes.push([...key].map((ch) => ch.charCodeAt(0)));
    this.shapeIndex.set(key, index);
    return index;
  }

  private idAt(row: number): string {
    const block = this.blocks[row >>> BLOCK_SHIFT]!;
    const shape = block.idShape[row & BLOCK_MASK]!;
    if (shape === 0) return this.oddIds?.get(row) as string;
    return idFrom(this.shapes[shape]!, block.idDigits, (row & BLOCK_MASK) * ID_BYTES);
  }

  /** idAt(row) === id, read in place. */
  private idIs(row: number, id: string): boolean {
    const block = this.blocks[row >>> BLOCK_SHIFT]!;
    const shape = block.idShape[row & BLOCK_MASK]!;
    if (shape === 0) return this.oddIds?.get(row) === id;
    return idIs(this.shapes[shape]!, block.idDigits, (row & BLOCK_MASK) * ID_BYTES, id);
  }

  /** shaAt(row) === sha256, read in place. */
  private shaIs(row: number, sha256: string): boolean {
    const odd = this.oddSha?.get(row);
    if (odd !== undefined) return odd === sha256;
    if (sha256.length !== 2 * SHA_BYTES) return false;
    const sha = this.blocks[row >>> BLOCK_SHIFT]!.sha;
    const at = (row & BLOCK_MASK) * SHA_BYTES;
    for (let i = 0; i < SHA_BYTES; i++) {
      const b = sha[at + i]!;
      if (sha256.charCodeAt(2 * i) !== HEX_CODES[b >> 4] || sha256.charCodeAt(2 * i + 1) !== HEX_CODES[b & 15]) return false;
    }
    return true;
  }

  private writeSha(row: number, sha256: string): void {
    const at = (row & BLOCK_MASK) * SHA_BYTES;
    if (sha256.length === 2 * SHA_BYTES) {
      const sha = this.blocks[row >>> BLOCK_SHIFT]!.sha;
      let i = 0;
      for (; i < SHA_BYTES; i++) {
        const v = hexByte(sha256, 2 * i);
        if (v < 0) break;
        sha[at + i] = v;
      }
      if (i === SHA_BYTES) {
        this.oddSha?.delete(row);
        return;
      }
    }
    (this.oddSha ??= new Map()).set(row, sha256);
  }

  private shaAt(row: number): string {
    const odd = this.oddSha?.get(row);
    if (odd !== undefined) return odd;
    const at = (row & BLOCK_MASK) * SHA_BYTES;
    return this.blocks[row >>> BLOCK_SHIFT]!.sha.toString('hex', at, at + SHA_BYTES);
  }

  private holdSynced(s: string): number {
    let i = this.syncedIndex.get(s);
    if (i === undefined) {
      i = this.syncedFree.pop();
      if (i === undefined) {
        i = this.syncedValues.length;
        this.syncedValues.push(s);
        this.syncedJson.push(JSON.stringify(s));
        this.syncedRefs.push(0);
      } else {
        this.syncedValues[i] = s;
        this.syncedJson[i] = JSON.stringify(s);
      }
      this.syncedIndex.set(s, i);
    }
    (this.syncedRefs[i] as number)++;
    return i;
  }

  private releaseSynced(i: number): void {
    const refs = (this.syncedRefs[i] as number) - 1;
    this.syncedRefs[i] = refs;
    if (refs > 0) return;
    this.syncedIndex.delete(this.syncedValues[i] as string);
    this.syncedValues[i] = '';
    this.syncedJson[i] = '';
    this.syncedFree.push(i);
  }

  /** Room for more rows: the first block doubles up to BLOCK_ROWS, then a block is added. */
  private grow(): void {
    if (this.capacity < BLOCK_ROWS) {
      this.capacity = Math.min(2 * this.capacity, BLOCK_ROWS);
      this.blocks[0] = grownBlock(this.blocks[0]!, this.capacity);
    } else {
      this.blocks.push(newBlock(BLOCK_ROWS));
      this.capacity += BLOCK_ROWS;
    }
  }

  private entryAt(row: number): FileEntry {
    const block = this.blocks[row >>> BLOCK_SHIFT]!;
    const n = block.nums;
    const o = (row & BLOCK_MASK) * BLOCK_NUMS;
    const documentId = this.idAt(row);
    const size = n[o + SIZE] as number;
    const mtimeMs = n[o + MTIME] as number;
    const sha256 = this.shaAt(row);
    const syncedAt = this.syncedValues[block.synced[row & BLOCK_MASK]!] as string;
    const hashedAt = n[o + HASHED] as number;
    const ctimeMs = n[o + CTIME] as number;
    const dev = this.devAt(row);
    const ino = n[o + BLOCK_INO] as number;
    // What a pass records: one literal of nine fields (one shape for the readers' hot loops).
    if (hashedAt === hashedAt && ctimeMs === ctimeMs && dev === dev && ino === ino) {
      return { documentId, size, mtimeMs, sha256, syncedAt, hashedAt, ctimeMs, dev, ino };
    }
    const e: FileEntry = { documentId, size, mtimeMs, sha256, syncedAt };
    if (hashedAt === hashedAt) e.hashedAt = hashedAt;
    if (ctimeMs === ctimeMs) e.ctimeMs = ctimeMs;
    if (dev === dev) e.dev = dev;
    if (ino === ino) e.ino = ino;
    return e;
  }

  // ---- snapshots (encoder.ts) ---------------------------------------------------------

  /**
   * Pins every chunk of rows for a snapshot: until a chunk is encoded (encodePinned) or
   * released, a change to one of its rows first copies the chunk's lines as they were.
   * One snapshot at a time: a new pin replaces the pins of the previous one.
   */
  pin(): PinnedChunk[] {
    const chunks = (this.end + CHUNK_ROWS - 1) >>> CHUNK_SHIFT;
    const pins: (PinnedChunk | undefined)[] = new Array<PinnedChunk | undefined>(chunks);
    const out: PinnedChunk[] = [];
    if (this.count > 0) {
      for (let c = 0; c < chunks; c++) {
        const p: PinnedChunk = { table: this, chunk: c, end: this.end, copy: undefined };
        pins[c] = p;
        out.push(p);
      }
    }
    this.pins = out.length ? pins : undefined;
    this.pinned = out.length;
    return out;
  }

  /** The lines of a pinned chunk as they were at the snapshot; unpins it. */
  encodePinned(p: PinnedChunk): EncodedRows {
    return encodeRows(this.takePinned(p));
  }

  /** The rows of a pinned chunk as they were at the snapshot (to encode elsewhere); unpins it. */
  takePinned(p: PinnedChunk): RowsData {
    const out = p.copy ?? this.rowsAt(p.chunk << CHUNK_SHIFT, Math.min((p.chunk + 1) << CHUNK_SHIFT, p.end));
    this.unpin(p);
    return out;
  }

  /** Drops the pin of a chunk not encoded (a snapshot that failed or never ran). */
  unpin(p: PinnedChunk): void {
    const pins = this.pins;
    if (pins === undefined || pins[p.chunk] !== p) return;
    pins[p.chunk] = undefined;
    if (--this.pinned === 0) this.pins = undefined;
  }

  /** Row `row` is about to change: a pinned chunk holding it keeps its rows first. */
  private beforeChange(row: number): void {
    const pins = this.pins;
    if (pins === undefined) return;
    const p = pins[row >>> CHUNK_SHIFT];
    if (p === undefined || p.copy !== undefined || row >= p.end) return;
    p.copy = this.rowsAt(p.chunk << CHUNK_SHIFT, Math.min((p.chunk + 1) << CHUNK_SHIFT, p.end));
  }

  /** A copy of the rows in [from, to) (within one chunk, so within one block). */
  private rowsAt(from: number, to: number): RowsData {
    const block = this.blocks[from >>> BLOCK_SHIFT]!;
    const a = from & BLOCK_MASK;
    const b = a + (to - from);
    const paths: (string | undefined)[] = [];
    for (let row = from; row < to; row++) paths.push(this.paths.get(row));
    const synced = new Uint32Array(paths.length);
    const syncedJson: string[] = [];
    const syncedLocal = new Map<number, number>();
    const idShape = new Uint8Array(paths.length);
    const shapes: number[][] = [[]];
    const shapeLocal: number[] = [];
    let oddIds: Map<number, string> | undefined;
    let oddSha: Map<number, string> | undefined;
    // A snapshot row's numbers (row-lines.ts NUMS), the device read from the table's.
    const nums = new Float64Array(paths.length * NUMS);
    for (let i = 0; i < paths.length; i++) {
      if (paths[i] === undefined) continue;
      const row = from + i;
      const o = (a + i) * BLOCK_NUMS;
      const t = i * NUMS;
      nums[t + SIZE] = block.nums[o + SIZE]!;
      nums[t + MTIME] = block.nums[o + MTIME]!;
      nums[t + HASHED] = block.nums[o + HASHED]!;
      nums[t + CTIME] = block.nums[o + CTIME]!;
      nums[t + DEV] = this.devAt(row);
      nums[t + INO] = block.nums[o + BLOCK_INO]!;
      const s = block.synced[a + i]!;
      let l = syncedLocal.get(s);
      if (l === undefined) {
        l = syncedJson.length;
        syncedJson.push(this.syncedJson[s]!);
        syncedLocal.set(s, l);
      }
      synced[i] = l;
      const shape = block.idShape[a + i]!;
      if (shape === 0) (oddIds ??= new Map()).set(i, this.oddIds?.get(row) as string);
      else idShape[i] = shapeLocal[shape] ??= shapes.push(this.shapes[shape]!) - 1;
      const odd = this.oddSha?.get(row);
      if (odd !== undefined) (oddSha ??= new Map()).set(i, odd);
    }
    // Copies with buffers of their own: a view would carry its whole block to a worker.
    return {
      paths,
      nums,
      sha: new Uint8Array(block.sha.subarray(a * SHA_BYTES, b * SHA_BYTES)),
      oddSha,
      synced,
      syncedJson,
      idShape,
      idDigits: block.idDigits.slice(a * ID_BYTES, b * ID_BYTES),
      shapes,
      oddIds,
    };
  }
}

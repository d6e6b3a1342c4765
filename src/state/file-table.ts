/**
 * The files of a mapping in compact form (issue 16, docs/performance.md "A million files").
 *
 * One row per file, in columns: the numbers of a FileEntry in one Float64Array (NaN for a
 * stat field that is unknown), the sha256 as 32 raw bytes, `syncedAt` as the index of one of
 * a few distinct strings (the entries of a pass were synced within seconds), the document id
 * as a string. A `Map` finds a path's row; a deleted row goes to a free list and is reused.
 * Held as a record of nine-field objects the state cost ~400 bytes of heap per file (each
 * double boxed, the hash an 80-byte string, a dictionary-mode object of a million keys).
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
import type { FileEntry } from './schema.js';

/** Numbers per row, in this order. */
const NUMS = 6;
const SIZE = 0;
const MTIME = 1;
const HASHED = 2;
const CTIME = 3;
const DEV = 4;
const INO = 5;
const SHA_BYTES = 32;
const CHUNK_SHIFT = 10;
/** Rows per chunk: the unit of a snapshot's copy-on-write and of its encoding slices. */
export const CHUNK_ROWS = 1 << CHUNK_SHIFT;
const FIRST_CAPACITY = 8;

/** What readers of the state may use (everything but the engine's writes through the store). */
export interface ReadonlyFileTable extends Iterable<[string, FileEntry]> {
  /** Files held. */
  readonly size: number;
  has(path: string): boolean;
  /** A fresh entry (changing it changes nothing), or undefined when the path has none. */
  get(path: string): FileEntry | undefined;
  /** The entry's document id, without making the entry. */
  documentIdOf(path: string): string | undefined;
  /** The entry's sha256, without making the entry. */
  sha256Of(path: string): string | undefined;
  /** Paths, in the order they were first set (a path deleted then set again comes last). */
  keys(): IterableIterator<string>;
  entries(): IterableIterator<[string, FileEntry]>;
}

/** Part of a snapshot: one chunk of a table's rows, encoded when its turn comes (FileTable.pin). */
export interface PinnedChunk {
  readonly table: FileTable;
  readonly chunk: number;
  /** The rows of the snapshot end before this one. */
  readonly end: number;
  /** The chunk's lines as they were at the snapshot, taken when a row of it changed first. */
  copy: EncodedRows | undefined;
}

export interface EncodedRows {
  text: string;
  lines: number;
}

/** The value of a lowercase hex digit, or -1. */
function nibble(c: number): number {
  if (c >= 48 && c <= 57) return c - 48;
  if (c >= 97 && c <= 102) return c - 87;
  return -1;
}

export class FileTable implements ReadonlyFileTable {
  private readonly rows = new Map<string, number>();
  /** Row -> path (undefined: a free row). */
  private paths: (string | undefined)[] = [];
  private documentIds: string[] = [];
  private nums: Float64Array;
  /** Row -> sha256, 32 bytes (a Buffer for its hex encoding). */
  private sha: Buffer;
  /** Rows whose sha256 is not 64 lowercase hex digits (older or hand-made states): kept as strings. */
  private oddSha: Map<number, string> | undefined;
  /** Row -> index into syncedValues. */
  private synced: Uint32Array;
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

  constructor(capacity = FIRST_CAPACITY) {
    this.capacity = Math.max(1, capacity);
    this.nums = new Float64Array(this.capacity * NUMS);
    this.sha = Buffer.alloc(this.capacity * SHA_BYTES);
    this.synced = new Uint32Array(this.capacity);
  }

  /** A table holding the entries of `record` (tests, tools). */
  static of(record: Readonly<Record<string, FileEntry>>): FileTable {
    const t = new FileTable();
    for (const path of Object.keys(record)) t.set(path, record[path] as FileEntry);
    return t;
  }

  get size(): number {
    return this.rows.size;
  }

  has(path: string): boolean {
    return this.rows.has(path);
  }

  get(path: string): FileEntry | undefined {
    const row = this.rows.get(path);
    return row === undefined ? undefined : this.entryAt(row);
  }

  documentIdOf(path: string): string | undefined {
    const row = this.rows.get(path);
    return row === undefined ? undefined : this.documentIds[row];
  }

  sha256Of(path: string): string | undefined {
    const row = this.rows.get(path);
    return row === undefined ? undefined : this.shaAt(row);
  }

  keys(): IterableIterator<string> {
    return this.rows.keys();
  }

  *entries(): IterableIterator<[string, FileEntry]> {
    for (const [path, row] of this.rows) yield [path, this.entryAt(row)];
  }

  [Symbol.iterator](): IterableIterator<[string, FileEntry]> {
    return this.entries();
  }

  /** A plain object of the entries (JSON.stringify of a state; tests compare states with it). */
  toJSON(): Record<string, FileEntry> {
    const out = Object.create(null) as Record<string, FileEntry>;
    for (const [path, row] of this.rows) out[path] = this.entryAt(row);
    return out;
  }

  /** A copy (no snapshot pins). */
  clone(): FileTable {
    const t = new FileTable(this.capacity);
    for (const [path, row] of this.rows) t.set(path, this.entryAt(row));
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
    this.write(
      path,
      t[at] as string,
      t[at + 1] as number,
      t[at + 2] as number,
      t[at + 3] as string,
      t[at + 4] as string,
      full ? ((t[at + 5] as number | null) ?? NaN) : NaN,
      full ? ((t[at + 6] as number | null) ?? NaN) : NaN,
      full ? ((t[at + 7] as number | null) ?? NaN) : NaN,
      full ? ((t[at + 8] as number | null) ?? NaN) : NaN,
    );
  }

  /** Removes the entry of `path`; false when it had none. */
  delete(path: string): boolean {
    const row = this.rows.get(path);
    if (row === undefined) return false;
    this.beforeChange(row);
    this.rows.delete(path);
    this.paths[row] = undefined;
    this.documentIds[row] = '';
    this.oddSha?.delete(row);
    this.releaseSynced(this.synced[row] as number);
    this.free.push(row);
    return true;
  }

  private write(path: string, documentId: string, size: number, mtimeMs: number, sha256: string, syncedAt: string, hashedAt: number, ctimeMs: number, dev: number, ino: number): void {
    let row = this.rows.get(path);
    if (row === undefined) {
      row = this.free.pop();
      if (row === undefined) {
        if (this.end === this.capacity) this.grow();
        row = this.end++;
        this.paths.push(path);
        this.documentIds.push(documentId);
      } else {
        this.beforeChange(row);
        this.paths[row] = path;
        this.documentIds[row] = documentId;
      }
      this.rows.set(path, row);
    } else {
      this.beforeChange(row);
      this.documentIds[row] = documentId;
      const held = this.holdSynced(syncedAt);
      this.releaseSynced(this.synced[row] as number);
      this.synced[row] = held;
      this.writeNums(row, size, mtimeMs, hashedAt, ctimeMs, dev, ino);
      this.writeSha(row, sha256);
      return;
    }
    this.synced[row] = this.holdSynced(syncedAt);
    this.writeNums(row, size, mtimeMs, hashedAt, ctimeMs, dev, ino);
    this.writeSha(row, sha256);
  }

  private writeNums(row: number, size: number, mtimeMs: number, hashedAt: number, ctimeMs: number, dev: number, ino: number): void {
    const o = row * NUMS;
    const n = this.nums;
    n[o + SIZE] = size;
    n[o + MTIME] = mtimeMs;
    n[o + HASHED] = hashedAt;
    n[o + CTIME] = ctimeMs;
    n[o + DEV] = dev;
    n[o + INO] = ino;
  }

  private writeSha(row: number, sha256: string): void {
    const at = row * SHA_BYTES;
    if (sha256.length === 2 * SHA_BYTES) {
      const sha = this.sha;
      let i = 0;
      for (; i < SHA_BYTES; i++) {
        const hi = nibble(sha256.charCodeAt(2 * i));
        const lo = nibble(sha256.charCodeAt(2 * i + 1));
        if (hi < 0 || lo < 0) break;
        sha[at + i] = (hi << 4) | lo;
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
    const at = row * SHA_BYTES;
    return this.sha.toString('hex', at, at + SHA_BYTES);
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

  private grow(): void {
    const capacity = this.capacity * 2;
    const nums = new Float64Array(capacity * NUMS);
    nums.set(this.nums);
    this.nums = nums;
    const sha = Buffer.alloc(capacity * SHA_BYTES);
    this.sha.copy(sha);
    this.sha = sha;
    const synced = new Uint32Array(capacity);
    synced.set(this.synced);
    this.synced = synced;
    this.capacity = capacity;
  }

  private entryAt(row: number): FileEntry {
    const n = this.nums;
    const o = row * NUMS;
    const documentId = this.documentIds[row] as string;
    const size = n[o + SIZE] as number;
    const mtimeMs = n[o + MTIME] as number;
    const sha256 = this.shaAt(row);
    const syncedAt = this.syncedValues[this.synced[row] as number] as string;
    const hashedAt = n[o + HASHED] as number;
    const ctimeMs = n[o + CTIME] as number;
    const dev = n[o + DEV] as number;
    const ino = n[o + INO] as number;
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
    if (this.rows.size > 0) {
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
    const out = p.copy ?? this.encodeRows(p.chunk << CHUNK_SHIFT, Math.min((p.chunk + 1) << CHUNK_SHIFT, p.end));
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

  /** Row `row` is about to change: a pinned chunk holding it keeps its lines first. */
  private beforeChange(row: number): void {
    const pins = this.pins;
    if (pins === undefined) return;
    const p = pins[row >>> CHUNK_SHIFT];
    if (p === undefined || p.copy !== undefined || row >= p.end) return;
    p.copy = this.encodeRows(p.chunk << CHUNK_SHIFT, Math.min((p.chunk + 1) << CHUNK_SHIFT, p.end));
  }

  /** The snapshot lines of the live rows in [from, to). */
  private encodeRows(from: number, to: number): EncodedRows {
    let text = '';
    let lines = 0;
    for (let row = from; row < to; row++) {
      const path = this.paths[row];
      if (path === undefined) continue;
      text += this.lineAt(row, path);
      lines++;
    }
    return { text, lines };
  }

  /**
   * A row's snapshot line, `[path, …FileTuple]` and a newline: what
   * `JSON.stringify([path, ...entryToTuple(entry)])` makes of its entry (JSON writes a
   * finite number as String does; the stat fields are null when unknown, and all four are
   * left out when none is known).
   */
  lineAt(row: number, path: string): string {
    const n = this.nums;
    const o = row * NUMS;
    const odd = this.oddSha?.get(row);
    const sha = odd === undefined ? `"${this.sha.toString('hex', row * SHA_BYTES, row * SHA_BYTES + SHA_BYTES)}"` : JSON.stringify(odd);
    const head = `[${JSON.stringify(path)},${JSON.stringify(this.documentIds[row])},${num(n[o + SIZE] as number)},${num(n[o + MTIME] as number)},${sha},${this.syncedJson[this.synced[row] as number] as string}`;
    const hashedAt = n[o + HASHED] as number;
    const ctimeMs = n[o + CTIME] as number;
    const dev = n[o + DEV] as number;
    const ino = n[o + INO] as number;
    if (hashedAt !== hashedAt && ctimeMs !== ctimeMs && dev !== dev && ino !== ino) return `${head}]\n`;
    return `${head},${opt(hashedAt)},${opt(ctimeMs)},${opt(dev)},${opt(ino)}]\n`;
  }
}

/** A finite number as JSON writes it (-0 as 0). */
function num(x: number): string {
  return x === 0 ? '0' : String(x);
}

function opt(x: number): string {
  return x === x ? num(x) : 'null';
}

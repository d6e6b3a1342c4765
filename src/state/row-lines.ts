/**
 * A chunk of a files table's rows in a compact form, and its snapshot lines (encoder.ts).
 *
 * The table (file-table.ts) copies a chunk out as `RowsData` (a few array copies: cheap), and
 * `encodeRows` turns it into lines: the number formatting, JSON quoting and hex that make
 * most of a snapshot's CPU. `encodeRows` runs in the thread that writes the snapshot, or in
 * the snapshot's worker (snapshot-worker.ts): a `RowsData` is cloned to it as it is.
 */

/** Numbers per row, in this order: size, mtimeMs, hashedAt, ctimeMs, dev, ino (NaN: unknown). */
export const NUMS = 6;
export const SIZE = 0;
export const MTIME = 1;
export const HASHED = 2;
export const CTIME = 3;
export const DEV = 4;
export const INO = 5;
export const SHA_BYTES = 32;
/** Bytes of a packed document id's digits (file-table.ts packId): two digits a byte. */
export const ID_BYTES = 18;
/** Stands for a digit in an id's shape (an id holding this character is kept as a string). */
export const DIGIT = 0xffff;
/** Char codes of the lowercase hex digits. */
export const HEX_CODES = [...'0123456789abcdef'].map((c) => c.charCodeAt(0));

/** Consecutive rows of a table, free rows included (their path undefined). */
export interface RowsData {
  paths: (string | undefined)[];
  /** The shape of each row's document id, an index into `shapes` (0: the id is in `oddIds`). */
  idShape: Uint8Array;
  /** ID_BYTES of digits per row. */
  idDigits: Uint8Array;
  /** The char codes of each shape of the chunk, DIGIT where a digit goes (index 0 unused). */
  shapes: number[][];
  oddIds: Map<number, string> | undefined;
  /** NUMS per row. */
  nums: Float64Array;
  /** SHA_BYTES per row. */
  sha: Uint8Array;
  /** Rows whose sha256 is not 64 lowercase hex digits, by index in this chunk. */
  oddSha: Map<number, string> | undefined;
  /** Index into `syncedJson` per row. */
  synced: Uint32Array;
  /** The JSON of each distinct syncedAt of the chunk. */
  syncedJson: string[];
}

export interface EncodedRows {
  text: string;
  lines: number;
}

/** The snapshot lines of the live rows, in order. */
export function encodeRows(d: RowsData): EncodedRows {
  let text = '';
  let lines = 0;
  const hex = Buffer.from(d.sha.buffer, d.sha.byteOffset, d.sha.byteLength);
  for (let i = 0; i < d.paths.length; i++) {
    const path = d.paths[i];
    if (path === undefined) continue;
    const o = i * NUMS;
    const n = d.nums;
    const odd = d.oddSha?.get(i);
    const sha = odd === undefined ? `"${hex.toString('hex', i * SHA_BYTES, i * SHA_BYTES + SHA_BYTES)}"` : JSON.stringify(odd);
    const shape = d.idShape[i] as number;
    const id = shape === 0 ? (d.oddIds?.get(i) as string) : idFrom(d.shapes[shape] as number[], d.idDigits, i * ID_BYTES);
    text += lineOf(path, id, n[o + SIZE] as number, n[o + MTIME] as number, sha, d.syncedJson[d.synced[i] as number] as string, n, o);
    lines++;
  }
  return { text, lines };
}

/** The document id of shape `codes` whose digits start at `digits[at]`. */
export function idFrom(codes: readonly number[], digits: Uint8Array, at: number): string {
  const out = new Array<number>(codes.length);
  let k = 0;
  for (let i = 0; i < codes.length; i++) {
    const c = codes[i] as number;
    if (c !== DIGIT) {
      out[i] = c;
      continue;
    }
    const b = digits[at + (k >> 1)] as number;
    out[i] = HEX_CODES[k & 1 ? b & 15 : b >> 4] as number;
    k++;
  }
  return String.fromCharCode(...out);
}

/** idFrom(codes, digits, at) === id, read in place (no string made). */
export function idIs(codes: readonly number[], digits: Uint8Array, at: number, id: string): boolean {
  if (codes.length !== id.length) return false;
  let k = 0;
  for (let i = 0; i < codes.length; i++) {
    const c = codes[i] as number;
    if (c !== DIGIT) {
      if (id.charCodeAt(i) !== c) return false;
      continue;
    }
    const b = digits[at + (k >> 1)] as number;
    if (id.charCodeAt(i) !== HEX_CODES[k & 1 ? b & 15 : b >> 4]) return false;
    k++;
  }
  return true;
}

/**
 * A row's snapshot line, `[path, …FileTuple]` and a newline: what
 * `JSON.stringify([path, ...entryToTuple(entry)])` makes of its entry (JSON writes a finite
 * number as String does; the stat fields are null when unknown, and all four are left out
 * when none is known).
 */
function lineOf(path: string, id: string, size: number, mtimeMs: number, sha: string, syncedJson: string, n: Float64Array, o: number): string {
  const head = `[${JSON.stringify(path)},${JSON.stringify(id)},${num(size)},${num(mtimeMs)},${sha},${syncedJson}`;
  const hashedAt = n[o + HASHED] as number;
  const ctimeMs = n[o + CTIME] as number;
  const dev = n[o + DEV] as number;
  const ino = n[o + INO] as number;
  if (hashedAt !== hashedAt && ctimeMs !== ctimeMs && dev !== dev && ino !== ino) return `${head}]\n`;
  return `${head},${opt(hashedAt)},${opt(ctimeMs)},${opt(dev)},${opt(ino)}]\n`;
}

/** A finite number as JSON writes it (-0 as 0). */
function num(x: number): string {
  return x === 0 ? '0' : String(x);
}

function opt(x: number): string {
  return x === x ? num(x) : 'null';
}

/**
 * A file table's paths, a row each, as UTF-8 bytes in pages (FileTable). A million paths of
 * ~26 characters take ~32 MB so (the bytes, and 6 a row for where they are), where a
 * million strings took ~56 (docs/performance.md, "Session 27"); a path is made a string
 * again only when it is read (`get`), and a lookup compares the bytes in place (`equals`).
 *
 * A path is never split across pages. A row's bytes are left behind when it is cleared;
 * once more bytes are left behind than are in use (and at least a page), the paths in use
 * are copied to new pages. A path that UTF-8 cannot carry as it is (a lone surrogate) or
 * that is empty or too long for a row's length is kept as a string (`odd`).
 */

/** Bytes a page: a path's location is its page and offset in 32 bits. */
const PAGE_SHIFT = 20;
const PAGE_BYTES = 1 << PAGE_SHIFT;
const OFFSET_MASK = PAGE_BYTES - 1;
/** Pages a column can address (4 GiB of paths). */
const MAX_PAGES = 2 ** (32 - PAGE_SHIFT);
/** A row's length: 0 for a row without a path, ODD for a path kept as a string. */
const ODD = 0xffff;
const FIRST_ROWS = 8;

/** Bytes of a path that is not ASCII, encoded to compare it (`equals`). */
let scratch = Buffer.allocUnsafe(256);

export class PathColumn {
  /** Page << PAGE_SHIFT | offset, by row. */
  private at = new Uint32Array(FIRST_ROWS);
  /** Bytes, by row (0: none, ODD: in `odd`). */
  private lens = new Uint16Array(FIRST_ROWS);
  private readonly odd = new Map<number, string>();
  private pages: Buffer[] = [];
  /** Bytes used in the last page. */
  private fill = PAGE_BYTES;
  private used = 0;
  private left = 0;

  has(row: number): boolean {
    return row < this.lens.length && this.lens[row] !== 0;
  }

  get(row: number): string | undefined {
    if (row >= this.lens.length) return undefined;
    const len = this.lens[row]!;
    if (len === 0) return undefined;
    if (len === ODD) return this.odd.get(row);
    const at = this.at[row]!;
    const from = at & OFFSET_MASK;
    return this.pages[at >>> PAGE_SHIFT]!.toString('utf8', from, from + len);
  }

  /** get(row) === path, compared in place. */
  equals(row: number, path: string): boolean {
    const len = this.lens[row] ?? 0;
    if (len === ODD) return this.odd.get(row) === path;
    // UTF-8 takes at least a byte a UTF-16 unit.
    if (len === 0 || path.length > len) return false;
    const at = this.at[row]!;
    const page = this.pages[at >>> PAGE_SHIFT]!;
    const from = at & OFFSET_MASK;
    for (let i = 0; i < path.length; i++) {
      const c = path.charCodeAt(i);
      if (c >= 0x80) return this.equalsEncoded(page, from, len, path);
      if (page[from + i] !== c) return false;
    }
    return len === path.length;
  }

  /** Sets the path of a row (a new row, or one cleared: a path it still has is cleared first). */
  set(row: number, path: string): void {
    if (row >= this.lens.length) this.grow(row + 1);
    else if (this.lens[row] !== 0) this.clear(row);
    if (path.length > 0 && path.length < ODD && this.setAscii(row, path)) return;
    const bytes = Buffer.byteLength(path, 'utf8');
    if (bytes === 0 || bytes >= ODD || !path.isWellFormed()) {
      this.odd.set(row, path);
      this.lens[row] = ODD;
      return;
    }
    if (this.fill + bytes > PAGE_BYTES) this.newPage();
    this.pages[this.pages.length - 1]!.write(path, this.fill, bytes, 'utf8');
    this.place(row, bytes);
  }

  /** Writes an ASCII path a byte a unit (most paths; ~60 % of the time of Buffer.write); false for any other. */
  private setAscii(row: number, path: string): boolean {
    if (this.fill + path.length > PAGE_BYTES) this.newPage();
    const page = this.pages[this.pages.length - 1]!;
    const from = this.fill;
    for (let i = 0; i < path.length; i++) {
      const c = path.charCodeAt(i);
      if (c >= 0x80) return false;
      page[from + i] = c;
    }
    this.place(row, path.length);
    return true;
  }

  /** The row's path is the `bytes` bytes written at the end of the last page. */
  private place(row: number, bytes: number): void {
    this.at[row] = ((this.pages.length - 1) << PAGE_SHIFT) | this.fill;
    this.lens[row] = bytes;
    this.fill += bytes;
    this.used += bytes;
  }

  /** The row has no path any more. */
  clear(row: number): void {
    const len = this.lens[row] ?? 0;
    if (len === 0) return;
    this.lens[row] = 0;
    if (len === ODD) {
      this.odd.delete(row);
      return;
    }
    this.used -= len;
    this.left += len;
    if (this.left > this.used && this.left > PAGE_BYTES) this.compact();
  }

  private newPage(): void {
    if (this.pages.length === MAX_PAGES) throw new Error(`a table's paths take more than ${MAX_PAGES} pages of ${PAGE_BYTES} bytes`);
    this.pages.push(Buffer.alloc(PAGE_BYTES));
    this.fill = 0;
  }

  private equalsEncoded(page: Buffer, from: number, len: number, path: string): boolean {
    // A path that is not well-formed is kept as a string (set): UTF-8 would turn its lone
    // surrogates into U+FFFD, the bytes of another path.
    if (!path.isWellFormed()) return false;
    if (scratch.length < 3 * path.length) scratch = Buffer.allocUnsafe(3 * path.length);
    const n = scratch.write(path, 0, 'utf8');
    return n === len && page.compare(scratch, 0, n, from, from + len) === 0;
  }

  private grow(rows: number): void {
    let n = this.lens.length;
    while (n < rows) n *= 2;
    const at = new Uint32Array(n);
    at.set(this.at);
    const lens = new Uint16Array(n);
    lens.set(this.lens);
    this.at = at;
    this.lens = lens;
  }

  /** The paths in use, copied to new pages in row order; the bytes left behind go with the old ones. */
  private compact(): void {
    const old = this.pages;
    this.pages = [];
    this.fill = PAGE_BYTES;
    this.left = 0;
    const lens = this.lens;
    for (let row = 0; row < lens.length; row++) {
      const len = lens[row]!;
      if (len === 0 || len === ODD) continue;
      if (this.fill + len > PAGE_BYTES) this.newPage();
      const at = this.at[row]!;
      const from = at & OFFSET_MASK;
      const page = this.pages.length - 1;
      old[at >>> PAGE_SHIFT]!.copy(this.pages[page]!, this.fill, from, from + len);
      this.at[row] = (page << PAGE_SHIFT) | this.fill;
      this.fill += len;
    }
  }
}

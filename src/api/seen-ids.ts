/**
 * The ids a listing has already handed out, to drop a document the service's paging
 * repeats (issue 16). Why a listing needs this at all, whatever its paging: offset and
 * page-number paging repeat items when something is added before the page; a cursor or a
 * next link repeats a document whose sort key changed between two pages (a service that
 * lists by last update, say). The paging is "not shown" (DESIGN §3), so no style is
 * trusted to never repeat. And a repeat matters to a mirror: a document seen twice (or
 * confirmed once and kept once, changed in between) looks like two documents with one id,
 * and the planner may then act on it twice, down to deleting the only copy as a duplicate.
 *
 * The rule: **every id is remembered for the whole listing, as a 128-bit hash (16 B in one
 * typed array), not as the string**. A repeat always has the same hash, so **a repeated
 * document is never let through**. Two ids with the same 128 bits (about n² / 2¹²⁹) would
 * drop the second from that one listing, as if deleted meanwhile, never seen twice.
 */

/** Slots of the table (4 × Int32 each: the id's hash). A power of two. */
const INITIAL_SLOTS = 1024;
/** Grown past this share of slots in use (linear probing stays short below it). */
const MAX_LOAD = 0.7;

export class SeenIds {
  private table = new Int32Array(INITIAL_SLOTS * 4);
  private mask = INITIAL_SLOTS - 1;
  private count = 0;
  /** The hash of the last id given to add(), lane by lane. */
  private h1 = 0;
  private h2 = 0;
  private h3 = 0;
  private h4 = 0;

  /** How many distinct ids were added. */
  get size(): number {
    return this.count;
  }

  /** True when `id` is new (it is remembered from now on); false when it was added before. */
  add(id: string): boolean {
    this.hash(id);
    const t = this.table;
    let i = this.h2 & this.mask;
    for (;;) {
      const o = i << 2;
      const a = t[o]!;
      if (a === 0) break;
      if (a === this.h1 && t[o + 1] === this.h2 && t[o + 2] === this.h3 && t[o + 3] === this.h4) return false;
      i = (i + 1) & this.mask;
    }
    const o = i << 2;
    t[o] = this.h1;
    t[o + 1] = this.h2;
    t[o + 2] = this.h3;
    t[o + 3] = this.h4;
    if (++this.count > (this.mask + 1) * MAX_LOAD) this.grow();
    return true;
  }

  private grow(): void {
    const old = this.table;
    const slots = (this.mask + 1) * 2;
    const t = new Int32Array(slots * 4);
    const mask = slots - 1;
    for (let o = 0; o < old.length; o += 4) {
      if (old[o] === 0) continue;
      let i = old[o + 1]! & mask;
      while (t[i << 2] !== 0) i = (i + 1) & mask;
      const n = i << 2;
      t[n] = old[o]!;
      t[n + 1] = old[o + 1]!;
      t[n + 2] = old[o + 2]!;
      t[n + 3] = old[o + 3]!;
    }
    this.table = t;
    this.mask = mask;
  }

  /**
   * MurmurHash3 x86_128 over the string's UTF-16 code units, two per 32-bit word (its
   * length, in code units, is mixed in: padding is unambiguous). Into h1..h4; h1 is never
   * 0, the table's mark of an empty slot (one bit of 128 given up for it).
   */
  private hash(s: string): void {
    const c1 = 0x239b961b;
    const c2 = 0xab0e9789;
    const c3 = 0x38b34ae5;
    const c4 = 0xa1e38b93;
    let h1 = 0x9747b28c;
    let h2 = 0x9747b28c;
    let h3 = 0x9747b28c;
    let h4 = 0x9747b28c;
    const len = s.length;
    const blocks = len - (len % 8);
    let i = 0;
    for (; i < blocks; i += 8) {
      h1 ^= mixK(s.charCodeAt(i) | (s.charCodeAt(i + 1) << 16), c1, 15, c2);
      h1 = (Math.imul(rotl(h1, 19) + h2, 5) + 0x561ccd1b) | 0;
      h2 ^= mixK(s.charCodeAt(i + 2) | (s.charCodeAt(i + 3) << 16), c2, 16, c3);
      h2 = (Math.imul(rotl(h2, 17) + h3, 5) + 0x0bcaa747) | 0;
      h3 ^= mixK(s.charCodeAt(i + 4) | (s.charCodeAt(i + 5) << 16), c3, 17, c4);
      h3 = (Math.imul(rotl(h3, 15) + h4, 5) + 0x96cd1c35) | 0;
      h4 ^= mixK(s.charCodeAt(i + 6) | (s.charCodeAt(i + 7) << 16), c4, 18, c1);
      h4 = (Math.imul(rotl(h4, 13) + h1, 5) + 0x32ac3b17) | 0;
    }
    // The tail: 0 to 7 code units, in words k1..k4 (missing units are 0).
    const rest = len - i;
    if (rest > 0) h1 ^= mixK(unit(s, i) | (unit(s, i + 1) << 16), c1, 15, c2);
    if (rest > 2) h2 ^= mixK(unit(s, i + 2) | (unit(s, i + 3) << 16), c2, 16, c3);
    if (rest > 4) h3 ^= mixK(unit(s, i + 4) | (unit(s, i + 5) << 16), c3, 17, c4);
    if (rest > 6) h4 ^= mixK(unit(s, i + 6), c4, 18, c1);
    h1 ^= len;
    h2 ^= len;
    h3 ^= len;
    h4 ^= len;
    h1 = (h1 + h2 + h3 + h4) | 0;
    h2 = (h2 + h1) | 0;
    h3 = (h3 + h1) | 0;
    h4 = (h4 + h1) | 0;
    h1 = fmix(h1);
    h2 = fmix(h2);
    h3 = fmix(h3);
    h4 = fmix(h4);
    h1 = (h1 + h2 + h3 + h4) | 0;
    h2 = (h2 + h1) | 0;
    h3 = (h3 + h1) | 0;
    h4 = (h4 + h1) | 0;
    this.h1 = h1 === 0 ? 1 : h1;
    this.h2 = h2;
    this.h3 = h3;
    this.h4 = h4;
  }
}

function rotl(x: number, r: number): number {
  return (x << r) | (x >>> (32 - r));
}

/** One word's mixing into its lane: multiply, rotate, multiply. */
function mixK(k: number, a: number, r: number, b: number): number {
  return Math.imul(rotl(Math.imul(k, a), r), b);
}

/** The code unit at `j`, 0 past the end. */
function unit(s: string, j: number): number {
  return j < s.length ? s.charCodeAt(j) : 0;
}

function fmix(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h;
}

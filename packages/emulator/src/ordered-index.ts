/**
 * An insertion-ordered collection with O(1) lookup by id and cursor paging in
 * O(log n + page). Items carry an increasing `seq`; a cursor is the seq of the last item
 * returned, so a walk over the list while others add or delete items neither skips nor
 * repeats an item that existed when the walk started (new items appear at the end).
 *
 * Deletion leaves a hole that is compacted away once holes outnumber live items, so
 * deletes are amortised O(1) and a page never copies the whole list.
 */

export interface Sequenced {
  readonly id: string;
  readonly seq: number;
}

export interface Page<T> {
  items: T[];
  /** Seq of the last item returned when more items follow; null on the last page. */
  nextAfter: number | null;
}

export class OrderedIndex<T extends Sequenced> {
  private slots: (T | undefined)[] = [];
  private seqs: number[] = [];
  private readonly byId = new Map<string, T>();
  private holes = 0;

  get size(): number {
    return this.byId.size;
  }

  get(id: string): T | undefined {
    return this.byId.get(id);
  }

  /** Appends an item; its seq must be greater than every seq already added. */
  add(item: T): void {
    const last = this.seqs[this.seqs.length - 1];
    if (last !== undefined && item.seq <= last) {
      throw new Error(`OrderedIndex: seq ${item.seq} is not after ${last}`);
    }
    if (this.byId.has(item.id)) throw new Error(`OrderedIndex: duplicate id ${item.id}`);
    this.slots.push(item);
    this.seqs.push(item.seq);
    this.byId.set(item.id, item);
  }

  remove(id: string): T | undefined {
    const item = this.byId.get(id);
    if (!item) return undefined;
    this.byId.delete(id);
    const at = this.firstIndexAfter(item.seq - 1);
    if (this.slots[at] === item) {
      this.slots[at] = undefined;
      this.holes++;
    }
    if (this.holes > 64 && this.holes > this.byId.size) this.compact();
    return item;
  }

  /**
   * Up to `limit` live items with seq > afterSeq, in order. With a filter, only matching
   * items count (and the scan may pass over non-matching ones).
   */
  page(afterSeq: number, limit: number, filter?: (item: T) => boolean): Page<T> {
    const items: T[] = [];
    let i = this.firstIndexAfter(afterSeq);
    for (; i < this.slots.length && items.length < limit; i++) {
      const item = this.slots[i];
      if (item && (!filter || filter(item))) items.push(item);
    }
    // Is there at least one more matching item? Only then is a cursor handed out.
    let more = false;
    for (; i < this.slots.length; i++) {
      const item = this.slots[i];
      if (item && (!filter || filter(item))) {
        more = true;
        break;
      }
    }
    const last = items[items.length - 1];
    return { items, nextAfter: more && last ? last.seq : null };
  }

  /** Every live item in order (for snapshots and test assertions). */
  *values(): IterableIterator<T> {
    for (const item of this.slots) if (item) yield item;
  }

  /** Index of the first slot whose seq is greater than `seq` (binary search). */
  private firstIndexAfter(seq: number): number {
    let lo = 0;
    let hi = this.seqs.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((this.seqs[mid] as number) <= seq) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  private compact(): void {
    const slots: T[] = [];
    const seqs: number[] = [];
    for (const item of this.slots) {
      if (item) {
        slots.push(item);
        seqs.push(item.seq);
      }
    }
    this.slots = slots;
    this.seqs = seqs;
    this.holes = 0;
  }
}

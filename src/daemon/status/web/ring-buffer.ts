/**
 * A bounded buffer that keeps the newest `capacity` items: the daemon's recent history
 * (activity, problems, chart points) must not grow over a week-long run. Each item gets a
 * sequence number, increasing from 1 for the life of the buffer, so a reader can ask for
 * what came after the last item it saw (SSE's Last-Event-ID).
 */
export interface Sequenced<T> {
  seq: number;
  item: T;
}

export class RingBuffer<T> {
  private readonly slots: (Sequenced<T> | undefined)[];
  private next = 0;
  private lastSeq = 0;

  constructor(readonly capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1) throw new RangeError(`ring buffer capacity must be a positive integer, got ${capacity}`);
    this.slots = new Array<Sequenced<T> | undefined>(capacity);
  }

  /** Adds an item (dropping the oldest when full); returns its sequence number. */
  push(item: T): number {
    this.lastSeq++;
    this.slots[this.next] = { seq: this.lastSeq, item };
    this.next = (this.next + 1) % this.capacity;
    return this.lastSeq;
  }

  get size(): number {
    return Math.min(this.lastSeq, this.capacity);
  }

  /** Sequence number of the newest item (0 when none was ever pushed). */
  get newestSeq(): number {
    return this.lastSeq;
  }

  /** Oldest first. */
  entries(): Sequenced<T>[] {
    const out: Sequenced<T>[] = [];
    for (let i = 0; i < this.capacity; i++) {
      const s = this.slots[(this.next + i) % this.capacity];
      if (s) out.push(s);
    }
    return out;
  }

  items(): T[] {
    return this.entries().map((e) => e.item);
  }

  /** The newest item, if any. */
  newest(): T | undefined {
    return this.slots[(this.next + this.capacity - 1) % this.capacity]?.item;
  }

  /**
   * Items after `seq`, oldest first. `complete` is false when some of them were already
   * dropped (the reader missed more than the buffer holds and should reload everything).
   */
  since(seq: number): { entries: Sequenced<T>[]; complete: boolean } {
    const entries = this.entries().filter((e) => e.seq > seq);
    const oldest = entries[0]?.seq ?? this.lastSeq + 1;
    return { entries, complete: seq >= this.lastSeq || oldest <= seq + 1 };
  }
}

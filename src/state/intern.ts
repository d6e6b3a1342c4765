/**
 * Sharing of equal strings among file entries. The entries of one pass were synced within a
 * few seconds of each other, so a million `syncedAt` strings hold a few thousand distinct
 * values; each parsed copy costs 40 bytes of heap (docs/performance.md, "The state's memory
 * and load"). One copy per value is kept instead.
 */

/** Distinct values remembered; past it the table starts over (bounded, whatever the state). */
const MAX_VALUES = 1 << 16;

export class Interner {
  private readonly values = new Map<string, string>();

  constructor(private readonly max = MAX_VALUES) {}

  /** Distinct values held now (at most `max`). */
  get size(): number {
    return this.values.size;
  }

  /** The copy of `s` already held, or `s`, which is then held. */
  intern(s: string): string {
    const held = this.values.get(s);
    if (held !== undefined) return held;
    // Starting over costs only sharing (entries keep their strings), never correctness.
    if (this.values.size >= this.max) this.values.clear();
    this.values.set(s, s);
    return s;
  }
}

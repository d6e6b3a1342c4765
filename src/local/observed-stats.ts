/**
 * The watcher's lstat of each changed file after its last event, kept on the local side for
 * the pass's look at that file (side.ts `scanScope`), which takes it instead of statting the
 * file again: one stat per path per change. An event without one (a removal, a poll, a name
 * not in NFC) forgets it, a full scan forgets all, and at most `MAX_KEPT` are kept.
 */
import type { StatNow } from '../engine/racy.js';

const MAX_KEPT = 100_000;

export class ObservedStats {
  private readonly stats = new Map<string, StatNow>();

  note(path: string, stat: StatNow | undefined): void {
    if (stat === undefined) this.stats.delete(path);
    else if (this.stats.size < MAX_KEPT || this.stats.has(path)) this.stats.set(path, stat);
  }

  /** The stat seen of `path`, once. */
  take(path: string): StatNow | undefined {
    const stat = this.stats.get(path);
    this.stats.delete(path);
    return stat;
  }

  clear(): void {
    this.stats.clear();
  }
}

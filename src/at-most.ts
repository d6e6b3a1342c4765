/**
 * Runs `fn` over `items` with at most `limit` calls under way, the next item taken from the
 * iterator as a call ends: a pass's million paths or 50,000 upload batches are never all
 * queued, and no item costs more than its own call (fed through p-queue item by item, each
 * was a waiting task, `onSizeLessThan`'s promises and listener, and the queue's events: 4.5 KB
 * of a first mirror's 65 KB of garbage per file, docs/performance.md "Session 37"). Items
 * start in their order.
 * The first rejection stops the taking of items; it is thrown once the calls under way end.
 */
export async function forEachAtMost<T>(items: Iterable<T>, limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  const it = items[Symbol.iterator]();
  let failure: { error: unknown } | undefined;
  const lane = async (): Promise<void> => {
    for (let next = it.next(); !next.done; next = it.next()) {
      try {
        await fn(next.value);
      } catch (error) {
        failure ??= { error };
      }
      if (failure !== undefined) return;
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, limit) }, lane));
  if (failure !== undefined) throw failure.error;
}

/**
 * What the watcher saw, on its way to a pass: events go through the aggregator (quiet and
 * stability windows), its batches gather in the pending scope until a pass takes them, and
 * files a pass set aside as maybe being written join it when the schedule looks at them
 * again (`lookAgain`). One drain timer (DESIGN §1.2).
 */
import type { Config } from '../../config/types.js';
import type { ChangeScope } from '../../engine/mirror.js';
import { EventAggregator, isEmptyBatch, type Batch, type RawEvent } from '../../local/watch/aggregator.js';
import type { Logger } from '../../log.js';
import type { StateStore } from '../../state/store.js';
import type { Clock } from '../../time/clock.js';
import { PendingScope } from './pending-scope.js';

export interface ChangeIntakeDeps {
  config: Config;
  mappingId: string;
  state: StateStore;
  clock: Clock;
  log: Logger;
  isStopped: () => boolean;
  /** A batch is pending: the schedule hears of it (`rescan`: the watcher lost events). */
  onBatch: (rescan: boolean) => void;
}

export class ChangeIntake {
  private readonly aggregator: EventAggregator;
  private readonly pending = new PendingScope();
  /** Files a pass set aside as maybe being written, until the schedule looks at them again. */
  private readonly settling = new Set<string>();
  private drainTimer: unknown;
  private drainAt: number | undefined;

  constructor(private readonly d: ChangeIntakeDeps) {
    this.aggregator = new EventAggregator({
      quietMs: d.config.debounceMs,
      startedAt: d.clock.monotonic(),
      syncedSize: (p) => d.state.mapping(d.mappingId)?.files.get(p)?.size,
    });
  }

  push(e: RawEvent): void {
    this.aggregator.push(e);
    this.scheduleDrain();
  }

  /** The watcher lost events (or watches again): the next drain asks for a full rescan. */
  overflow(reason: string): void {
    this.aggregator.overflow(reason, this.d.clock.monotonic());
  }

  /** Paths waiting for a pass: in the aggregator, pending, and set aside. */
  pendingCount(): number {
    return this.aggregator.pendingCount() + this.pending.size + this.settling.size;
  }

  /**
   * A pass of `kind` begins: it takes the pending scope (a full pass looks at everything the
   * events named) and tells the aggregator what it may send.
   */
  passStarted(kind: 'full' | 'changes'): { scope: ChangeScope; firstEventAt: Map<string, number> } {
    const taken = this.pending.take(kind);
    this.aggregator.passStarted(kind === 'full' ? undefined : taken.scope);
    return taken;
  }

  /** The pass ended, succeeded or not: what was created while it ran, its walk may have sent. */
  passEnded(): void {
    this.aggregator.passEnded();
  }

  scheduleDrain(): void {
    if (this.d.isStopped()) return;
    const at = this.aggregator.nextDeadline();
    if (at === undefined) return;
    if (this.drainTimer !== undefined && this.drainAt !== undefined && this.drainAt <= at) return;
    if (this.drainTimer !== undefined) this.d.clock.clearTimeout(this.drainTimer);
    this.drainAt = at;
    this.drainTimer = this.d.clock.setTimeout(() => {
      this.drainTimer = undefined;
      this.drainAt = undefined;
      this.take(this.aggregator.drain(this.d.clock.monotonic()));
      this.scheduleDrain();
    }, Math.max(0, at - this.d.clock.monotonic()));
  }

  /** Files a pass set aside because they changed within the stability window. */
  setAside(paths: readonly string[]): void {
    for (const p of paths) this.settling.add(p);
  }

  /** The schedule's `lookAgain`: the files set aside join the next pass's scope. */
  lookAgain(): void {
    const at = this.d.clock.monotonic();
    this.pending.add({ items: [...this.settling].map((path) => ({ path, isDir: false, gone: false, firstEventAt: at })), rescan: false, reasons: [] });
    this.settling.clear();
  }

  /** Stops the drain timer (the mapping stops). */
  stop(): void {
    if (this.drainTimer !== undefined) this.d.clock.clearTimeout(this.drainTimer);
  }

  private take(batch: Batch): void {
    if (isEmptyBatch(batch)) return;
    if (batch.rescan) this.d.log.info({ reasons: batch.reasons }, 'watcher lost events: full rescan');
    this.pending.add(batch);
    this.d.onBatch(batch.rescan);
  }
}

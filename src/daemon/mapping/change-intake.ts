/**
 * What the watcher saw, on its way to a pass: events go through the aggregator (quiet and
 * stability windows), its batches gather in the pending scope (each path with the time of
 * its first event, the lag a finished operation reports) until a pass takes them, and
 * files a pass set aside as maybe being written join it when the schedule looks at them
 * again (`lookAgain`). One drain timer (DESIGN §1.2).
 */
import type { Config } from '../../config/types.js';
import type { ChangeScope } from '../../engine/local-side.js';
import { EventAggregator, isEmptyBatch, type Batch, type RawEvent } from '../../local/watch/aggregator.js';
import type { Logger } from '../../log.js';
import type { StateStore } from '../../state/store.js';
import type { Clock } from '../../time/clock.js';

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
  /** The pending scope: files and folders the batches named since the last pass began. */
  private readonly files = new Map<string, number>();
  private readonly dirs = new Map<string, number>();
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
    return this.aggregator.pendingCount() + new Set([...this.files.keys(), ...this.dirs.keys()]).size + this.settling.size;
  }

  /**
   * A pass of `kind` begins: it takes the pending scope and the first-event time of each path
   * (a full pass looks at every file, so only files' times count for it; folders are walked
   * by either), and tells the aggregator what it may send.
   */
  passStarted(kind: 'full' | 'changes'): { scope: ChangeScope; firstEventAt: Map<string, number> } {
    const scope: ChangeScope = { files: [...this.files.keys()], dirs: [...this.dirs.keys()] };
    const firstEventAt = kind === 'full' ? new Map(this.files) : new Map([...this.files, ...this.dirs]);
    this.files.clear();
    this.dirs.clear();
    this.aggregator.passStarted(kind === 'full' ? undefined : scope);
    return { scope, firstEventAt };
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
    for (const path of this.settling) note(this.files, path, this.d.clock.monotonic());
    this.settling.clear();
  }

  /** Stops the drain timer (the mapping stops). */
  stop(): void {
    if (this.drainTimer !== undefined) this.d.clock.clearTimeout(this.drainTimer);
  }

  private take(batch: Batch): void {
    if (isEmptyBatch(batch)) return;
    if (batch.rescan) this.d.log.info({ reasons: batch.reasons }, 'watcher lost events: full rescan');
    else this.d.log.debug({ files: batch.items.length, paths: batch.items.slice(0, 3).map((i) => i.path) }, 'changes queued for a pass');
    for (const item of batch.items) {
      note(this.files, item.path, item.firstEventAt);
      // A folder item also stands for a file that was at its path (a file replaced by a
      // folder of the same name: the aggregator folds the file's removal into the folder),
      // and a ChangeScope folder covers only what is below it: it is noted as both.
      if (item.isDir) note(this.dirs, item.path, item.firstEventAt);
    }
    this.d.onBatch(batch.rescan);
  }
}

function note(map: Map<string, number>, path: string, at: number): void {
  const prev = map.get(path);
  map.set(path, prev === undefined ? at : Math.min(prev, at));
}

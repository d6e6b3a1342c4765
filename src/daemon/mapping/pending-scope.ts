/**
 * What the watcher's batches named since the last pass began: the files and folders the
 * next pass looks at, each with the time of its first event (the lag a finished operation
 * reports).
 */
import type { ChangeScope } from '../../engine/mirror.js';
import type { Batch } from '../../local/watch/aggregator.js';

export class PendingScope {
  private readonly files = new Map<string, number>();
  private readonly dirs = new Map<string, number>();

  add(batch: Batch): void {
    for (const item of batch.items) {
      note(this.files, item.path, item.firstEventAt);
      // A folder item also stands for a file that was at its path (a file replaced by a
      // folder of the same name: the aggregator folds the file's removal into the folder),
      // and a ChangeScope folder covers only what is below it: it is noted as both.
      if (item.isDir) note(this.dirs, item.path, item.firstEventAt);
    }
  }

  /** Paths waiting for a pass. */
  get size(): number {
    return new Set([...this.files.keys(), ...this.dirs.keys()]).size;
  }

  /**
   * Hands everything over to a pass and starts empty again: the scope of an incremental
   * pass, and the first-event time of each path (a full pass looks at every file, so only
   * files' times count for it; folders are walked by either).
   */
  take(kind: 'full' | 'changes'): { scope: ChangeScope; firstEventAt: Map<string, number> } {
    const scope: ChangeScope = { files: [...this.files.keys()], dirs: [...this.dirs.keys()] };
    const firstEventAt = kind === 'full' ? new Map(this.files) : new Map([...this.files, ...this.dirs]);
    this.files.clear();
    this.dirs.clear();
    return { scope, firstEventAt };
  }
}

function note(map: Map<string, number>, path: string, at: number): void {
  const prev = map.get(path);
  map.set(path, prev === undefined ? at : Math.min(prev, at));
}

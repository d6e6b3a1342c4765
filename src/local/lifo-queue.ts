/**
 * A p-queue queue class that runs the task added last first. A walk of a folder tree adds
 * a task per entry it lists; taken last in, first out, it goes deep before wide, so the
 * tasks waiting stay few (one folder's entries at each level) where first in, first out
 * would hold a whole level of a 100,000-file tree at once. p-queue's own priorities could
 * say the same (each task outranking those before it), but its sorted array inserts each
 * new task at the front: quadratic on a folder of 10,000 files.
 *
 *   new PQueue({ concurrency: 16, queueClass: LifoQueue })
 */
import type { Queue, QueueAddOptions } from 'p-queue';

type Run = () => Promise<unknown>;

export class LifoQueue implements Queue<Run, QueueAddOptions> {
  private readonly tasks: Run[] = [];

  get size(): number {
    return this.tasks.length;
  }

  enqueue(run: Run): void {
    this.tasks.push(run);
  }

  dequeue(): Run | undefined {
    return this.tasks.pop();
  }

  /** Every task waiting: they all have the one priority (this queue has no other). */
  filter(): Run[] {
    return [...this.tasks];
  }

  setPriority(): void {
    throw new Error('LifoQueue has no priorities: the task added last runs first');
  }
}

/**
 * A one-line progress display on a terminal (stderr), so that a long first mirror shows
 * it is moving. Nothing is drawn when stderr is not a TTY (logs, CI, systemd).
 */
import type { OpEvent } from '../engine/executor.js';

export class ProgressLine {
  private done = 0;
  private failed = 0;
  private last = 0;
  constructor(
    private readonly stream: NodeJS.WriteStream = process.stderr,
    private readonly now: () => number = Date.now,
  ) {}

  get enabled(): boolean {
    return this.stream.isTTY === true;
  }

  onOp = (e: OpEvent): void => {
    if (e.outcome === 'done') this.done++;
    else if (e.outcome === 'failed' || e.outcome === 'rejected') this.failed++;
    if (!this.enabled) return;
    const t = this.now();
    if (t - this.last < 100) return;
    this.last = t;
    this.stream.write(`\r\x1b[K${this.done} done${this.failed ? `, ${this.failed} failed` : ''}  ${e.kind} ${truncate(e.path, 60)}`);
  };

  clear(): void {
    if (this.enabled && this.last > 0) this.stream.write('\r\x1b[K');
  }
}

function truncate(s: string, n: number): string {
  return s.length <= n ? s : `…${s.slice(s.length - n + 1)}`;
}

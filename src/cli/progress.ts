/**
 * A one-line progress display on a terminal (stderr), so that a long first mirror shows
 * it is moving and when it will end: done of total, percentage, rate and time left, from
 * the plan the mirror announces before carrying it out. Nothing is drawn when stderr is
 * not a TTY (logs, CI, systemd).
 */
import type { OpEvent } from '../engine/executor.js';
import type { Op } from '../engine/plan.js';
import { printable } from '../printable.js';
import type { Clock } from '../time/clock.js';

/** Operations that write to the service (adopt and forget only touch the state). */
function isWrite(op: Op): boolean {
  return op.kind !== 'adopt' && op.kind !== 'forget';
}

export class ProgressLine {
  private total = 0;
  private done = 0;
  private failed = 0;
  private last = 0;
  private startedAt: number | undefined;

  constructor(
    private readonly stream: NodeJS.WriteStream = process.stderr,
    /** The rate, the time left and the redraw throttle run on its monotonic reading. */
    private readonly clock: Clock,
  ) {}

  get enabled(): boolean {
    return this.stream.isTTY === true;
  }

  /** A plan is about to be carried out: its writes join the total. */
  onPlan = (ops: readonly Op[]): void => {
    this.total += ops.filter(isWrite).length;
    this.startedAt ??= this.clock.monotonic();
  };

  onOp = (e: OpEvent): void => {
    if (e.kind === 'adopt' || e.kind === 'forget') return;
    if (e.outcome === 'done') this.done++;
    else if (e.outcome === 'failed' || e.outcome === 'rejected') this.failed++;
    if (!this.enabled) return;
    const t = this.clock.monotonic();
    if (t - this.last < 100) return;
    this.last = t;
    const columns = this.stream.columns || 100;
    const head = this.line(t);
    const room = Math.max(10, columns - head.length - 3 - e.kind.length);
    this.stream.write(`\r\x1b[K${head}  ${e.kind} ${truncate(printable(e.path), room)}`);
  };

  /** "120/324 (37%), 2 failed, 8.1/s, 25s left": what is known so far. Pure given the counts. */
  line(t: number): string {
    const settled = this.done + this.failed;
    const parts = [this.total > 0 ? `${settled}/${this.total} (${Math.min(100, Math.floor((settled / this.total) * 100))}%)` : `${settled} done`];
    if (this.failed) parts.push(`${this.failed} failed`);
    const elapsed = this.startedAt === undefined ? 0 : (t - this.startedAt) / 1000;
    // A rate needs a little history to mean anything.
    if (elapsed >= 1 && settled > 0) {
      const rate = settled / elapsed;
      parts.push(`${rate >= 10 ? Math.round(rate) : rate.toFixed(1)}/s`);
      if (this.total > settled) parts.push(`${formatSeconds((this.total - settled) / rate)} left`);
    }
    return parts.join(', ');
  }

  clear(): void {
    if (this.enabled && this.last > 0) this.stream.write('\r\x1b[K');
  }
}

function formatSeconds(s: number): string {
  const n = Math.ceil(s);
  if (n < 60) return `${n}s`;
  if (n < 3600) return `${Math.floor(n / 60)}m ${n % 60}s`;
  return `${Math.floor(n / 3600)}h ${Math.floor((n % 3600) / 60)}m`;
}

function truncate(s: string, n: number): string {
  return s.length <= n ? s : `…${s.slice(s.length - n + 1)}`;
}

/**
 * A dssync process's CPU by thread (issue 39.1: where a first mirror's CPU goes), read from
 * `/proc/<pid>/task/<tid>/stat`: the main thread (its tid is the pid), V8's helpers (the
 * collector's concurrent marking and sweeping, the optimising compiler), libuv's pool, and
 * the worker threads dssync starts (the folder lister's, the snapshot's rows encoder). A thread
 * that ends before the process keeps the last figure read of it.
 */
import { readdirSync, readFileSync } from 'node:fs';

export type ThreadKind = 'main' | 'v8' | 'pool' | 'workers';

export type CpuByThread = Record<ThreadKind, number>;

/** Clock ticks per second of /proc's stat files (USER_HZ; 100 on Linux). */
export const TICKS_PER_SECOND = 100;

/** A task's name and CPU ticks (user + system) from its stat line; undefined when it is not one. */
export function parseTaskStat(text: string): { name: string; ticks: number } | undefined {
  // The name is between the first '(' and the last ')': it may hold spaces and parentheses.
  const open = text.indexOf('(');
  const close = text.lastIndexOf(')');
  if (open < 0 || close < open) return undefined;
  const fields = text.slice(close + 2).split(' ');
  // Fields 14 and 15 of stat (utime, stime) are 11 and 12 after the name.
  const user = Number(fields[11]);
  const system = Number(fields[12]);
  if (!Number.isFinite(user) || !Number.isFinite(system)) return undefined;
  return { name: text.slice(open + 1, close), ticks: user + system };
}

/** What a thread is, by its id and name (Node names V8's helpers `node-V8Worker` or `V8 DefaultWorke`, libuv's `libuv-worker`). */
export function threadKind(pid: number, tid: number, name: string): ThreadKind {
  if (tid === pid) return 'main';
  if (/V8Worker|V8 Default|DelayedTask/.test(name)) return 'v8';
  if (/libuv/.test(name)) return 'pool';
  return 'workers';
}

/** The last CPU ticks seen of each thread of one process. */
export class ThreadCpu {
  private readonly last = new Map<number, { kind: ThreadKind; ticks: number }>();

  constructor(private readonly pid: number) {}

  /** Reads every thread of the process once; a process gone changes nothing. */
  sample(): void {
    let tids: string[];
    try {
      tids = readdirSync(`/proc/${this.pid}/task`);
    } catch {
      return;
    }
    for (const t of tids) {
      let text: string;
      try {
        text = readFileSync(`/proc/${this.pid}/task/${t}/stat`, 'utf8');
      } catch {
        continue; // ended between the two reads
      }
      this.record(Number(t), text);
    }
  }

  /** One thread's stat line (sample's step; tests give their own). */
  record(tid: number, statLine: string): void {
    const s = parseTaskStat(statLine);
    if (s !== undefined) this.last.set(tid, { kind: threadKind(this.pid, tid, s.name), ticks: s.ticks });
  }

  /** CPU seconds by kind of thread, over every thread seen. */
  totals(): CpuByThread {
    const out: CpuByThread = { main: 0, v8: 0, pool: 0, workers: 0 };
    for (const { kind, ticks } of this.last.values()) out[kind] += ticks / TICKS_PER_SECOND;
    return out;
  }
}

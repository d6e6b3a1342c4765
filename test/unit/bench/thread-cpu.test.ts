import { describe, expect, it } from 'vitest';
import { parseTaskStat, ThreadCpu, threadKind } from '../../../bench/lib/thread-cpu.js';

/** A stat line with `utime` and `stime` in fields 14 and 15. */
const stat = (tid: number, name: string, user: number, system: number): string =>
  `${tid} (${name}) S 1 ${tid} ${tid} 0 -1 4194560 100 0 0 0 ${user} ${system} 0 0 20 0 7 0 100 1000 50`;

describe('the bench’s CPU by thread', () => {
  it('reads a thread’s name and CPU, a name with spaces and parentheses included', () => {
    expect(parseTaskStat(stat(7, 'V8 DefaultWorke', 12, 3))).toEqual({ name: 'V8 DefaultWorke', ticks: 15 });
    expect(parseTaskStat(stat(7, 'a (b) c', 1, 2))).toEqual({ name: 'a (b) c', ticks: 3 });
    expect(parseTaskStat('garbage')).toBeUndefined();
  });

  it('tells the main thread by its id, V8’s helpers and libuv’s pool by name, and the rest as workers', () => {
    expect(threadKind(100, 100, 'node-MainThread')).toBe('main');
    expect(threadKind(100, 101, 'node-MainThread')).toBe('workers'); // a worker before it names itself
    expect(threadKind(100, 102, 'node-V8Worker')).toBe('v8');
    expect(threadKind(100, 103, 'libuv-worker')).toBe('pool');
    expect(threadKind(100, 104, 'WorkerThread')).toBe('workers');
  });

  it('keeps a thread’s last figure after it ends, and counts each thread once', () => {
    const cpu = new ThreadCpu(100);
    cpu.record(100, stat(100, 'node-MainThread', 100, 20));
    cpu.record(104, stat(104, 'WorkerThread', 30, 10));
    cpu.record(102, stat(102, 'node-V8Worker', 5, 0));
    // Later: the worker has ended (not read again); the main thread has gone on.
    cpu.record(100, stat(100, 'node-MainThread', 150, 25));
    expect(cpu.totals()).toEqual({ main: 1.75, v8: 0.05, pool: 0, workers: 0.4 });
  });
});

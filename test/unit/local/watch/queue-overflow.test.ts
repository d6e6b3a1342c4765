/**
 * The inotify queue monitor (issue 12): a turn of the event loop that delivers nearly a full
 * queue of events is a possible overflow (libuv drops IN_Q_OVERFLOW), reported once per
 * flood to every watcher of the process. Turns are ended by hand (the fake `defer`).
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_MAX_QUEUED_EVENTS, InotifyQueueMonitor, type QueueOverflow } from '../../../../src/local/watch/queue-overflow.js';

function setup(readQueueSize: () => Promise<number> = async () => 1000) {
  const deferred: (() => void)[] = [];
  let t = 1_800_000_000_000;
  const monitor = new InotifyQueueMonitor({ defer: (fn) => deferred.push(fn), now: () => t, readQueueSize });
  /** `n` events delivered in one turn, then the turn ends. */
  const turn = (n: number): void => {
    for (let i = 0; i < n; i++) monitor.note();
    t += 1000;
    for (const fn of deferred.splice(0)) fn();
  };
  const seen: QueueOverflow[] = [];
  monitor.subscribe((o) => seen.push(o));
  return { monitor, turn, seen, deferred };
}

describe('InotifyQueueMonitor', () => {
  it('a turn delivering 90 % of the queue or more is a possible overflow, told to every watcher; smaller turns are not', async () => {
    const { monitor, turn, seen } = setup();
    await monitor.prepare();
    const other: QueueOverflow[] = [];
    monitor.subscribe((o) => other.push(o));
    turn(899);
    turn(1);
    expect(seen).toEqual([]);
    turn(900);
    expect(seen).toEqual([{ at: expect.any(Number), events: 900, queueSize: 1000 }]);
    expect(other).toEqual(seen);
    expect(monitor.view()).toEqual({ reported: false, queueSize: 1000, overflows: 1, lastOverflowAt: new Date(seen[0]!.at).toISOString(), lastBurst: 900 });
  });

  it('counts per turn: the same events spread over turns are no overflow', async () => {
    const { monitor, turn, seen, deferred } = setup();
    await monitor.prepare();
    monitor.note();
    expect(deferred).toHaveLength(1); // one end-of-turn per turn, not per event
    turn(599);
    turn(600);
    expect(seen).toEqual([]);
  });

  it('a flood that keeps the queue full turn after turn is one overflow; a full turn after a calm one is another', async () => {
    const { monitor, turn, seen } = setup();
    await monitor.prepare();
    turn(1000);
    turn(1000);
    turn(950);
    expect(seen).toHaveLength(1);
    turn(10);
    turn(1000);
    expect(seen.map((o) => o.events)).toEqual([1000, 1000]);
    expect(monitor.view().overflows).toBe(2);
  });

  it('a watcher that unsubscribed is not told', async () => {
    const { monitor, turn, seen } = setup();
    await monitor.prepare();
    const late: QueueOverflow[] = [];
    const off = monitor.subscribe((o) => late.push(o));
    off();
    turn(1000);
    expect(seen).toHaveLength(1);
    expect(late).toEqual([]);
  });

  it('reads the queue size once; an unreadable or odd value means the kernel default', async () => {
    let reads = 0;
    const { monitor } = setup(async () => {
      reads++;
      return 50;
    });
    await Promise.all([monitor.prepare(), monitor.prepare()]);
    await monitor.prepare();
    expect(reads).toBe(1);
    expect(monitor.view().queueSize).toBe(50);

    const failing = setup(async () => {
      throw Object.assign(new Error('ENOENT'), { code: 'ENOENT' });
    });
    await failing.monitor.prepare();
    expect(failing.monitor.view().queueSize).toBe(DEFAULT_MAX_QUEUED_EVENTS);
    const odd = setup(async () => Number('not a number'));
    await odd.monitor.prepare();
    expect(odd.monitor.view().queueSize).toBe(DEFAULT_MAX_QUEUED_EVENTS);
  });

  it('under the native watch an overflow is the kernel\'s report: counted events are no guess any more, each report is one overflow', async () => {
    const { monitor, turn, seen } = setup();
    await monitor.prepare();
    monitor.reportedByKernel();
    turn(1000);
    expect(seen).toEqual([]);
    monitor.overflowed();
    expect(seen).toEqual([{ at: expect.any(Number), queueSize: 1000 }]);
    expect(monitor.view()).toEqual({ reported: true, queueSize: 1000, overflows: 1, lastOverflowAt: new Date(seen[0]!.at).toISOString(), lastBurst: undefined });
    monitor.overflowed();
    expect(monitor.view().overflows).toBe(2);
  });
});

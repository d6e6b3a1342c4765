import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { Slots } from '../../../src/api/slots.js';

/** Settles pending promise callbacks. */
const flush = (): Promise<void> => new Promise((r) => setImmediate(r));

function take(slots: Slots, signal: AbortSignal, retry: boolean, log: string[], name: string): Promise<void> {
  return slots.acquire(signal, retry).then(
    () => void log.push(name),
    () => void log.push(`${name}: aborted`),
  );
}

describe('Slots: the pacer\'s concurrency cap', () => {
  it('holds at most its capacity and serves retries first, then in arrival order', async () => {
    const slots = new Slots(2);
    const never = new AbortController().signal;
    const log: string[] = [];
    void take(slots, never, false, log, 'a');
    void take(slots, never, false, log, 'b');
    void take(slots, never, false, log, 'c');
    void take(slots, never, false, log, 'd');
    void take(slots, never, true, log, 'retry');
    await flush();
    expect(log).toEqual(['a', 'b']);
    expect(slots.waiting).toBe(3);
    slots.release();
    await flush();
    expect(log).toEqual(['a', 'b', 'retry']);
    slots.release();
    slots.release();
    await flush();
    expect(log).toEqual(['a', 'b', 'retry', 'c', 'd']);
    expect(slots.waiting).toBe(0);
  });

  it('an abort rejects that signal\'s waiters only, and they never take a slot', async () => {
    const slots = new Slots(1);
    const never = new AbortController().signal;
    const mine = new AbortController();
    const log: string[] = [];
    void take(slots, never, false, log, 'holder');
    void take(slots, mine.signal, false, log, 'mine1');
    void take(slots, never, false, log, 'other');
    void take(slots, mine.signal, true, log, 'mine2');
    await flush();
    mine.abort();
    await flush();
    expect(log).toEqual(['holder', 'mine1: aborted', 'mine2: aborted']);
    expect(slots.waiting).toBe(1);
    slots.release();
    await flush();
    expect(log.at(-1)).toBe('other');
    // Already aborted: rejected at once.
    await expect(slots.acquire(mine.signal, false)).rejects.toBeDefined();
  });

  it('puts one abort listener on a signal however many wait on it, and none once they are served', async () => {
    const slots = new Slots(1);
    const ctrl = new AbortController();
    const log: string[] = [];
    for (let i = 0; i < 50; i++) void take(slots, ctrl.signal, false, log, String(i));
    await flush();
    expect(getEventListeners(ctrl.signal, 'abort')).toHaveLength(1);
    for (let i = 0; i < 50; i++) slots.release();
    await flush();
    expect(log).toHaveLength(50);
    expect(getEventListeners(ctrl.signal, 'abort')).toHaveLength(0);
  });
});

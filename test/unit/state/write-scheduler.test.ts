import { describe, expect, it } from 'vitest';
import { WriteScheduler } from '../../../src/state/write-scheduler.js';
import { settle } from './fakes.js';
import { FakeClock } from '../../helpers/fake-clock.js';

/** A scheduler whose writes complete only when the test says so. */
function setup(delayMs = 250) {
  const timers = new FakeClock();
  const writes: { done: () => void; fail: (e: unknown) => void }[] = [];
  const errors: unknown[] = [];
  const recoveries: number[] = [];
  const s = new WriteScheduler({
    delayMs,
    maxRetryDelayMs: 4000,
    clock: timers,
    write: () =>
      new Promise<void>((resolve, reject) => {
        writes.push({ done: resolve, fail: reject });
      }),
    onError: (e) => void errors.push(e),
    onSuccess: (n) => void recoveries.push(n),
  });
  const last = () => {
    const w = writes.at(-1);
    if (!w) throw new Error('no write started');
    return w;
  };
  return { s, timers, writes, errors, recoveries, last };
}

describe('WriteScheduler', () => {
  it('coalesces several mutations into one write after the delay', async () => {
    const { s, timers, writes, last } = setup();
    s.markDirty();
    await timers.advance(100);
    s.markDirty();
    s.markDirty();
    await timers.advance(149);
    expect(writes).toHaveLength(0);
    await timers.advance(1);
    expect(writes).toHaveLength(1);
    last().done();
    await timers.advance(10_000);
    expect(writes).toHaveLength(1);
    expect(s.dirty).toBe(false);
  });

  it('a mutation during a write leads to a second write, never two at once', async () => {
    const { s, timers, writes, last } = setup();
    s.markDirty();
    await timers.advance(250);
    expect(writes).toHaveLength(1);
    s.markDirty(); // during the write
    await timers.advance(1000);
    expect(writes).toHaveLength(1); // still one in flight
    last().done();
    await timers.advance(249);
    expect(writes).toHaveLength(1);
    await timers.advance(1);
    expect(writes).toHaveLength(2);
    last().done();
    await settle();
    expect(s.dirty).toBe(false);
  });

  it('flush() writes at once and resolves only when the write is done', async () => {
    const { s, writes, last } = setup();
    s.markDirty();
    let resolved = false;
    const p = s.flush().then(() => (resolved = true));
    await settle();
    expect(writes).toHaveLength(1);
    expect(resolved).toBe(false);
    last().done();
    await p;
    expect(resolved).toBe(true);
  });

  it('flush() with nothing to write resolves without writing', async () => {
    const { s, writes } = setup();
    await s.flush();
    expect(writes).toHaveLength(0);
  });

  it('flush() during a write that already holds every mutation waits for that write only', async () => {
    const { s, timers, writes, last } = setup();
    s.markDirty();
    await timers.advance(250);
    let resolved = false;
    const p = s.flush().then(() => (resolved = true));
    await settle();
    expect(resolved).toBe(false);
    last().done();
    await p;
    expect(writes).toHaveLength(1);
  });

  it('concurrent flushes share writes (group commit): one in flight, the rest in the next one', async () => {
    const { s, writes, last } = setup();
    s.markDirty();
    const first = s.flush();
    await settle();
    expect(writes).toHaveLength(1);
    const waiting: Promise<void>[] = [];
    for (let i = 0; i < 20; i++) {
      s.markDirty();
      waiting.push(s.flush());
    }
    await settle();
    expect(writes).toHaveLength(1);
    last().done();
    await first;
    await settle();
    expect(writes).toHaveLength(2); // all twenty in one write
    let done = 0;
    for (const w of waiting) void w.then(() => done++);
    await settle();
    expect(done).toBe(0);
    last().done();
    await Promise.all(waiting);
    expect(writes).toHaveLength(2);
  });

  it('flushes in the same turn with nothing in flight share one write', async () => {
    const { s, writes, last } = setup();
    const all: Promise<void>[] = [];
    for (let i = 0; i < 10; i++) {
      s.markDirty();
      all.push(s.flush());
    }
    await settle();
    expect(writes).toHaveLength(1);
    last().done();
    await Promise.all(all);
  });

  it('a failed write rejects its flushes, stays dirty, retries with back-off, and a later flush succeeds', async () => {
    const { s, timers, writes, errors, recoveries, last } = setup();
    s.markDirty();
    const p = s.flush();
    await settle();
    const enospc = Object.assign(new Error('ENOSPC: no space left on device'), { code: 'ENOSPC' });
    last().fail(enospc);
    await expect(p).rejects.toBe(enospc);
    expect(errors).toEqual([enospc]);
    expect(s.dirty).toBe(true);
    expect(timers.delays()).toEqual([500]); // 250 * 2^1
    await timers.advance(500);
    expect(writes).toHaveLength(2);
    last().fail(enospc);
    await settle();
    expect(timers.delays()).toEqual([1000]);
    // An explicit flush does not wait for the back-off.
    const q = s.flush();
    await settle();
    expect(writes).toHaveLength(3);
    last().done();
    await q;
    expect(s.dirty).toBe(false);
    expect(recoveries).toEqual([2]);
    expect(timers.delays()).toEqual([]);
  });

  it('after stop() nothing is written by timers, but flush() still writes', async () => {
    const { s, timers, writes, last } = setup();
    s.stop();
    s.markDirty();
    await timers.advance(10_000);
    expect(writes).toHaveLength(0);
    const p = s.flush();
    await settle();
    last().done();
    await p;
    expect(writes).toHaveLength(1);
  });
});

/**
 * The SSE hub's bounds (issue 24.3): a reader that stops reading is dropped once its backlog
 * passes the bound (the daemon does not hold it), and one credential holds at most
 * `perClient` streams (a new one ends its oldest), so nobody's streams lock the operator out.
 */
import { EventEmitter } from 'node:events';
import type { ServerResponse } from 'node:http';
import { describe, expect, it } from 'vitest';
import { SseHub } from '../../../src/daemon/status/web/sse.js';

/** A response whose reader takes nothing: every write stays buffered. */
class StuckResponse extends EventEmitter {
  writableLength = 0;
  status = 0;
  ended = false;
  destroyed = false;
  writeHead(status: number): this {
    this.status = status;
    return this;
  }
  write(chunk: string): boolean {
    this.writableLength += Buffer.byteLength(chunk);
    return false;
  }
  end(): this {
    this.ended = true;
    this.emit('close');
    return this;
  }
  destroy(): this {
    this.destroyed = true;
    this.emit('close');
    return this;
  }
}

const limits = { max: 8, perClient: 2, maxBufferedBytes: 10_000, heartbeatMs: 60_000, retryMs: 1000 };
const res = (): StuckResponse & ServerResponse => new StuckResponse() as unknown as StuckResponse & ServerResponse;

describe('SseHub bounds', () => {
  it('drops a stream whose reader fell behind by more than maxBufferedBytes, keeps the others', () => {
    const hub = new SseHub(limits);
    const slow = res();
    const fast = res();
    hub.open(slow, [], 'a');
    hub.open(fast, [], 'b');
    const chunk = 'x'.repeat(1000);
    for (let i = 0; i < 50; i++) {
      hub.broadcast(chunk);
      fast.writableLength = 0; // this reader keeps up
    }
    expect(slow.destroyed).toBe(true);
    expect(slow.writableLength).toBeLessThanOrEqual(limits.maxBufferedBytes);
    expect(fast.destroyed).toBe(false);
    expect(hub.size).toBe(1);
    expect(hub.droppedSlow).toBe(1);
    hub.close();
  });

  it('one credential holds at most perClient streams: a new one ends its oldest; another credential still gets one', () => {
    const hub = new SseHub(limits);
    const mine = [res(), res(), res()];
    for (const r of mine) expect(hub.open(r, [], 'stranger')).toBe(true);
    expect(mine[0]!.ended).toBe(true);
    expect(hub.size).toBe(2);
    const operator = res();
    expect(hub.open(operator, [], 'operator')).toBe(true);
    expect(operator.status).toBe(200);
    hub.close();
  });
});

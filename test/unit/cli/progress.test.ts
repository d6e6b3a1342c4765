import { describe, expect, it } from 'vitest';
import { ProgressLine } from '../../../src/cli/progress.js';
import type { Op } from '../../../src/engine/plan.js';
import { FakeClock } from '../../helpers/fake-clock.js';

const upload = (path: string): Op => ({ kind: 'upload', path }) as unknown as Op;

describe('the progress line (issue 14.13)', () => {
  it('has the total, the percentage, the rate and the time left, from the plan', () => {
    const clock = new FakeClock();
    let now = 0;
    const written: string[] = [];
    const stream = { isTTY: true, columns: 120, write: (t: string) => written.push(t) } as unknown as NodeJS.WriteStream;
    const p = new ProgressLine(stream, clock);
    p.onPlan(Array.from({ length: 40 }, (_, i) => upload(`f${i}`)));
    expect(p.line(now)).toBe('0/40 (0%)');
    for (let i = 0; i < 10; i++) p.onOp({ kind: 'upload', path: `f${i}`, outcome: 'done' } as never);
    clock.tick(2000);
    now = clock.monotonic();
    expect(p.line(now)).toBe('10/40 (25%), 5.0/s, 6s left');
    p.onOp({ kind: 'upload', path: 'f10', outcome: 'failed' } as never);
    expect(p.line(now)).toBe('11/40 (27%), 1 failed, 5.5/s, 6s left');
  });

  it('draws nothing when stderr is not a terminal', () => {
    const written: string[] = [];
    const p = new ProgressLine({ isTTY: false, write: (t: string) => written.push(t) } as unknown as NodeJS.WriteStream, new FakeClock());
    p.onPlan([upload('a')]);
    p.onOp({ kind: 'upload', path: 'a', outcome: 'done' } as never);
    p.clear();
    expect(written).toEqual([]);
  });
});

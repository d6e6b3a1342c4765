import { describe, expect, it } from 'vitest';
import { DaemonHistory, HISTORY_LIMITS, percentiles } from '../../../../src/daemon/status/web/history.js';
import { FakeClock } from '../../../helpers/fake-clock.js';

const T0 = Date.parse('2026-03-01T10:00:00Z');

describe('DaemonHistory', () => {
  it('records operations newest first, and problems with what happens next', () => {
    const c = new FakeClock(T0);
    const h = new DaemonHistory(() => c.now());
    const seen: string[] = [];
    h.subscribe((e) => seen.push(e.type));
    h.onOp('docs', { kind: 'upload', path: 'a.txt', outcome: 'done', documentId: 'd1' }, 450);
    c.tick(1000);
    h.onOp('docs', { kind: 'upload', path: 'b.bin', outcome: 'rejected', error: new Error('HTTP 415 unsupported type') }, undefined);
    const s = h.snapshot();
    expect(s.activity.map((e) => e.item.path)).toEqual(['b.bin', 'a.txt']);
    expect(s.activity[1]!.item).toMatchObject({ mapping: 'docs', kind: 'upload', outcome: 'done', lagMs: 450 });
    expect(s.problems).toEqual([expect.objectContaining({ path: 'b.bin', what: 'upload rejected', message: 'HTTP 415 unsupported type', next: expect.stringContaining('until the file changes') })]);
    expect(seen).toEqual(['activity', 'activity', 'problem']);
  });

  it('keeps each failure\'s stable code beside its message, for the page to filter by (issue 38.6)', () => {
    const c = new FakeClock(T0);
    const h = new DaemonHistory(() => c.now());
    const refused = Object.assign(new Error('HTTP 415 unsupported type'), { code: 'E_UNSUPPORTED_TYPE' });
    h.onOp('docs', { kind: 'upload', path: 'b.bin', outcome: 'rejected', error: refused }, undefined);
    h.onOp('docs', { kind: 'delete', path: 'c.txt', outcome: 'failed', error: new Error('no code') }, undefined);
    const s = h.snapshot();
    expect(s.activity.map((e) => e.item.code)).toEqual([undefined, 'E_UNSUPPORTED_TYPE']);
    expect(s.problems.map((p) => [p.path, p.code])).toEqual([
      ['c.txt', undefined],
      ['b.bin', 'E_UNSUPPORTED_TYPE'],
    ]);
  });

  it("shows a system errno as the registry's E_* code, the one a user filters by (issue 38.2)", () => {
    const h = new DaemonHistory(() => T0);
    const denied = Object.assign(new Error('EACCES: permission denied, open /srv/share/a.txt'), { code: 'EACCES' });
    h.onOp('docs', { kind: 'upload', path: 'a.txt', outcome: 'failed', error: denied }, undefined);
    expect(h.snapshot().activity.map((e) => e.item.code)).toEqual(['E_LOCAL_ACCESS']);
  });

  it('saves and restores the feed, the problems and the hour of chart points across a restart (issue 25.1)', () => {
    const c = new FakeClock(T0);
    const before = new DaemonHistory(() => c.now());
    before.onOp('docs', { kind: 'upload', path: 'a.txt', outcome: 'done' }, 300);
    c.tick(20_000);
    before.onOp('docs', { kind: 'upload', path: 'b.bin', outcome: 'rejected', error: new Error('HTTP 415') }, undefined);
    const saved = JSON.parse(JSON.stringify(before.save())) as ReturnType<DaemonHistory['save']>;

    c.tick(60_000); // the restart takes a minute
    const after = new DaemonHistory(() => c.now());
    after.restore(saved);
    after.onOp('docs', { kind: 'upload', path: 'c.txt', outcome: 'done' }, 100);
    const s = after.snapshot();
    expect(s.activity.map((e) => e.item.path)).toEqual(['c.txt', 'b.bin', 'a.txt']);
    expect(s.problems.map((p) => p.path)).toEqual(['b.bin']);
    const pts = after.chart();
    // The saved points, then quiet ones for the minute of the restart, then the new one.
    expect(pts[0]).toMatchObject({ t: T0 / 1000, ops: 1, lagP50: 300 });
    expect(pts.map((p) => p.ops)).toEqual([1, 0, 1, 0, 0, 0, 0, 0, 1]);

    // Saved more than an hour ago: the points are gone, the feed stays.
    c.tick(2 * 3600_000);
    const late = new DaemonHistory(() => c.now());
    late.restore(saved);
    expect(late.chart().every((p) => p.ops === 0)).toBe(true);
    expect(late.snapshot().activity).toHaveLength(2);
  });

  it('counts per 10-second point, fills quiet intervals, and keeps one hour', () => {
    const c = new FakeClock(T0);
    const h = new DaemonHistory(() => c.now());
    h.onOp('m', { kind: 'upload', path: 'a', outcome: 'done' }, 100);
    h.onRequest('throttled');
    h.onRequest('retried');
    c.tick(35_000);
    h.onOp('m', { kind: 'delete', path: 'a', outcome: 'failed', error: new Error('boom') }, undefined);
    const pts = h.chart();
    expect(pts.map((p) => p.t - pts[0]!.t)).toEqual([0, 10, 20, 30]);
    expect(pts[0]).toMatchObject({ ops: 1, requests: 1, throttled: 1, retries: 1, lagP50: 100, lagP95: 100 });
    expect(pts[1]).toMatchObject({ ops: 0, requests: 0 });
    expect(pts[3]).toMatchObject({ ops: 1, failed: 1 });
    c.tick(5 * 3600_000);
    h.onOp('m', { kind: 'upload', path: 'b', outcome: 'done' }, 1);
    expect(h.chart()).toHaveLength(HISTORY_LIMITS.points);
  });

  it('stays bounded over a long run', () => {
    const c = new FakeClock(T0);
    const h = new DaemonHistory(() => c.now());
    for (let i = 0; i < 20_000; i++) {
      c.tick(50);
      h.onOp('m', { kind: 'upload', path: `f${i}`, outcome: i % 10 === 0 ? 'failed' : 'done', error: new Error('x') }, i);
    }
    const s = h.snapshot();
    expect(s.activity).toHaveLength(HISTORY_LIMITS.activity);
    expect(s.problems).toHaveLength(HISTORY_LIMITS.problems);
    expect(s.points.length).toBeLessThanOrEqual(HISTORY_LIMITS.points);
  });

  it('tracks the pass in progress per mapping', () => {
    const h = new DaemonHistory(() => 0);
    h.onPassStart('m', 'full');
    h.onOp('m', { kind: 'upload', path: 'a', outcome: 'done' }, undefined);
    expect(h.currentPass('m')).toMatchObject({ kind: 'full', done: 1 });
    h.onPassEnd('m', { message: 'mass delete guard: 90% of the files would be deleted', confirmable: true });
    expect(h.currentPass('m')).toBeUndefined();
    expect(h.snapshot().problems[0]).toMatchObject({ what: 'pass stopped' });
  });

  it('says what the daemon really does next: a mass delete waits for the operator (no retry), other failures back off from the configured delay', () => {
    const h = new DaemonHistory(() => 0, 200);
    h.onPassEnd('m', { message: 'mass delete guard: 90% of the files would be deleted', confirmable: true });
    const waiting = h.snapshot().problems[0]!.next;
    expect(waiting).toContain('no request goes out until you confirm (dssync confirm-delete --mapping m');
    expect(waiting).not.toContain('back-off');
    h.onPassEnd('m', { message: 'the ignore file cannot be used' });
    expect(h.snapshot().problems[0]!.next).toContain('retried with back-off');
    h.onMappingFailure('m', 'the service cannot be reached');
    expect(h.snapshot().problems[0]!.next).toBe('retried with back-off (0.2 s, doubling up to 5 min)');
  });

  it('percentiles by nearest rank', () => {
    expect(percentiles([])).toEqual({});
    expect(percentiles([5, 1, 4, 2, 3])).toEqual({ lagP50: 3, lagP95: 5 });
    expect(percentiles(Array.from({ length: 100 }, (_, i) => i + 1))).toEqual({ lagP50: 50, lagP95: 95 });
  });
});

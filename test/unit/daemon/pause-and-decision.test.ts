/**
 * Issue 25.5 and 25.6 in the pure parts: the schedule of a paused mapping and of one whose
 * pass the mass-delete guard stopped (no retry, no rescan while waiting), the decision's
 * bookkeeping (a confirmation holds for the set shown and no more), and the guard's
 * confirmed deletions. Times are the `now` of each step: a fake clock.
 */
import { describe, expect, it } from 'vitest';
import { initialSchedule, step, type ScheduleEvent, type ScheduleState } from '../../../src/daemon/mapping/schedule.js';
import { DeleteDecision, deletesDigest } from '../../../src/daemon/mapping/delete-decision.js';
import { checkGuards, type GuardInput } from '../../../src/engine/guards.js';
import type { Op } from '../../../src/engine/plan.js';

const config = { rescanIntervalMs: 3_600_000, retryBaseMs: 5_000, settleMs: 2_000 };

function drive(s: ScheduleState, rows: [number, ScheduleEvent][]): { state: ScheduleState; actions: string[][]; deadlines: (number | undefined)[] } {
  const actions: string[][] = [];
  const deadlines: (number | undefined)[] = [];
  for (const [at, e] of rows) {
    const r = step(s, e, at, () => 0.5);
    actions.push(r.actions.map((a) => a.type));
    deadlines.push(r.nextDeadline);
    s = r.state;
  }
  return { state: s, actions, deadlines };
}

describe('schedule: pause and resume', () => {
  it('a mapping that starts paused runs no pass and arms no timer; changes wait; resume runs one full pass', () => {
    const r = drive(initialSchedule(config, { paused: true }), [
      [0, { type: 'started' }],
      [10, { type: 'batchReady' }],
      [20, { type: 'fullPassRequested' }],
      [30, { type: 'tick' }],
      [40, { type: 'resume' }],
    ]);
    expect(r.actions).toEqual([[], [], [], [], ['runFullPass']]);
    expect(r.deadlines.slice(0, 4)).toEqual([undefined, undefined, undefined, undefined]);
    expect(r.state.paused).toBe(false);
  });

  it('pausing drops the back-off and the rescan; the pass in progress ends without a next one', () => {
    const r = drive(initialSchedule(config), [
      [0, { type: 'started' }],
      [100, { type: 'passFinished', kind: 'full', ok: true }],
      [200, { type: 'batchReady' }],
      [250, { type: 'pause' }],
      [300, { type: 'batchReady' }],
      [400, { type: 'passFinished', kind: 'changes', ok: false, reason: '503' }],
      [4_000_000, { type: 'tick' }],
    ]);
    expect(r.actions[0]).toEqual(['runFullPass']);
    expect(r.actions[2]).toEqual(['runChangesPass']);
    expect(r.actions.slice(3).flat().filter((a) => a.startsWith('run'))).toEqual([]);
    expect(r.deadlines.slice(3)).toEqual([undefined, undefined, undefined, undefined]);
    expect(drive(r.state, [[5_000_000, { type: 'resume' }]]).actions).toEqual([['runFullPass']]);
  });
});

describe('schedule: a mass delete waiting for a decision', () => {
  const blocked: ScheduleEvent = { type: 'passFinished', kind: 'full', ok: false, awaitDecision: true };

  it('no retry and no periodic rescan while waiting (each would list everything again)', () => {
    const r = drive(initialSchedule(config), [
      [0, { type: 'started' }],
      [100, { type: 'passFinished', kind: 'full', ok: true }],
      [200, { type: 'fullPassRequested' }],
      [300, blocked],
      [10_000_000, { type: 'tick' }],
    ]);
    expect(r.actions[3]).toEqual([]);
    expect(r.deadlines[3]).toBeUndefined();
    expect(r.actions[4]).toEqual([]);
    expect(r.state.awaitingDecision).toBe(true);
  });

  it('a change in the folder is looked at by a full pass (the files may be back); a pass that goes ahead ends the wait', () => {
    const r = drive(initialSchedule(config), [
      [0, { type: 'started' }],
      [100, blocked],
      [200, { type: 'batchReady' }],
      [300, { type: 'passFinished', kind: 'full', ok: true }],
    ]);
    expect(r.actions[2]).toEqual(['runFullPass']);
    expect(r.state.awaitingDecision).toBe(false);
    expect(r.state.rescanAt).toBeDefined();
  });

  it('changes seen during the stopped pass run a full pass, not an incremental one', () => {
    const r = drive(initialSchedule(config), [
      [0, { type: 'started' }],
      [50, { type: 'batchReady' }],
      [100, blocked],
    ]);
    expect(r.actions[2]).toEqual(['runFullPass']);
  });

  it('the confirmation runs a full pass at once', () => {
    const r = drive(initialSchedule(config), [
      [0, { type: 'started' }],
      [100, blocked],
      [200, { type: 'deletesConfirmed' }],
    ]);
    expect(r.actions[2]).toEqual(['runFullPass']);
  });
});

describe('DeleteDecision', () => {
  it('one set is told once; confirmed by its digest; a grown set drops the confirmation and asks again', () => {
    const d = new DeleteDecision();
    expect(d.confirm()).toEqual({ ok: false, reason: 'nothing-waiting' });
    expect(d.blocked(['b', 'a'], 'would delete 2', 't1')).toBe(true);
    expect(d.blocked(['a', 'b'], 'would delete 2', 't2')).toBe(false);
    const v = d.view()!;
    expect(v).toMatchObject({ since: 't1', total: 2, paths: ['a', 'b'], confirmed: false, digest: deletesDigest(['b', 'a']) });
    expect(d.confirm('0000000000000000')).toEqual({ ok: false, reason: 'changed' });
    expect(d.confirmedDeletes()).toBeUndefined();
    expect(d.confirm(v.digest)).toEqual({ ok: true, total: 2 });
    expect([...d.confirmedDeletes()!]).toEqual(['a', 'b']);
    expect(d.view()?.confirmed).toBe(true);
    // The confirmed pass would delete one more: a new set, unconfirmed.
    expect(d.blocked(['a', 'b', 'c'], 'would delete 3', 't3')).toBe(true);
    expect(d.confirmedDeletes()).toBeUndefined();
    expect(d.view()).toMatchObject({ total: 3, confirmed: false, since: 't3' });
    expect(d.passed()).toBe(true);
    expect(d.view()).toBeUndefined();
    expect(d.passed()).toBe(false);
  });

  it('shows the first 100 paths and the total', () => {
    const d = new DeleteDecision();
    d.blocked(Array.from({ length: 250 }, (_, i) => `f${String(i).padStart(3, '0')}`), 'm', 't');
    expect(d.view()).toMatchObject({ total: 250 });
    expect(d.view()!.paths).toHaveLength(100);
  });
});

describe('guards: confirmed deletions', () => {
  const del = (path: string): Op => ({ kind: 'delete', path, documentId: `d-${path}`, reason: 'deleted-locally' });
  const base: GuardInput = { root: '/r', rootStatus: 'ok', localFiles: 2, knownDocuments: 10, ops: [], maxDeletePercent: 50, massDeleteMinimum: 3, allowMassDelete: false, mappingId: 'docs' };
  const eight = ['1', '2', '3', '4', '5', '6', '7', '8'];

  it('stopped: confirmable, the paths named, the message names the command that works on the running daemon', () => {
    const v = checkGuards({ ...base, ops: eight.map(del) });
    expect(v.ok).toBe(false);
    if (v.ok) return;
    expect(v.confirmable).toBe(true);
    expect(v.deletedPaths).toEqual(eight);
    expect(v.message).toContain('dssync confirm-delete --mapping docs');
    expect(v.message).toContain('dssync sync --allow-mass-delete');
  });

  it('goes ahead when every deletion was confirmed, and not when one more would go', () => {
    expect(checkGuards({ ...base, ops: eight.map(del), confirmedDeletes: new Set(eight) })).toEqual({ ok: true, deletes: 8, confirmed: true });
    expect(checkGuards({ ...base, ops: [...eight, '9'].map(del), confirmedDeletes: new Set(eight) }).ok).toBe(false);
    // The empty folder too (confirmable like the share).
    const empty = checkGuards({ ...base, localFiles: 0, ops: eight.map(del) });
    expect(!empty.ok && empty.confirmable).toBe(true);
    expect(checkGuards({ ...base, localFiles: 0, ops: eight.map(del), confirmedDeletes: new Set(eight) }).ok).toBe(true);
  });

  it('a missing folder is never confirmable', () => {
    const v = checkGuards({ ...base, rootStatus: 'missing', ops: eight.map(del), confirmedDeletes: new Set(eight) });
    expect(!v.ok && v.confirmable).toBeFalsy();
  });
});

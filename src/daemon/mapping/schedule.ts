/**
 * When a mapping runs which pass: a pure state machine, (state, event, now) -> the next
 * state, the actions to carry out and the next deadline. `MappingRunner` only carries the
 * actions out (build the mirror, run a pass, arm one timer at `nextDeadline`), so every
 * scheduling rule is here, tested with a fake clock, and driven by the simulation.
 *
 * Rules:
 * - passes run one at a time; a full pass first, then on demand (watcher lost events,
 *   a reload on SIGHUP — with the settings changed or not —, a retry after failures, the
 *   periodic rescan);
 * - changes seen during a pass or during a back-off wait; after a back-off the retry's full
 *   pass covers them (a failing pass is not retried in a loop);
 * - a failed pass backs off exponentially (`retryDelayMs`); a refused file is not a failure;
 * - files a pass set aside (changed within the stability window: being written?) are looked
 *   at again one window later (`lookAgain`), until they settle or, for `dssync sync`, until
 *   its deadline (`giveUpAt`): the one settle rule of the daemon and of `sync`;
 * - `rescanIntervalMs: 0` means a full pass at start (and on demand) only: no periodic rescan;
 * - a paused mapping starts no pass and arms no timer (the pass in progress finishes);
 *   resuming runs a full pass, which sends whatever changed meanwhile;
 * - a pass stopped by the mass-delete guard waits for the operator's decision: no retry and
 *   no periodic rescan (each would list every document again), only a change in the folder
 *   (a full pass: the files may be back) or the confirmation (a full pass that may delete
 *   what was shown) runs the next pass.
 */
import { backoffCeiling, spread } from '../../time/backoff.js';

/** The first retry delay of a failing mapping (ms), unless configured otherwise. */
export const DEFAULT_RETRY_BASE_MS = 5_000;
export const MAX_RETRY_DELAY_MS = 300_000;

/** Exponential back-off for a failing mapping: 5 s, 10 s, ... up to 5 min, ±20 %. */
export function retryDelayMs(failures: number, random: () => number = Math.random, firstMs = DEFAULT_RETRY_BASE_MS): number {
  return spread(backoffCeiling(failures, { baseMs: firstMs, maxMs: MAX_RETRY_DELAY_MS }), 0.2, random);
}

export type PassKind = 'full' | 'changes';

export interface ScheduleConfig {
  /** Periodic full rescan interval (ms); 0 turns the periodic rescan off. */
  rescanIntervalMs: number;
  /** First retry delay after a failure (ms). */
  retryBaseMs?: number | undefined;
  /** The stability window (ms): files a pass set aside are looked at again this long after it. */
  settleMs: number;
  /** No look at files set aside after this (monotonic ms): `dssync sync`'s deadline. */
  giveUpAt?: number | undefined;
}

export interface ScheduleState {
  readonly config: ScheduleConfig;
  readonly started: boolean;
  readonly stopped: boolean;
  /** The pass in progress, if any. */
  readonly running: PassKind | undefined;
  readonly fullWanted: boolean;
  /** Changes are waiting for an incremental pass. */
  readonly changesWaiting: boolean;
  /** Consecutive failed passes. */
  readonly failures: number;
  readonly retryAt: number | undefined;
  readonly rescanAt: number | undefined;
  /** When the files a pass set aside are looked at again. */
  readonly settleAt: number | undefined;
  /** Paused by the operator (`dssync pause`): no pass starts. */
  readonly paused: boolean;
  /** A pass was stopped by the mass-delete guard: waiting for the operator's decision. */
  readonly awaitingDecision: boolean;
}

export type ScheduleEvent =
  | { type: 'started' }
  /** The aggregator released a batch; `rescan` when the watcher lost events. */
  | { type: 'batchReady'; rescan?: boolean | undefined }
  /**
   * `failed`: the data source is behind the folder and a full pass after a back-off settles it.
   * `awaitDecision`: the mass-delete guard stopped it; no retry until a decision or a change.
   */
  | { type: 'passFinished'; kind: PassKind; ok: boolean; reason?: string | undefined; awaitDecision?: boolean | undefined }
  /** A pass set files aside as maybe being written. */
  | { type: 'setAside' }
  /** The timer at `nextDeadline` fired (rescan, retry or a look at files set aside, whichever is due). */
  | { type: 'tick' }
  /** A full pass right away, cancelling the back-off (SIGHUP, the folder is watched again). */
  | { type: 'fullPassRequested' }
  /** SIGHUP: the settings as read again (maybe unchanged); a full pass follows at once. */
  | { type: 'configChanged'; config: ScheduleConfig }
  | { type: 'pause' }
  /** Resumed: a full pass sends what changed while paused. */
  | { type: 'resume' }
  /** The operator confirmed the deletions shown: a full pass now. */
  | { type: 'deletesConfirmed' }
  | { type: 'stop' };

export type ScheduleAction =
  | { type: 'runFullPass' }
  | { type: 'runChangesPass' }
  | { type: 'scheduleRescan'; at: number }
  /** The files set aside join the next pass's scope (a changes pass, or the full pass a decision waits for). */
  | { type: 'lookAgain' }
  | { type: 'retryAt'; at: number; failures: number }
  | { type: 'enterDegraded'; reason: string }
  | { type: 'leaveDegraded' };

export interface Step {
  state: ScheduleState;
  actions: ScheduleAction[];
  /** When to deliver the next `tick` (undefined: nothing is timed). */
  nextDeadline: number | undefined;
}

export function initialSchedule(config: ScheduleConfig, opts: { paused?: boolean | undefined } = {}): ScheduleState {
  return {
    paused: opts.paused === true,
    awaitingDecision: false,
    config,
    started: false,
    stopped: false,
    running: undefined,
    fullWanted: true,
    changesWaiting: false,
    failures: 0,
    retryAt: undefined,
    rescanAt: undefined,
    settleAt: undefined,
  };
}

/**
 * One step. `now` and every time in the state are monotonic milliseconds (Clock.monotonic):
 * a step of the wall clock moves no retry and no rescan. `random` (0..1) jitters the delays it arms; the runner passes Math.random (or
 * its injected source), tests a constant.
 */
export function step(s: ScheduleState, e: ScheduleEvent, now: number, random: () => number = () => 0.5): Step {
  const actions: ScheduleAction[] = [];
  let n: ScheduleState = s;
  if (s.stopped) return { state: s, actions, nextDeadline: undefined };
  switch (e.type) {
    case 'started':
      n = { ...n, started: true };
      break;
    case 'batchReady':
      // Waiting for a decision, a change is looked at by a full pass: the files may be back.
      n = e.rescan || n.awaitingDecision ? { ...n, fullWanted: true } : { ...n, changesWaiting: true };
      break;
    case 'pause':
      n = { ...n, paused: true, retryAt: undefined, rescanAt: undefined };
      break;
    case 'resume':
      if (n.paused) n = { ...n, paused: false, fullWanted: true, retryAt: undefined };
      break;
    case 'deletesConfirmed':
    case 'fullPassRequested':
      n = { ...n, fullWanted: true, retryAt: undefined };
      break;
    case 'setAside': {
      const at = now + n.config.settleMs;
      if (n.settleAt === undefined && at <= (n.config.giveUpAt ?? Infinity)) n = { ...n, settleAt: at };
      break;
    }
    case 'tick':
      if (n.settleAt !== undefined && n.settleAt <= now) {
        n = { ...n, settleAt: undefined, ...(n.awaitingDecision ? { fullWanted: true } : { changesWaiting: true }) };
        actions.push({ type: 'lookAgain' });
      }
      if (n.retryAt !== undefined && n.retryAt <= now) n = { ...n, retryAt: undefined, fullWanted: true };
      // Waiting for a decision, the periodic rescan would only list everything again.
      if (n.rescanAt !== undefined && n.rescanAt <= now) n = { ...n, rescanAt: undefined, fullWanted: n.fullWanted || !n.awaitingDecision };
      break;
    case 'configChanged': {
      // A reload (SIGHUP), the settings changed or not: the ignore files are read again and a
      // full pass applies them at once, back-off or not (the operator acted).
      n = { ...n, config: e.config, fullWanted: true, retryAt: undefined };
      // A new interval applies from now on; 0 drops the pending rescan.
      if (e.config.rescanIntervalMs !== s.config.rescanIntervalMs && n.rescanAt !== undefined) {
        n = { ...n, rescanAt: rescanTime(e.config, now, random) };
        if (n.rescanAt !== undefined) actions.push({ type: 'scheduleRescan', at: n.rescanAt });
      }
      break;
    }
    case 'stop':
      return { state: { ...n, stopped: true, retryAt: undefined, rescanAt: undefined, settleAt: undefined }, actions, nextDeadline: undefined };
    case 'passFinished': {
      n = { ...n, running: undefined, awaitingDecision: e.awaitDecision === true };
      if (e.awaitDecision) {
        // Not a failure to retry: the same listing would be stopped the same way. Changes
        // seen meanwhile are looked at by a full pass (the files may be back).
        n = { ...n, retryAt: undefined, rescanAt: undefined, fullWanted: n.fullWanted || n.changesWaiting, changesWaiting: false };
      } else if (!e.ok) {
        const failures = n.failures + 1;
        const at = now + retryDelayMs(failures, random, n.config.retryBaseMs);
        n = { ...n, failures, retryAt: at };
        actions.push({ type: 'retryAt', at, failures });
        if (e.reason !== undefined) actions.push({ type: 'enterDegraded', reason: e.reason });
      } else {
        actions.push({ type: 'leaveDegraded' });
        n = { ...n, failures: 0 };
        if (e.kind === 'full') {
          n = { ...n, rescanAt: rescanTime(n.config, now, random) };
          if (n.rescanAt !== undefined) actions.push({ type: 'scheduleRescan', at: n.rescanAt });
        }
      }
      break;
    }
  }
  // Start the next pass if nothing runs and no back-off holds it.
  if (n.started && !n.paused && n.running === undefined && n.retryAt === undefined) {
    if (n.fullWanted) {
      // A full pass looks at everything the waiting changes named.
      n = { ...n, running: 'full', fullWanted: false, changesWaiting: false };
      actions.push({ type: 'runFullPass' });
    } else if (n.changesWaiting) {
      n = { ...n, running: 'changes', changesWaiting: false };
      actions.push({ type: 'runChangesPass' });
    }
  }
  return { state: n, actions, nextDeadline: deadline(n) };
}

function rescanTime(c: ScheduleConfig, now: number, random: () => number): number | undefined {
  if (!(c.rescanIntervalMs > 0)) return undefined;
  return now + spread(c.rescanIntervalMs, 0.1, random);
}

function deadline(s: ScheduleState): number | undefined {
  if (s.paused) return undefined;
  const ds = [s.retryAt, s.rescanAt, s.settleAt].filter((d): d is number => d !== undefined);
  return ds.length === 0 ? undefined : Math.min(...ds);
}

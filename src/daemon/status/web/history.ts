/**
 * The daemon's recent history for the status page: what was done (activity), what went
 * wrong and what happens next (problems), and the last hour in 10-second points (charts).
 * Everything lives in fixed-size ring buffers (sizes in HISTORY_LIMITS, stated in
 * docs/status.md), so a week-long run holds no more than a fresh one.
 *
 * Pure bookkeeping: it is told about operations, requests and passes (by the daemon's
 * hooks) and reads time from the clock it is given.
 */
import type { OpEvent } from '../../../engine/executor.js';
import { shownCodeOf } from '../../../errors/errno.js';
import { ANSWER_LOST, awaitingDecision, FILE_REFUSED, fileRetried, GUARD_STOPPED, retriedWithBackoff } from '../../mapping/next-step.js';
import { RingBuffer, type Sequenced } from './ring-buffer.js';
import type { MappingStatus } from '../schema.js';

export const HISTORY_LIMITS = {
  /** Operations shown in the feed (all mappings together). */
  activity: 1000,
  /** Problems (failed, refused, ambiguous operations; failed passes). */
  problems: 300,
  /** Chart points: one per 10 s, one hour. */
  points: 360,
  pointSeconds: 10,
  /** Lag samples kept per point for its percentiles (newer ones overwrite older ones). */
  lagSamplesPerPoint: 256,
} as const;

/** What the chart counts of a request (the daemon maps the client's events to it). */
export type RequestSample = 'answered' | 'throttled' | 'retried';

export interface ActivityEntry {
  at: string;
  mapping: string;
  kind: OpEvent['kind'];
  path: string;
  outcome: OpEvent['outcome'];
  /** Change-to-service lag: from the first event about the file to the service's answer. */
  lagMs?: number | undefined;
  /** Why it failed, for outcomes other than done. */
  message?: string | undefined;
  /** The failure's stable error code (E_*, errors/codes.ts), beside the prose: the page filters by it. */
  code?: string | undefined;
}

export interface ProblemEntry {
  at: string;
  mapping: string;
  path?: string | undefined;
  what: string;
  message: string;
  /** The error's stable code (E_*, errors/codes.ts), when it has one: the page filters by it. */
  code?: string | undefined;
  /** What dssync does about it next, in words. */
  next: string;
}

export interface ChartPoint {
  /** Start of the 10-second interval, epoch seconds. */
  t: number;
  ops: number;
  failed: number;
  requests: number;
  throttled: number;
  retries: number;
  lagP50?: number | undefined;
  lagP95?: number | undefined;
}

interface OpenPoint extends ChartPoint {
  lag: number[];
  lagCount: number;
}

/** The pass running now: operations finished so far (status/schema.ts). */
export type CurrentPass = NonNullable<MappingStatus['currentPass']>;

export interface HistorySnapshot {
  activity: Sequenced<ActivityEntry>[];
  problems: ProblemEntry[];
  points: ChartPoint[];
  passes: Record<string, CurrentPass>;
  limits: typeof HISTORY_LIMITS;
}

/** What outlives a restart (feed-file.ts): the feed, the recent problems and the chart's hour. */
export interface SavedHistory {
  activity: ActivityEntry[];
  problems: ProblemEntry[];
  points: ChartPoint[];
}

export type HistoryListener = (e: { type: 'activity'; entry: Sequenced<ActivityEntry> } | { type: 'problem'; entry: ProblemEntry }) => void;

export class DaemonHistory {
  readonly activity = new RingBuffer<ActivityEntry>(HISTORY_LIMITS.activity);
  readonly problems = new RingBuffer<ProblemEntry>(HISTORY_LIMITS.problems);
  private readonly points = new RingBuffer<OpenPoint>(HISTORY_LIMITS.points);
  private readonly passes = new Map<string, CurrentPass>();
  private readonly listeners = new Set<HistoryListener>();

  /** `retryBaseMs`: the first delay of the schedule's back-off (DSSYNC_RETRY_DELAY_MS), for the words of what happens next. */
  constructor(
    private readonly now: () => number,
    private readonly retryBaseMs?: number | undefined,
  ) {}

  subscribe(l: HistoryListener): () => void {
    this.listeners.add(l);
    return () => this.listeners.delete(l);
  }

  onOp(mapping: string, e: OpEvent, lagMs: number | undefined): void {
    const at = new Date(this.now()).toISOString();
    const message = e.outcome === 'done' ? undefined : (e.error?.message ?? describeOutcome(e.outcome));
    const code = e.outcome === 'done' ? undefined : shownCodeOf(e.error);
    const entry: ActivityEntry = { at, mapping, kind: e.kind, path: e.path, outcome: e.outcome, lagMs, message, code };
    const seq = this.activity.push(entry);
    this.emit({ type: 'activity', entry: { seq, item: entry } });
    const pass = this.passes.get(mapping);
    if (pass) pass.done++;
    const p = this.point();
    p.ops++;
    if (e.outcome === 'failed' || e.outcome === 'rejected' || e.outcome === 'ambiguous') p.failed++;
    if (lagMs !== undefined) {
      p.lag[p.lagCount % HISTORY_LIMITS.lagSamplesPerPoint] = lagMs;
      p.lagCount++;
    }
    const next = nextStep(e, this.retryBaseMs);
    if (next) this.problem({ at, mapping, path: e.path, what: `${e.kind} ${e.outcome}`, message: message ?? '', code, next });
  }

  /** A request the service answered (`throttled`: with 429), or one retried. */
  onRequest(r: RequestSample): void {
    const p = this.point();
    if (r === 'retried') p.retries++;
    else p.requests++;
    if (r === 'throttled') p.throttled++;
  }

  onPassStart(mapping: string, kind: 'full' | 'changes'): void {
    this.passes.set(mapping, { kind, startedAt: new Date(this.now()).toISOString(), done: 0 });
  }

  onPassEnd(mapping: string, blocked?: { message: string; confirmable?: true | undefined }): void {
    this.passes.delete(mapping);
    if (!blocked) return;
    const next = blocked.confirmable ? awaitingDecision(mapping) : GUARD_STOPPED;
    this.problem({ at: new Date(this.now()).toISOString(), mapping, what: 'pass stopped', message: blocked.message, next });
  }

  /** A mapping that failed as a whole (service unreachable, folder gone...). */
  onMappingFailure(mapping: string, message: string): void {
    this.passes.delete(mapping);
    this.problem({ at: new Date(this.now()).toISOString(), mapping, what: 'mapping degraded', message, next: retriedWithBackoff(this.retryBaseMs) });
  }

  currentPass(mapping: string): CurrentPass | undefined {
    const p = this.passes.get(mapping);
    return p && { ...p };
  }

  /** The last hour, oldest first, with a point for every interval (quiet ones are zero). */
  chart(): ChartPoint[] {
    this.point();
    return this.points.items().map(({ lag, lagCount, ...p }) => ({ ...p, ...percentiles(lag.slice(0, Math.min(lagCount, HISTORY_LIMITS.lagSamplesPerPoint))) }));
  }

  snapshot(): HistorySnapshot {
    return {
      activity: this.activity.entries().reverse(),
      problems: this.problems.items().reverse(),
      points: this.chart(),
      passes: Object.fromEntries(this.passes),
      limits: HISTORY_LIMITS,
    };
  }

  /** Oldest first, as restore() takes it back. */
  save(): SavedHistory {
    return { activity: this.activity.items(), problems: this.problems.items(), points: this.chart() };
  }

  /**
   * What an earlier run of the daemon saved: its entries come first (with new sequence
   * numbers), its chart points keep their lag percentiles, and the points of an hour ago or
   * older fall out as time moves on, as every point does.
   */
  restore(saved: SavedHistory): void {
    for (const a of saved.activity) this.activity.push(a);
    for (const p of saved.problems) this.problems.push(p);
    const step = HISTORY_LIMITS.pointSeconds;
    const now = Math.floor(this.now() / 1000 / step) * step;
    for (const p of saved.points) {
      const newest = this.points.newest();
      if (p.t > now || (newest && p.t <= newest.t) || p.t <= now - step * HISTORY_LIMITS.points) continue;
      this.points.push({ ...p, lag: [], lagCount: 0 });
    }
  }

  private problem(p: ProblemEntry): void {
    this.problems.push(p);
    this.emit({ type: 'problem', entry: p });
  }

  private emit(e: Parameters<HistoryListener>[0]): void {
    for (const l of this.listeners) l(e);
  }

  /** The point of the current interval; quiet intervals since the last one get empty points. */
  private point(): OpenPoint {
    const step = HISTORY_LIMITS.pointSeconds;
    const t = Math.floor(this.now() / 1000 / step) * step;
    let last = this.points.newest();
    if (last && last.t >= t) return last;
    // Fill the gap (at most one hour of it) so the chart's time axis stays regular.
    let from = last ? last.t + step : t;
    if (t - from > step * HISTORY_LIMITS.points) from = t - step * (HISTORY_LIMITS.points - 1);
    for (let at = from; at <= t; at += step) this.points.push(emptyPoint(at));
    last = this.points.newest()!;
    return last;
  }
}

function emptyPoint(t: number): OpenPoint {
  return { t, ops: 0, failed: 0, requests: 0, throttled: 0, retries: 0, lag: [], lagCount: 0 };
}

/** p50 and p95 (nearest rank) of the samples, in ms. */
export function percentiles(samples: number[]): { lagP50?: number; lagP95?: number } {
  if (samples.length === 0) return {};
  const s = [...samples].sort((a, b) => a - b);
  const rank = (q: number): number => s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))]!;
  return { lagP50: rank(0.5), lagP95: rank(0.95) };
}

function describeOutcome(o: OpEvent['outcome']): string {
  switch (o) {
    case 'changed':
      return 'the file changed while it was sent';
    case 'ambiguous':
      return "the service's answer was lost";
    default:
      return o;
  }
}

/** What happens next to a file whose operation did not succeed (undefined: not a problem). */
export function nextStep(e: Pick<OpEvent, 'outcome' | 'error'>, retryBaseMs?: number): string | undefined {
  switch (e.outcome) {
    case 'failed':
      return fileRetried(retryBaseMs);
    case 'rejected':
      return FILE_REFUSED;
    case 'ambiguous':
      return ANSWER_LOST;
    default:
      return undefined;
  }
}


/**
 * The service's rate limit, learned from its 429 answers (DESIGN §5: under a rate limit,
 * keep the pipe full). A 429 from a per-second limiter says "you went over"; the answers it
 * let through in the second before say by how much. The pacer then goes at that rate
 * instead of pausing every request for a whole Retry-After each time the limit is crossed.
 *
 * How the limiter is modelled: it counts the requests it accepted in the last second. We
 * see those as the answers other than 429 received in the last second, plus the requests
 * still running (each may yet be accepted). A new request may start while that count is
 * under the learned rate. Counting answers rather than starts matters: requests do not take
 * equally long to reach the limiter, so starts paced at exactly the limit still bunch up in
 * its window; answers arrive after its decisions, so the model only errs on the safe side.
 * Refused requests are not counted, as the limiter does not count them.
 *
 * - First 429: the learned rate is `margin` of the answers of the last second. Too little
 *   evidence (fewer than `minEvidence` answers: a lone request, a service refusing nearly
 *   everything) learns nothing: the caller falls back to the shared pause.
 * - Later 429s, of requests started at the learned rate: -`decreaseStep`, at most once per
 *   second (a burst of 429s, after the service stalled, is one signal, not ten).
 * - Up: while the learned rate holds requests back and no 429 came for `probeAfterMs` (3 s),
 *   +`probeStep` per second, doubling each second the service keeps taking it (3 %, 6 %,
 *   12 % … at most ×2 a second), so a lifted limit is found again within seconds. The few
 *   429s this costs are flow control for the pacer, not failures.
 * - The first 429 after a probe raised the rate says the probe went past the limit: the
 *   answers of the last second say where it is (as for the first 429), so the rate drops
 *   there at once instead of 3 % a second — over the limit for at most about a second.
 *
 * Pure apart from the times passed in.
 */

export interface AdaptiveRateOptions {
  /** Share of the answers of the last second that the first 429 sets as the rate. Default 0.98. */
  margin?: number;
  /** Cut of the rate on later 429s, at most once per second. Default 0.03 (3 %). */
  decreaseStep?: number;
  /** Quiet time after the last 429 before the rate is raised again (ms). Default 3000. */
  probeAfterMs?: number;
  /** First growth per second while probing; it doubles each second without a 429, up to ×2. Default 0.03 (3 %). */
  probeStep?: number;
  /** Answers needed in the last second to estimate a rate. Default 2. */
  minEvidence?: number;
  /** The learned rate never goes below this (requests per second). Default 0.5. */
  minRps?: number;
}

/** One request, from its start to its answer. */
export interface StartRecord {
  at: number;
  outcome: 'running' | 'accepted' | 'refused';
}

const WINDOW_MS = 1000;
/** While only running requests fill the window, look again this often (ms). */
const RECHECK_MS = 20;

export class AdaptiveRate {
  private readonly margin: number;
  private readonly decreaseStep: number;
  private readonly probeAfterMs: number;
  private readonly probeStep: number;
  private readonly minEvidence: number;
  private readonly minRps: number;
  /** Times of the answers other than 429 in the last window, oldest first (from `head`). */
  private answers: number[] = [];
  private head = 0;
  private running = 0;
  private learned: number | undefined;
  private lastThrottleAt = -Infinity;
  private lastAdjustAt = -Infinity;
  private lastDecreaseAt = -Infinity;
  /** When the rate was first learned: 429s of requests sent before say nothing about it. */
  private learnedAt = Infinity;
  /** Probes in a row since the last 429: the next one grows by probeStep × 2^probes (≤ ×2). */
  private probes = 0;

  constructor(
    opts: AdaptiveRateOptions = {},
    /** Told of every change of the learned rate (for logs and metrics). */
    private readonly onChange?: (rps: number, reason: 'throttled' | 'probe') => void,
  ) {
    this.margin = opts.margin ?? 0.98;
    this.decreaseStep = opts.decreaseStep ?? 0.03;
    this.probeAfterMs = opts.probeAfterMs ?? 3000;
    this.probeStep = opts.probeStep ?? 0.03;
    this.minEvidence = opts.minEvidence ?? 2;
    this.minRps = opts.minRps ?? 0.5;
  }

  /** The learned rate (requests per second); undefined until a 429 taught one. */
  get rps(): number | undefined {
    return this.learned;
  }

  /** Milliseconds until the learned rate lets one more request start at `now` (0: now). */
  delay(now: number): number {
    if (this.learned === undefined) return 0;
    let d = this.wait(now, this.learned);
    if (d > 0 && now - this.lastThrottleAt >= this.probeAfterMs && now - this.lastAdjustAt >= WINDOW_MS) {
      // Held back by the learned rate with no 429 for a while: try more, faster each second.
      const step = Math.min(1, this.probeStep * 2 ** this.probes);
      this.probes++;
      this.setRate(this.learned * (1 + step), now, 'probe');
      d = this.wait(now, this.learned);
    }
    return d;
  }

  /** A request starts at `now` (it passed delay()). */
  record(now: number): StartRecord {
    this.running++;
    return { at: now, outcome: 'running' };
  }

  /** The request that started as `start` was answered at `now` (anything but a 429). */
  accepted(start: StartRecord, now: number): void {
    if (start.outcome !== 'running') return;
    start.outcome = 'accepted';
    this.running--;
    this.answers.push(now);
    this.prune(now);
  }

  /**
   * The request that started as `start` was answered 429 at `now`. Returns true when a
   * learned rate paces the requests from now on, so that only this request need wait
   * (its Retry-After); false when there is too little evidence for a rate, or `learn` is
   * false (a 429 that is no per-second limit's answer, e.g. a quota's long Retry-After).
   */
  throttled(start: StartRecord, now: number, learn = true): boolean {
    if (start.outcome === 'running') this.running--;
    start.outcome = 'refused';
    if (!learn) return false;
    this.lastThrottleAt = now;
    const probed = this.probes > 0;
    this.probes = 0;
    this.prune(now);
    const answered = this.answers.length - this.head;
    if (this.learned !== undefined) {
      if (start.at >= this.learnedAt && now - this.lastDecreaseAt >= WINDOW_MS) {
        this.lastDecreaseAt = now;
        let next = this.learned * (1 - this.decreaseStep);
        // Past the limit by a probe: the last second's answers tell where the limit is.
        if (probed && answered >= this.minEvidence) next = Math.min(next, answered * this.margin);
        this.setRate(Math.max(this.minRps, next), now, 'throttled');
      }
      return true;
    }
    if (answered < this.minEvidence) return false;
    this.learnedAt = now;
    this.setRate(Math.max(this.minRps, answered * this.margin), now, 'throttled');
    return true;
  }

  /** How long until the model of the limiter's window has room for one more request. */
  private wait(now: number, rps: number): number {
    this.prune(now);
    // A rate under 1 per second: one request per 1/rps seconds.
    const windowMs = rps >= 1 ? WINDOW_MS : WINDOW_MS / rps;
    const cap = Math.max(1, Math.floor(rps));
    let inWindow = this.running;
    let oldest: number | undefined;
    for (let i = this.answers.length - 1; i >= this.head; i--) {
      const t = this.answers[i]!;
      if (t <= now - windowMs) break;
      inWindow++;
      oldest = t;
    }
    if (inWindow < cap) return 0;
    // Full: room comes when the oldest answer leaves the window, or when a running request
    // ends (we do not know when: look again soon).
    const answersInWindow = inWindow - this.running;
    if (answersInWindow === 0 || oldest === undefined) return RECHECK_MS;
    // The answers beyond what fits with the running requests must leave first.
    const mustLeave = inWindow - cap + 1;
    let k = 0;
    for (let i = this.head; i < this.answers.length; i++) {
      const t = this.answers[i]!;
      if (t <= now - windowMs) continue;
      if (++k === mustLeave) return Math.max(1, Math.min(t + windowMs - now, RECHECK_MS * 5));
    }
    return RECHECK_MS;
  }

  private setRate(rps: number, now: number, reason: 'throttled' | 'probe'): void {
    this.learned = rps;
    this.lastAdjustAt = now;
    this.onChange?.(rps, reason);
  }

  private prune(now: number): void {
    // Answers older than the longest window used (rates under 1/s widen it) are dropped.
    const keepMs = this.learned !== undefined && this.learned < 1 ? WINDOW_MS / this.learned : WINDOW_MS;
    while (this.head < this.answers.length && this.answers[this.head]! <= now - keepMs) this.head++;
    if (this.head > 1024 && this.head * 2 > this.answers.length) {
      this.answers = this.answers.slice(this.head);
      this.head = 0;
    }
  }
}

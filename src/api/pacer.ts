/**
 * The pacer: ONE gate that every request of a client (or of several clients of the same
 * service) passes through (DESIGN §1.3, §2). It holds
 *  - a concurrency cap (slots.ts: retries first, then in arrival order),
 *  - a requests-per-second cap (a sliding window on the injected clock, so tests need no
 *    real time),
 *  - one shared back-off: a 429/503 from any request pauses every request until its
 *    Retry-After (or a computed back-off) has passed,
 *  - a learned rate (adaptive-rate.ts): a 429 with a short Retry-After (a per-second
 *    limiter's) from a service that accepted a measurable rate just before makes every
 *    request go at that rate; only the refused request waits its Retry-After, and the pipe
 *    stays full instead of everyone pausing each time the limit is crossed,
 *  - a circuit breaker (breaker.ts): after consecutive "unreachable" failures, one probe
 *    request per back-off step, every other request waits until one succeeds,
 *  - the retry loop (bounded attempts, exponential back-off with full jitter), following
 *    the one policy of retry-policy.ts.
 */
import { ApiError, isApiError, unexpectedError, type ApiErrorCode } from './errors.js';
import { backoffCeiling, backoffDelay } from '../time/backoff.js';
import { realClock, type Clock } from '../time/clock.js';
import { MAX_RETRY_AFTER_MS } from './retry-after.js';
import { decideRetry } from './retry-policy.js';
import { AdaptiveRate, type StartRecord } from './adaptive-rate.js';
import { CircuitBreaker, outcomeOf, type BreakerOptions } from './breaker.js';
import { Slots } from './slots.js';

/** 429s met by the learned rate that one request may meet before it fails (~20 s of waits). */
const MAX_PACED_RETRIES = 20;

export interface PacerOptions {
  /** Requests started per second, at most. 0 or Infinity: no cap (`queue.requestsPerSecond`). */
  requestsPerSecond: number;
  /** Requests in flight at once, at most (`queue.concurrency`). */
  concurrency: number;
  /** Attempts per request, including the first (`queue.maxAttempts`). */
  maxAttempts: number;
  /** Back-off ceiling of the first retry. Default 500 ms. */
  backoffBaseMs?: number;
  /** Back-off ceiling. Default 30 s. */
  backoffMaxMs?: number;
  /** A longer Retry-After is clamped to this. Default 10 min. */
  maxRetryAfterMs?: number;
  clock?: Clock | undefined;
  /** Uniform in [0, 1). Default Math.random. */
  random?: () => number;
  /** Shutdown: queued and waiting work rejects with E_ABORTED, running requests are aborted. */
  signal?: AbortSignal | undefined;
  /** Observations for metrics and logs. Must not throw. */
  onEvent?: ((event: PacerEvent) => void) | undefined;
  /** Learn the service's rate from its 429s (adaptive-rate.ts). Default true. */
  adaptiveRate?: boolean;
  /**
   * A 429 whose Retry-After is at most this long (a per-second limiter's answer) is met by
   * the learned rate alone; a longer one (or a 503) pauses every request. Default 2000 ms.
   */
  adaptiveMaxRetryAfterMs?: number;
  /** The circuit breaker (breaker.ts); false: none. Default: 5 failures, steps from backoffBaseMs to backoffMaxMs. */
  breaker?: BreakerOptions | false | undefined;
}

export interface CallInfo {
  method: string;
  /** Path of the request, without query or host. */
  path: string;
}

export type PacerEvent =
  | ({ type: 'attempt'; attempt: number } & CallInfo)
  | ({
      type: 'response';
      attempt: number;
      ms: number;
      ok: boolean;
      status?: number;
      code?: ApiErrorCode;
    } & CallInfo)
  | ({ type: 'retry'; attempt: number; delayMs: number; code: ApiErrorCode; status?: number } & CallInfo)
  | { type: 'throttle'; status: number; pauseMs: number; retryAfterMs?: number }
  /** The learned rate changed: lowered after a 429, or raised while probing. */
  | { type: 'rate'; rps: number; reason: 'throttled' | 'probe' }
  | { type: 'wait'; reason: 'pause' | 'rate' | 'backoff' | 'breaker'; ms: number }
  /** The circuit breaker opened (after consecutive failures) or closed (the service answered). */
  | { type: 'breaker'; open: boolean };

export interface PacerStats {
  /** Attempts started (every retry counts). */
  requests: number;
  retries: number;
  /** 429/503 answers. */
  throttled: number;
  /** Waits for the shared pause, the rate cap or a retry's back-off, and their total. */
  waits: number;
  waitMs: number;
  inFlight: number;
  /** Requests waiting for a concurrency slot. */
  queued: number;
  /** Clock time until which every request is held; 0 when not paused. */
  pausedUntil: number;
  /** The rate learned from the service's 429s (requests per second), when one was. */
  learnedRps?: number | undefined;
}

export interface RunOptions extends CallInfo {
  /** GET/PUT/DELETE: true. Create and upload POSTs: false (see retry-policy.ts). */
  idempotent: boolean;
  signal?: AbortSignal | undefined;
  /** Overrides the pacer's maxAttempts for this call. */
  maxAttempts?: number | undefined;
  /** Told before each retry's wait: which attempt failed, of how many, and the wait before the next. */
  onRetry?: ((retry: { attempt: number; maxAttempts: number; delayMs: number; error: ApiError }) => void) | undefined;
}

export interface AttemptContext {
  attempt: number;
  /**
   * Aborts on shutdown or the caller's signal: pass it to undici. The attempt must end
   * when it aborts: its slot is held until it does (nothing races it from outside).
   */
  signal: AbortSignal;
}

export class Pacer {
  readonly maxAttempts: number;
  private readonly slots: Slots;
  private readonly clock: Clock;
  private readonly random: () => number;
  private readonly window: SlidingWindow | undefined;
  private readonly adaptive: AdaptiveRate | undefined;
  private readonly adaptiveMaxRetryAfterMs: number;
  /** 429s met by the learned rate: only the refused request waits. */
  private readonly paced = new WeakSet<ApiError>();
  private readonly backoffBaseMs: number;
  private readonly backoffMaxMs: number;
  private readonly maxRetryAfterMs: number;
  private readonly signal: AbortSignal | undefined;
  private readonly onEvent: ((e: PacerEvent) => void) | undefined;
  private pausedUntil = 0;
  /** Consecutive 429/503 answers without a success in between: grows the shared pause. */
  private throttleStreak = 0;
  private readonly breaker: CircuitBreaker | undefined;
  private readonly counters = { requests: 0, retries: 0, throttled: 0, waits: 0, waitMs: 0, inFlight: 0 };

  constructor(opts: PacerOptions) {
    const concurrency = opts.concurrency;
    if (!(concurrency >= 1)) throw new RangeError(`pacer concurrency must be at least 1 (got ${concurrency})`);
    const rps = opts.requestsPerSecond;
    if (!(rps >= 0)) throw new RangeError(`pacer requestsPerSecond must be 0 (no cap) or more (got ${rps})`);
    this.maxAttempts = Math.max(1, Math.floor(opts.maxAttempts));
    this.slots = new Slots(concurrency);
    this.clock = opts.clock ?? realClock;
    this.random = opts.random ?? Math.random;
    this.window = rps > 0 && Number.isFinite(rps) ? SlidingWindow.forRate(rps) : undefined;
    this.backoffBaseMs = opts.backoffBaseMs ?? 500;
    this.backoffMaxMs = opts.backoffMaxMs ?? 30_000;
    this.maxRetryAfterMs = opts.maxRetryAfterMs ?? MAX_RETRY_AFTER_MS;
    this.signal = opts.signal;
    this.onEvent = opts.onEvent;
    this.adaptive = opts.adaptiveRate === false ? undefined : new AdaptiveRate({}, (rps, reason) => this.emit({ type: 'rate', rps, reason }));
    this.adaptiveMaxRetryAfterMs = opts.adaptiveMaxRetryAfterMs ?? 2000;
    // Its steps follow the retries' back-off bounds: a request never waits longer for the
    // breaker than its own back-off would have made it wait.
    this.breaker =
      opts.breaker === false ? undefined : new CircuitBreaker({ random: this.random, baseMs: Math.max(this.backoffBaseMs, 1), maxMs: this.backoffMaxMs, ...opts.breaker });
  }

  /**
   * The longest the back-off can make one request wait in all over `maxAttempts` attempts
   * (the sum of its ceilings; a Retry-After may ask for more): what "retrying for up to N s"
   * tells the operator.
   */
  retryWindowMs(maxAttempts: number = this.maxAttempts): number {
    let total = 0;
    for (let n = 1; n < maxAttempts; n++) total += backoffCeiling(n, { baseMs: this.backoffBaseMs, maxMs: this.backoffMaxMs });
    return total;
  }

  stats(): PacerStats {
    const now = this.clock.monotonic();
    return {
      ...this.counters,
      queued: this.slots.waiting,
      pausedUntil: this.pausedUntil > now ? this.pausedUntil : 0,
      learnedRps: this.adaptive?.rps,
    };
  }

  /** Holds every request until `untilMs` (clock time); never shortens a pause. */
  pauseUntil(untilMs: number): void {
    if (untilMs > this.pausedUntil) this.pausedUntil = untilMs;
  }

  /**
   * Runs `attempt` through the gate, retrying by the policy. Resolves with the first
   * success; rejects with an ApiError (attempts set) when the policy gives up.
   */
  async run<T>(opts: RunOptions, attempt: (ctx: AttemptContext) => Promise<T>): Promise<T> {
    const signal = combineSignals(this.signal, opts.signal);
    const maxAttempts = Math.max(1, Math.floor(opts.maxAttempts ?? this.maxAttempts));
    // 429s met by the learned rate are flow control, not failures: they do not use up the
    // attempts (a request may come back just as the rate probes above the limit), within
    // a bound of their own.
    let paced = 0;
    for (let n = 1; ; n++) {
      this.throwIfAborted(signal, opts, n - 1);
      try {
        // A retry goes ahead of first attempts, so work started is finished first.
        await this.slots.acquire(signal, n > 1);
        try {
          return await this.attemptInSlot(opts, n, signal, attempt);
        } finally {
          this.slots.release();
        }
      } catch (e) {
        const err = this.asApiError(e, signal, opts);
        err.attempts = n;
        const decision = decideRetry(err, opts.idempotent);
        if (!decision.retry) {
          decision.error.attempts = n;
          throw decision.error;
        }
        const isPaced = decision.throttle && this.paced.has(err);
        if (isPaced) paced++;
        if (isPaced ? paced > MAX_PACED_RETRIES : n - paced >= maxAttempts) throw err;
        let delayMs: number;
        if (isPaced) {
          // The learned rate holds the others back; this request waits what it was told.
          this.counters.throttled++;
          delayMs = err.retryAfterMs ?? Math.max(this.backoffBaseMs, backoffDelay(n, this.backoffOpts()));
        } else if (decision.throttle) {
          delayMs = 0; // the shared pause holds this request like every other one
          this.throttle(err);
        } else {
          delayMs = err.retryAfterMs ?? backoffDelay(n, this.backoffOpts());
        }
        this.counters.retries++;
        this.emit({ type: 'retry', method: opts.method, path: opts.path, attempt: n, delayMs, code: err.code, ...(err.status === undefined ? {} : { status: err.status }) });
        opts.onRetry?.({ attempt: n, maxAttempts, delayMs, error: err });
        if (delayMs > 0) await this.wait('backoff', delayMs, signal, opts, n);
      }
    }
  }

  private async attemptInSlot<T>(
    opts: RunOptions,
    n: number,
    signal: AbortSignal,
    attempt: (ctx: AttemptContext) => Promise<T>,
  ): Promise<T> {
    const { start, probe } = await this.gate(signal, opts, n);
    this.counters.requests++;
    this.counters.inFlight++;
    this.emit({ type: 'attempt', method: opts.method, path: opts.path, attempt: n });
    const started = this.clock.monotonic();
    try {
      const value = await attempt({ attempt: n, signal });
      if (start) this.adaptive?.accepted(start, this.clock.monotonic());
      this.breakerOutcome(probe, undefined);
      this.throttleStreak = 0;
      this.emit({ type: 'response', method: opts.method, path: opts.path, attempt: n, ms: this.clock.monotonic() - started, ok: true });
      return value;
    } catch (e) {
      this.breakerOutcome(probe, e);
      const status = isApiError(e) ? e.status : undefined;
      if (status === 429 && start) {
        const err = e as ApiError;
        const perSecond = (err.retryAfterMs ?? 0) <= this.adaptiveMaxRetryAfterMs;
        if (this.adaptive?.throttled(start, this.clock.monotonic(), perSecond)) this.paced.add(err);
      } else if (start) {
        this.adaptive?.accepted(start, this.clock.monotonic());
      }
      this.emit({
        type: 'response',
        method: opts.method,
        path: opts.path,
        attempt: n,
        ms: this.clock.monotonic() - started,
        ok: false,
        ...(status === undefined ? {} : { status }),
        ...(isApiError(e) ? { code: e.code } : {}),
      });
      throw e;
    } finally {
      this.counters.inFlight--;
    }
  }

  /** Waits until the shared pause is over and the rate caps let one more request start. */
  private async gate(signal: AbortSignal, opts: RunOptions, n: number): Promise<{ start: StartRecord | undefined; probe: boolean }> {
    for (;;) {
      this.throwIfAborted(signal, opts, n - 1);
      const now = this.clock.monotonic();
      if (now < this.pausedUntil) {
        await this.wait('pause', this.pausedUntil - now, signal, opts, n - 1);
        continue;
      }
      const delay = Math.max(this.window ? this.window.delay(now) : 0, this.adaptive ? this.adaptive.delay(now) : 0);
      if (delay <= 0) {
        // Last, so that a probe is admitted only when it really starts now.
        const admission = this.breaker?.admit(now) ?? { go: true, probe: false };
        if (!admission.go) {
          await this.wait('breaker', admission.waitMs, signal, opts, n - 1);
          continue;
        }
        this.window?.record(now);
        return { start: this.adaptive?.record(now), probe: admission.probe };
      }
      await this.wait('rate', delay, signal, opts, n - 1);
    }
  }

  private breakerOutcome(probe: boolean, e: unknown): void {
    if (!this.breaker) return;
    const was = this.breaker.open;
    this.breaker.outcome(this.clock.monotonic(), probe, outcomeOf(e));
    if (was !== this.breaker.open) this.emit({ type: 'breaker', open: this.breaker.open });
  }

  private throttle(err: ApiError): void {
    this.counters.throttled++;
    this.throttleStreak++;
    const retryAfter = err.retryAfterMs === undefined ? undefined : Math.min(err.retryAfterMs, this.maxRetryAfterMs);
    // Without a Retry-After, at least the base delay: a zero pause would hammer the service.
    const pauseMs = retryAfter ?? Math.max(this.backoffBaseMs, backoffDelay(this.throttleStreak, this.backoffOpts()));
    this.pauseUntil(this.clock.monotonic() + pauseMs);
    this.emit({ type: 'throttle', status: err.status ?? 0, pauseMs, ...(retryAfter === undefined ? {} : { retryAfterMs: retryAfter }) });
  }

  private async wait(reason: 'pause' | 'rate' | 'backoff' | 'breaker', ms: number, signal: AbortSignal, opts: RunOptions, attempts: number): Promise<void> {
    this.counters.waits++;
    this.counters.waitMs += ms;
    this.emit({ type: 'wait', reason, ms });
    try {
      await this.clock.sleep(ms, signal);
    } catch (e) {
      if (signal.aborted) throw aborted(opts, attempts, e);
      throw e;
    }
  }

  private backoffOpts(): { baseMs: number; maxMs: number; random: () => number } {
    return { baseMs: this.backoffBaseMs, maxMs: this.backoffMaxMs, random: this.random };
  }

  private asApiError(e: unknown, signal: AbortSignal, opts: RunOptions): ApiError {
    if (isApiError(e)) return e;
    if (signal.aborted) return aborted(opts, 0, e);
    return unexpectedError(e, opts.method, opts.path);
  }

  private throwIfAborted(signal: AbortSignal, opts: RunOptions, attempts: number): void {
    if (signal.aborted) throw aborted(opts, attempts, signal.reason);
  }

  private emit(event: PacerEvent): void {
    try {
      this.onEvent?.(event);
    } catch {
      // Observers must not break requests.
    }
  }
}

function aborted(opts: CallInfo, attempts: number, cause: unknown): ApiError {
  return new ApiError({
    code: 'E_ABORTED',
    message: `${opts.method} ${opts.path}: aborted`,
    method: opts.method,
    path: opts.path,
    attempts,
    cause,
  });
}

function combineSignals(a: AbortSignal | undefined, b: AbortSignal | undefined): AbortSignal {
  if (a && b) return AbortSignal.any([a, b]);
  return a ?? b ?? new AbortController().signal;
}

/**
 * At most `cap` starts in any window of `windowMs` (rolling, so no burst at a window edge).
 * Exported for tests.
 */
export class SlidingWindow {
  private readonly starts: number[] = [];
  constructor(
    readonly cap: number,
    readonly windowMs: number,
  ) {}

  /** 2.5 rps: 2 per 800 ms; 0.5 rps: 1 per 2 s. */
  static forRate(rps: number): SlidingWindow {
    if (rps >= 1) {
      const cap = Math.floor(rps);
      return new SlidingWindow(cap, (1000 * cap) / rps);
    }
    return new SlidingWindow(1, 1000 / rps);
  }

  /** Milliseconds until one more start is allowed at `now` (0: now). */
  delay(now: number): number {
    this.prune(now);
    if (this.starts.length < this.cap) return 0;
    return (this.starts[0] ?? now) + this.windowMs - now;
  }

  record(now: number): void {
    this.starts.push(now);
  }

  private prune(now: number): void {
    while (this.starts.length > 0 && (this.starts[0] ?? 0) <= now - this.windowMs) this.starts.shift();
  }
}

/**
 * The pacer's circuit breaker (issue 9): while the service is down, a client that retries
 * every request on its own knocks several times a second. After `threshold` consecutive
 * failures of the "service unreachable" kind (no answer, or a 5xx other than the 503 the
 * shared pause already handles), the breaker opens: one probe request may go per back-off
 * step (growing, with jitter, up to `maxMs`), every other request waits. The first success
 * (or any answer that shows the service is up, a 4xx) closes it; waiting requests look again
 * at least once a second (POLL_MS), so every one resumes within a second of that success.
 * Pure: time is passed in.
 */
import { backoffCeiling } from '../time/backoff.js';
import { isApiError } from './errors.js';

/** Waiting requests look again at least this often. */
export const BREAKER_POLL_MS = 1000;

export interface BreakerOptions {
  /** Consecutive failures that open it. Default 5. */
  threshold?: number;
  /** First back-off step. Default 1 s. */
  baseMs?: number;
  /** Longest step. Default 30 s. */
  maxMs?: number;
  random?: () => number;
}

export type Admission = { go: true; probe: boolean } | { go: false; waitMs: number };

export type Outcome = 'answered' | 'outage' | 'neutral';

/**
 * What a request's result says about the service: it answered (a success, a 4xx, a 503
 * the shared pause handles), it could not be reached or failed as a whole (no answer, 5xx),
 * or nothing (aborted by us, a local file error).
 */
export function outcomeOf(e: unknown): Outcome {
  if (e === undefined) return 'answered';
  if (!isApiError(e) || e.code === 'E_ABORTED' || e.code === 'E_FILE_CHANGED') return 'neutral';
  if (e.code === 'E_CONNECTION' || e.code === 'E_TIMEOUT') return 'outage';
  if (e.status !== undefined && e.status >= 500 && e.status !== 503) return 'outage';
  return 'answered';
}

export class CircuitBreaker {
  private readonly threshold: number;
  private readonly baseMs: number;
  private readonly maxMs: number;
  private readonly random: () => number;
  private failures = 0;
  private step = 0;
  /** Open: no request before this time, then one probe. */
  private openUntil = 0;
  private probing = false;

  constructor(o: BreakerOptions = {}) {
    this.threshold = Math.max(1, o.threshold ?? 5);
    this.baseMs = o.baseMs ?? 1000;
    this.maxMs = o.maxMs ?? 30_000;
    this.random = o.random ?? Math.random;
  }

  get open(): boolean {
    return this.step > 0;
  }

  /** May a request start now? One probe per step while open. */
  admit(now: number): Admission {
    if (this.step === 0) return { go: true, probe: false };
    if (!this.probing && now >= this.openUntil) {
      this.probing = true;
      return { go: true, probe: true };
    }
    const until = this.probing ? now + BREAKER_POLL_MS : this.openUntil;
    return { go: false, waitMs: Math.max(1, Math.min(BREAKER_POLL_MS, until - now)) };
  }

  /** The outcome of a request that was admitted; `probe` as admit said. */
  outcome(now: number, probe: boolean, outcome: Outcome): void {
    if (probe) this.probing = false;
    if (outcome === 'neutral') return;
    if (outcome === 'answered') {
      this.failures = 0;
      this.step = 0;
      this.openUntil = 0;
      return;
    }
    this.failures++;
    if (this.step === 0 && this.failures < this.threshold) return;
    // Opens, or its probe failed: the next, longer step. (A request already in flight when
    // it opened changes nothing.)
    if (this.step === 0 || probe) {
      this.step++;
      const ceiling = backoffCeiling(this.step, { baseMs: this.baseMs, maxMs: this.maxMs });
      // Half fixed, half jitter: never a step of almost nothing.
      this.openUntil = now + Math.ceil(ceiling / 2 + (this.random() * ceiling) / 2);
    }
  }
}

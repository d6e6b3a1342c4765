/**
 * Decides, per request, which fault (if any) the emulator injects, and waits out its
 * latency. Pure apart from the injected clock, sleep and seeded generator, so tests can
 * replay a sequence exactly and count the waits instead of timing them.
 *
 * Order for one request: `down` -> rate limit -> drop -> 5xx -> (writes) ambiguous.
 * The generator is drawn only for rates that are set, so enabling one kind of fault does
 * not shift the sequence of another.
 */
import { setTimeout as delay } from 'node:timers/promises';
import type { FaultOptions } from './options.js';
import { randomSeed, seededRandom, type Random } from './random.js';
import { SlidingWindowLimiter } from './rate-limiter.js';

export type FaultDecision =
  | { kind: 'none'; ambiguous: boolean }
  | { kind: 'down'; retryAfterSeconds: number }
  | { kind: 'rate-limited'; retryAfterSeconds: number }
  | { kind: 'drop' }
  | { kind: 'error'; status: 500 | 502 | 503 };

const ERROR_STATUSES = [500, 502, 503] as const;

export class FaultInjector {
  private faults: FaultOptions = {};
  private random: Random = seededRandom(randomSeed());
  private limiter: SlidingWindowLimiter | undefined;

  constructor(
    faults: FaultOptions,
    private readonly clock: () => number = Date.now,
    private readonly sleep: (ms: number) => Promise<unknown> = (ms) => delay(ms),
  ) {
    this.set(faults);
  }

  /** Replaces every fault option; a new seed restarts the sequence, no seed keeps it going. */
  set(faults: FaultOptions): void {
    const previousRps = this.faults.rateLimitRps;
    this.faults = { ...faults };
    if (faults.seed !== undefined) this.random = seededRandom(faults.seed);
    if (faults.rateLimitRps === undefined) this.limiter = undefined;
    else if (faults.rateLimitRps !== previousRps || !this.limiter) this.limiter = new SlidingWindowLimiter(faults.rateLimitRps);
  }

  get(): FaultOptions {
    return { ...this.faults };
  }

  get latencyMs(): number {
    return this.faults.latencyMs ?? 0;
  }

  /** The latency fault: each request waits `latencyMs` before anything else happens to it. */
  async delay(): Promise<void> {
    if (this.latencyMs > 0) await this.sleep(this.latencyMs);
  }

  /** `key` is the rate-limit bucket (the organization id); `isWrite` for POST/PUT/DELETE. */
  decide(key: string, isWrite: boolean): FaultDecision {
    const f = this.faults;
    if (f.down) return { kind: 'down', retryAfterSeconds: 1 };
    if (this.limiter) {
      const verdict = this.limiter.tryAcquire(key, this.clock());
      if (!verdict.allowed) return { kind: 'rate-limited', retryAfterSeconds: Math.max(1, Math.ceil(verdict.retryAfterMs / 1000)) };
    }
    if (f.dropRate && this.random() < f.dropRate) return { kind: 'drop' };
    if (f.errorRate && this.random() < f.errorRate) {
      const status = ERROR_STATUSES[Math.floor(this.random() * ERROR_STATUSES.length)] ?? 500;
      return { kind: 'error', status };
    }
    const ambiguous = isWrite && !!f.ambiguousRate && this.random() < f.ambiguousRate;
    return { kind: 'none', ambiguous };
  }

  /** The Retry-After header value for a wait of `seconds`, or undefined when disabled. */
  retryAfterHeader(seconds: number): string | undefined {
    switch (this.faults.retryAfter ?? 'seconds') {
      case 'none':
        return undefined;
      case 'date':
        // An HTTP date has one-second resolution: round up so the client never comes back early.
        return new Date((Math.floor(this.clock() / 1000) + seconds + 1) * 1000).toUTCString();
      default:
        return String(seconds);
    }
  }
}

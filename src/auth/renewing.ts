/**
 * The renewal discipline shared by the providers whose tokens expire (oauth2, command):
 * renew ahead of expiry, one renewal at a time for all requests in flight (single-flight),
 * a forced renewal after a 401 unless someone already renewed, and back-off when the
 * source of tokens itself fails. What a renewal does is the subclass's `obtain()`.
 */
import { ApiError, isApiError } from '../api/errors.js';
import { backoffDelay } from '../time/backoff.js';
import { realClock, type Clock } from '../time/clock.js';
import { silentLogger, type Logger } from '../log.js';
import { registerSecret, scrub } from '../secrets.js';
import type { ProviderKind, TokenProvider, TokenStatus } from '../api/token-provider.js';

export interface ObtainedToken {
  accessToken: string;
  /** Seconds, as the source said; undefined when it did not say. */
  expiresIn?: number | undefined;
  refreshToken?: string | undefined;
}

/**
 * The source refused the credentials (invalid_grant, invalid_client...): no retry helps. The
 * message names the source and what it said; `advice` the settings to change (issue 25.3).
 */
export class CredentialsRefusedError extends ApiError {
  constructor(message: string, opts: { path?: string | undefined; cause?: unknown; advice?: string | undefined } = {}) {
    super({ code: 'E_AUTH_REFUSED', message, retryable: false, ...(opts.path === undefined ? {} : { path: opts.path }), cause: opts.cause, advice: opts.advice });
  }
}

export interface RenewingOptions {
  logger?: Logger | undefined;
  clock?: Clock | undefined;
  random?: (() => number) | undefined;
  /** Tries of one renewal on a transient failure. Default 3. */
  attempts?: number | undefined;
}

/** Renew when this share of the lifetime is left (at most 60 s before expiry). */
const RENEW_SHARE = 0.2;
const MAX_RENEW_AHEAD_MS = 60_000;
/** After a failed renewal, the source is not asked again before this back-off (doubling). */
const FAILURE_BACKOFF = { baseMs: 1_000, maxMs: 60_000 };

/**
 * After the source refused the credentials themselves (invalid_grant, invalid_client, a
 * helper's exit 3), it is not asked again before this long, whatever asks (every mapping,
 * a 401 of the service): an identity provider such as Keycloak locks an account after a few
 * failed logins, and a wrong password does not become right by itself (issue 25.2). The
 * daemon stays up, degraded with the cause, and picks up a corrected password at this pace.
 */
export const REFUSED_RETRY_MS = 5 * 60_000;

export abstract class RenewingProvider implements TokenProvider {
  abstract readonly kind: ProviderKind;
  abstract readonly description: string;

  protected readonly log: Logger;
  protected readonly clock: Clock;
  private readonly random: () => number;
  private readonly attempts: number;
  /** expiresAt/renewAt on the injected clock; wallExpiresAt/obtainedAt for status (epoch ms). */
  private current:
    | { token: string; obtainedAt: number; wallExpiresAt?: number | undefined; expiresAt?: number | undefined; renewAt?: number | undefined }
    | undefined;
  /** Held in memory only (an `auth login` refresh token is stored by the oauth2 provider). */
  protected refreshToken: string | undefined;
  private inflight: Promise<string> | undefined;
  private failures = 0;
  private retryAt = 0;
  private lastError: Error | undefined;
  private warnedNoExpiry = false;

  constructor(opts: RenewingOptions = {}) {
    this.log = opts.logger ?? silentLogger;
    this.clock = opts.clock ?? realClock;
    this.random = opts.random ?? Math.random;
    this.attempts = opts.attempts ?? 3;
  }

  /** Asks the source for a new token (using this.refreshToken when it suits). */
  protected abstract obtain(signal?: AbortSignal): Promise<ObtainedToken>;

  /** Removes every secret this provider knows from a message. */
  protected abstract scrub(message: string): string;

  async token(signal?: AbortSignal): Promise<string> {
    const cur = this.current;
    const now = this.clock.monotonic();
    if (cur && (cur.renewAt === undefined || now < cur.renewAt)) return cur.token;
    if (cur && cur.expiresAt !== undefined && now < cur.expiresAt) {
      // Still valid: renew ahead of expiry, but keep serving this one if renewal fails.
      try {
        return await this.renew(signal);
      } catch (e) {
        if (e instanceof CredentialsRefusedError) throw e;
        return cur.token;
      }
    }
    return this.renew(signal);
  }

  async renewAfterRejection(rejected: string, signal?: AbortSignal): Promise<string | undefined> {
    if (this.inflight) return this.inflight;
    const cur = this.current;
    if (cur && cur.token !== rejected) return cur.token; // another request renewed already
    this.current = undefined;
    // Fresh credentials are worth a try even inside the back-off of an earlier failure, but
    // not inside the slow pace of refused ones (an account lock is worse than waiting).
    if (!(this.lastError instanceof CredentialsRefusedError)) this.retryAt = 0;
    const fresh = await this.renew(signal);
    return fresh === rejected ? undefined : fresh;
  }

  status(): TokenStatus {
    return {
      kind: this.kind,
      description: this.description,
      expiresAt: this.current?.wallExpiresAt,
      obtainedAt: this.current?.obtainedAt,
      hasRefreshToken: this.refreshToken !== undefined,
      ...(this.lastError && !this.current ? { lastError: this.lastError.message } : {}),
    };
  }

  close(): Promise<void> {
    return Promise.resolve();
  }

  /** Single-flight: every caller during a renewal waits for the same one. */
  private renew(signal?: AbortSignal): Promise<string> {
    if (this.inflight) return this.inflight;
    const now = this.clock.monotonic();
    if (now < this.retryAt && this.lastError) {
      return Promise.reject(withRetryAfter(this.lastError, this.retryAt - now));
    }
    const p = this.renewWithRetries(signal).finally(() => {
      if (this.inflight === p) this.inflight = undefined;
    });
    this.inflight = p;
    return p;
  }

  private async renewWithRetries(signal?: AbortSignal): Promise<string> {
    for (let attempt = 1; ; attempt++) {
      try {
        const got = await this.obtain(signal);
        this.accept(got);
        return got.accessToken;
      } catch (e) {
        const err = this.asError(e);
        const transient = !(err instanceof CredentialsRefusedError) && !(isApiError(err) && err.code === 'E_ABORTED');
        if (transient && attempt < this.attempts && !signal?.aborted) {
          await this.clock.sleep(backoffDelay(attempt, { ...FAILURE_BACKOFF, random: this.random }) + 100, signal).catch(() => undefined);
          continue;
        }
        this.failures++;
        this.lastError = err;
        if (err instanceof CredentialsRefusedError) {
          this.retryAt = this.clock.monotonic() + REFUSED_RETRY_MS;
          this.log.error(
            { err: err.message, failures: this.failures, retryInSeconds: REFUSED_RETRY_MS / 1000 },
            `the credentials were refused; ${this.description} is asked again in ${REFUSED_RETRY_MS / 60_000} minutes at the earliest (never more often, so as not to lock the account): correct them meanwhile`,
          );
          throw err;
        }
        this.retryAt = this.clock.monotonic() + backoffDelay(this.failures, { ...FAILURE_BACKOFF, random: () => 0.5 + this.random() / 2 });
        this.log.warn({ err: err.message, failures: this.failures }, 'could not obtain an access token');
        throw err;
      }
    }
  }

  private accept(got: ObtainedToken): void {
    const now = this.clock.monotonic();
    registerSecret(got.accessToken);
    registerSecret(got.refreshToken);
    if (got.refreshToken !== undefined) this.refreshToken = got.refreshToken;
    let expiresAt: number | undefined;
    let renewAt: number | undefined;
    if (got.expiresIn !== undefined && Number.isFinite(got.expiresIn) && got.expiresIn > 0) {
      const lifeMs = got.expiresIn * 1000;
      expiresAt = now + lifeMs;
      renewAt = expiresAt - Math.min(MAX_RENEW_AHEAD_MS, lifeMs * RENEW_SHARE);
    } else if (!this.warnedNoExpiry) {
      this.warnedNoExpiry = true;
      this.log.warn({ source: this.description }, 'the token came without expires_in: it is used until the service refuses it (401), then renewed');
    }
    const wallNow = this.clock.now();
    this.current = {
      token: got.accessToken,
      obtainedAt: wallNow,
      wallExpiresAt: expiresAt === undefined ? undefined : wallNow + (expiresAt - now),
      expiresAt,
      renewAt,
    };
    this.failures = 0;
    this.retryAt = 0;
    this.lastError = undefined;
  }

  private asError(e: unknown): Error {
    const err = e instanceof Error ? e : new Error(String(e));
    err.message = scrub(this.scrub(err.message));
    return err;
  }
}

function withRetryAfter(err: Error, ms: number): Error {
  if (err instanceof CredentialsRefusedError) {
    // Still refused as far as we know; say when the source will be asked again.
    return new CredentialsRefusedError(`${err.message} (not asked again for ${Math.ceil(ms / 1000)} s: at most once every ${REFUSED_RETRY_MS / 60_000} minutes)`, {
      path: err.path,
      advice: err.advice,
    });
  }
  if (!isApiError(err)) return err;
  return new ApiError({
    code: err.code,
    message: `${err.message} (not asked again for ${Math.ceil(ms / 1000)} s)`,
    status: err.status,
    method: err.method,
    path: err.path,
    retryable: false,
    retryAfterMs: ms,
  });
}

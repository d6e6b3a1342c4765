/**
 * `auth.type: "static"`: one token from DSSYNC_TOKEN, a token file or a systemd credential.
 * A file is read again when it changed (checked at most once a second) and after a 401, so
 * a rotated token file is picked up without a restart.
 */
import { statSync } from 'node:fs';
import type { TokenProvider, TokenStatus } from '../api/token-provider.js';
import type { SecretSource } from './settings.js';
import { realClock, type Clock } from '../time/clock.js';

const CHECK_EVERY_MS = 1_000;

export class StaticTokenProvider implements TokenProvider {
  readonly kind = 'static' as const;
  readonly description: string;
  private current: string;
  private stamp: string | undefined;
  private checkedAt = -Infinity;
  private lastError: string | undefined;

  constructor(
    private readonly source: SecretSource,
    /** The file behind the source, when it is one (watched for rotation). */
    private readonly path?: string | undefined,
    /** The once-a-second check runs on its monotonic reading (a wall step back must not stall it); default the real clock, as the renewing providers'. */
    private readonly clock: Clock = realClock,
  ) {
    this.description = source.describe;
    this.current = source.read();
    this.stamp = this.fileStamp();
  }

  token(): Promise<string> {
    const now = this.clock.monotonic();
    if (this.path !== undefined && now - this.checkedAt >= CHECK_EVERY_MS) {
      this.checkedAt = now;
      const stamp = this.fileStamp();
      if (stamp !== this.stamp) this.reread(stamp);
    }
    return Promise.resolve(this.current);
  }

  renewAfterRejection(rejected: string): Promise<string | undefined> {
    if (this.current !== rejected) return Promise.resolve(this.current);
    this.reread(this.fileStamp());
    return Promise.resolve(this.current === rejected ? undefined : this.current);
  }

  status(): TokenStatus {
    return { kind: 'static', description: this.description, ...(this.lastError ? { lastError: this.lastError } : {}) };
  }

  close(): Promise<void> {
    return Promise.resolve();
  }

  private reread(stamp: string | undefined): void {
    try {
      this.current = this.source.read();
      this.stamp = stamp;
      this.lastError = undefined;
    } catch (e) {
      // A token file being rewritten (empty for a moment) or gone: keep the last token.
      this.lastError = e instanceof Error ? e.message : String(e);
    }
  }

  private fileStamp(): string | undefined {
    if (this.path === undefined) return undefined;
    try {
      const st = statSync(this.path);
      return `${st.ino}:${st.size}:${st.mtimeMs}`;
    } catch {
      return undefined;
    }
  }
}

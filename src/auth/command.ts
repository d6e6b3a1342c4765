/**
 * `auth.type: "command"`: an executable prints `{"access_token": "...", "expires_in": N}`
 * on stdout (the convention of kubectl exec credentials and git credential helpers), for
 * single sign-on setups dssync cannot know. Run without a shell, with a timeout, its output
 * bounded; a non-zero exit, garbage or a hang is a clear error that never repeats the output.
 * The helper runs in a process group of its own: a timeout or a stop ends the whole group,
 * so a child it left behind (a browser login, `sleep`, an agent) neither keeps our pipes
 * open (the CLI waited for it) nor accumulates under the daemon (issue 24.10).
 */
import { spawn } from 'node:child_process';
import { ApiError } from '../api/errors.js';
import { CredentialsRefusedError, RenewingProvider, type ObtainedToken, type RenewingOptions } from './renewing.js';
import { childEnv } from '../secrets.js';

const MAX_OUTPUT_BYTES = 64 * 1024;
/** Exit status by which a helper says "the credentials were refused" (as `dssync` itself does). */
const EXIT_REFUSED = 3;
/** Between SIGTERM to the helper's group and SIGKILL: time to clean up, not to linger. */
const KILL_GRACE_MS = 500;

export interface CommandOptions extends RenewingOptions {
  command: readonly string[];
  timeoutMs: number;
}

export class CommandTokenProvider extends RenewingProvider {
  readonly kind = 'command' as const;
  readonly description: string;
  private lastToken: string | undefined;
  /** Helpers running now, each ended (group and all) by close(). */
  private readonly running = new Set<() => void>();

  constructor(private readonly c: CommandOptions) {
    // A failing program is asked again only after the back-off: one try per renewal.
    super({ ...c, attempts: 1 });
    this.description = `the command ${c.command[0] ?? ''}`;
  }

  protected async obtain(signal?: AbortSignal): Promise<ObtainedToken> {
    const out = await this.run(signal);
    let parsed: unknown;
    try {
      parsed = JSON.parse(out);
    } catch {
      throw this.fail(`printed something that is not JSON (${out.length} bytes; expected {"access_token": "...", "expires_in": N})`);
    }
    const obj = (typeof parsed === 'object' && parsed !== null ? parsed : {}) as Record<string, unknown>;
    // kubectl's ExecCredential puts it under status.token; accepted too.
    const status = (typeof obj.status === 'object' && obj.status !== null ? obj.status : {}) as Record<string, unknown>;
    const token = obj.access_token ?? status.token;
    if (typeof token !== 'string' || token.trim() === '' || /\s/.test(token.trim())) {
      throw this.fail('printed JSON without a usable "access_token" (a non-empty string without spaces)');
    }
    const expiresIn = typeof obj.expires_in === 'number' ? obj.expires_in : typeof obj.expires_in === 'string' ? Number(obj.expires_in) : undefined;
    this.lastToken = token.trim();
    return { accessToken: token.trim(), expiresIn: Number.isFinite(expiresIn) ? expiresIn : undefined };
  }

  override async close(): Promise<void> {
    for (const end of [...this.running]) end();
    await super.close();
  }

  protected scrub(message: string): string {
    const t = this.lastToken;
    return t && t.length >= 4 ? message.split(t).join('[redacted]') : message;
  }

  private fail(what: string, refused = false): ApiError {
    const message = `the token command ${this.c.command[0] ?? ''} ${what}`;
    return refused ? new CredentialsRefusedError(message, { advice: `Check what the helper "auth.command" (${this.c.command[0] ?? ''}) logs in with.` }) : new ApiError({ code: 'E_BAD_RESPONSE', retryable: true, message });
  }

  private run(signal?: AbortSignal): Promise<string> {
    const [program, ...args] = this.c.command;
    return new Promise((resolve, reject) => {
      // detached: the helper leads a new process group, which kill() ends as a whole.
      const child = spawn(program ?? '', args, { stdio: ['ignore', 'pipe', 'pipe'], shell: false, detached: true, env: childEnv() });
      const out: Buffer[] = [];
      let outSize = 0;
      let errTail = '';
      let settled = false;
      const finish = (e: Error | undefined, value?: string): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        this.running.delete(kill);
        if (e) reject(e);
        else resolve(value ?? '');
      };
      const kill = (): void => {
        // The whole group: the helper and whatever it started. SIGTERM first, then SIGKILL
        // for whoever ignored it; the pipes are closed now so that a survivor holding them
        // cannot keep this process waiting.
        endGroup(child.pid, 'SIGTERM');
        const grace = setTimeout(() => endGroup(child.pid, 'SIGKILL'), KILL_GRACE_MS);
        child.once('close', () => {
          // The leader is gone; its group may not be: SIGKILL it now rather than later.
          clearTimeout(grace);
          endGroup(child.pid, 'SIGKILL');
        });
        child.stdout.destroy();
        child.stderr.destroy();
      };
      this.running.add(kill);
      const timer = setTimeout(() => {
        kill();
        finish(this.fail(`did not finish within ${this.c.timeoutMs / 1000} s (killed); check that it runs without asking anything`));
      }, this.c.timeoutMs);
      const onAbort = (): void => {
        kill();
        finish(new ApiError({ code: 'E_ABORTED', message: 'token command aborted' }));
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      child.stdout.on('data', (chunk: Buffer) => {
        outSize += chunk.length;
        if (outSize > MAX_OUTPUT_BYTES) {
          kill();
          finish(this.fail(`printed more than ${MAX_OUTPUT_BYTES} bytes`));
          return;
        }
        out.push(chunk);
      });
      child.stderr.on('data', (chunk: Buffer) => {
        errTail = (errTail + chunk.toString('utf8')).slice(-300);
      });
      child.on('error', (e: NodeJS.ErrnoException) => {
        finish(this.fail(`cannot be started (${e.code ?? e.message}); check "auth.command"`));
      });
      child.on('close', (code, sig) => {
        if (code === 0) {
          finish(undefined, Buffer.concat(out).toString('utf8').trim());
          return;
        }
        const how = sig ? `was killed by ${sig}` : `exited with status ${code ?? '?'}`;
        const said = errTail.trim().replace(/\s+/g, ' ');
        finish(this.fail(`${how}${said ? `: ${this.scrub(said).slice(-200)}` : ''}`, code === EXIT_REFUSED));
      });
    });
  }
}

/** Sends `sig` to the process group led by `pid`; a group already gone is no error. */
function endGroup(pid: number | undefined, sig: NodeJS.Signals): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, sig);
  } catch {
    // ESRCH: nothing left in the group.
  }
}

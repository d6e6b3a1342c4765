/**
 * Who may read the status page and act on it (docs/status.md, "Who may read it"):
 *
 * - Host: a request whose Host header is not the listen address, `localhost`, or a name in
 *   `status.allowedHosts` (for a wildcard bind: also this machine's addresses and host name)
 *   is refused with 421. This stops DNS rebinding: a web page in a browser on this machine
 *   whose own domain is made to resolve to 127.0.0.1 sends its own name as Host.
 * - Token: everything but /healthz and /metrics needs the token (status-token.ts), on
 *   loopback too: every local user reaches loopback, and a same-host reverse proxy makes
 *   remote requests look local (issue 24.1, 24.4). Scripts and `dssync status` send it as
 *   `Authorization: Bearer`; the page holds a session cookie (HttpOnly, SameSite=Strict),
 *   got by posting the token to /login or by a one-time login code (`dssync status --open`).
 * - Actions: POST only, with the per-daemon CSRF token (from GET /session) in a header, the
 *   Origin (when the browser sends one) equal to the page's own, and `status.actions` on.
 *
 * No answer ever carries an Access-Control-Allow-* header: other origins cannot read.
 */
import { randomBytes, timingSafeEqual, createHash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { isIP } from 'node:net';
import { hostname, networkInterfaces } from 'node:os';
import { isLoopbackHost } from '../../../config/listen.js';
import type { Clock } from '../../../time/clock.js';

export interface AccessOptions {
  /** The bound address (status.listen's host). */
  listenHost: string;
  /** Extra names the page may be reached by (status.allowedHosts). */
  allowedHosts?: readonly string[] | undefined;
  /** The bearer token (status-token.ts); without one only /healthz and /metrics answer. */
  token?: string | undefined;
  /** status.actions: rescan and retry from the page. */
  actions: boolean;
  /** Sessions and login codes expire on its monotonic reading (a wall step neither ends nor extends them). */
  clock: Clock;
}

export const SESSION_COOKIE = 'dssync_session';
/** Sessions last 12 hours; at most this many at once (the oldest is dropped). */
const SESSION_TTL_MS = 12 * 3600_000;
const MAX_SESSIONS = 64;
/** A one-time login code (`dssync status --open`) is good for one minute; at most this many wait. */
const LOGIN_CODE_TTL_MS = 60_000;
const MAX_LOGIN_CODES = 16;

/** `who`: the credential a request came with, to count what each holds (event streams). */
export type AuthVerdict = { ok: true; who: string } | { ok: false; status: 401 | 403; message: string };

export class AccessPolicy {
  readonly csrf = randomBytes(24).toString('base64url');
  private readonly hosts: Set<string>;
  private readonly sessions = new Map<string, number>();
  private readonly loginCodes = new Map<string, number>();
  private readonly tokenDigest: Buffer | undefined;

  constructor(private readonly o: AccessOptions) {
    this.tokenDigest = o.token ? digest(o.token) : undefined;
    const hosts = new Set<string>(['localhost', normalizeHost(o.listenHost)]);
    for (const h of o.allowedHosts ?? []) hosts.add(normalizeHost(h));
    if (o.listenHost === '0.0.0.0' || o.listenHost === '::') {
      // A wildcard bind is reached by any of this machine's addresses or its name.
      hosts.add(hostname().toLowerCase());
      for (const a of Object.values(networkInterfaces()).flat()) if (a) hosts.add(normalizeHost(a.address));
    }
    if (isLoopbackHost(o.listenHost) || o.listenHost === '0.0.0.0' || o.listenHost === '::') {
      for (const h of ['127.0.0.1', '::1']) hosts.add(h);
    }
    this.hosts = hosts;
  }

  get actionsEnabled(): boolean {
    return this.o.actions;
  }

  /** True when the Host header names this endpoint (not some other domain resolving to it). */
  hostAllowed(req: IncomingMessage): boolean {
    const h = hostOf(req.headers.host);
    return h !== undefined && this.hosts.has(h);
  }

  authorize(req: IncomingMessage): AuthVerdict {
    if (!this.tokenDigest) {
      return { ok: false, status: 403, message: 'this daemon has no status token: only /healthz and /metrics answer' };
    }
    const bearer = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '')?.[1];
    if (bearer !== undefined && this.tokenMatches(bearer)) return { ok: true, who: 'bearer' };
    const session = cookie(req.headers.cookie, SESSION_COOKIE);
    if (session !== undefined && this.sessionValid(session)) return { ok: true, who: `session:${digest(session).toString('hex').slice(0, 16)}` };
    return { ok: false, status: 401, message: 'the status endpoint needs its token: run "dssync status --open" for the page, or send Authorization: Bearer with the token file\'s content' };
  }

  /** A one-time code that signs a browser in (GET /login?code=): for a caller that has the token. */
  newLoginCode(): string {
    return issue(this.loginCodes, MAX_LOGIN_CODES, LOGIN_CODE_TTL_MS, this.o.clock.monotonic());
  }

  /** True once for a code given out in the last minute; the code is spent either way. */
  redeemLoginCode(code: string): boolean {
    for (const [k, exp] of this.loginCodes) {
      if (!safeEqual(k, code)) continue;
      this.loginCodes.delete(k);
      return exp > this.o.clock.monotonic();
    }
    return false;
  }

  tokenMatches(candidate: string): boolean {
    return this.tokenDigest !== undefined && timingSafeEqual(digest(candidate), this.tokenDigest);
  }

  /** A new session id for the cookie (after the token was checked). */
  newSession(): string {
    return issue(this.sessions, MAX_SESSIONS, SESSION_TTL_MS, this.o.clock.monotonic());
  }

  sessionCookie(id: string): string {
    return `${SESSION_COOKIE}=${id}; HttpOnly; SameSite=Strict; Path=/; Max-Age=${SESSION_TTL_MS / 1000}`;
  }

  /** An action request: POST, the CSRF token, and the Origin of this page (when sent). */
  checkAction(req: IncomingMessage): { ok: true } | { ok: false; status: 403; message: string } {
    if (!this.o.actions) return { ok: false, status: 403, message: 'actions are off (status.actions is false)' };
    const sent = req.headers['x-dssync-csrf'];
    if (typeof sent !== 'string' || !safeEqual(sent, this.csrf)) return { ok: false, status: 403, message: 'missing or wrong CSRF token (reload the page)' };
    const origin = req.headers.origin;
    if (origin !== undefined && origin !== `http://${req.headers.host ?? ''}`) return { ok: false, status: 403, message: `origin ${origin} may not act on this daemon` };
    const site = req.headers['sec-fetch-site'];
    if (site !== undefined && site !== 'same-origin') return { ok: false, status: 403, message: 'cross-site requests may not act on this daemon' };
    return { ok: true };
  }

  private sessionValid(id: string): boolean {
    const exp = this.sessions.get(id);
    if (exp === undefined) return false;
    if (exp <= this.o.clock.monotonic()) {
      this.sessions.delete(id);
      return false;
    }
    return true;
  }
}

/** The host part of a Host header, lower case, without brackets or port. */
export function hostOf(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const h = header.trim().toLowerCase();
  const m = /^\[([0-9a-f:.]+)\](?::\d{1,5})?$/.exec(h) ?? /^([^:[\]]+)(?::\d{1,5})?$/.exec(h);
  return m ? normalizeHost(m[1]!) : undefined;
}

function normalizeHost(h: string): string {
  const s = h.trim().toLowerCase().replace(/^\[|\]$/g, '').replace(/\.$/, '');
  return isIP(s) === 6 && s.startsWith('::ffff:') ? s.slice(7) : s;
}

function cookie(header: string | undefined, name: string): string | undefined {
  for (const part of (header ?? '').split(';')) {
    const i = part.indexOf('=');
    if (i > 0 && part.slice(0, i).trim() === name) return part.slice(i + 1).trim();
  }
  return undefined;
}

function digest(s: string): Buffer {
  return createHash('sha256').update(s).digest();
}

function safeEqual(a: string, b: string): boolean {
  return timingSafeEqual(digest(a), digest(b));
}

/** A new random id held in `held` until `now + ttlMs` (expired ones dropped first; the oldest when full). */
function issue(held: Map<string, number>, max: number, ttlMs: number, now: number): string {
  const id = randomBytes(24).toString('base64url');
  for (const [k, exp] of held) if (exp <= now) held.delete(k);
  if (held.size >= max) held.delete(held.keys().next().value!);
  held.set(id, now + ttlMs);
  return id;
}

/**
 * Who may read the status page and act on it (docs/status.md, "Security"):
 *
 * - Host: a request whose Host header is not the listen address, `localhost`, or a name in
 *   `status.allowedHosts` (for a wildcard bind: also this machine's addresses and host name)
 *   is refused with 421. This stops DNS rebinding: a web page in a browser on this machine
 *   whose own domain is made to resolve to 127.0.0.1 sends its own name as Host.
 * - Token: when `status.listen` is not a loopback address, everything but /healthz and
 *   /metrics needs `status.tokenFile`'s token, as `Authorization: Bearer` (scripts) or as the
 *   session cookie the page gets by posting it once to /login (EventSource cannot send a
 *   header). Requests from this machine's loopback to a loopback Host need none
 *   (`dssync status` asks over loopback).
 * - Actions: POST only, with the per-daemon CSRF token (from GET /session) in a header, the
 *   Origin (when the browser sends one) equal to the page's own, and `status.actions` on.
 *
 * No answer ever carries an Access-Control-Allow-* header: other origins cannot read.
 */
import { randomBytes, timingSafeEqual, createHash } from 'node:crypto';
import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import { isIP } from 'node:net';
import { hostname, networkInterfaces } from 'node:os';
import { isLoopbackHost } from '../../config/listen.js';

export interface AccessOptions {
  /** The bound address (status.listen's host). */
  listenHost: string;
  /** Extra names the page may be reached by (status.allowedHosts). */
  allowedHosts?: readonly string[] | undefined;
  /** The bearer token (status.tokenFile's content), if configured. */
  token?: string | undefined;
  /** status.actions: rescan and retry from the page. */
  actions: boolean;
  now?: (() => number) | undefined;
}

export const SESSION_COOKIE = 'dssync_session';
/** Sessions last 12 hours; at most this many at once (the oldest is dropped). */
const SESSION_TTL_MS = 12 * 3600_000;
const MAX_SESSIONS = 64;
const MAX_TOKEN_BYTES = 4096;

export type AuthVerdict = { ok: true } | { ok: false; status: 401 | 403; message: string };

export class AccessPolicy {
  readonly csrf = randomBytes(24).toString('base64url');
  readonly needsToken: boolean;
  private readonly hosts: Set<string>;
  private readonly sessions = new Map<string, number>();
  private readonly tokenDigest: Buffer | undefined;
  private readonly now: () => number;

  constructor(private readonly o: AccessOptions) {
    this.now = o.now ?? Date.now;
    this.needsToken = !isLoopbackHost(o.listenHost);
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
    if (!this.needsToken || this.fromLoopback(req)) return { ok: true };
    if (!this.tokenDigest) {
      return { ok: false, status: 403, message: 'status.listen is not a loopback address and no status.tokenFile is set: set one to read the status from other machines' };
    }
    const bearer = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '')?.[1];
    if (bearer !== undefined && this.tokenMatches(bearer)) return { ok: true };
    const session = cookie(req.headers.cookie, SESSION_COOKIE);
    if (session !== undefined && this.sessionValid(session)) return { ok: true };
    return { ok: false, status: 401, message: 'the status endpoint needs the token of status.tokenFile (Authorization: Bearer, or sign in on the page)' };
  }

  tokenMatches(candidate: string): boolean {
    return this.tokenDigest !== undefined && timingSafeEqual(digest(candidate), this.tokenDigest);
  }

  /** A new session id for the cookie (after the token was checked). */
  newSession(): string {
    const id = randomBytes(24).toString('base64url');
    const now = this.now();
    for (const [k, exp] of this.sessions) if (exp <= now) this.sessions.delete(k);
    if (this.sessions.size >= MAX_SESSIONS) this.sessions.delete(this.sessions.keys().next().value!);
    this.sessions.set(id, now + SESSION_TTL_MS);
    return id;
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
    if (exp <= this.now()) {
      this.sessions.delete(id);
      return false;
    }
    return true;
  }

  private fromLoopback(req: IncomingMessage): boolean {
    const peer = req.socket.remoteAddress ?? '';
    const h = hostOf(req.headers.host);
    const peerLocal = isLoopbackHost(peer.replace(/^::ffff:/, ''));
    return peerLocal && h !== undefined && (h === 'localhost' || isLoopbackHost(h));
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

/**
 * Reads status.tokenFile: a regular file (or systemd credential) of at most 4 KiB, opened
 * without blocking (a FIFO would hang the daemon), trimmed. Throws with the file's name.
 */
export function readStatusToken(path: string): string {
  let fd: number | undefined;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
    const st = fstatSync(fd);
    if (!st.isFile()) throw new Error(`status.tokenFile ${path} is not a regular file`);
    if (st.size > MAX_TOKEN_BYTES) throw new Error(`status.tokenFile ${path} is larger than ${MAX_TOKEN_BYTES} bytes; it should hold the token only`);
    const buf = Buffer.alloc(MAX_TOKEN_BYTES + 1);
    const n = readSync(fd, buf, 0, buf.length, 0);
    const token = buf.subarray(0, n).toString('utf8').trim();
    if (!token) throw new Error(`status.tokenFile ${path} is empty`);
    return token;
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    if (err.code === 'ENOENT') throw new Error(`status.tokenFile ${path} does not exist; create it with the token (e.g. openssl rand -hex 32 > ${path}; chmod 600 ${path})`, { cause: e });
    if (err.code === 'EACCES') throw new Error(`status.tokenFile ${path} cannot be read by this user; make it readable by the user dssync runs as`, { cause: e });
    throw e;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

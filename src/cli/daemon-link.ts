/**
 * How a command reaches the running daemon without handing its status token to anyone else
 * (docs/security.md, "The CLI and the daemon"):
 *
 * 1. Its Unix socket beside the state (`<statePath>.sock`, 0600 in the 0700 state folder):
 *    whoever can connect is the daemon's user or root, so no token is sent.
 * 2. Otherwise (no socket: the daemon is down, or older, or in another mount namespace) its
 *    TCP address, and the token goes only to a listener whose user could read the token
 *    already: root, this user, the owner of the token file or of the state file. The
 *    listener's user is read from the kernel on the connection made (listener-owner.ts);
 *    anyone else (a local user squatting the port) gets no request at all.
 */
import { statSync } from 'node:fs';
import type { ClientRequest, IncomingMessage } from 'node:http';
import { http } from '../node-http.js';
import { connect, type Socket } from 'node:net';
import { formatListenAddress, type ListenAddress } from '../config/listen.js';
import { readStatusToken, statusTokenPath } from '../daemon/status/web/status-token.js';
import type { Settings } from '../config/types.js';
import type { DaemonStatus } from '../daemon/status/schema.js';
import { statusSocketPath } from '../daemon/status/web/status-socket.js';
import { peerUid } from './listener-owner.js';

export interface DaemonTarget {
  /** The daemon's Unix socket. */
  socketPath: string;
  /** Its TCP address, when status.listen is set. */
  tcp?: { host: string; port: number; url: string } | undefined;
  /** The status token, when this user can read it (for the TCP address only). */
  token?: string | undefined;
  /** The users a token may go to over TCP. */
  trustedUids: ReadonlySet<number>;
}

export interface DaemonRequest {
  method: 'GET' | 'POST';
  path: string;
  headers?: Record<string, string> | undefined;
  body?: string | undefined;
  timeoutMs: number;
}

/** Nothing of the daemon's user answers: the message says what was found instead (read with noDaemon). */
class NoDaemonError extends Error {
  constructor(
    message: string,
    /** `not-dssync`: something else listens on the port (and got nothing). */
    readonly kind: 'no-answer' | 'not-dssync',
  ) {
    super(message);
  }
}

/** Why no daemon of this user answered, when that is what `e` says; undefined for other failures. */
export function noDaemon(e: unknown): { kind: 'no-answer' | 'not-dssync'; message: string } | undefined {
  return e instanceof NoDaemonError ? { kind: e.kind, message: e.message } : undefined;
}

/** Where this config's daemon may be reached, and with what. */
export function daemonTarget(settings: { status: { tokenFile?: string | undefined }; statePath: string }, listen: ListenAddress | false, token: string | undefined): DaemonTarget {
  const trusted = new Set<number>([0]);
  const me = process.getuid?.();
  if (me !== undefined) trusted.add(me);
  for (const file of [statusTokenPath(settings.status, settings.statePath), settings.statePath]) {
    try {
      trusted.add(statSync(file).uid);
    } catch {
      // absent or unreadable: it vouches for nobody
    }
  }
  return { socketPath: statusSocketPath(settings.statePath), tcp: listen === false ? undefined : tcpOf(listen), token, trustedUids: trusted };
}

/** The address to ask: a wildcard bind is reached over loopback. */
function tcpOf(listen: ListenAddress): { host: string; port: number; url: string } {
  const host = listen.host === '0.0.0.0' ? '127.0.0.1' : listen.host === '::' ? '::1' : listen.host;
  return { host, port: listen.port, url: `http://${formatListenAddress({ host, port: listen.port })}` };
}

/** The daemon's TCP address as a URL (what the page is at). */
export function statusUrl(listen: ListenAddress): string {
  return tcpOf(listen).url;
}

/** Errors of a socket that is not there to answer: the TCP address is tried next. */
const NO_SOCKET = new Set(['ENOENT', 'ECONNREFUSED', 'EACCES', 'ENOTDIR', 'ENAMETOOLONG']);

/**
 * Sends one request to the daemon and returns its answer (the body up to `maxBytes`).
 * Rejects with NoDaemonError when no daemon of this user answers; other failures
 * (a timeout, a reset) reject with the socket's error.
 */
export async function callDaemon(t: DaemonTarget, r: DaemonRequest, maxBytes: number): Promise<{ status: number; body: Buffer }> {
  const headers = { accept: 'application/json', ...r.headers };
  try {
    return await send(http.request({ socketPath: t.socketPath, path: r.path, method: r.method, headers, agent: false }), r, maxBytes);
  } catch (e) {
    if (!NO_SOCKET.has((e as NodeJS.ErrnoException).code ?? '')) throw e;
  }
  const tcp = t.tcp;
  if (tcp === undefined) throw new NoDaemonError(`no daemon answers at ${t.socketPath}, and the status endpoint is off (status.listen is false)`, 'no-answer');
  const socket = await connectTcp(tcp.host, tcp.port, r.timeoutMs);
  const uid = peerUid(socket);
  if (uid === undefined || !t.trustedUids.has(uid)) {
    socket.destroy();
    const who = uid === undefined ? 'a process whose user this system does not tell' : `a process of uid ${uid}`;
    throw new NoDaemonError(`${who} listens at ${tcp.url}, not the daemon's user: nothing was sent to it (the status token least of all)`, 'not-dssync');
  }
  const auth: Record<string, string> = t.token === undefined ? {} : { authorization: `Bearer ${t.token}` };
  return send(http.request({ host: tcp.host, port: tcp.port, path: r.path, method: r.method, headers: { ...headers, ...auth }, createConnection: () => socket }), r, maxBytes);
}

function connectTcp(host: string, port: number, timeoutMs: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = connect({ host, port });
    const timer = setTimeout(() => {
      s.destroy();
      reject(new NoDaemonError(`no answer within ${timeoutMs} ms`, 'no-answer'));
    }, timeoutMs);
    s.once('connect', () => {
      clearTimeout(timer);
      resolve(s);
    });
    s.once('error', (e: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      reject(new NoDaemonError(e.code === 'ECONNREFUSED' ? 'connection refused' : e.code ? `${e.code}: ${e.message}` : e.message, 'no-answer'));
    });
  });
}

function send(req: ClientRequest, r: DaemonRequest, maxBytes: number): Promise<{ status: number; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => req.destroy(new Error(`no answer within ${r.timeoutMs} ms`)), r.timeoutMs);
    req.on('response', (res: IncomingMessage) => {
      const chunks: Buffer[] = [];
      let n = 0;
      res.on('data', (c: Buffer) => {
        n += c.length;
        if (n > maxBytes) req.destroy(new Error(`the answer is larger than ${maxBytes} bytes`));
        else chunks.push(c);
      });
      res.on('end', () => {
        clearTimeout(timer);
        resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) });
      });
      res.on('error', (e) => {
        clearTimeout(timer);
        reject(e);
      });
    });
    req.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    req.end(r.body);
  });
}

/** How long the daemon gets to answer: it answers from memory, so this is generous. */
export const DAEMON_TIMEOUT_MS = 1_500;

/** The daemon's status token as this user may read it, or why not. */
export function readDaemonToken(settings: Pick<Settings, 'status' | 'statePath'>): { token: string; reason?: undefined } | { token?: undefined; reason: string } {
  const path = statusTokenPath(settings.status, settings.statePath);
  const configured = settings.status.tokenFile !== undefined;
  try {
    return { token: readStatusToken(path, configured ? 'status.tokenFile' : 'the status token file').token };
  } catch (e) {
    const code = ((e as Error).cause as NodeJS.ErrnoException | undefined)?.code;
    if (code === 'ENOENT' && !configured) return { reason: `no daemon for this config has started: it writes its status token to ${path} (a daemon of another config?)` };
    if (code === 'EACCES') return { reason: `this user cannot read the status token ${path}: run as the user dssync runs as, or root` };
    return { reason: e instanceof Error ? e.message : String(e) };
  }
}

/**
 * The daemon that answered may run another config file (two configs, one port). Its
 * state path may differ legitimately (systemd's STATE_DIRECTORY), so the file is compared,
 * and without a file, the mappings.
 */
export function configMismatch(settings: Pick<Settings, 'file' | 'mappings'>, status: DaemonStatus): string | undefined {
  if (settings.file !== undefined && status.configFile !== undefined) {
    return status.configFile === settings.file ? undefined : `it runs the config ${status.configFile}, not ${settings.file}`;
  }
  const mine = settings.mappings.map((m) => m.id).sort().join(', ');
  const theirs = status.mappings.map((m) => m.id).sort().join(', ');
  if (settings.mappings.length === 0 || mine === theirs) return undefined;
  return `it runs the mappings ${theirs || '(none)'}, not ${mine}`;
}

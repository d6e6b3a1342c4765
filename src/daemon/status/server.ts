/**
 * The daemon's local HTTP endpoint (docs/status.md):
 *   GET /healthz   liveness: ok or degraded with reasons, each mapping's phase (probes; no Host check, no token)
 *   GET /readyz    readiness: 200 when every mapping holds its lease and mirrors, 503 with the reasons (readiness.ts)
 *   GET /metrics   Prometheus text (no Host check, no token; mapping ids and counters only)
 *   GET /          the status page (static files: /app.js, /style.css, /vendor/*)
 *   GET /status    the JSON status (status/schema.ts), lists cut to their first 100
 *   GET /status/problems?mapping=ID&list=skipped&offset=N   the rest of a list, paged
 *   GET /history   recent activity, problems, chart points (web/history.ts)
 *   GET /coverage  per mapping and extension, what became of the files (coverage.ts; counted on demand)
 *   GET /session   the CSRF token and whether actions are on (for the page)
 *   GET /events    Server-Sent Events: activity, problems, status, chart points
 *   POST /login    token -> session cookie (the page's sign-in form)
 *   POST /login/code   (with the token) a one-time login code, for `dssync status --open`
 *   GET /login?code=   one-time code -> session cookie, and a redirect to / (the code leaves the address bar)
 *   POST /actions/rescan, /actions/retry, /actions/pause, /actions/resume   {"mapping": id}
 *   POST /actions/confirm-delete   {"mapping": id, "digest": the pendingDeletes.digest shown}
 * Everything but /healthz, /readyz and /metrics checks Host and the token, on loopback too
 * (web/access.ts). The same endpoint also answers on a Unix socket beside the state
 * (web/status-socket.ts): mode 0600 in the daemon's 0700 state folder, so whoever can
 * connect there is the daemon's user or root, and needs no token (the CLI's way in). It
 * never sends a CORS header, and carries no secret. What one client can
 * make it hold is bounded: connections (web/connections.ts), event streams and their
 * backlog (web/sse.ts), the size of /status (web/status-lists.ts).
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { http } from '../../node-http.js';
import type { AddressInfo, Socket } from 'node:net';
import type { DaemonStatus } from './schema.js';
import type { MappingCoverage } from './coverage.js';
import { readiness } from './readiness.js';
import { AccessPolicy, type AccessOptions } from './web/access.js';
import { loadAssets, type Asset } from './web/assets.js';
import type { DaemonHistory } from './web/history.js';
import { guardConnections, statusConnectionCap, type ConnectionGuard } from './web/connections.js';
import { scrub } from '../../secrets.js';
import { formatSse, parseLastEventId, SseHub } from './web/sse.js';
import { boundStatus, problemsPage } from './web/status-lists.js';
import type { ConfirmResult } from '../mapping/delete-decision.js';
import type { Clock } from '../../time/clock.js';
import { listenOnSocket } from './web/status-socket.js';

export interface StatusActions {
  /** Asks for a full pass now; false when no such mapping. Idempotent. */
  rescan(mappingId: string): boolean;
  /** Forgets refusals and back-off, then a full pass; the number of refusals forgotten, or undefined when no such mapping. */
  retry(mappingId: string): number | undefined;
  /** Pauses the mapping: true, false when it already was, undefined when no such mapping. */
  pause?(mappingId: string): boolean | undefined;
  /** Resumes it: true, false when it was not paused, undefined when no such mapping. */
  resume?(mappingId: string): boolean | undefined;
  /** Confirms the deletions waiting (named by `digest` when given); undefined when no such mapping. */
  confirmDelete?(mappingId: string, digest: string | undefined): ConfirmResult | undefined;
}

type ActionKind = 'rescan' | 'retry' | 'pause' | 'resume' | 'confirm-delete';

export interface StatusServerOptions {
  host: string;
  port: number;
  status: () => DaemonStatus;
  metrics: () => Promise<string>;
  history?: DaemonHistory | undefined;
  /** Each mapping's coverage, counted when asked (a walk of the folder, the PDFs' text check). */
  coverage?: (() => Promise<MappingCoverage[]>) | undefined;
  actions?: StatusActions | undefined;
  access?: Partial<Omit<AccessOptions, 'listenHost' | 'clock'>> | undefined;
  /** The one clock (the access policy's expiries); the daemon passes its own. */
  clock: Clock;
  /** How often the page's feed checks the status for changes (ms, default 1000). */
  pushIntervalMs?: number | undefined;
  /** The process's open-file limit: the connection cap is a small share of it. */
  fdLimit?: number | undefined;
  /** Reports a failure in a timer of the server (the feed), which must never end the process. */
  onError?: ((what: string, e: unknown) => void) | undefined;
}

export interface RunningStatusServer {
  url: string;
  close(): Promise<void>;
}

/** The endpoint before and while it listens: one state (sessions, codes, streams) for every address. */
export interface StatusEndpoint {
  /** Binds the TCP address (rejects with the bind's error: EADDRINUSE...); may be tried again. */
  listenTcp(): Promise<string>;
  /** Answers on the Unix socket `path` too, without a token (web/status-socket.ts). */
  listenSocket(path: string): Promise<void>;
  /** The TCP address's URL once bound. */
  readonly url: string | undefined;
  close(): Promise<void>;
}

/** Headers on every answer: no sniffing, no framing, nothing loaded from elsewhere. */
const BASE_HEADERS = {
  'cache-control': 'no-store',
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cross-origin-resource-policy': 'same-origin',
  'content-security-policy': "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
};
const MAX_BODY_BYTES = 8 * 1024;
/** 32 streams in all, 4 per credential (page session or token), 1 MiB of backlog each. */
const SSE_LIMITS = { max: 32, perClient: 4, maxBufferedBytes: 1024 * 1024, heartbeatMs: 15_000, retryMs: 2_000 };
/** A client must send its request's headers within 10 s, the whole request within 30 s. */
const HEADERS_TIMEOUT_MS = 10_000;
const REQUEST_TIMEOUT_MS = 30_000;
const KEEP_ALIVE_TIMEOUT_MS = 5_000;
/** A connection that sends nothing this long is closed (event streams excepted). */
const IDLE_MS = 20_000;

/** Listens on the TCP address (and on `socketPath` when given) at once. */
export async function startStatusServer(o: StatusServerOptions & { socketPath?: string | undefined }): Promise<RunningStatusServer> {
  const endpoint = createStatusEndpoint(o);
  try {
    if (o.socketPath !== undefined) await endpoint.listenSocket(o.socketPath);
    const url = await endpoint.listenTcp();
    return { url, close: () => endpoint.close() };
  } catch (e) {
    await endpoint.close();
    throw e;
  }
}

/** What one endpoint holds for every address it answers on. */
interface Endpoint {
  o: StatusServerOptions;
  access: AccessPolicy;
  assets: ReadonlyMap<string, Asset>;
  hub: SseHub;
  connections: ConnectionGuard;
  /** The TCP address's URL once bound. */
  url(): string | undefined;
}

/** An answer of `status` with `type` and `body` (scrubbed, none for HEAD). */
type Send = (status: number, type: string, body: string | Buffer) => void;

export function createStatusEndpoint(o: StatusServerOptions): StatusEndpoint {
  const access = new AccessPolicy({
    listenHost: o.host,
    actions: o.actions !== undefined && (o.access?.actions ?? true),
    allowedHosts: o.access?.allowedHosts,
    token: o.access?.token,
    clock: o.clock,
  });
  const hub = new SseHub(SSE_LIMITS);
  const feed = o.history ? startFeed(o, hub) : undefined;
  let socketServer: Server | undefined;
  let url: string | undefined;

  const newServer = (local: boolean): Server =>
    http.createServer({ headersTimeout: HEADERS_TIMEOUT_MS, requestTimeout: REQUEST_TIMEOUT_MS, keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS, connectionsCheckingInterval: 2_000 }, (req, res) => {
      handle(endpoint, req, res, local).catch((e: unknown) => {
        if (!res.headersSent) json(res, 500, { error: e instanceof Error ? e.message : String(e) });
        else res.end();
      });
    });
  const server = newServer(false);
  const endpoint: Endpoint = { o, access, assets: loadAssets(), hub, connections: guardConnections(server, { max: statusConnectionCap(o.fdLimit), idleMs: IDLE_MS }), url: () => url };

  return {
    get url() {
      return url;
    },
    async listenTcp() {
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(o.port, o.host, () => {
          server.off('error', reject);
          resolve();
        });
      });
      const addr = server.address() as AddressInfo;
      const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
      url = `http://${host}:${addr.port}`;
      return url;
    },
    async listenSocket(path) {
      const s = newServer(true);
      await listenOnSocket(s, path);
      socketServer = s;
    },
    close: async () => {
      feed?.stop();
      hub.close();
      await Promise.all(
        [server, socketServer].map(
          (s) =>
            new Promise<void>((resolve) => {
              if (!s?.listening) return resolve();
              s.close(() => resolve());
              s.closeAllConnections();
            }),
        ),
      );
    },
  };
}

/** The methods `path` answers, as an `allow` header. */
function allowedMethods(path: string): string {
  if (path === '/login/code' || path.startsWith('/actions/')) return 'POST';
  return path === '/login' ? 'GET, POST' : 'GET, HEAD';
}

/** `local`: it came through the Unix socket, whose permissions are the authentication. */
async function handle(e: Endpoint, req: IncomingMessage, res: ServerResponse, local: boolean): Promise<void> {
  const { o, access } = e;
  const [path = '/', query = ''] = (req.url ?? '/').split('?', 2);
  const method = req.method ?? 'GET';
  const head = method === 'HEAD';
  const allow = allowedMethods(path);
  if (!allow.split(', ').includes(method)) {
    res.writeHead(405, { ...BASE_HEADERS, allow, 'content-type': 'application/json' }).end(`{"error":"method not allowed; use ${allow}"}\n`);
    return;
  }
  const send: Send = (status, type, body) => {
    // No known secret leaves in an answer, whatever error text the status quotes (issue 24.5).
    res.writeHead(status, { ...BASE_HEADERS, 'content-type': type }).end(head ? undefined : typeof body === 'string' ? scrub(body) : body);
  };
  const trusted = local || (access.hostAllowed(req) && access.authorize(req).ok);
  if (trusted && !local) e.connections.trust(req.socket as Socket);

  if (await answerProbe(o, path, trusted, send)) return;
  if (!local && !access.hostAllowed(req)) {
    // 421: this server is not the one the name was meant for (DNS rebinding, a stray proxy).
    json(res, 421, { error: `Host "${req.headers.host ?? ''}" is not this endpoint's address; add it to status.allowedHosts if it is a name of this machine` });
    return;
  }
  // The page's files hold no data: served before the token check, so the page can ask for it.
  const asset = e.assets.get(path);
  if (path === '/' && asset && trusted && !head) {
    // Signed in: the page arrives with its first state, so it draws the mappings as soon as
    // its script runs instead of after three more round trips (issue 25.9).
    send(200, asset.type, withFirstState(asset.body.toString('utf8'), { session: sessionBody(access), status: boundStatus(o.status()), history: o.history?.snapshot() ?? null }));
    return;
  }
  if (asset) return sendAsset(res, asset, head);
  if (path === '/login') return method === 'GET' ? redeemCode(access, res, new URLSearchParams(query)) : login(access, req, res);
  const auth = local ? ({ ok: true, who: 'socket' } as const) : access.authorize(req);
  if (!auth.ok) {
    json(res, auth.status, { error: auth.message, login: auth.status === 401 });
    return;
  }
  return answerSignedIn(e, req, res, { path, query, who: auth.who, send });
}

/** /healthz, /readyz and /metrics (no Host check, no token): true when `path` was one. */
async function answerProbe(o: StatusServerOptions, path: string, trusted: boolean, send: Send): Promise<boolean> {
  if (path === '/healthz') {
    const s = o.status();
    // Reasons can name files: only for a caller who may read /status.
    const reasons = s.mappings.flatMap((m) => m.degraded.map((r) => (trusted ? `${m.id}: ${r}` : `${m.id}: degraded`)));
    // Files not mirrored (a too-large PDF, an unreadable file): counted, never named here.
    const problems = Object.fromEntries(s.mappings.filter((m) => (m.problemsTotal ?? 0) > 0).map((m) => [m.id, m.problemsTotal]));
    const status = reasons.length ? 'degraded' : Object.keys(problems).length ? 'problems' : 'ok';
    // Paused by the operator is not unhealthy: named (ids only) beside whatever the status is.
    const paused = s.mappings.filter((m) => m.paused).map((m) => m.id);
    // Each mapping's phase (a standby and a paused one included): liveness is the process's, readiness is /readyz.
    const phases = Object.fromEntries(s.mappings.map((m) => [m.id, m.phase]));
    const body = JSON.stringify({ status, reasons, phases, ...(Object.keys(problems).length ? { problems } : {}), ...(paused.length ? { paused } : {}) });
    // Degraded or with problems, it still answers 200: the process is alive and serving;
    // a restart would not mirror a too-large file. Monitors read `status` (and `problems`,
    // the files not mirrored per mapping). 503 only while shutting down.
    send(s.stopping ? 503 : 200, 'application/json', `${body}\n`);
    return true;
  }
  if (path === '/readyz') {
    const r = readiness(o.status());
    // Reasons name mapping ids, hosts and sessions only (as /healthz's mapping ids).
    send(r.ready ? 200 : 503, 'application/json', `${JSON.stringify({ ready: r.ready, reasons: r.reasons })}\n`);
    return true;
  }
  if (path !== '/metrics') return false;
  const text = await o.metrics().catch((err: unknown) => err as Error);
  if (text instanceof Error) send(500, 'text/plain', `metrics failed: ${text.message}\n`);
  else send(200, 'text/plain; version=0.0.4; charset=utf-8', text);
  return true;
}

/** What a caller holding the token, a session or the socket may ask. */
function answerSignedIn(e: Endpoint, req: IncomingMessage, res: ServerResponse, r: { path: string; query: string; who: string; send: Send }): Promise<void> | void {
  const { o, access } = e;
  switch (r.path) {
    case '/status':
      r.send(200, 'application/json', `${JSON.stringify(boundStatus(o.status()), null, 2)}\n`);
      return;
    case '/status/problems': {
      const page = problemsPage(o.status(), new URLSearchParams(r.query));
      if (page.ok) json(res, 200, page.body);
      else json(res, page.status, { error: page.error });
      return;
    }
    case '/login/code':
      // Only a caller holding the token or the socket (`dssync status --open`) gets a code
      // for a browser, and only while this endpoint holds its TCP address: the link must
      // not lead the browser (and the code) to whoever holds the port meanwhile.
      if (e.url() === undefined) json(res, 503, { error: 'the page\'s address (status.listen) is not bound yet: another program holds it; the daemon tries again every 30 s' });
      else json(res, 200, { code: access.newLoginCode(), path: '/login?code=' });
      return;
    case '/history':
      r.send(200, 'application/json', `${JSON.stringify(o.history?.snapshot() ?? null)}\n`);
      return;
    case '/session':
      json(res, 200, sessionBody(access));
      return;
    case '/coverage':
      if (!o.coverage) return json(res, 404, { error: 'no coverage here' });
      o.coverage().then(
        (coverage) => json(res, 200, { coverage }),
        (err: unknown) => json(res, 500, { error: scrub(err instanceof Error ? err.message : String(err)) }),
      );
      return;
    case '/events':
      openEvents(e, req, res, r.who);
      return;
    case '/actions/rescan':
    case '/actions/retry':
    case '/actions/pause':
    case '/actions/resume':
    case '/actions/confirm-delete':
      return act(e, req, res, r.path.slice('/actions/'.length) as ActionKind);
  }
  json(res, 404, { error: 'not found; try /, /healthz, /readyz, /status or /metrics' });
}

function sessionBody(access: AccessPolicy): { csrf: string; actions: boolean; login: false } {
  return { csrf: access.csrf, actions: access.actionsEnabled, login: false };
}

function sendAsset(res: ServerResponse, a: Asset, head: boolean): void {
  res.writeHead(200, { ...BASE_HEADERS, 'content-type': a.type, 'content-length': a.body.length }).end(head ? undefined : a.body);
}

function openEvents({ o, hub, connections }: Endpoint, req: IncomingMessage, res: ServerResponse, who: string): void {
  // A new stream starts with the status and the chart as they are now.
  const first: string[] = [formatSse({ event: 'status', data: JSON.stringify(boundStatus(o.status())) })];
  if (o.history) first.push(formatSse({ event: 'chart', data: JSON.stringify(o.history.chart()) }));
  const last = parseLastEventId(req.headers['last-event-id']);
  if (last !== undefined && o.history) {
    const missed = o.history.activity.since(last);
    if (!missed.complete) first.push(formatSse({ event: 'reset', data: '{}' }));
    else for (const m of missed.entries) first.push(formatSse({ event: 'activity', id: m.seq, data: JSON.stringify(m.item) }));
  }
  if (hub.open(res, first, who) && who !== 'socket') connections.stream(req.socket as Socket);
}

/** GET /login?code=: a one-time code becomes a session cookie; the redirect drops the code from the address bar. */
function redeemCode(access: AccessPolicy, res: ServerResponse, query: URLSearchParams): void {
  const code = query.get('code') ?? '';
  if (!code || !access.redeemLoginCode(code)) {
    res.writeHead(401, { ...BASE_HEADERS, 'content-type': 'text/plain; charset=utf-8' }).end('This login link is wrong, already used, or older than a minute. Run "dssync status --open" again for a new one.\n');
    return;
  }
  res.writeHead(303, { ...BASE_HEADERS, location: '/', 'set-cookie': access.sessionCookie(access.newSession()) }).end();
}

async function login(access: AccessPolicy, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const body = await readJson(req);
  const token = typeof body === 'object' && body !== null && typeof (body as { token?: unknown }).token === 'string' ? (body as { token: string }).token.trim() : '';
  if (!token || !access.tokenMatches(token)) {
    json(res, 401, { error: 'wrong token (the content of the status token file)' });
    return;
  }
  res.setHeader('set-cookie', access.sessionCookie(access.newSession()));
  json(res, 200, { ok: true });
}

async function act({ o, access }: Endpoint, req: IncomingMessage, res: ServerResponse, kind: ActionKind): Promise<void> {
  const check = access.checkAction(req);
  if (!check.ok || !o.actions) {
    json(res, 403, { error: check.ok ? 'actions are not available' : check.message });
    return;
  }
  const body = await readJson(req);
  const mapping = typeof body === 'object' && body !== null ? (body as { mapping?: unknown }).mapping : undefined;
  if (typeof mapping !== 'string') {
    json(res, 400, { error: 'the body must be {"mapping": "<mapping id>"}' });
    return;
  }
  if (kind === 'pause' || kind === 'resume') {
    const done = o.actions[kind]?.(mapping);
    if (done === undefined) json(res, 404, { error: `no mapping "${mapping}"` });
    else
      json(res, 200, {
        ok: true,
        mapping,
        action: kind,
        changed: done,
        note: kind === 'pause' ? (done ? 'paused: no request for this mapping until resumed (a pass in progress finishes)' : 'already paused') : done ? 'resumed: a full pass sends what changed meanwhile' : 'was not paused',
      });
    return;
  }
  if (kind === 'confirm-delete') {
    const raw = (body as { digest?: unknown }).digest;
    if (raw !== undefined && typeof raw !== 'string') {
      json(res, 400, { error: 'digest must be the string pendingDeletes.digest of /status' });
      return;
    }
    const r = o.actions.confirmDelete?.(mapping, raw);
    if (r === undefined) json(res, 404, { error: `no mapping "${mapping}"` });
    else if (r.ok) json(res, 202, { ok: true, mapping, action: 'confirm-delete', deletes: r.total, note: 'the next pass (now) may delete these documents and no more' });
    else if (r.reason === 'changed') json(res, 409, { error: 'the deletions waiting are no longer those shown (the folder changed): look at them again' });
    else json(res, 409, { error: `mapping "${mapping}" has no deletions waiting for a decision` });
    return;
  }
  if (kind === 'rescan') {
    if (!o.actions.rescan(mapping)) json(res, 404, { error: `no mapping "${mapping}"` });
    else json(res, 202, { ok: true, mapping, action: 'rescan', note: 'a full pass starts as soon as the current work allows' });
    return;
  }
  const forgotten = o.actions.retry(mapping);
  if (forgotten === undefined) json(res, 404, { error: `no mapping "${mapping}"` });
  else json(res, 202, { ok: true, mapping, action: 'retry', refusalsForgotten: forgotten, note: 'a full pass retries every skipped and failed file' });
}

/**
 * Pushes to the open streams: each operation and problem as it happens, the status when it
 * changed (checked every second), and the newest chart points every 2 s.
 */
function startFeed(o: StatusServerOptions, hub: SseHub): { stop(): void } {
  const history = o.history!;
  const unsubscribe = history.subscribe((e) => {
    if (hub.size === 0) return;
    if (e.type === 'activity') hub.broadcast(formatSse({ event: 'activity', id: e.entry.seq, data: JSON.stringify(e.entry.item) }));
    else hub.broadcast(formatSse({ event: 'problem', data: JSON.stringify(e.entry) }));
  });
  let lastStatus = '';
  let ticks = 0;
  const tick = (): void => {
    if (hub.size === 0) {
      lastStatus = '';
      return;
    }
    const s = JSON.stringify(boundStatus(o.status()));
    if (s !== lastStatus) {
      lastStatus = s;
      hub.broadcast(formatSse({ event: 'status', data: s }));
    }
    if (ticks++ % 2 === 0) hub.broadcast(formatSse({ event: 'chart', data: JSON.stringify(history.chart().slice(-2)) }));
  };
  const timer = setInterval(() => {
    // A throw here (EMFILE in process.memoryUsage()...) would end the daemon: the next tick
    // tries again.
    try {
      tick();
    } catch (e) {
      o.onError?.('the status feed', e);
    }
  }, o.pushIntervalMs ?? 1000);
  timer.unref();
  return {
    stop() {
      clearInterval(timer);
      unsubscribe();
    },
  };
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { ...BASE_HEADERS, 'content-type': 'application/json' }).end(scrub(`${JSON.stringify(body)}\n`));
}

function readJson(req: IncomingMessage): Promise<unknown> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let n = 0;
    req.on('data', (c: Buffer) => {
      n += c.length;
      if (n > MAX_BODY_BYTES) req.destroy();
      else chunks.push(c);
    });
    req.on('end', () => {
      try {
        resolve(chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : {});
      } catch {
        resolve(undefined);
      }
    });
    req.on('error', () => resolve(undefined));
  });
}

/**
 * The page with its first state inside, as JSON in a non-executed script element (the CSP
 * allows no inline script, and none is needed). `<` is escaped so that no file name can
 * close the element: the JSON stays data, whatever the names hold.
 */
export function withFirstState(html: string, first: unknown): string {
  const data = JSON.stringify(first).replace(/</g, '\\u003c');
  return html.replace('<!--first-state-->', `<script id="first-state" type="application/json">${data}</script>`);
}

/**
 * Security of the status endpoint over real HTTP on loopback (issue 10.4, issue 15.3/15.4):
 * a foreign Host is refused (DNS rebinding), no answer carries a CORS header, actions need
 * POST + the CSRF token + the page's own origin, and the page and its feeds need the token,
 * on loopback too (issue 24.1), while /healthz and /metrics keep answering.
 */
import { request } from 'node:http';
import { hostname, networkInterfaces } from 'node:os';
import { afterEach, describe, expect, it } from 'vitest';
import { startStatusServer, type RunningStatusServer, type StatusServerOptions } from '../../../src/daemon/status/server.js';
import type { DaemonStatus } from '../../../src/daemon/status/schema.js';
import { DaemonHistory } from '../../../src/daemon/status/web/history.js';
import { realClock } from '../../../src/time/clock.js';

const status = (): DaemonStatus => ({
  version: 't',
  pid: 1,
  startedAt: '2026-03-01T10:00:00Z',
  statePath: '/var/lib/dssync/state.json',
  baseUrl: 'http://service',
  organizationId: 'org',
  stopping: false,
  requests: { total: 0, retries: 0, throttled: 0, inFlight: 0, queued: 0 },
  mappings: [{ id: 'docs', path: '/srv/secret-folder', phase: 'degraded', degraded: ['not watching /srv/secret-folder: gone'], filesTracked: 0, pending: 0, recentErrors: [], skipped: [], notIngested: [], watchedDirs: 0 }],
});

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

const TOKEN = 'tok-123';

/** A request to 127.0.0.1:port with any Host header (fetch cannot set one); with the token unless `anonymous`. */
function call(port: number, path: string, o: { method?: string; host?: string; headers?: Record<string, string>; body?: string; anonymous?: boolean } = {}): Promise<Answer> {
  const auth: Record<string, string> = o.anonymous ? {} : { authorization: `Bearer ${TOKEN}` };
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, method: o.method ?? 'GET', headers: { host: o.host ?? `127.0.0.1:${port}`, ...auth, ...o.headers }, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      // An event stream never ends: its first bytes are enough.
      if (String(res.headers['content-type']).startsWith('text/event-stream')) {
        res.once('data', (d: string) => {
          resolve({ status: res.statusCode!, headers: res.headers, body: d });
          req.destroy();
        });
        return;
      }
      res.on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end(o.body);
  });
}

let server: RunningStatusServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function start(o: Partial<StatusServerOptions> = {}): Promise<{ port: number; calls: string[] }> {
  const calls: string[] = [];
  server = await startStatusServer({
    host: '127.0.0.1',
    port: 0,
    clock: realClock,
    status,
    metrics: async () => 'dssync_files_tracked{mapping="docs"} 0\n',
    history: new DaemonHistory(Date.now),
    actions: {
      rescan: (id) => (calls.push(`rescan ${id}`), id === 'docs'),
      retry: (id) => (calls.push(`retry ${id}`), id === 'docs' ? 2 : undefined),
    },
    ...o,
    access: { token: TOKEN, ...o.access },
  });
  return { port: Number(new URL(server.url).port), calls };
}

const PAGE_ROUTES = ['/', '/app.js', '/status', '/history', '/session', '/events'];

describe('security: who may read and act on the status endpoint', () => {
  it('refuses a foreign Host (DNS rebinding) with 421 on every route but /healthz and /metrics', async () => {
    const { port } = await start();
    for (const path of PAGE_ROUTES) {
      const r = await call(port, path, { host: `evil.example:${port}` });
      expect(r.status, path).toBe(421);
      expect(r.body).not.toContain('/srv/secret-folder');
      expect(r.body).toContain('status.allowedHosts');
    }
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, 'localhost']) expect((await call(port, '/status', { host })).status, host).toBe(200);
    // Probes keep working; the health reasons (which can name files) only for a trusted caller.
    const health = await call(port, '/healthz', { host: `evil.example:${port}`, anonymous: true });
    expect(health.status).toBe(200);
    expect(JSON.parse(health.body)).toEqual({ status: 'degraded', reasons: ['docs: degraded'], phases: { docs: expect.any(String) } });
    expect(JSON.parse((await call(port, '/healthz')).body).reasons).toEqual(['docs: not watching /srv/secret-folder: gone']);
    expect((await call(port, '/metrics', { host: 'prometheus.internal' })).status).toBe(200);
  });

  it('a configured name is accepted', async () => {
    const { port } = await start({ access: { allowedHosts: ['dssync.example.lan'] } });
    expect((await call(port, '/status', { host: `dssync.example.lan:${port}` })).status).toBe(200);
    expect((await call(port, '/status', { host: `other.example.lan:${port}` })).status).toBe(421);
  });

  it('never answers with a CORS header, whatever the Origin', async () => {
    const { port } = await start();
    for (const path of [...PAGE_ROUTES, '/healthz', '/metrics']) {
      const r = await call(port, path, { headers: { origin: 'http://evil.example' } });
      expect(Object.keys(r.headers).filter((h) => h.startsWith('access-control-')), path).toEqual([]);
    }
    const pre = await call(port, '/actions/rescan', { method: 'OPTIONS', headers: { origin: 'http://evil.example', 'access-control-request-method': 'POST' } });
    expect(pre.status).toBe(405);
    expect(Object.keys(pre.headers).filter((h) => h.startsWith('access-control-'))).toEqual([]);
  });

  it('actions: POST only, the CSRF token, the page own origin; idempotent', async () => {
    const { port, calls } = await start();
    const csrf = (JSON.parse((await call(port, '/session')).body) as { csrf: string; actions: boolean }).csrf;
    const post = (path: string, headers: Record<string, string>, body = '{"mapping":"docs"}') => call(port, path, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
    expect((await call(port, '/actions/rescan')).status).toBe(405);
    expect((await post('/actions/rescan', {})).status).toBe(403);
    expect((await post('/actions/rescan', { 'x-dssync-csrf': 'wrong' })).status).toBe(403);
    expect((await post('/actions/rescan', { 'x-dssync-csrf': csrf, origin: 'http://evil.example' })).status).toBe(403);
    expect((await post('/actions/rescan', { 'x-dssync-csrf': csrf, 'sec-fetch-site': 'cross-site' })).status).toBe(403);
    expect(calls).toEqual([]);
    const ok = await post('/actions/rescan', { 'x-dssync-csrf': csrf, origin: `http://127.0.0.1:${port}`, 'sec-fetch-site': 'same-origin' });
    expect(ok.status).toBe(202);
    expect((await post('/actions/rescan', { 'x-dssync-csrf': csrf })).status).toBe(202);
    expect((await post('/actions/retry', { 'x-dssync-csrf': csrf })).status).toBe(202);
    expect(JSON.parse((await post('/actions/retry', { 'x-dssync-csrf': csrf })).body)).toMatchObject({ ok: true, refusalsForgotten: 2 });
    expect((await post('/actions/rescan', { 'x-dssync-csrf': csrf }, '{"mapping":"nope"}')).status).toBe(404);
    expect((await post('/actions/rescan', { 'x-dssync-csrf': csrf }, 'not json')).status).toBe(400);
    expect(calls).toEqual(['rescan docs', 'rescan docs', 'retry docs', 'retry docs', 'rescan nope']);
  });

  it('actions are refused when status.actions is false', async () => {
    const { port, calls } = await start({ access: { actions: false } });
    const s = JSON.parse((await call(port, '/session')).body) as { csrf: string; actions: boolean };
    expect(s.actions).toBe(false);
    const r = await call(port, '/actions/rescan', { method: 'POST', headers: { 'x-dssync-csrf': s.csrf }, body: '{"mapping":"docs"}' });
    expect(r.status).toBe(403);
    expect(r.body).toContain('status.actions is false');
    expect(calls).toEqual([]);
  });

  it('on loopback too, everything but the page files, /healthz and /metrics needs the token (issue 24.1)', async () => {
    const { port, calls } = await start();
    for (const path of ['/status', '/history', '/session', '/events', '/status/problems?mapping=docs']) {
      const r = await call(port, path, { anonymous: true });
      expect(r.status, path).toBe(401);
      expect(r.body).not.toContain('secret-folder');
    }
    expect((await call(port, '/actions/retry', { method: 'POST', anonymous: true, body: '{"mapping":"docs"}' })).status).toBe(401);
    expect((await call(port, '/login/code', { method: 'POST', anonymous: true })).status).toBe(401);
    expect(calls).toEqual([]);
    expect(JSON.parse((await call(port, '/healthz', { anonymous: true })).body)).toEqual({ status: 'degraded', reasons: ['docs: degraded'], phases: { docs: expect.any(String) } });
    expect((await call(port, '/metrics', { anonymous: true })).status).toBe(200);
  });

  it('a one-time login code: given only for the token, good once, then a cookie and a redirect to /', async () => {
    const { port } = await start();
    const { code } = JSON.parse((await call(port, '/login/code', { method: 'POST' })).body) as { code: string };
    expect(code).toMatch(/^[\w-]{32}$/);
    const signIn = await call(port, `/login?code=${code}`, { anonymous: true });
    expect(signIn.status).toBe(303);
    expect(signIn.headers.location).toBe('/');
    const session = String(signIn.headers['set-cookie']).split(';')[0]!;
    expect((await call(port, '/status', { anonymous: true, headers: { cookie: session } })).status).toBe(200);
    expect((await call(port, `/login?code=${code}`, { anonymous: true })).status).toBe(401);
    expect((await call(port, '/login?code=', { anonymous: true })).status).toBe(401);
  });

  describe('off loopback (a wildcard bind)', () => {
    // Reached by one of this machine's own names, not a loopback one: the token is needed.
    const ownName = (): string =>
      Object.values(networkInterfaces())
        .flat()
        .find((a) => a && !a.internal && a.family === 'IPv4')?.address ?? hostname();

    it('the page, /status and /events need the token; /healthz and /metrics do not', async () => {
      const { port } = await start({ host: '0.0.0.0', access: { token: 'tok-123' } });
      const host = `${ownName()}:${port}`;
      for (const path of ['/status', '/history', '/session', '/events']) {
        const r = await call(port, path, { host, anonymous: true });
        expect(r.status, path).toBe(401);
        expect(r.body).not.toContain('secret-folder');
      }
      expect((await call(port, '/', { host, anonymous: true })).status).toBe(200); // the page itself (no data): it asks for the token
      expect((await call(port, '/status', { host, headers: { authorization: 'Bearer wrong' } })).status).toBe(401);
      expect((await call(port, '/status', { host, headers: { authorization: 'Bearer tok-123' } })).status).toBe(200);
      expect((await call(port, '/healthz', { host, anonymous: true })).status).toBe(200);
      expect((await call(port, '/metrics', { host, anonymous: true })).status).toBe(200);
      // The page signs in once: a session cookie (HttpOnly, SameSite=Strict) that is not the token.
      expect((await call(port, '/login', { method: 'POST', host, anonymous: true, body: '{"token":"nope"}' })).status).toBe(401);
      const login = await call(port, '/login', { method: 'POST', host, anonymous: true, body: '{"token":"tok-123"}' });
      expect(login.status).toBe(200);
      const cookie = String(login.headers['set-cookie']);
      expect(cookie).toMatch(/^dssync_session=[\w-]+; HttpOnly; SameSite=Strict; Path=\//);
      expect(cookie).not.toContain('tok-123');
      const session = cookie.split(';')[0]!;
      expect((await call(port, '/status', { host, anonymous: true, headers: { cookie: session } })).status).toBe(200);
      const events = await call(port, '/events', { host, anonymous: true, headers: { cookie: session } });
      expect(events.status).toBe(200);
      expect(events.body).toContain('event: hello');
      // From this machine to a loopback name: the token too (every local user reaches loopback).
      expect((await call(port, '/status', { anonymous: true })).status).toBe(401);
    });

    it('a server given no token answers /healthz and /metrics only (403 otherwise)', async () => {
      const { port } = await start({ host: '0.0.0.0', access: { token: '' } });
      const r = await call(port, '/status', { host: `${ownName()}:${port}` });
      expect(r.status).toBe(403);
      expect(r.body).toContain('no status token');
      expect((await call(port, '/healthz', { anonymous: true })).status).toBe(200);
    });
  });
});

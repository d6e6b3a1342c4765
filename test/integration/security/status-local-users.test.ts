/**
 * Issue 24.1, 24.3, 24.4, 24.11: the status endpoint against another local user, against a
 * same-host reverse proxy, and its token file. Against the built daemon (`dssync run`) and
 * the emulator, over real loopback HTTP. The other user is uid 65534 through `setpriv`,
 * running `curl` (from /usr/bin: reachable by any user wherever this clone lives); without
 * setpriv, curl or root the tests that need them skip and say why.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdir, writeFile } from 'node:fs/promises';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { daemonTests } from '../../helpers/daemon-test.js';
import { ORG } from '../../helpers/mirror-check.js';
import { runCli } from '../cli/run-cli.js';
import { authHeader, freePort, statusToken, waitFor } from '../daemon/daemon-process.js';

const run = promisify(execFile);
const CURL = '/usr/bin/curl';
const canSwitchUser = process.getuid?.() === 0 && existsSync('/usr/bin/setpriv') && existsSync(CURL);
const whyNot = 'needs root, /usr/bin/setpriv and /usr/bin/curl to act as another local user (uid 65534)';
const daemons = daemonTests();

/** curl as uid 65534: the HTTP status and the body. */
async function asStranger(url: string, o: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<{ status: number; body: string }> {
  const args = ['--reuid=65534', '--regid=65534', '--clear-groups', CURL, '-s', '-m', '10', '-o', '-', '-w', '\n%{http_code}', '-X', o.method ?? 'GET'];
  for (const [k, v] of Object.entries(o.headers ?? {})) args.push('-H', `${k}: ${v}`);
  if (o.body !== undefined) args.push('--data-raw', o.body);
  args.push(url);
  const { stdout } = await run('/usr/bin/setpriv', args, { timeout: 20_000 });
  const i = stdout.lastIndexOf('\n');
  return { status: Number(stdout.slice(i + 1)), body: stdout.slice(0, i) };
}

describe.skipIf(!canSwitchUser)(`security: another local user and the status endpoint (${whyNot})`, () => {
  it('reads nothing, gets no CSRF token and presses no button on the default loopback bind; /healthz and /metrics name nothing', { timeout: 90_000 }, async () => {
    // A fixed port: `dssync status` reads the address from the config.
    const { w, d } = await daemons.start({ files: { 'payroll/salaries-2026.xlsx.txt': 'secret', 'a.txt': 'alpha' }, config: { status: { listen: `127.0.0.1:${await freePort()}` } } });
    await chmod(w.share, 0o700);
    for (const path of ['/status', '/history', '/session', '/events', '/status/problems?mapping=' + 'x', '/']) {
      const r = await asStranger(`${d.url}${path}`);
      if (path === '/') expect(r.status).toBe(200); // the page's files: no data
      else expect(r.status, path).toBe(401);
      expect(r.body, path).not.toContain('salaries');
      expect(r.body, path).not.toContain(w.share);
    }
    for (const action of ['retry', 'rescan']) {
      const r = await asStranger(`${d.url}/actions/${action}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"mapping":"share"}' });
      expect(r.status, action).toBe(401);
    }
    expect((await asStranger(`${d.url}/login/code`, { method: 'POST' })).status).toBe(401);
    // The token file is the daemon's user's alone.
    const token = `${w.statePath}.status-token`;
    await expect(run('/usr/bin/setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', '/bin/cat', token])).rejects.toThrow();
    // What stays open carries no path, file name, address, organization id or token. (It does
    // carry mapping ids, the operator's labels: docs/security.md says so.)
    for (const path of ['/healthz', '/metrics']) {
      const r = await asStranger(`${d.url}${path}`);
      expect(r.status, path).toBe(200);
      for (const secret of [w.share, w.statePath, w.configPath, w.emu.url, 'salaries', 'payroll', ORG, statusToken(w.configPath, w.statePath)]) expect(r.body, `${path} names ${secret}`).not.toContain(secret);
    }
    // The operator still has it all: dssync status (same user) asks the daemon with the token.
    const st = await runCli(['status', '--config', w.configPath, '--json'], w.env);
    expect(JSON.parse(st.stdout)).toMatchObject({ source: 'daemon' });
  });

  it('dssync status --url gives a one-time link: it signs a browser in once, then the code is spent', { timeout: 90_000 }, async () => {
    const { w, d } = await daemons.start({ files: { 'a.txt': 'alpha' }, config: { status: { listen: `127.0.0.1:${await freePort()}` } } });
    const out = await runCli(['status', '--config', w.configPath, '--url'], w.env);
    expect(out.code, out.stderr).toBe(0);
    const link = /http:\/\/\S+\/login\?code=\S+/.exec(out.stdout)?.[0];
    expect(link).toBeDefined();
    // A stranger who saw nothing cannot guess one.
    expect((await asStranger(`${d.url}/login?code=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA`)).status).toBe(401);
    const first = await fetch(link!, { redirect: 'manual' });
    expect(first.status).toBe(303);
    expect(first.headers.get('location')).toBe('/');
    const cookie = first.headers.get('set-cookie') ?? '';
    expect(cookie).toMatch(/HttpOnly/);
    expect(cookie).toMatch(/SameSite=Strict/);
    const session = cookie.split(';')[0]!;
    expect((await fetch(`${d.url}/status`, { headers: { cookie: session } })).status).toBe(200);
    expect((await fetch(link!, { redirect: 'manual' })).status).toBe(401);
  });
});

describe('security: the status endpoint behind a same-host reverse proxy (issue 24.4)', () => {
  it('a request through a loopback proxy that rewrites Host to 127.0.0.1:PORT still needs the token', { timeout: 90_000 }, async () => {
    const { w, d } = await daemons.start({ files: { 'a.txt': 'alpha' } });
    const target = new URL(d.url);
    // nginx's default proxy_pass: connects from loopback and sends Host: 127.0.0.1:PORT.
    const proxy: Server = createServer((req, res) => {
      const up = request({ host: target.hostname, port: target.port, path: req.url, method: req.method, headers: { ...req.headers, host: target.host }, agent: false }, (r) => {
        res.writeHead(r.statusCode ?? 502, r.headers);
        r.pipe(res);
      });
      up.on('error', () => res.writeHead(502).end());
      req.pipe(up);
    });
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', () => r()));
    try {
      const via = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
      const history = await fetch(`${via}/history`);
      expect(history.status).toBe(401);
      expect(await history.text()).not.toContain('a.txt');
      const retry = await fetch(`${via}/actions/retry`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"mapping":"share"}' });
      expect(retry.status).toBe(401);
      // With the token the proxy serves the operator.
      expect((await fetch(`${via}/history`, { headers: authHeader(w) })).status).toBe(200);
    } finally {
      await new Promise<void>((r) => proxy.close(() => r()));
    }
  });
});

describe('security: the status token file (issue 24.11)', () => {
  it('a world-readable status.tokenFile draws a warning from the daemon and from config check', { timeout: 90_000 }, async () => {
    const dir = `/tmp/dssync-status-token-${process.pid}`;
    await mkdir(dir, { recursive: true });
    const tokenFile = join(dir, 'status-token');
    await writeFile(tokenFile, 'correct-horse-battery-staple\n', { mode: 0o644 });
    await chmod(tokenFile, 0o644);
    const { w, d } = await daemons.start({ files: { 'a.txt': 'alpha' }, config: { status: { listen: '127.0.0.1:0', tokenFile } } });
    await waitFor(() => d.logs().some((l) => l.msg.includes('readable by every local user')), { timeout: 10_000, what: 'the warning' });
    const line = d.logs().find((l) => l.msg.includes('readable by every local user'))!;
    expect(line.level).toBe(40);
    expect(line.msg).toContain(tokenFile);
    expect(line.msg).toContain('chmod 600');
    expect(JSON.stringify(d.logs())).not.toContain('correct-horse-battery-staple');
    const check = await runCli(['config', 'check', '--config', w.configPath], w.env);
    expect(check.stdout + check.stderr).toMatch(/readable by every local user/);
  });
});

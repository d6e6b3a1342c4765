/**
 * Issue 24.5, the way it was found: a service (or a debugging proxy in front of it) that
 * echoes the request's headers into its answers. A 2xx answer that cannot be decoded is
 * quoted in the error, a 500's message too; the bearer token the answer repeats must appear
 * neither on the CLI's stdout/stderr, nor in the daemon's log, nor in its /status. The same
 * for an access token the OAuth2 provider obtained from a token endpoint (it is registered
 * as a secret when obtained), and for the password of the grant.
 */
import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { requireBuiltBinary, runCli } from '../cli/run-cli.js';
import { startDaemon, waitFor, type DaemonProcess } from '../daemon/daemon-process.js';
import type { Workspace } from '../../helpers/mirror-check.js';

const STATIC_TOKEN = 'static-token-0123456789abcdef';
const ISSUED_TOKEN = 'issued-access-token-fedcba9876543210';
const PASSWORD = 'grant-password-31415926';

type Mode = 'undecodable-200' | 'echo-500';

/**
 * The echoing service: every API request is answered with its Authorization header quoted
 * (200 and not JSON, or 500 with a JSON message); /token is a token endpoint that hands out
 * ISSUED_TOKEN for the password grant.
 */
function echoServer(mode: Mode): Promise<{ server: Server; url: string }> {
  const server = createServer((req, res) => {
    if (req.url?.startsWith('/token')) {
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ access_token: ISSUED_TOKEN, token_type: 'Bearer', expires_in: 300 }));
      });
      return;
    }
    const echoed = `you sent Authorization: ${req.headers.authorization ?? '(none)'}`;
    if (mode === 'undecodable-200') res.writeHead(200, { 'content-type': 'text/plain' }).end(`debug proxy> ${echoed}`);
    else res.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ message: `upstream failed; ${echoed}` }));
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` })));
}

const dir = mkdtempSync(join(tmpdir(), 'dssync-echoed-'));
const servers: Server[] = [];
async function serve(mode: Mode): Promise<string> {
  const { server, url } = await echoServer(mode);
  servers.push(server);
  return url;
}

function expectNoSecret(text: string): void {
  for (const secret of [STATIC_TOKEN, ISSUED_TOKEN, PASSWORD]) expect(text).not.toContain(secret);
}

describe('a service that echoes the bearer token', () => {
  beforeAll(() => requireBuiltBinary());
  afterAll(async () => {
    for (const s of servers) await new Promise((r) => s.close(r));
  });

  for (const mode of ['undecodable-200', 'echo-500'] as const) {
    it(`the CLI's output does not show it (${mode})`, async () => {
      const url = await serve(mode);
      const r = await runCli(['documents', 'list', 'ds-1', '--base-url', url, '--org', 'org-1'], { DSSYNC_TOKEN: STATIC_TOKEN });
      expect(r.code).not.toBe(0);
      // The echoed text is quoted (what makes the error useful), the token replaced.
      expect(r.stderr).toContain('[redacted]');
      expectNoSecret(r.stdout + r.stderr);
    });
  }

  it('an access token obtained from the token endpoint is not shown either', async () => {
    const url = await serve('undecodable-200');
    const config = join(dir, 'oauth2.json');
    writeFileSync(
      config,
      JSON.stringify({
        baseUrl: url,
        organizationId: 'org-1',
        statePath: join(dir, 'oauth2-state.json'),
        auth: { type: 'oauth2', tokenUrl: `${url}/token`, grantType: 'password', clientId: 'dssync', username: 'dev-user' },
        mappings: [],
      }),
      { mode: 0o600 },
    );
    const r = await runCli(['documents', 'list', 'ds-1', '--config', config], { DSSYNC_PASSWORD: PASSWORD });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('[redacted]');
    expectNoSecret(r.stdout + r.stderr);
  });

  describe('the daemon', () => {
    let d: DaemonProcess | undefined;
    afterEach(async () => {
      await d?.kill();
      d = undefined;
    });

    for (const mode of ['undecodable-200', 'echo-500'] as const) {
      it(`neither its log nor /status show it (${mode})`, async () => {
        const url = await serve(mode);
        const base = join(dir, `daemon-${mode}`);
        const share = join(base, 'share');
        mkdirSync(share, { recursive: true });
        writeFileSync(join(share, 'a.txt'), 'alpha');
        const ws = { configPath: join(base, 'config.json'), statePath: join(base, 'state.json'), env: {} } as unknown as Workspace;
        writeFileSync(
          ws.configPath,
          JSON.stringify({
            baseUrl: url,
            organizationId: 'org-1',
            statePath: ws.statePath,
            status: { listen: '127.0.0.1:0' },
            queue: { maxAttempts: 1 },
            mappings: [{ path: share, dataSourceId: 'ds-1' }],
          }),
          { mode: 0o600 },
        );
        d = await startDaemon(ws, { env: { DSSYNC_TOKEN: STATIC_TOKEN, DSSYNC_RETRY_DELAY_MS: '200' } });
        const daemon = d;
        // The mapping fails on the echoing answer and says why in its status.
        let status = '';
        await waitFor(
          async () => {
            status = JSON.stringify(await daemon.status());
            return status.includes('[redacted]');
          },
          { timeout: 30_000, what: 'the quoted answer in /status', describe: () => status.slice(0, 2000) },
        );
        expectNoSecret(status);
        const health = JSON.stringify((await daemon.healthz()).body);
        expectNoSecret(health);
        expect(daemon.stdout()).toContain('[redacted]');
        expectNoSecret(daemon.stdout() + daemon.stderr());
      });
    }
  });
});

/**
 * Issue 36.2: a token endpoint (or a proxy or WAF in front of it) that quotes the request in
 * its error shows the password and the client secret in the forms they were sent:
 * form-encoded in the body (URLSearchParams' `+`, upper- or lower-case hex) and inside the
 * base64 of the `Basic` header (oauth4webapi's encoding of id and secret). None of those
 * forms may reach the screen (with DSSYNC_DEBUG=1's stack too), the daemon's log, its
 * /status, or the history file beside the state.
 */
import { readFileSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Workspace } from '../../helpers/mirror-check.js';
import { requireBuiltBinary, runCli } from '../cli/run-cli.js';
import { TOKEN_PATH } from '@dssync/emulator';
import { daemonWorkspace, DEV_PASSWORD, startDaemon, waitFor, type DaemonProcess } from '../daemon/daemon-process.js';

const PASSWORD = "Corp pass+w0rd/é!*~(x)'";
const CLIENT_SECRET = "cl!ent sec+ret~*()'é/=";
const CLIENT_ID = 'dssync cli';

/** Every form a client may have put either secret in, computed here independently of src/secrets.ts. */
function formsOf(secret: string): string[] {
  const oauth = (v: string): string => encodeURIComponent(v).replace(/[-_.!~*'()]|%20/g, (c) => (c === '%20' ? '+' : `%${c.charCodeAt(0).toString(16).toUpperCase()}`));
  const encoded = [encodeURIComponent(secret), new URLSearchParams({ v: secret }).toString().slice(2), oauth(secret)];
  return [secret, ...encoded, ...encoded.map((e) => e.replace(/%[0-9A-F]{2}/g, (h) => h.toLowerCase()))];
}
const FORMS = [
  ...formsOf(PASSWORD),
  ...formsOf(CLIENT_SECRET),
  Buffer.from(`${CLIENT_ID}:${CLIENT_SECRET}`).toString('base64'),
  Buffer.from(`${encodeURIComponent(CLIENT_ID).replace(/%20/g, '+')}:${formsOf(CLIENT_SECRET)[3]!}`).toString('base64'),
];

function expectNoForm(text: string, where: string): void {
  for (const f of FORMS) expect(text.includes(f), `${where} holds ${f}`).toBe(false);
}

/**
 * A token endpoint that quotes the request in a 400 invalid_grant: the Authorization header
 * and its decoded credential, the body with lower-case hex and as sent. With `grantsFrom`, it
 * hands out the emulator's own grants (short-lived tokens, without a refresh token) until
 * `refuse()`, so that the daemon starts, takes its mapping's lease and mirrors, and meets the
 * quoting refusal at its next renewal after that.
 */
function quotingTokenEndpoint(grantsFrom?: string): Promise<{ server: Server; url: string; refuse: () => void }> {
  let granting = grantsFrom !== undefined;
  const server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8').on('data', (d: string) => (body += d));
    req.on('end', () => {
      if (req.method !== 'POST') return void res.writeHead(404).end();
      if (grantsFrom !== undefined && granting) {
        const grant = new URLSearchParams({ grant_type: 'password', username: 'dev-user', password: DEV_PASSWORD, client_id: 'dssync' });
        void fetch(grantsFrom, { method: 'POST', body: grant }).then(async (r) => {
          const { refresh_token: _, ...got } = (await r.json()) as Record<string, unknown>;
          res.writeHead(r.status, { 'content-type': 'application/json' }).end(JSON.stringify(got));
        });
        return;
      }
      const auth = req.headers.authorization ?? '';
      const decoded = Buffer.from(auth.replace(/^Basic /, ''), 'base64').toString('utf8');
      // The error's quote is cut at 200 characters: the forms come first, the password's last.
      const quoted = `WAF blocked: authorization=${auth} credential=${decoded} lower=${body.replace(/%[0-9A-F]{2}/g, (h) => h.toLowerCase()).replace(/^username=[^&]*&/, '')} body=${body.replace(/^username=[^&]*&/, '')}`;
      res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'invalid_grant', error_description: quoted }));
    });
  });
  const refuse = (): void => {
    granting = false;
  };
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, refuse })));
}

const servers: Server[] = [];
async function endpoint(grantsFrom?: string): Promise<{ url: string; refuse: () => void }> {
  const { server, url, refuse } = await quotingTokenEndpoint(grantsFrom);
  servers.push(server);
  return { url, refuse };
}
const ENV = { DSSYNC_PASSWORD: PASSWORD, DSSYNC_CLIENT_SECRET: CLIENT_SECRET, DSSYNC_TOKEN: '' };

async function useTokenEndpoint(w: Workspace, tokenUrl: string): Promise<void> {
  const config = JSON.parse(await readFile(w.configPath, 'utf8')) as Record<string, unknown>;
  config.auth = { type: 'oauth2', tokenUrl: `${tokenUrl}/token`, grantType: 'password', clientId: CLIENT_ID, username: 'dev-user' };
  await writeFile(w.configPath, JSON.stringify(config), { mode: 0o600 });
}

let ws: Workspace | undefined;
let d: DaemonProcess | undefined;
beforeAll(() => requireBuiltBinary());
afterEach(async () => {
  await d?.kill();
  await ws?.close();
  d = ws = undefined;
});
afterAll(async () => {
  for (const s of servers) await new Promise((r) => s.close(r));
});

describe('secrets quoted back in the forms they were sent (issue 36.2)', () => {
  it('the CLI shows the quoted request without any form of the password or client secret, DSSYNC_DEBUG stack included', { timeout: 60_000 }, async () => {
    ws = await daemonWorkspace();
    await useTokenEndpoint(ws, (await endpoint()).url);
    for (const debug of [{}, { DSSYNC_DEBUG: '1' }] as Record<string, string>[]) {
      const r = await runCli(['documents', 'list', 'ds-1', '--config', ws.configPath], { ...ENV, ...debug });
      expect(r.code).not.toBe(0);
      expect(r.stderr).toContain('WAF blocked');
      expect(r.stderr).toContain('[redacted]');
      expectNoForm(r.stdout + r.stderr, `the CLI's output ${JSON.stringify(debug)}`);
    }
  });

  it('the daemon: its log, /status and the history file hold none of them', { timeout: 120_000 }, async () => {
    ws = await daemonWorkspace({ config: { ingestionCheck: { enabled: false } }, emulator: { oidc: { tokenTtlSeconds: 3, refreshTtlSeconds: 60 } } });
    const w = ws;
    const tokens = await endpoint(`${w.emu.url}${TOKEN_PATH}`);
    await useTokenEndpoint(w, tokens.url);
    await w.write('a.txt', 'alpha');
    d = await startDaemon(w, { env: ENV });
    const daemon = d;
    // The daemon takes its mapping's lease (which outlasts a token) and mirrors first.
    let status = '';
    await waitFor(
      async () => {
        const s = await daemon.status();
        status = JSON.stringify(s);
        return s.mappings[0]?.lastPass?.ok === true;
      },
      { timeout: 60_000, what: 'the first pass', describe: () => status.slice(0, 3000) },
    );
    // Once the emulator's token expires, the next renewal is refused with the quoted request,
    // and the mapping's pass history says why: a new file each look makes the pass that asks.
    tokens.refuse();
    let n = 0;
    await waitFor(
      async () => {
        await w.write(`f${n++}.txt`, 'more');
        const s = await daemon.status();
        status = JSON.stringify(s);
        return JSON.stringify(s.mappings[0]?.history ?? []).includes('WAF blocked');
      },
      { timeout: 60_000, interval: 500, what: 'the quoted refusal in the pass history of /status', describe: () => status.slice(0, 3000) },
    );
    expectNoForm(status, '/status');
    await daemon.stop();
    d = undefined;
    const history = readFileSync(`${w.statePath}.problems.json`, 'utf8');
    expect(history).toContain('WAF blocked');
    expectNoForm(history, 'the history file');
    expect(daemon.stdout()).toContain('WAF blocked');
    expectNoForm(daemon.stdout() + daemon.stderr(), 'the log');
  });
});

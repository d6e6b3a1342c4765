/**
 * The oauth2 provider against the emulator's OpenID Connect token endpoint over real
 * loopback HTTP, with 2-second access tokens: renewal ahead of expiry, one renewal for many
 * requests, the forced renewal after a 401, and every bad answer of a token endpoint.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { DatastoreClient } from '../../../src/api/client.js';
import { createClientFromConnection } from '../../../src/compose/client.js';
import { ApiError } from '../../../src/api/errors.js';
import { CredentialsRefusedError } from '../../../src/auth/renewing.js';
import { OAuth2TokenProvider } from '../../../src/auth/oauth2.js';
import { describeFailure } from '../../../src/cli/exit.js';
import { resolveConnection, type ConnectionFileSettings } from '../../../src/config/connection.js';
import { startEmulator, type RunningEmulator } from '@dssync/emulator';
import { TOKEN_PATH } from '@dssync/emulator';
import { createLogger } from '../../../src/log.js';
import { rejectionOf } from '../../helpers/rejection.js';
import { QUEUE } from '../../helpers/queue-defaults.js';
import { onDisk } from '../../helpers/upload-file.js';

const PASSWORD = 'dev-password';
const SECRET = 'dev-client-secret';

let emu: RunningEmulator;
const clients: DatastoreClient[] = [];
const logLines: string[] = [];
const logger = createLogger({ level: 'debug', destination: { write: (s: string) => void logLines.push(s) } });

beforeAll(async () => {
  emu = await startEmulator({ oidc: { tokenTtlSeconds: 2, refreshTtlSeconds: 4 } });
});
afterAll(async () => {
  await emu.close();
  // Secrets never reach a log line, whatever happened above.
  const all = logLines.join('\n');
  for (const secret of [PASSWORD, SECRET, 'wrong-password-XYZ', 'wrong-secret-XYZ']) expect(all).not.toContain(secret);
});
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
});

function client(auth: ConnectionFileSettings['auth'], env: NodeJS.ProcessEnv, base = emu.url, statePath?: string): DatastoreClient {
  const conn = resolveConnection({ flags: {}, env, file: { baseUrl: base, organizationId: 'dev-org', auth }, statePath });
  const c = createClientFromConnection(conn, { ...QUEUE, logger, maxAttempts: 2, timeouts: { connectMs: 2_000, headersMs: 5_000, bodyMs: 5_000 } });
  clients.push(c);
  return c;
}

const passwordAuth = (tokenUrl = `${emu.url}${TOKEN_PATH}`) =>
  ({ type: 'oauth2', tokenUrl, grantType: 'password', clientId: 'dssync', username: 'dev-user' }) as const;

describe('oauth2 against the emulator (2-second tokens)', () => {
  it('keeps working through several token lifetimes, renewing ahead of expiry with the refresh token', { timeout: 20_000 }, async () => {
    const c = client(passwordAuth(), { DSSYNC_PASSWORD: PASSWORD });
    const before = { ...emu.oidc.counts };
    const end = Date.now() + 5_500;
    let requests = 0;
    while (Date.now() < end) {
      // Several requests at once share one renewal.
      await Promise.all([c.listDataSources(), c.listDataSources(), c.listDataSources()]);
      requests += 3;
      await sleep(150);
    }
    expect(requests).toBeGreaterThan(20);
    expect(emu.oidc.counts.password - before.password).toBe(1);
    // 5.5 s of 2-second tokens: at least two renewals, and one per lifetime at most (single-flight).
    const renewals = emu.oidc.counts.refresh_token - before.refresh_token;
    expect(renewals).toBeGreaterThanOrEqual(2);
    expect(renewals).toBeLessThanOrEqual(6);
    expect(c.tokenStatus()).toMatchObject({ kind: 'oauth2', hasRefreshToken: true });
    expect(JSON.stringify(c.tokenStatus())).not.toContain(PASSWORD);
  });

  it('a 401 forces one renewal and the request is retried (tokens revoked on the server)', async () => {
    const c = client(passwordAuth(), { DSSYNC_PASSWORD: PASSWORD });
    await c.listDataSources();
    emu.oidc.revokeAll(); // the access and refresh tokens are unknown now: 401, refresh refused, password grant again
    const before = emu.oidc.counts.password;
    await expect(c.listDataSources()).resolves.toEqual(expect.any(Array));
    expect(emu.oidc.counts.password).toBe(before + 1);
  });

  it('an upload refused with 401 is renewed and sent once, without a duplicate', async () => {
    const { mkdtempSync, writeFileSync } = await import('node:fs');
    const { join } = await import('node:path');
    const { tmpdir } = await import('node:os');
    const dir = mkdtempSync(join(tmpdir(), 'dssync-oauth-'));
    writeFileSync(join(dir, 'a.txt'), 'hello');
    const c = client(passwordAuth(), { DSSYNC_PASSWORD: PASSWORD });
    const ds = await c.createDataSource({ name: 'oauth-upload', llmConnectorIds: ['c1'] });
    emu.oidc.revokeAll();
    const docs = await c.uploadDocuments(ds.id, [onDisk(join(dir, 'a.txt'), 'a.txt')]);
    expect(docs).toHaveLength(1);
    expect(await c.listDocuments(ds.id)).toHaveLength(1);
  });

  it('a wrong password is "credentials refused" (exit 3) naming the endpoint and the account, never the password', async () => {
    const c = client(passwordAuth(), { DSSYNC_PASSWORD: 'wrong-password-XYZ' });
    const err = await rejectionOf(c.listDataSources(), CredentialsRefusedError);
    expect(err.code).toBe('E_AUTH_REFUSED');
    expect(err.message).toContain(`${emu.url}${TOKEN_PATH}`);
    expect(err.message).toContain('dev-user');
    expect(err.message).toContain('invalid_grant');
    expect(err.message).not.toContain('wrong-password-XYZ');
    expect(describeFailure(err).exitCode).toBe(3);
  });

  it('client_credentials: HTTP Basic by default, a wrong client secret is invalid_client', async () => {
    const auth = { type: 'oauth2', tokenUrl: `${emu.url}${TOKEN_PATH}`, grantType: 'client_credentials', clientId: 'dssync-service' } as const;
    await expect(client(auth, { DSSYNC_CLIENT_SECRET: SECRET }).listDataSources()).resolves.toEqual(expect.any(Array));
    const err = await rejectionOf(client(auth, { DSSYNC_CLIENT_SECRET: 'wrong-secret-XYZ' }).listDataSources(), CredentialsRefusedError);
    expect(err.message).toContain('invalid_client');
    expect(err.message).toContain('dssync-service');
    expect(err.message).not.toContain('wrong-secret-XYZ');
  });

  it('client_secret_post when the discovery document offers only that', async () => {
    const post = await startEmulator({ oidc: { authMethods: ['client_secret_post'] } });
    try {
      const conn = resolveConnection({
        flags: {},
        env: { DSSYNC_CLIENT_SECRET: SECRET },
        file: { baseUrl: post.url, organizationId: 'dev-org', auth: { type: 'oauth2', tokenUrl: `${post.url}${TOKEN_PATH}`, grantType: 'client_credentials', clientId: 'dssync-service' } },
      });
      if (conn.auth.type !== 'oauth2') throw new Error('expected oauth2');
      const { Agent } = await import('undici');
      const agent = new Agent();
      const p = new OAuth2TokenProvider(conn.auth, { dispatcher: agent });
      await p.token();
      expect(p.clientAuthMethod).toBe('client_secret_post');
      await agent.close();
    } finally {
      await post.close();
    }
  });

  it('an expired refresh token (grantType refresh_token) says to run dssync auth login again', { timeout: 15_000 }, async () => {
    const { mkdtempSync } = await import('node:fs');
    const { join } = await import('node:path');
    const { tmpdir } = await import('node:os');
    const { storeRefreshToken } = await import('../../../src/auth/oauth2.js');
    const dir = mkdtempSync(join(tmpdir(), 'dssync-refresh-'));
    // What `dssync auth login` would have stored: a refresh token of a 4-second life.
    const [, body] = emu.oidc.token({ grant_type: 'password', client_id: 'dssync', username: 'dev-user', password: PASSWORD }, undefined);
    storeRefreshToken(join(dir, 'dssync-refresh-token'), body.refresh_token as string);
    emu.oidc.revokeAll();
    const auth = { type: 'oauth2', tokenUrl: `${emu.url}${TOKEN_PATH}`, grantType: 'refresh_token', clientId: 'dssync' } as const;
    const err = await rejectionOf(client(auth, {}, emu.url, join(dir, 'state.json')).listDataSources(), CredentialsRefusedError);
    expect(err.message).toMatch(/dssync auth login/);
    expect(err.message).toContain('invalid_grant');
  });

  it('a token answer without expires_in: the token is used until a 401, then renewed', async () => {
    const noExpiry = await startEmulator({ oidc: { omitExpiresIn: true } });
    try {
      const c = client(passwordAuth(`${noExpiry.url}${TOKEN_PATH}`), { DSSYNC_PASSWORD: PASSWORD }, noExpiry.url);
      await c.listDataSources();
      expect(c.tokenStatus().expiresAt).toBeUndefined();
      noExpiry.oidc.revokeAll();
      await expect(c.listDataSources()).resolves.toEqual(expect.any(Array));
      expect(logLines.join('\n')).toContain('without expires_in');
    } finally {
      await noExpiry.close();
    }
  });
});

describe('a token endpoint that cannot be used', () => {
  let server: Server;
  let url: string;
  beforeAll(async () => {
    server = createServer((req, res) => {
      if (req.url?.includes('html')) {
        res.writeHead(200, { 'content-type': 'text/html' }).end('<html><title>Login portal</title></html>');
      } else {
        res.writeHead(502, { 'content-type': 'text/plain' }).end('Bad Gateway');
      }
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  it('unreachable: a clear error naming the endpoint, nothing sent to the service', async () => {
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((r) => closed.close(() => r()));
    const before = emu.stats().requests;
    const err = await rejectionOf(client(passwordAuth(`http://127.0.0.1:${port}/token`), { DSSYNC_PASSWORD: PASSWORD }).listDataSources(), ApiError);
    expect(err.message).toContain(`http://127.0.0.1:${port}/token`);
    expect(err.message).toMatch(/connection refused/);
    expect(err.retryable).toBe(false);
    expect(err.ambiguous).toBe(false);
    expect(emu.stats().requests).toBe(before);
  });

  it('an HTML page or a 502 instead of a token: a clear error, never "credentials refused"', async () => {
    for (const path of ['/html/token', '/bad/token']) {
      const err = await rejectionOf(client(passwordAuth(`${url}${path}`), { DSSYNC_PASSWORD: PASSWORD }).listDataSources(), ApiError);
      expect(err).not.toBeInstanceOf(CredentialsRefusedError);
      expect(err.message).toContain(`${url}${path}`);
      expect(describeFailure(err).exitCode).toBe(1);
    }
  });
});

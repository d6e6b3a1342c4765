/**
 * The oauth2 provider against a real OpenID provider nobody here wrote (the certified
 * oidc-provider package, started by the test): the client_credentials grant with HTTP Basic
 * (its default) and with client_secret_post when discovery offers only that; a wrong secret
 * is "credentials refused" naming the endpoint, never the secret.
 */
import type { AddressInfo } from 'node:net';
import { Agent } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OAuth2TokenProvider } from '../../../src/auth/oauth2.js';
import { CredentialsRefusedError } from '../../../src/auth/renewing.js';
import type { ResolvedAuth } from '../../../src/auth/settings.js';
import { rejectionOf } from '../../helpers/rejection.js';

const SECRET = 'oidc-provider-secret-0123456789abcdef';
let close: () => Promise<void>;
let issuer = '';
const agent = new Agent();

async function start(methods: string[]): Promise<{ issuer: string; close: () => Promise<void> }> {
  // No type declarations ship with oidc-provider: imported by a name tsc does not resolve.
  const moduleName = 'oidc-provider';
  const { default: Provider } = (await import(moduleName)) as unknown as { default: new (issuer: string, conf: unknown) => { callback(): (req: unknown, res: unknown) => void } };
  const { createServer } = await import('node:http');
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const provider = new Provider(url, {
    clients: [
      { client_id: 'basic-client', client_secret: SECRET, grant_types: ['client_credentials'], redirect_uris: [], response_types: [], token_endpoint_auth_method: 'client_secret_basic' },
      { client_id: 'post-client', client_secret: SECRET, grant_types: ['client_credentials'], redirect_uris: [], response_types: [], token_endpoint_auth_method: 'client_secret_post' },
    ],
    features: { clientCredentials: { enabled: true }, devInteractions: { enabled: false } },
    clientAuthMethods: methods,
  });
  server.on('request', provider.callback() as never);
  return { issuer: url, close: () => new Promise<void>((r) => server.close(() => r())) };
}

function settings(clientId: string, secret: string, url = issuer): Extract<ResolvedAuth, { type: 'oauth2' }> {
  return {
    type: 'oauth2',
    tokenUrl: `${url}/token`,
    grantType: 'client_credentials',
    clientId,
    clientSecret: { describe: 'test', read: () => secret },
    refreshTokenFile: '/nonexistent/refresh',
  };
}

describe('oauth2 against oidc-provider', () => {
  beforeAll(async () => {
    const s = await start(['client_secret_basic', 'client_secret_post']);
    issuer = s.issuer;
    close = s.close;
  });
  afterAll(async () => {
    await close();
    await agent.close();
  });

  it('client_credentials with HTTP Basic: a token and its lifetime', async () => {
    const p = new OAuth2TokenProvider(settings('basic-client', SECRET), { dispatcher: agent });
    const token = await p.token();
    expect(token.length).toBeGreaterThan(10);
    expect(p.clientAuthMethod).toBe('client_secret_basic');
    expect(p.status().expiresAt).toBeGreaterThan(Date.now());
  });

  it('a wrong client secret is credentials refused (invalid_client), the secret never shown', async () => {
    const p = new OAuth2TokenProvider(settings('basic-client', 'wrong-secret-abcdef'), { dispatcher: agent });
    const err = await rejectionOf(p.token(), CredentialsRefusedError);
    expect(err.message).toContain('invalid_client');
    expect(err.message).toContain(`${issuer}/token`);
    expect(err.message).not.toContain('wrong-secret-abcdef');
  });

  it('client_secret_post when discovery offers only that', async () => {
    const s = await start(['client_secret_post']);
    try {
      const p = new OAuth2TokenProvider(settings('post-client', SECRET, s.issuer), { dispatcher: agent });
      expect((await p.token()).length).toBeGreaterThan(10);
      expect(p.clientAuthMethod).toBe('client_secret_post');
    } finally {
      await s.close();
    }
  });
});

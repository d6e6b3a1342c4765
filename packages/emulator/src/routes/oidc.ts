/**
 * The emulator playing the real service's identity provider (Keycloak for Wikit
 * Semantics): an OpenID Connect discovery document and a token endpoint with the password,
 * client_credentials and refresh_token grants, in Keycloak's answer and error shapes.
 * Access tokens it issues expire after `tokenTtlSeconds` (then 401 on the API). The
 * emulator's static token (--token) keeps working beside them, so the demo needs no flag.
 */
import { randomBytes, timingSafeEqual, createHash } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

export const REALM_PATH = '/realms/dssync';
export const TOKEN_PATH = `${REALM_PATH}/protocol/openid-connect/token`;
export const DISCOVERY_PATH = `${REALM_PATH}/.well-known/openid-configuration`;

export interface OidcAccount {
  password: string;
  /** A one-time code the password grant must also carry (`totp`), like an account with 2FA. */
  otp?: string | undefined;
}

export interface OidcOptions {
  /** Access token lifetime, seconds. Default 300 (Keycloak's). */
  tokenTtlSeconds?: number;
  /** Refresh token lifetime, seconds (offline_access: ten times longer). Default 1800. */
  refreshTtlSeconds?: number;
  /** username -> account. Default: dev-user / dev-password, and otp-user / dev-password with code 123456. */
  users?: Record<string, OidcAccount>;
  /** client id -> secret (null: a public client). Default: dssync (public), dssync-service / dev-client-secret. */
  clients?: Record<string, string | null>;
  /** token_endpoint_auth_methods_supported of the discovery document. Default basic and post. */
  authMethods?: string[];
  /** Leave expires_in out of token answers (a bad-input case). */
  omitExpiresIn?: boolean;
}

export const OIDC_DEFAULTS = {
  tokenTtlSeconds: 300,
  refreshTtlSeconds: 1800,
  users: { 'dev-user': { password: 'dev-password' }, 'otp-user': { password: 'dev-password', otp: '123456' } } as Record<string, OidcAccount>,
  clients: { dssync: null, 'dssync-service': 'dev-client-secret' } as Record<string, string | null>,
  authMethods: ['client_secret_basic', 'client_secret_post'],
};

interface Issued {
  expiresAt: number;
  subject: string;
}

/** The tokens issued so far; `accepts` is asked by the API's authentication hook. */
export class OidcIssuer {
  private readonly access = new Map<string, Issued>();
  private readonly refresh = new Map<string, Issued & { clientId: string; offline: boolean }>();
  readonly options: Required<Omit<OidcOptions, 'omitExpiresIn'>> & { omitExpiresIn: boolean };
  /** Counters for tests: token requests by grant, and refusals. */
  readonly counts = { password: 0, client_credentials: 0, refresh_token: 0, refused: 0, expiredAccess: 0 };

  constructor(opts: OidcOptions = {}, private readonly now: () => number = Date.now) {
    this.options = {
      tokenTtlSeconds: opts.tokenTtlSeconds ?? OIDC_DEFAULTS.tokenTtlSeconds,
      refreshTtlSeconds: opts.refreshTtlSeconds ?? OIDC_DEFAULTS.refreshTtlSeconds,
      users: opts.users ?? OIDC_DEFAULTS.users,
      clients: opts.clients ?? OIDC_DEFAULTS.clients,
      authMethods: opts.authMethods ?? OIDC_DEFAULTS.authMethods,
      omitExpiresIn: opts.omitExpiresIn ?? false,
    };
  }

  /** 'valid' | 'expired' | 'unknown' for a bearer token the API received. */
  check(token: string): 'valid' | 'expired' | 'unknown' {
    const t = this.access.get(digest(token));
    if (!t) return 'unknown';
    if (this.now() >= t.expiresAt) {
      this.counts.expiredAccess++;
      return 'expired';
    }
    return 'valid';
  }

  /** Forget every issued token (an admin "log everybody out"). */
  revokeAll(): void {
    this.access.clear();
    this.refresh.clear();
  }

  discovery(base: string): Record<string, unknown> {
    const issuer = `${base}${REALM_PATH}`;
    return {
      issuer,
      authorization_endpoint: `${issuer}/protocol/openid-connect/auth`,
      token_endpoint: `${base}${TOKEN_PATH}`,
      jwks_uri: `${issuer}/protocol/openid-connect/certs`,
      grant_types_supported: ['password', 'client_credentials', 'refresh_token'],
      response_types_supported: ['code'],
      subject_types_supported: ['public'],
      id_token_signing_alg_values_supported: ['RS256'],
      token_endpoint_auth_methods_supported: this.options.authMethods,
      scopes_supported: ['openid', 'offline_access', 'profile', 'email'],
    };
  }

  /** One token request: [status, body]. */
  token(form: Record<string, string>, authorization: string | undefined): [number, Record<string, unknown>] {
    const client = this.authenticateClient(form, authorization);
    if ('error' in client) return this.refuse(401, 'invalid_client', client.error);
    const grant = form.grant_type;
    const scope = form.scope ?? '';
    switch (grant) {
      case 'password': {
        this.counts.password++;
        const user = form.username === undefined ? undefined : this.options.users[form.username];
        if (!user || !form.password || !safeEqual(form.password, user.password)) return this.refuse(401, 'invalid_grant', 'Invalid user credentials');
        if (user.otp !== undefined && !(form.totp !== undefined && safeEqual(form.totp, user.otp))) {
          return this.refuse(401, 'invalid_grant', 'Invalid user credentials');
        }
        return [200, this.issue(form.username as string, client.id, scope, true)];
      }
      case 'client_credentials': {
        this.counts.client_credentials++;
        if (client.public) return this.refuse(401, 'unauthorized_client', 'Public client not allowed to retrieve service account');
        return [200, this.issue(`service-account-${client.id}`, client.id, scope, false)];
      }
      case 'refresh_token': {
        this.counts.refresh_token++;
        const key = digest(form.refresh_token ?? '');
        const r = this.refresh.get(key);
        if (!r || r.clientId !== client.id) return this.refuse(400, 'invalid_grant', 'Invalid refresh token');
        if (this.now() >= r.expiresAt) {
          this.refresh.delete(key);
          return this.refuse(400, 'invalid_grant', 'Token is not active');
        }
        // Keycloak rotates refresh tokens: the old one is spent.
        this.refresh.delete(key);
        return [200, this.issue(r.subject, client.id, r.offline ? 'offline_access' : scope, true, r.offline)];
      }
      case undefined:
      case '':
        return this.refuse(400, 'invalid_request', 'Missing form parameter: grant_type');
      default:
        return this.refuse(400, 'unsupported_grant_type', 'Unsupported grant_type');
    }
  }

  private issue(subject: string, clientId: string, scope: string, withRefresh: boolean, offline = /\boffline_access\b/.test(scope)): Record<string, unknown> {
    const access = randomBytes(24).toString('base64url');
    const ttl = this.options.tokenTtlSeconds;
    this.access.set(digest(access), { expiresAt: this.now() + ttl * 1000, subject });
    const body: Record<string, unknown> = { access_token: access, token_type: 'Bearer', 'not-before-policy': 0, session_state: randomBytes(8).toString('hex'), scope: scope || 'profile email' };
    if (!this.options.omitExpiresIn) body.expires_in = ttl;
    if (withRefresh) {
      const refresh = randomBytes(32).toString('base64url');
      const rttl = this.options.refreshTtlSeconds * (offline ? 10 : 1);
      this.refresh.set(digest(refresh), { expiresAt: this.now() + rttl * 1000, subject, clientId, offline });
      body.refresh_token = refresh;
      body.refresh_expires_in = offline ? 0 : rttl;
    }
    return body;
  }

  private refuse(status: number, error: string, description: string): [number, Record<string, unknown>] {
    this.counts.refused++;
    return [status, { error, error_description: description }];
  }

  private authenticateClient(form: Record<string, string>, authorization: string | undefined): { id: string; public: boolean } | { error: string } {
    let id = form.client_id;
    let secret = form.client_secret;
    const basic = authorization === undefined ? null : /^Basic\s+(\S+)$/i.exec(authorization);
    if (basic) {
      const decoded = Buffer.from(basic[1] as string, 'base64').toString('utf8');
      const i = decoded.indexOf(':');
      if (i < 0) return { error: 'Invalid client or Invalid client credentials' };
      id = decodeURIComponent(decoded.slice(0, i).replace(/\+/g, ' '));
      secret = decodeURIComponent(decoded.slice(i + 1).replace(/\+/g, ' '));
    }
    if (id === undefined || !(id in this.options.clients)) return { error: 'Invalid client or Invalid client credentials' };
    const expected = this.options.clients[id];
    if (expected === null || expected === undefined) return { id, public: true };
    if (secret === undefined || !safeEqual(secret, expected)) return { error: 'Invalid client or Invalid client credentials' };
    return { id, public: false };
  }
}

/** The two routes (no organization, no bearer token: the authentication hook skips them). */
export function registerOidcRoutes(app: FastifyInstance, issuer: OidcIssuer): void {
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: 64 * 1024 }, (_req, body, done) => {
    done(null, Object.fromEntries(new URLSearchParams(body as string)));
  });
  app.get(DISCOVERY_PATH, async (req: FastifyRequest, reply: FastifyReply) => {
    return reply.code(200).send(issuer.discovery(baseOf(req)));
  });
  app.post(TOKEN_PATH, async (req: FastifyRequest, reply: FastifyReply) => {
    const ct = String(req.headers['content-type'] ?? '');
    if (!ct.startsWith('application/x-www-form-urlencoded')) {
      return reply.code(400).send({ error: 'invalid_request', error_description: 'the token endpoint takes application/x-www-form-urlencoded' });
    }
    const form = (req.body ?? {}) as Record<string, string>;
    const [status, body] = issuer.token(form, req.headers.authorization);
    return reply.code(status).header('cache-control', 'no-store').header('pragma', 'no-cache').send(body);
  });
}

export function isOidcPath(path: string): boolean {
  return path === TOKEN_PATH || path === DISCOVERY_PATH;
}

function baseOf(req: FastifyRequest): string {
  const host = req.headers.host ?? `${req.hostname}`;
  return `${req.protocol}://${host}`;
}

function digest(value: string): string {
  return createHash('sha256').update(value).digest('hex');
}

function safeEqual(a: string, b: string): boolean {
  const x = createHash('sha256').update(a).digest();
  const y = createHash('sha256').update(b).digest();
  return timingSafeEqual(x, y);
}

/**
 * `auth.type: "oauth2"`: access tokens from an OAuth2 / OpenID Connect token endpoint
 * (Keycloak for Wikit Semantics), through openid-client (LIBRARIES.md: a well-kept client
 * rather than hand-made requests). Its HTTP goes through the client's undici dispatcher (TLS
 * settings, timeouts) and the transport's one error mapping (api/http.ts), client authentication is HTTP Basic (RFC 6749 §2.3.1) unless the server's
 * discovery document offers only client_secret_post, and a refresh token, when one was
 * given, is used before the grant itself.
 */
import { chmodSync, closeSync, constants, fsyncSync, openSync, renameSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import type * as Oidc from 'openid-client';
import type { Dispatcher, fetch as UndiciFetch } from 'undici';
import { ApiError, apiErrorWith } from '../api/errors.js';
import { transportError } from '../api/http.js';
import { preview } from '../api/decode.js';
import { registerBasicCredential, registerSecret } from '../secrets.js';
import { CredentialsRefusedError, RenewingProvider, type ObtainedToken, type RenewingOptions } from './renewing.js';
import { readSecretFile, SecretFileError } from './secret-file.js';
import type { ResolvedAuth } from './settings.js';

type OAuth2Settings = Extract<ResolvedAuth, { type: 'oauth2' }>;

export interface OAuth2Options extends RenewingOptions {
  /** The client's dispatcher (api/http.ts createAgent): its TLS settings and timeouts; the provider does not close it. */
  dispatcher: Dispatcher;
}

/**
 * The most bytes read from the token endpoint or the discovery document, counted after
 * decompression: a token answer is a few kB, and fetch inflates gzip, so 1 MB of gzip
 * could otherwise become gigabytes in memory (issue 24.6).
 */
export const MAX_TOKEN_ANSWER_BYTES = 1024 * 1024;

/** Grant errors that mean the credentials themselves were refused. */
const REFUSED = new Set(['invalid_grant', 'invalid_client', 'unauthorized_client', 'unsupported_grant_type', 'invalid_scope']);

/**
 * openid-client (with jose and oauth4webapi) and undici's fetch (with the rest of undici's
 * index) are loaded at the first token request, not with the CLI: a sync or daemon with a
 * static token never uses them, and their modules cost every start ~100 ms of CPU. Every
 * use below comes after `configuration()`, which loads them.
 */
let oidc: typeof Oidc;
let undiciFetch: typeof UndiciFetch;
let oidcLoaded: Promise<void> | undefined;
function loadOidc(): Promise<void> {
  return (oidcLoaded ??= Promise.all([import('openid-client'), import('undici')]).then(([m, u]) => {
    oidc = m;
    undiciFetch = u.fetch;
  }));
}

export class OAuth2TokenProvider extends RenewingProvider {
  readonly kind = 'oauth2' as const;
  readonly description: string;
  private config: Promise<Oidc.Configuration> | undefined;
  /** The client authentication chosen (for `auth status`). */
  clientAuthMethod: 'none' | 'client_secret_basic' | 'client_secret_post' | undefined;
  private readonly account: string;

  constructor(
    private readonly s: OAuth2Settings,
    private readonly o: OAuth2Options,
  ) {
    super(o);
    this.account = s.username ? `account ${s.username}` : `client ${s.clientId}`;
    this.description = `the token endpoint ${s.tokenUrl} (${s.grantType} grant, ${this.account})`;
    if (s.grantType === 'refresh_token') this.refreshToken = this.storedRefreshToken();
  }

  protected async obtain(signal?: AbortSignal): Promise<ObtainedToken> {
    const config = await this.configuration(signal);
    if (this.refreshToken !== undefined) {
      try {
        return this.keep(await this.request(() => oidc.refreshTokenGrant(config, this.refreshToken as string, this.scopeParams())));
      } catch (e) {
        if (!(e instanceof CredentialsRefusedError)) throw e;
        if (this.s.grantType === 'refresh_token') {
          throw new CredentialsRefusedError(`${e.message}; the refresh token stored by "dssync auth login" has expired or was revoked`, {
            path: e.path,
            advice: `Run "dssync auth login" again (it stores a new one in ${this.s.refreshTokenFile}).`,
          });
        }
        this.log.info({ endpoint: this.s.tokenUrl }, 'the refresh token was refused; using the grant again');
        this.refreshToken = undefined;
      }
    }
    switch (this.s.grantType) {
      case 'password': {
        const password = this.s.password?.read() ?? '';
        const params = { username: this.s.username ?? '', password, ...this.scopeParams() };
        return this.keep(await this.request(() => oidc.genericGrantRequest(config, 'password', params)));
      }
      case 'client_credentials':
        return this.keep(await this.request(() => oidc.clientCredentialsGrant(config, this.scopeParams())));
      case 'refresh_token':
        throw new CredentialsRefusedError(
          `no refresh token for ${this.account} at ${this.s.tokenUrl}: run "dssync auth login" (it stores one in ${this.s.refreshTokenFile})`,
        );
    }
  }

  /** Grants with a password or one-time code typed by a person (`dssync auth login`). */
  async login(username: string, password: string, otp: string | undefined, signal?: AbortSignal): Promise<ObtainedToken> {
    const config = await this.configuration(signal);
    const scope = ['offline_access', ...(this.s.scope ?? '').split(/\s+/).filter((x) => x !== '' && x !== 'offline_access')].join(' ');
    const params: Record<string, string> = { username, password, scope, ...(otp ? { totp: otp, otp } : {}) };
    registerSecret(password);
    const got = await this.request(() => oidc.genericGrantRequest(config, 'password', params), [password, otp ?? '']);
    registerSecret(got.accessToken);
    registerSecret(got.refreshToken);
    return got;
  }

  protected scrub(message: string): string {
    let out = message;
    for (const secret of [this.safeRead(() => this.s.password?.read()), this.safeRead(() => this.s.clientSecret?.read()), this.refreshToken]) {
      if (secret && secret.length >= 4) out = out.split(secret).join('[redacted]');
    }
    return out;
  }

  /** A rotated refresh token is stored again (Keycloak may rotate them). */
  private keep(got: ObtainedToken): ObtainedToken {
    if (this.s.grantType === 'refresh_token' && got.refreshToken !== undefined && got.refreshToken !== this.refreshToken) {
      try {
        storeRefreshToken(this.s.refreshTokenFile, got.refreshToken);
      } catch (e) {
        this.log.warn({ file: this.s.refreshTokenFile, err: (e as Error).message }, 'could not store the renewed refresh token');
      }
    }
    return got;
  }

  private storedRefreshToken(): string | undefined {
    try {
      return readSecretFile(this.s.refreshTokenFile, 'the refresh token file', 'dssync auth login').value;
    } catch (e) {
      // Not stored yet (before the first `dssync auth login`): the grant asks for one.
      if (e instanceof SecretFileError && e.errno === 'ENOENT') return undefined;
      throw e;
    }
  }

  private scopeParams(): Record<string, string> {
    return this.s.scope ? { scope: this.s.scope } : {};
  }

  private safeRead(read: () => string | undefined): string | undefined {
    try {
      return read();
    } catch {
      return undefined;
    }
  }

  /** One token request; every failure becomes an ApiError naming the endpoint and the account, never a secret. */
  private async request(call: () => Promise<Oidc.TokenEndpointResponse>, extraSecrets: string[] = []): Promise<ObtainedToken> {
    const path = new URL(this.s.tokenUrl).pathname;
    let res: Oidc.TokenEndpointResponse;
    try {
      res = await call();
    } catch (e) {
      const err = this.translate(e, path);
      for (const secret of extraSecrets) if (secret.length >= 4) err.message = err.message.split(secret).join('[redacted]');
      err.message = this.scrub(err.message);
      throw err;
    }
    const expiresIn = typeof res.expires_in === 'number' ? res.expires_in : undefined;
    return { accessToken: res.access_token, expiresIn, ...(typeof res.refresh_token === 'string' ? { refreshToken: res.refresh_token } : {}) };
  }

  private translate(e: unknown, path: string): ApiError {
    const where = `the token endpoint ${this.s.tokenUrl}`;
    // What our fetch threw (the transport's one mapping, api/http.ts), maybe wrapped by openid-client.
    const transport = e instanceof ApiError ? e : (e as { cause?: unknown } | undefined)?.cause;
    if (transport instanceof ApiError) return transport.status === undefined ? apiErrorWith(transport, { message: `${where}: ${transport.message}`, advice: 'check "auth.tokenUrl" and the network' }) : transport;
    if (e instanceof oidc.ResponseBodyError) {
      const what = `${e.error}${e.error_description ? `: ${preview(e.error_description, 200)}` : ''}`;
      if (REFUSED.has(e.error) || e.status === 401) {
        return new CredentialsRefusedError(`credentials refused by ${where} for ${this.account}: ${what} (HTTP ${e.status})`, { path, cause: e, advice: this.advice(e.error) });
      }
      return new ApiError({ code: e.status >= 500 ? 'E_SERVER' : 'E_HTTP', status: e.status, path, retryable: e.status >= 500 || e.status === 429, message: `${where} answered ${e.status}: ${what}` });
    }
    if (e instanceof oidc.WWWAuthenticateChallengeError) {
      // A 401 with WWW-Authenticate (oidc-provider's answer to a wrong client secret).
      const ch = e.cause[0];
      const what = ch ? `${ch.parameters.error ?? ch.scheme}${ch.parameters.error_description ? `: ${preview(ch.parameters.error_description, 200)}` : ''}` : 'refused';
      return new CredentialsRefusedError(`credentials refused by ${where} for ${this.account}: ${what} (HTTP ${e.status})`, { path, cause: e, advice: this.advice(ch?.parameters.error ?? 'invalid_client') });
    }
    // openid-client's own checks of the answer (not JSON, not a token answer...).
    const code = (e as { code?: unknown }).code;
    return new ApiError({ code: 'E_BAD_RESPONSE', path, retryable: true, cause: e, message: `${where} did not answer with a token: ${preview(e instanceof Error ? e.message : String(e), 200)}${typeof code === 'string' ? ` (${code})` : ''}` });
  }

  /** The settings to look at for a grant error: never the token's. */
  private advice(error: string): string {
    const secret = this.s.clientSecret
      ? `the client secret (from ${this.s.clientSecret.describe})`
      : 'the client secret (none is set: a confidential client needs DSSYNC_CLIENT_SECRET, "auth.clientSecretFile" or the systemd credential dssync-client-secret)';
    if (error === 'invalid_scope') return `Check "auth.scope" (${this.s.scope ?? 'not set'}): the token endpoint does not grant it to "auth.clientId" ${this.s.clientId}.`;
    if (error === 'invalid_client' || error === 'unauthorized_client' || error === 'unsupported_grant_type') {
      return `Check "auth.clientId" (${this.s.clientId}), ${secret}, and that this client may use the ${this.s.grantType} grant ("auth.grantType").`;
    }
    switch (this.s.grantType) {
      case 'password':
        return `Check "auth.username" (${this.s.username ?? 'not set'}) and the password (from ${this.s.password?.describe ?? 'nowhere'}).`;
      case 'client_credentials':
        return `Check "auth.clientId" (${this.s.clientId}) and ${secret}.`;
      case 'refresh_token':
        return `Run "dssync auth login" again: the refresh token it stored in ${this.s.refreshTokenFile} is no longer accepted.`;
    }
  }

  /** Built once: discovery (when the server has it) decides the client authentication. */
  private configuration(signal?: AbortSignal): Promise<Oidc.Configuration> {
    this.config ??= loadOidc()
      .then(() => this.buildConfiguration(signal))
      .catch((e: unknown) => {
        this.config = undefined;
        throw e;
      });
    return this.config;
  }

  private async buildConfiguration(signal?: AbortSignal): Promise<Oidc.Configuration> {
    const tokenUrl = new URL(this.s.tokenUrl);
    const issuerGuess = tokenUrl.href.replace(/\/protocol\/openid-connect\/token\/?$/, '').replace(/\/(oauth2?\/)?token\/?$/, '');
    const discovered = await this.discover(issuerGuess === tokenUrl.href ? tokenUrl.origin : issuerGuess, signal);
    const issuer = typeof discovered?.issuer === 'string' ? discovered.issuer : issuerGuess;
    const methods = Array.isArray(discovered?.token_endpoint_auth_methods_supported)
      ? (discovered.token_endpoint_auth_methods_supported as unknown[]).filter((m): m is string => typeof m === 'string')
      : undefined;
    let secret: string | undefined;
    try {
      secret = this.s.clientSecret?.read();
    } catch (e) {
      throw new CredentialsRefusedError(`cannot read the client secret: ${(e as Error).message}`);
    }
    let auth: Oidc.ClientAuth;
    if (secret === undefined) {
      auth = oidc.None();
      this.clientAuthMethod = 'none';
    } else if (methods && !methods.includes('client_secret_basic') && methods.includes('client_secret_post')) {
      auth = oidc.ClientSecretPost(secret);
      this.clientAuthMethod = 'client_secret_post';
    } else {
      auth = oidc.ClientSecretBasic(secret);
      this.clientAuthMethod = 'client_secret_basic';
      registerBasicCredential(this.s.clientId, secret);
    }
    const config = new oidc.Configuration({ issuer, token_endpoint: this.s.tokenUrl }, this.s.clientId, undefined, auth);
    if (tokenUrl.protocol === 'http:') oidc.allowInsecureRequests(config);
    config[oidc.customFetch] = this.fetcher();
    return config;
  }

  /** The discovery document, when the server publishes one; its absence is no error. */
  private async discover(issuer: string, signal?: AbortSignal): Promise<Record<string, unknown> | undefined> {
    const url = `${issuer.replace(/\/+$/, '')}/.well-known/openid-configuration`;
    try {
      const res = await this.fetcher()(url, { method: 'GET', headers: { accept: 'application/json' }, body: undefined, redirect: 'manual', ...(signal ? { signal } : {}) });
      if (!res.ok) return undefined;
      const body = (await res.json()) as unknown;
      if (typeof body !== 'object' || body === null) return undefined;
      const doc = body as Record<string, unknown>;
      // Only a document describing this very token endpoint says how to authenticate to it.
      return doc.token_endpoint === this.s.tokenUrl ? doc : undefined;
    } catch {
      return undefined;
    }
  }

  /** Every request of openid-client goes through the client's dispatcher, its failures through the transport's one mapping. */
  private fetcher(): Oidc.CustomFetch {
    const dispatcher = this.o.dispatcher;
    return async (url, options) => {
      const target = new URL(String(url));
      let res: Awaited<ReturnType<typeof undiciFetch>>;
      try {
        res = await undiciFetch(url, {
          method: options.method,
          headers: options.headers as Record<string, string>,
          ...(options.body === undefined || options.body === null ? {} : { body: options.body as string | URLSearchParams }),
          redirect: 'manual',
          ...(options.signal ? { signal: options.signal } : {}),
          dispatcher,
        });
      } catch (e) {
        // fetch wraps undici's error ("fetch failed"): its cause carries the code.
        const cause = e instanceof TypeError && e.cause !== undefined ? e.cause : e;
        throw transportError(cause, options.method ?? 'GET', target.pathname, options.signal ?? undefined, target.origin);
      }
      // Read here, capped, then handed to openid-client as a finished answer.
      const body = await readCapped(res, String(url), MAX_TOKEN_ANSWER_BYTES).catch((e: unknown) => {
        throw transportError(e, options.method ?? 'GET', target.pathname, options.signal ?? undefined, target.origin);
      });
      // A null body for an empty answer: a 204 or 304 cannot be built with one.
      return new Response(body.byteLength === 0 ? null : (body as unknown as ConstructorParameters<typeof Response>[0]), { status: res.status, statusText: res.statusText, headers: new Headers([...res.headers]) });
    };
  }
}

/** The whole body of `res`, or an error naming `url` and the cap once it grows past it. */
async function readCapped(res: Awaited<ReturnType<typeof undiciFetch>>, url: string, cap: number): Promise<Uint8Array> {
  const tooBig = (): ApiError =>
    new ApiError({ code: 'E_BAD_RESPONSE', retryable: false, path: new URL(url).pathname, message: `${url} answered with more than the ${cap} bytes accepted from a token endpoint (after decompression); it is not a token answer` });
  const declared = Number(res.headers.get('content-length') ?? NaN);
  if (Number.isFinite(declared) && declared > cap && !res.headers.get('content-encoding')) {
    await res.body?.cancel().catch(() => undefined);
    throw tooBig();
  }
  if (!res.body) return new Uint8Array(0);
  const reader = res.body.getReader();
  const parts: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > cap) {
      await reader.cancel().catch(() => undefined);
      throw tooBig();
    }
    parts.push(value);
  }
  return Buffer.concat(parts);
}

/**
 * Writes the refresh token 0600, created exclusively under a temporary name, flushed, then
 * renamed and the folder flushed: the rule of state/atomic-file.ts (issue 27.6), so a power
 * loss leaves the old token or the new one, never an empty file that forces a new login.
 */
export function storeRefreshToken(path: string, token: string): void {
  registerSecret(token);
  const tmp = `${path}.${process.pid}.tmp`;
  const fd = openSync(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
  try {
    writeSync(fd, `${token}\n`);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  chmodSync(tmp, 0o600);
  renameSync(tmp, path);
  const dir = openSync(dirname(path), constants.O_RDONLY);
  try {
    fsyncSync(dir);
  } finally {
    closeSync(dir);
  }
}

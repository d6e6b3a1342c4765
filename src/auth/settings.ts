/**
 * Resolves the "auth" settings of a config into what a provider needs: where each secret
 * comes from (environment, file, systemd credential), checked now so that a missing one is
 * a configuration error at start (exit 2) naming it. A secret is never held as a value of
 * the config: each SecretSource reads it when asked (a rotated file is picked up).
 */
import { statSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { ConfigError } from '../errors/config.js';
import { registerSecret } from '../secrets.js';
import { readSecretFile } from './secret-file.js';

export const GRANT_TYPES = ['password', 'client_credentials', 'refresh_token'] as const;
export type GrantType = (typeof GRANT_TYPES)[number];

/** The "auth" object of the config file, as written (paths resolved against the file's folder). */
export type AuthFileSettings =
  | { type: 'static' }
  | {
      type: 'oauth2';
      tokenUrl: string;
      grantType: GrantType;
      clientId: string;
      username?: string | undefined;
      scope?: string | undefined;
      passwordFile?: string | undefined;
      clientSecretFile?: string | undefined;
    }
  | { type: 'command'; command: readonly string[]; timeoutSeconds: number };

export interface SecretSource {
  /** Where it comes from, for messages: "the file /etc/dssync/password", never the value. */
  readonly describe: string;
  /** The file behind it, when it is one. */
  readonly path?: string | undefined;
  /** The secret now (a file is read again each time: rotation is picked up). */
  read(): string;
}

export type ResolvedAuth =
  | { readonly type: 'static'; readonly token: SecretSource }
  | {
      readonly type: 'oauth2';
      readonly tokenUrl: string;
      readonly grantType: GrantType;
      readonly clientId: string;
      readonly username?: string | undefined;
      readonly scope?: string | undefined;
      readonly password?: SecretSource | undefined;
      readonly clientSecret?: SecretSource | undefined;
      /** Where `dssync auth login` stores the refresh token (0600, beside the state file). */
      readonly refreshTokenFile: string;
    }
  | { readonly type: 'command'; readonly command: readonly string[]; readonly timeoutMs: number };

/** systemd's LoadCredential= puts credentials in $CREDENTIALS_DIRECTORY under these names. */
export const CREDENTIALS = { token: ['dssync-token', 'token'], password: ['dssync-password'], clientSecret: ['dssync-client-secret'] };

/**
 * What a credential holds when the unit's file for it does not exist. The shipped units load
 * every secret an auth type may need (`LoadCredential=dssync-password:/etc/dssync/password`)
 * with this as the default (`SetCredential=dssync-password:dssync-credential-absent`): systemd
 * then starts the unit without the file instead of failing it with 243/CREDENTIALS, and
 * dssync treats the credential as not given. (systemd 252 refuses an empty SetCredential=.)
 */
export const CREDENTIAL_ABSENT = 'dssync-credential-absent';

export interface ResolveAuthInput {
  auth?: AuthFileSettings | undefined;
  /** The top-level "tokenFile" of the config (static). */
  tokenFile?: string | undefined;
  flags: { tokenFile?: string | undefined };
  env: NodeJS.ProcessEnv;
  statePath: string;
  warn?: ((message: string) => void) | undefined;
  /**
   * Receives a secret that cannot be read (missing, unreadable, empty file; no token at all)
   * instead of the throw: `config check` marks it and goes on with the other checks. The
   * source returned then throws the same error when read.
   */
  onSecretError?: ((e: ConfigError) => void) | undefined;
}

interface SecretContext {
  warn: (message: string) => void;
  onSecretError?: ((e: ConfigError) => void) | undefined;
}

/** `make()`, or, when the caller defers secret errors, a source that fails when read. */
function deferred(ctx: SecretContext, describe: string, make: () => SecretSource): SecretSource {
  try {
    return make();
  } catch (e) {
    if (!(e instanceof ConfigError) || ctx.onSecretError === undefined) throw e;
    ctx.onSecretError(e);
    return {
      describe,
      read: () => {
        throw e;
      },
    };
  }
}

/** Where `dssync auth login` keeps the refresh token: beside the state file. */
export function refreshTokenPath(statePath: string): string {
  return join(dirname(statePath), 'dssync-refresh-token');
}

export function resolveAuth(input: ResolveAuthInput): ResolvedAuth {
  const auth = input.auth ?? { type: 'static' };
  const warn = input.warn ?? (() => undefined);
  const ctx: SecretContext = { warn, onSecretError: input.onSecretError };
  switch (auth.type) {
    case 'static': {
      const token = deferred(ctx, 'a source that cannot be used (see the token check)', () => {
        const t = staticTokenSource(input, ctx);
        checkToken(t.read(), t.describe);
        return t;
      });
      return { type: 'static', token };
    }
    case 'oauth2': {
      const env = input.env;
      const password =
        auth.grantType === 'password'
          ? secretSource('DSSYNC_PASSWORD', auth.passwordFile, 'auth.passwordFile', CREDENTIALS.password, 'the password', env, ctx)
          : undefined;
      if (auth.grantType === 'password' && password === undefined) {
        throw new ConfigError(
          `no password for the account ${auth.username ?? '(no username)'}: set DSSYNC_PASSWORD, "auth.passwordFile", or a systemd credential named dssync-password (never in the config file itself)`,
          'auth.passwordFile',
        );
      }
      if (auth.grantType === 'password' && !auth.username) {
        throw new ConfigError('"auth.username" is required with "grantType": "password" (the account with API access)', 'auth.username');
      }
      const clientSecret = secretSource('DSSYNC_CLIENT_SECRET', auth.clientSecretFile, 'auth.clientSecretFile', CREDENTIALS.clientSecret, 'the client secret', env, ctx);
      if (auth.grantType === 'client_credentials' && clientSecret === undefined) {
        throw new ConfigError(
          'no client secret for the client_credentials grant: set DSSYNC_CLIENT_SECRET, "auth.clientSecretFile", or a systemd credential named dssync-client-secret',
          'auth.clientSecretFile',
        );
      }
      const refreshTokenFile = refreshTokenPath(input.statePath);
      return {
        type: 'oauth2',
        tokenUrl: auth.tokenUrl,
        grantType: auth.grantType,
        clientId: auth.clientId,
        username: auth.username,
        scope: auth.scope,
        password,
        clientSecret,
        refreshTokenFile,
      };
    }
    case 'command':
      return { type: 'command', command: [...auth.command], timeoutMs: auth.timeoutSeconds * 1000 };
  }
}

function staticTokenSource(input: ResolveAuthInput, ctx: SecretContext): SecretSource {
  const { flags, env } = input;
  if (flags.tokenFile) return fileSecret(flags.tokenFile, 'the token file', '--token-file', ctx.warn);
  if (env.DSSYNC_TOKEN_FILE) return fileSecret(env.DSSYNC_TOKEN_FILE, 'the token file', 'DSSYNC_TOKEN_FILE', ctx.warn);
  if (env.DSSYNC_TOKEN !== undefined) return envSecret('DSSYNC_TOKEN', env);
  // The credential before the config's file: under the units the file in /etc is root-only
  // (0600) and the service's dynamic user could not read it; systemd copied it for us.
  const cred = credentialPath(env, CREDENTIALS.token);
  if (cred) return fileSecret(cred, 'the token file', `the systemd credential ${basename(cred)}`, ctx.warn);
  if (input.tokenFile) return fileSecret(input.tokenFile, 'the token file', 'tokenFile', ctx.warn);
  throw new ConfigError(
    'no access token: set the DSSYNC_TOKEN environment variable, --token-file, DSSYNC_TOKEN_FILE, "tokenFile" in the config file, or a systemd credential named dssync-token (or use "auth": { "type": "oauth2", ... })',
    'tokenFile',
  );
}

function checkToken(token: string, describe: string): void {
  if (/\s/.test(token)) throw new ConfigError(`${describe} holds more than one word; it must hold the token alone`, 'tokenFile');
}

/**
 * The environment variable, else the systemd credential, else the configured file; undefined
 * when none is set. The credential comes before the file for the reason given in
 * staticTokenSource: under the units the file is root-only, the credential is its copy.
 */
function secretSource(
  envName: string,
  file: string | undefined,
  setting: string,
  credentialNames: string[],
  what: string,
  env: NodeJS.ProcessEnv,
  ctx: SecretContext,
): SecretSource | undefined {
  if (env[envName] !== undefined && env[envName] !== '') return envSecret(envName, env);
  const cred = credentialPath(env, credentialNames);
  if (cred) return deferred(ctx, `the systemd credential ${cred} (cannot be used: see the check)`, () => fileSecret(cred, `${what} file`, `the systemd credential ${basename(cred)}`, ctx.warn));
  if (file) return deferred(ctx, `${setting} ${file} (cannot be used: see the check)`, () => fileSecret(file, `${what} file`, setting, ctx.warn));
  return undefined;
}

function envSecret(name: string, env: NodeJS.ProcessEnv): SecretSource {
  const value = (env[name] ?? '').trim();
  if (!value) throw new ConfigError(`${name} is empty`, name);
  registerSecret(value);
  return { describe: `the ${name} environment variable`, read: () => value };
}

function fileSecret(path: string, what: string, setting: string, warn: (m: string) => void): SecretSource {
  let warned = false;
  const source: SecretSource = {
    // Names the setting too: a 401 then says which token to look at (issue 14.9).
    describe: `${setting} ${path}`,
    path,
    read: () => {
      const r = readSecretFile(path, what, setting);
      if (r.worldReadable && !warned) {
        warned = true;
        warn(`${what} ${path} is readable by every user; restrict it with: chmod 600 ${path}`);
      }
      return r.value;
    },
  };
  // Read now: a missing or unreadable file is a configuration error at start.
  source.read();
  return source;
}

/** The first of `names` in $CREDENTIALS_DIRECTORY that holds a secret (not CREDENTIAL_ABSENT). */
function credentialPath(env: NodeJS.ProcessEnv, names: string[]): string | undefined {
  const dir = env.CREDENTIALS_DIRECTORY;
  if (!dir) return undefined;
  for (const name of names) {
    const path = join(dir, name);
    try {
      // lstat-free: systemd credentials are plain files; a FIFO here is refused when read.
      if (statSync(path).isDirectory()) continue;
    } catch {
      continue; // absent: try the next name
    }
    if (!isAbsentMarker(path)) return path;
  }
  return undefined;
}

/** The unit's default for a credential whose file did not exist (CREDENTIAL_ABSENT). */
function isAbsentMarker(path: string): boolean {
  try {
    return readSecretFile(path, 'the systemd credential', path, { absentMarker: CREDENTIAL_ABSENT }).absent === true;
  } catch {
    return false; // empty, unreadable...: the caller's own read says so, naming the setting
  }
}

/** The token of a static connection, read now (tests and `config check`); undefined for the other kinds. */
export function staticToken(conn: { readonly auth: ResolvedAuth }): string | undefined {
  return conn.auth.type === 'static' ? conn.auth.token.read() : undefined;
}

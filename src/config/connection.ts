/**
 * Connection settings for every command that talks to the service (DESIGN §6), in this
 * precedence: flag, then environment, then the config file. Secrets (token, password,
 * client secret) are accepted only from the environment, a file, or a systemd credential —
 * never from a flag, where they would show in `ps`, nor inline in the config file.
 */
import { createHash } from 'node:crypto';
import { resolveAuth, type AuthFileSettings, type ResolvedAuth } from '../auth/settings.js';
import { ConfigError } from '../errors/config.js';

export { ConfigError };
import { CREDENTIALS } from '../auth/settings.js';
/** The names of the token's systemd credential (LoadCredential=), in the order looked for. */
export const CREDENTIAL_NAMES: readonly string[] = CREDENTIALS.token;

export interface ConnectionFlags {
  baseUrl?: string | undefined;
  org?: string | undefined;
  tokenFile?: string | undefined;
}

/** The connection-related keys of the config file. */
export interface ConnectionFileSettings {
  baseUrl?: string | undefined;
  /** Plain http:// to another host is refused unless this (or DSSYNC_ALLOW_INSECURE_HTTP=1) says so. */
  allowInsecureHttp?: boolean | undefined;
  organizationId?: string | undefined;
  organizationHeader?: string | undefined;
  tokenFile?: string | undefined;
  auth?: AuthFileSettings | undefined;
}

export const DEFAULT_ORGANIZATION_HEADER = 'X-Service-Organization-Id';

export interface Connection {
  baseUrl: string;
  organizationId: string;
  /** The header that carries the organization id (Wikit Semantics: X-Wikit-Organization-Id). */
  organizationHeader: string;
  /** How tokens are obtained; secrets only behind SecretSource.read(). */
  auth: ResolvedAuth;
  /** Where the token comes from, for messages: never a secret. */
  tokenSource: string;
  /**
   * A digest of the credentials as resolved now (non-enumerable): a reload compares it to
   * notice a rotated secret without keeping the secret itself around.
   */
  credentialsDigest: string;
}

export interface ResolveConnectionInput {
  flags: ConnectionFlags;
  env: NodeJS.ProcessEnv;
  file?: ConnectionFileSettings | undefined;
  /** Beside it `dssync auth login` keeps a refresh token. */
  statePath?: string | undefined;
  /** Receives warnings (e.g. a world-readable token file). */
  warn?: (message: string) => void;
  /** Receives an unreadable secret instead of the throw (`config check`: auth/settings.ts). */
  onSecretError?: ((e: ConfigError) => void) | undefined;
}

export function resolveConnection(input: ResolveConnectionInput): Connection {
  const { flags, env, file } = input;
  const baseUrl = pick(flags.baseUrl, env.DSSYNC_BASE_URL, file?.baseUrl);
  if (!baseUrl) {
    throw new ConfigError(
      'no service address: set --base-url, the DSSYNC_BASE_URL environment variable, or "baseUrl" in the config file',
      'baseUrl',
    );
  }
  let parsed: URL;
  try {
    parsed = new URL(baseUrl);
  } catch {
    throw new ConfigError(`baseUrl "${maskCredentials(baseUrl)}" is not a URL (expected e.g. https://service.example.com)`, 'baseUrl');
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new ConfigError(`baseUrl "${maskCredentials(baseUrl)}" must start with http:// or https://`, 'baseUrl');
  }
  if (parsed.username || parsed.password) {
    throw new ConfigError('baseUrl must not carry credentials; use DSSYNC_TOKEN or a token file', 'baseUrl');
  }
  const allowInsecure = insecureHttpAllowed(env, file);
  refuseCleartext(parsed, 'baseUrl', 'the token and every file', allowInsecure);
  const organizationId = pick(flags.org, env.DSSYNC_ORG, file?.organizationId);
  if (!organizationId) {
    throw new ConfigError(
      'no organization id: set --org, the DSSYNC_ORG environment variable, or "organizationId" in the config file',
      'organizationId',
    );
  }
  const organizationHeader = resolveOrganizationHeader(env.DSSYNC_ORG_HEADER, file?.organizationHeader);
  const auth = resolveAuth({
    auth: file?.auth,
    tokenFile: file?.tokenFile,
    flags,
    env,
    statePath: input.statePath ?? '/nonexistent/state.json',
    warn: input.warn,
    onSecretError: input.onSecretError,
  });
  if (auth.type === 'oauth2') {
    let tokenUrl: URL | undefined;
    try {
      tokenUrl = new URL(auth.tokenUrl);
    } catch {
      // The schema already said what is wrong with it.
    }
    if (tokenUrl) refuseCleartext(tokenUrl, '"auth.tokenUrl"', 'the password, the client secret and the tokens', allowInsecure);
  }
  const connection = {
    baseUrl: baseUrl.replace(/\/+$/, ''),
    organizationId,
    organizationHeader,
    auth,
    tokenSource: describeAuth(auth),
  } as Connection;
  // Not enumerable: a Connection (or a Config holding one) that gets logged, printed,
  // JSON-serialised or spread never carries it along.
  Object.defineProperty(connection, 'credentialsDigest', { value: credentialsDigest(auth), enumerable: false, writable: false });
  return connection;
}

/** DSSYNC_ALLOW_INSECURE_HTTP=1|true, or "allowInsecureHttp": true in the file. */
function insecureHttpAllowed(env: NodeJS.ProcessEnv, file: ConnectionFileSettings | undefined): boolean {
  const fromEnv = env.DSSYNC_ALLOW_INSECURE_HTTP?.trim().toLowerCase();
  if (fromEnv === '1' || fromEnv === 'true' || fromEnv === 'yes') return true;
  return file?.allowInsecureHttp === true;
}

/** This machine: nothing sent there crosses a network. */
export function isLoopbackHost(hostname: string): boolean {
  const h = hostname.toLowerCase().replace(/^\[|\]$/g, '');
  return h === 'localhost' || h.endsWith('.localhost') || h === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h);
}

/**
 * Plain http:// to another host carries the credentials in clear text to anyone on the
 * path (issue 24.8): refused unless the operator says so by name.
 */
function refuseCleartext(url: URL, field: string, what: string, allowed: boolean): void {
  if (url.protocol !== 'http:' || allowed || isLoopbackHost(url.hostname)) return;
  throw new ConfigError(
    `${field} ${maskCredentials(url.href)} is plain http:// to another host: ${what} would cross the network in clear text, readable and changeable by anyone on the path. ` +
      'Use https://, or set "allowInsecureHttp": true in the config file (or DSSYNC_ALLOW_INSECURE_HTTP=1) if the network itself is trusted',
    field === 'baseUrl' ? 'baseUrl' : 'auth.tokenUrl',
  );
}

/** RFC 9110 §5.1: a header name is a token (tchar+). */
const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const RESERVED_HEADERS = new Set(['authorization', 'content-type', 'content-length', 'host', 'accept', 'user-agent', 'transfer-encoding', 'connection', 'cookie']);

export function resolveOrganizationHeader(envValue: string | undefined, fileValue: string | undefined): string {
  const fromEnv = envValue !== undefined && envValue.trim() !== '';
  const value = fromEnv ? (envValue as string).trim() : (fileValue ?? DEFAULT_ORGANIZATION_HEADER);
  const problem = organizationHeaderProblem(value);
  if (problem) {
    const where = fromEnv ? 'DSSYNC_ORG_HEADER' : '"organizationHeader"';
    throw new ConfigError(`${where} ${problem}`, 'organizationHeader');
  }
  return value;
}

/** Why a name cannot be the organization header; undefined when it can. */
export function organizationHeaderProblem(value: string): string | undefined {
  if (!HEADER_NAME.test(value)) {
    return `"${value.slice(0, 80)}" is not a valid HTTP header name (letters, digits and !#$%&'*+-.^_\`|~ only, no spaces or colons; e.g. "X-Wikit-Organization-Id")`;
  }
  if (RESERVED_HEADERS.has(value.toLowerCase())) return `"${value}" is a header dssync sets itself; name the organization header (e.g. "X-Service-Organization-Id")`;
  return undefined;
}

function describeAuth(auth: ResolvedAuth): string {
  switch (auth.type) {
    case 'static':
      return auth.token.describe;
    case 'oauth2':
      return `the OAuth2 token endpoint ${auth.tokenUrl} (${auth.grantType} grant, client ${auth.clientId}${auth.username ? `, account ${auth.username}` : ''})`;
    case 'command':
      return `the command ${auth.command[0] ?? ''}`;
  }
}

function credentialsDigest(auth: ResolvedAuth): string {
  const h = createHash('sha256').update(JSON.stringify(auth));
  // A secret that cannot be read was reported already (or deferred by `config check`).
  const read = (s: { read(): string } | undefined): string => {
    try {
      return s?.read() ?? '';
    } catch {
      return '';
    }
  };
  if (auth.type === 'static') h.update(read(auth.token));
  if (auth.type === 'oauth2') h.update(`\0${read(auth.password)}\0${read(auth.clientSecret)}`);
  return h.digest('hex');
}

/** A URL's user and password replaced by "***", so that an error message never repeats them. */
export function maskCredentials(text: string): string {
  return text.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^/?#@\s]*@/i, '$1***@');
}

function pick(...values: (string | undefined)[]): string | undefined {
  for (const v of values) if (v !== undefined && v.trim() !== '') return v.trim();
  return undefined;
}

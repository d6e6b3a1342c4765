/**
 * Connection settings for every command that talks to the service (DESIGN §6), in this
 * precedence: flag, then environment, then the config file. The token itself is accepted
 * only from the environment (DSSYNC_TOKEN), a token file, or a systemd credential — never
 * from a flag, where it would show in `ps`.
 */
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  constructor(
    message: string,
    /** The setting at fault, e.g. `mappings[0].path` or `baseUrl`. */
    readonly field?: string,
  ) {
    super(message);
  }
}

export interface ConnectionFlags {
  baseUrl?: string | undefined;
  org?: string | undefined;
  tokenFile?: string | undefined;
}

/** The connection-related keys of the config file. */
export interface ConnectionFileSettings {
  baseUrl?: string | undefined;
  organizationId?: string | undefined;
  tokenFile?: string | undefined;
}

export interface Connection {
  baseUrl: string;
  organizationId: string;
  /** Where the token came from, for messages: never the token itself. */
  tokenSource: string;
  /** Reads the token again (a rotated token file is picked up after a 401). */
  readToken: () => string;
  /** The token as first resolved (a non-enumerable property: absent from JSON and inspect). */
  token: string;
}

/** systemd's LoadCredential= puts credentials in $CREDENTIALS_DIRECTORY under these names. */
export const CREDENTIAL_NAMES = ['dssync-token', 'token'];

export interface ResolveConnectionInput {
  flags: ConnectionFlags;
  env: NodeJS.ProcessEnv;
  file?: ConnectionFileSettings | undefined;
  /** Receives warnings (e.g. a world-readable token file). */
  warn?: (message: string) => void;
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
  const organizationId = pick(flags.org, env.DSSYNC_ORG, file?.organizationId);
  if (!organizationId) {
    throw new ConfigError(
      'no organization id: set --org, the DSSYNC_ORG environment variable, or "organizationId" in the config file',
      'organizationId',
    );
  }
  const tokenSource = resolveTokenSource(flags, env, file);
  const readToken = (): string => readTokenFrom(tokenSource, env, input.warn);
  const token = readToken();
  const connection = {
    baseUrl: baseUrl.replace(/\/+$/, ''),
    organizationId,
    tokenSource: tokenSource.kind === 'env' ? 'the DSSYNC_TOKEN environment variable' : `the file ${tokenSource.path}`,
    readToken,
  } as Connection;
  // Not enumerable: a Connection (or a Config holding one) that gets logged, printed,
  // JSON-serialised or spread never carries the token along.
  Object.defineProperty(connection, 'token', { value: token, enumerable: false, writable: false });
  return connection;
}

type TokenSource = { kind: 'env' } | { kind: 'file'; path: string; setting: string };

function resolveTokenSource(flags: ConnectionFlags, env: NodeJS.ProcessEnv, file?: ConnectionFileSettings): TokenSource {
  if (flags.tokenFile) return { kind: 'file', path: flags.tokenFile, setting: '--token-file' };
  if (env.DSSYNC_TOKEN_FILE) return { kind: 'file', path: env.DSSYNC_TOKEN_FILE, setting: 'DSSYNC_TOKEN_FILE' };
  if (env.DSSYNC_TOKEN) return { kind: 'env' };
  if (file?.tokenFile) return { kind: 'file', path: file.tokenFile, setting: 'tokenFile' };
  const credDir = env.CREDENTIALS_DIRECTORY;
  if (credDir) {
    for (const name of CREDENTIAL_NAMES) {
      const path = join(credDir, name);
      if (isFile(path)) return { kind: 'file', path, setting: 'the systemd credential' };
    }
  }
  throw new ConfigError(
    'no access token: set the DSSYNC_TOKEN environment variable, --token-file, DSSYNC_TOKEN_FILE, "tokenFile" in the config file, or a systemd credential named dssync-token',
    'tokenFile',
  );
}

function readTokenFrom(source: TokenSource, env: NodeJS.ProcessEnv, warn?: (m: string) => void): string {
  if (source.kind === 'env') {
    const token = (env.DSSYNC_TOKEN ?? '').trim();
    if (!token) throw new ConfigError('DSSYNC_TOKEN is empty', 'token');
    return token;
  }
  let text: string;
  try {
    text = readFileSync(source.path, 'utf8');
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code ?? 'error';
    throw new ConfigError(`cannot read the token file ${source.path} (from ${source.setting}): ${code}`, 'tokenFile');
  }
  try {
    const mode = statSync(source.path).mode;
    if (warn && (mode & 0o004) !== 0) {
      warn(`the token file ${source.path} is readable by every user; restrict it with: chmod 600 ${source.path}`);
    }
  } catch {
    // The read above succeeded; a failed stat only costs the warning.
  }
  const token = text.trim();
  if (!token) throw new ConfigError(`the token file ${source.path} is empty`, 'tokenFile');
  if (/\s/.test(token)) throw new ConfigError(`the token file ${source.path} holds more than one word; it must hold the token alone`, 'tokenFile');
  return token;
}

/** A URL's user and password replaced by "***", so that an error message never repeats them. */
export function maskCredentials(text: string): string {
  return text.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^/?#@\s]*@/i, '$1***@');
}

function pick(...values: (string | undefined)[]): string | undefined {
  for (const v of values) if (v !== undefined && v.trim() !== '') return v.trim();
  return undefined;
}

function isFile(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

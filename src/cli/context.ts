/**
 * What an administration command needs: a client built from the connection settings
 * (flag, then environment, then the config file: DESIGN §6), whether to print JSON,
 * and where to print. Built once per command, after the arguments were parsed.
 */
import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import type { DatastoreApi } from '../api/api.js';
import { ConfigError, resolveConnection, type Connection, type ConnectionFileSettings } from '../config/connection.js';
import { isApiError } from '../api/errors.js';
import { CliError, ExitCode, usageError } from './exit.js';
import type { GlobalArgs } from './options.js';

export interface CliContext {
  api: DatastoreApi;
  json: boolean;
  /** Writes to stdout: the only place command output goes. */
  out: (text: string) => void;
}

export interface ContextDeps {
  env?: NodeJS.ProcessEnv;
  /** Builds the client; tests pass a fake. */
  createApi?: (connection: Connection) => DatastoreApi | Promise<DatastoreApi>;
  out?: (text: string) => void;
  warn?: (message: string) => void;
}

/** Where the config file is named: --config, then DSSYNC_CONFIG; none is fine. */
export function configPath(args: Pick<GlobalArgs, 'config'>, env: NodeJS.ProcessEnv): string | undefined {
  const path = args.config?.trim() || env.DSSYNC_CONFIG?.trim();
  return path ? path : undefined;
}

/**
 * Reads only the connection keys of the config file. The full loader validates the rest
 * (mappings...); the administration commands must work with any file that has these keys
 * right, so they read no further. A relative `tokenFile` is taken relative to the config
 * file's folder, as a service's config is not read from its working directory.
 */
export function readConnectionSettings(path: string): ConnectionFileSettings {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code ?? 'error';
    const why = code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'it is a directory' : code;
    throw new ConfigError(`cannot read the config file ${path} (from --config or DSSYNC_CONFIG): ${why}`, 'config');
  }
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (e) {
    throw new ConfigError(`the config file ${path} is not valid JSON: ${(e as Error).message}`, 'config');
  }
  if (data === null || typeof data !== 'object' || Array.isArray(data)) {
    throw new ConfigError(`the config file ${path} must hold a JSON object`, 'config');
  }
  const obj = data as Record<string, unknown>;
  const str = (key: 'baseUrl' | 'organizationId' | 'tokenFile'): string | undefined => {
    const v = obj[key];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== 'string') throw new ConfigError(`"${key}" in the config file ${path} must be a string`, key);
    return v;
  };
  const tokenFile = str('tokenFile');
  return {
    baseUrl: str('baseUrl'),
    organizationId: str('organizationId'),
    tokenFile: tokenFile && !isAbsolute(tokenFile) ? resolve(dirname(path), tokenFile) : tokenFile,
  };
}

/** Resolves the connection from the parsed global options; throws ConfigError (exit 2). */
export function connectionFromArgs(args: GlobalArgs, env: NodeJS.ProcessEnv, warn?: (m: string) => void): Connection {
  const path = configPath(args, env);
  const file = path === undefined ? undefined : readConnectionSettings(path);
  return resolveConnection({
    flags: { baseUrl: args.baseUrl, org: args.org, tokenFile: args.tokenFile },
    env,
    file,
    warn,
  });
}

async function defaultCreateApi(connection: Connection): Promise<DatastoreApi> {
  // Loaded on demand so that `--help` and usage errors do not pay for undici.
  const { createClientFromConnection } = await import('../api/client.js');
  return createClientFromConnection(connection);
}

export async function buildContext(args: GlobalArgs, deps: ContextDeps = {}): Promise<CliContext> {
  const env = deps.env ?? process.env;
  const warn = deps.warn ?? ((m: string) => process.stderr.write(`dssync: warning: ${m}\n`));
  const connection = connectionFromArgs(args, env, warn);
  const api = await (deps.createApi ?? defaultCreateApi)(connection);
  return {
    api,
    json: args.json === true,
    out: deps.out ?? ((text: string) => void process.stdout.write(text)),
  };
}

/** A positional id or option value that must hold something: exit 2 otherwise. */
export function requireValue(value: unknown, what: string): string {
  const text = typeof value === 'string' || typeof value === 'number' ? String(value).trim() : '';
  if (text === '') throw usageError(`${what} must not be empty`);
  return text;
}

export function isNotFound(err: unknown): boolean {
  return isApiError(err) && err.code === 'E_NOT_FOUND';
}

/** A 404 turned into a message naming what was looked for (exit 1). */
export function notFound(message: string): CliError {
  return new CliError(message, ExitCode.FAILURE);
}

/**
 * Runs `call`; a 404 becomes the error `describe()` resolves to. `describe` may ask the
 * service which of several ids is the missing one (only on that failure path).
 */
export async function explainNotFound<T>(call: () => Promise<T>, describe: () => Promise<string> | string): Promise<T> {
  try {
    return await call();
  } catch (err) {
    if (isNotFound(err)) throw notFound(await describe());
    throw err;
  }
}

/** Which is missing when a call on (data source, document) answers 404. */
export async function missingDocumentMessage(api: DatastoreApi, dataSourceId: string, documentId: string): Promise<string> {
  try {
    await api.getDataSource(dataSourceId);
  } catch (err) {
    if (isNotFound(err)) return `data source ${dataSourceId} not found`;
    // Could not tell (e.g. the service failed now): name both ids.
  }
  return `document ${documentId} not found in data source ${dataSourceId}`;
}

/** The message for a 404 on a data source itself. */
export function missingDataSourceMessage(dataSourceId: string): string {
  return `data source ${dataSourceId} not found`;
}

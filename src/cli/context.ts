/**
 * What an administration command needs: a client built from the connection settings
 * (flag, then environment, then the config file: DESIGN §6, via config/load.ts),
 * whether to print JSON, and where to print. Built once per command, after the
 * arguments were checked.
 */
import type { DatastoreApi } from '../api/api.js';
import type { ClientFromConfigOptions } from '../compose/client.js';
import { isApiError, unlessGone } from '../api/errors.js';
import type { ConfigError } from '../errors/config.js';
import { loadConfig, loadSettings } from '../config/load.js';
import type { Config, Settings } from '../config/types.js';
import { CliError, usageError } from './exit.js';
import type { GlobalArgs } from './options.js';

export interface CliContext {
  api: DatastoreApi;
  json: boolean;
  /** --wide: tables show values in full. */
  wide?: boolean | undefined;
  /** Writes to stdout: the only place command output goes. */
  out: (text: string) => void;
}

/** A client that may hold connections open; closing lets the process end at once. */
export type ClosableApi = DatastoreApi & { close?: () => Promise<void> };

export interface ContextDeps {
  env?: NodeJS.ProcessEnv;
  /** Builds the client; tests pass a fake. */
  createApi?: (config: Config) => ClosableApi | Promise<ClosableApi>;
  out?: (text: string) => void;
  warn?: (message: string) => void;
}

/**
 * Loads the configuration the way every command does (flag > environment > config file
 * named by --config or DSSYNC_CONFIG; none is fine when the environment has the rest) and
 * resolves the connection. Throws ConfigError (exit 2) naming the missing setting.
 */
export function configFromArgs(
  args: GlobalArgs & { logLevel?: string | undefined },
  env: NodeJS.ProcessEnv,
  warn?: (m: string) => void,
  onSecretError?: (e: ConfigError) => void,
): Config {
  return loadConfig({
    file: args.config,
    env,
    flags: { baseUrl: args.baseUrl, org: args.org, tokenFile: args.tokenFile, logLevel: args.logLevel },
    warn,
    onSecretError,
  });
}

/** The settings without the connection's secret, for commands that never talk to the service. */
export function settingsFromArgs(args: GlobalArgs, env: NodeJS.ProcessEnv = process.env): Settings {
  return loadSettings({ file: args.config, env, flags: { baseUrl: args.baseUrl, org: args.org, tokenFile: args.tokenFile } });
}

/** The real client, with the rate cap, retries, timeouts and CA of the configuration. */
export async function createCliApi(config: Config): Promise<ClosableApi> {
  // Loaded on demand so that `--help` and usage errors do not pay for undici.
  const { createClientFromConfig } = await import('../compose/client.js');
  return createClientFromConfig(config, oneShotReach());
}

/**
 * How a one-shot command's client tells an unreachable service: at once, with what is
 * retried and for how long, or the retries look like a hang; then each retry, so that no
 * wait is silent; and no circuit breaker (an open one would hold a later request past the
 * stated time, in silence).
 */
export function oneShotReach(before: () => void = () => undefined): Pick<ClientFromConfigOptions, 'onUnreachable' | 'onUnreachableRetry' | 'oneShot'> {
  const tell = (text: string): void => {
    before();
    process.stderr.write(text);
  };
  return {
    onUnreachable: (n) => tell(`dssync: cannot connect to ${n.origin} (${n.problem}): retrying each request for up to ${Math.ceil(n.retryForMs / 1000)} s; is the service running, and is baseUrl right?\n`),
    onUnreachableRetry: (r) => tell(`dssync: warning: cannot connect to ${r.origin} (${r.problem}): attempt ${r.attempt} of ${r.maxAttempts} failed; next in ${(r.delayMs / 1000).toFixed(1)} s\n`),
    oneShot: true,
  };
}

/**
 * Builds the context, runs the command body with it, and closes the client whatever
 * happened (its keep-alive connections would otherwise hold the process for seconds).
 */
export async function withContext(
  args: GlobalArgs,
  body: (ctx: CliContext) => Promise<void>,
  deps: ContextDeps = {},
): Promise<void> {
  const env = deps.env ?? process.env;
  const warn = deps.warn ?? ((m: string) => void process.stderr.write(`dssync: warning: ${m}\n`));
  const config = configFromArgs(args, env, warn);
  const api = await (deps.createApi ?? createCliApi)(config);
  const ctx: CliContext = {
    api,
    json: args.json === true,
    wide: (args as { wide?: unknown }).wide === true,
    out: deps.out ?? ((text: string) => void process.stdout.write(text)),
  };
  try {
    await body(ctx);
  } finally {
    await api.close?.();
  }
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

/**
 * Runs `call`; a 404 becomes the error `describe()` resolves to. `describe` may ask the
 * service which of several ids is the missing one (only on that failure path).
 */
export async function explainNotFound<T>(call: () => Promise<T>, describe: () => Promise<string> | string): Promise<T> {
  try {
    return await call();
  } catch (err) {
    if (isNotFound(err)) throw new CliError(await describe());
    throw err;
  }
}

/** Which is missing when a call on (data source, document) answers 404. */
export async function missingDocumentMessage(api: DatastoreApi, dataSourceId: string, documentId: string): Promise<string> {
  // Could not tell (e.g. the service failed now): name both ids.
  const found = await unlessGone(api.getDataSource(dataSourceId)).catch(() => true);
  if (found === undefined) return `data source ${dataSourceId} not found`;
  return `document ${documentId} not found in data source ${dataSourceId}`;
}

/** The message for a 404 on a data source itself. */
export function missingDataSourceMessage(dataSourceId: string): string {
  return `data source ${dataSourceId} not found (this takes a data source id; \`dssync datasources list\` shows each one's id and name)`;
}

/**
 * The composition of a DatastoreClient (issue 27.2): the one place that joins the client
 * (api/), the token providers (auth/) and the configuration (config/), so that none of those
 * folders imports another's values: the client takes the token provider built here. Rate cap,
 * retries, timeouts and CA come from the configuration, the tokens from the provider its
 * connection's "auth" names.
 */
import { readFileSync } from 'node:fs';
import type { Agent } from 'undici';
import { DatastoreClient, type DatastoreClientOptions } from '../api/client.js';
import { createAgent } from '../api/http.js';
import type { TokenProvider } from '../api/token-provider.js';
import { createTokenProvider } from '../auth/index.js';
import type { Connection } from '../config/connection.js';
import type { Config } from '../config/types.js';
import { ConfigError } from '../errors/config.js';
import type { Logger } from '../log.js';
import { errnoOf } from '../errors/errno.js';

/** What a caller adds to the configuration's settings (api/client.ts DatastoreClientOptions says what each is). */
export type ClientFromConfigOptions = Pick<ClientFromConnectionOptions, 'logger' | 'pacer' | 'onEvent' | 'onUnreachable' | 'onUnreachableRetry' | 'clock' | 'tokens' | 'ownsTokens'> & {
  /** A one-shot command: no circuit breaker, so each request gives up within its stated retry time. */
  oneShot?: boolean | undefined;
};

export function createClientFromConfig(config: Config, opts: ClientFromConfigOptions = {}): DatastoreClient {
  const { oneShot, ...callers } = opts;
  return createClientFromConnection(config.connection, {
    requestsPerSecond: config.queue.requestsPerSecond,
    concurrency: config.queue.concurrency,
    maxAttempts: config.queue.maxAttempts,
    timeouts: config.queue.timeouts,
    ca: config.tls.caFile === undefined ? undefined : readCa(config.tls.caFile),
    ...callers,
    ...(oneShot === true ? { breaker: false as const } : {}),
  });
}

/**
 * A token provider for the configuration's credentials, on its own connections, to share
 * between clients: `dssync run` checks the credentials at start with it and hands the same
 * provider to the daemon, so a start makes one grant at the token endpoint, not two.
 */
export function createTokenProviderFromConfig(config: Config, opts: { logger?: Logger | undefined } = {}): TokenProvider {
  const ca = config.tls.caFile === undefined ? undefined : readCa(config.tls.caFile);
  return ownTokenProvider(config.connection, { timeouts: config.queue.timeouts, ca, logger: opts.logger });
}

function readCa(path: string): Buffer {
  try {
    return readFileSync(path);
  } catch (e) {
    const code = errnoOf(e) ?? 'error';
    throw new ConfigError(`cannot read the CA file ${path} (tls.caFile): ${code}`, 'tls.caFile');
  }
}

export type ClientFromConnectionOptions = Omit<DatastoreClientOptions, 'baseUrl' | 'organizationId' | 'organizationHeader' | 'tokens' | 'ownsTokens'> & {
  /** A provider shared with other clients; default: one made for this client from the connection. */
  tokens?: TokenProvider | undefined;
  /** With `tokens`: the client closes it when it closes. Default: only a provider it made itself. */
  ownsTokens?: boolean | undefined;
};

/** A client for a resolved Connection, with the token provider its "auth" asks for. */
export function createClientFromConnection(conn: Connection, opts: ClientFromConnectionOptions): DatastoreClient {
  const { tokens, ownsTokens, ...rest } = opts;
  const provider = tokens ?? ownTokenProvider(conn, opts);
  return new DatastoreClient({
    ...rest,
    baseUrl: conn.baseUrl,
    organizationId: conn.organizationId,
    organizationHeader: conn.organizationHeader,
    tokens: provider,
    ownsTokens: tokens === undefined || ownsTokens === true,
  });
}

function ownTokenProvider(conn: Connection, opts: Pick<DatastoreClientOptions, 'timeouts' | 'ca' | 'logger'>): TokenProvider {
  // The token endpoint's connections: same TLS settings (CA, verification on) as the service's.
  const agent: Agent = createAgent({ timeouts: opts.timeouts, ca: opts.ca, connections: 2 });
  return withAgentClosed(createTokenProvider(conn.auth, { dispatcher: agent, logger: opts.logger }), agent);
}

function withAgentClosed(p: TokenProvider, agent: Agent): TokenProvider {
  const close = p.close.bind(p);
  p.close = async () => {
    await close();
    await agent.close();
  };
  return p;
}

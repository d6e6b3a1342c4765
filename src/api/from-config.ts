/**
 * The one place a DatastoreClient is built from a Config: rate cap, retries, timeouts and
 * CA come from the configuration, the tokens from the provider its connection's "auth" names.
 */
import { readFileSync } from 'node:fs';
import { ConfigError } from '../config/connection.js';
import type { Config } from '../config/types.js';
import type { Logger } from '../log.js';
import { createClientFromConnection, type DatastoreClient, type UnreachableNotice, type UnreachableRetry } from './client.js';
import type { Pacer, PacerEvent } from './pacer.js';
import type { Clock } from '../time/clock.js';

export interface ClientFromConfigOptions {
  logger?: Logger | undefined;
  /** Shared by every client of the same service (one pacer per service: DESIGN §2). */
  pacer?: Pacer | undefined;
  onEvent?: ((event: PacerEvent) => void) | undefined;
  /** Told once when the service cannot be reached and requests are retried (default: logged). */
  onUnreachable?: ((notice: UnreachableNotice) => void) | undefined;
  /** Told at each retry of a request that could not reach the service (default: logged). */
  onUnreachableRetry?: ((retry: UnreachableRetry) => void) | undefined;
  /** A one-shot command: no circuit breaker, so each request gives up within its stated retry time. */
  oneShot?: boolean | undefined;
  /** The pacer's time (the daemon's clock). */
  clock?: Clock | undefined;
}

export function createClientFromConfig(config: Config, opts: ClientFromConfigOptions = {}): DatastoreClient {
  return createClientFromConnection(config.connection, {
    requestsPerSecond: config.queue.requestsPerSecond,
    concurrency: config.queue.concurrency,
    maxAttempts: config.queue.maxAttempts,
    timeouts: config.queue.timeouts,
    ca: config.tls.caFile === undefined ? undefined : readCa(config.tls.caFile),
    ...(opts.logger ? { logger: opts.logger } : {}),
    ...(opts.pacer ? { pacer: opts.pacer } : {}),
    ...(opts.onEvent ? { onEvent: opts.onEvent } : {}),
    ...(opts.onUnreachable ? { onUnreachable: opts.onUnreachable } : {}),
    ...(opts.onUnreachableRetry ? { onUnreachableRetry: opts.onUnreachableRetry } : {}),
    ...(opts.oneShot === true ? { breaker: false as const } : {}),
    ...(opts.clock ? { clock: opts.clock } : {}),
  });
}

function readCa(path: string): Buffer {
  try {
    return readFileSync(path);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code ?? 'error';
    throw new ConfigError(`cannot read the CA file ${path} (tls.caFile): ${code}`, 'tls.caFile');
  }
}

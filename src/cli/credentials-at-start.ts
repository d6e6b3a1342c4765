/**
 * The daemon's first attempt at its credentials, before anything starts (issue 25.2): a
 * refused password, client secret, refresh token or static token ends `dssync run` with
 * exit 3, which the shipped units do not restart (RestartPreventExitStatus=2 3). Retrying a
 * refused password in a loop locks the account at an identity provider such as Keycloak.
 * A configuration error the service reveals ends it with exit 2 in the same way (issue
 * 37.2): the organization header refused, a mapping's data source (by id) that does not
 * exist. The words are those of `sync` and `config check` (the errors' own messages).
 *
 * One request, as every command makes it: a token from the provider (one grant), then the
 * list of data sources with it (the service's verdict on a static token). Anything else that
 * fails here (the service or the token endpoint down, a timeout) is not the credentials'
 * fault: the daemon starts and retries as it does for outages. Once running, a refusal no
 * longer ends it: the provider asks again at most once every 5 minutes (auth/renewing.ts).
 */
import type { DataSourceRecord } from '../api/records.js';
import type { TokenProvider } from '../api/token-provider.js';
import { createClientFromConfig } from '../compose/client.js';
import type { Config } from '../config/types.js';
import { resolveDataSource } from '../engine/data-source.js';
import { disposition } from '../errors/disposition.js';
import type { Logger } from '../log.js';

/** How long the check may delay the start when the service or the token endpoint is slow. */
const CHECK_TIMEOUT_MS = 20_000;

/**
 * The refusal when the credentials (exit 3) or the configuration (exit 2) were refused, else
 * the data sources the service listed (neither: not known yet). `tokens` is the provider the daemon then uses: the token it obtains here serves the
 * daemon's first requests (one grant per start). It should log nothing yet: on a refusal it
 * would announce a retry in 5 minutes that the process, about to exit, never makes; the
 * outcome is logged below.
 */
export async function credentialsRefusedAtStart(config: Config, logger: Logger, tokens: TokenProvider): Promise<{ refused?: Error | undefined; dataSources?: readonly DataSourceRecord[] | undefined }> {
  const api = createClientFromConfig({ ...config, queue: { ...config.queue, maxAttempts: 1 } }, { onUnreachable: () => undefined, tokens });
  try {
    const signal = AbortSignal.timeout(CHECK_TIMEOUT_MS);
    const dataSources = await api.listDataSources({ signal });
    for (const [i, m] of config.mappings.entries()) {
      if (m.dataSourceId !== undefined) await resolveDataSource(api, m, `mappings[${i}]`, { create: false, signal });
    }
    return { dataSources };
  } catch (e) {
    const d = disposition(e);
    if (d.exitCode === 3 || (d.exitCode === 2 && d.kind !== 'retry')) return { refused: e instanceof Error ? e : new Error(String(e)) };
    logger.debug({ err: e instanceof Error ? e.message : String(e) }, 'the credentials could not be checked at start; the mappings will retry');
    return {};
  } finally {
    await api.close();
  }
}

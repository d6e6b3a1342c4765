/**
 * `dssync run`: the daemon in the foreground, for systemd (DESIGN §6). Logs go to stdout:
 * JSON lines for journald, pretty on a terminal. SIGTERM/SIGINT stop it gracefully (exit 0),
 * SIGHUP reloads the configuration.
 */
import type { Argv, CommandModule } from 'yargs';
import { loadConfig } from '../../config/load.js';
import { disposition } from '../../errors/disposition.js';
import { describeFailure, ExitCode, usageError } from '../exit.js';
import type { GlobalArgs } from '../options.js';
import { claimSignals } from '../signals.js';
import { openFileLimit } from '../fd-limit.js';

interface RunArgs extends GlobalArgs {
  logLevel?: string | undefined;
}

export const runCommand: CommandModule<GlobalArgs, RunArgs> = {
  command: 'run',
  describe: 'Run the daemon in the foreground: mirror, watch, stay in sync',
  builder: (y) =>
    y
      .option('log-level', { type: 'string', describe: 'fatal, error, warn, info, debug or trace. Default: $DSSYNC_LOG_LEVEL, then "logLevel"' })
      .example('$0 run --config /etc/dssync/config.json', 'as systemd runs it') as unknown as Argv<RunArgs>,
  handler: async (args) => {
    process.exitCode = await runDaemon(args);
  },
};

export async function runDaemon(args: RunArgs, env: NodeJS.ProcessEnv = process.env): Promise<number> {
  // Heavy modules load only for this command: `dssync --help` stays fast.
  const [{ Daemon }, { createLogger }, { listenFailureMessage }, { credentialsRefusedAtStart }, { createTokenProviderFromConfig }, { sharedDataSourceProblems, resolvedIn }] = await Promise.all([
    import('../../daemon/daemon.js'),
    import('../../log.js'),
    import('../../daemon/listen-check.js'),
    import('../credentials-at-start.js'),
    import('../../compose/client.js'),
    import('../../engine/installation.js'),
  ]);
  const warnings: string[] = [];
  const load = () =>
    loadConfig({
      file: args.config,
      env,
      flags: { baseUrl: args.baseUrl, org: args.org, tokenFile: args.tokenFile, logLevel: args.logLevel },
      warn: (m) => warnings.push(m),
    });
  const first = load();
  const retryBaseMs = parseRetryDelay(env.DSSYNC_RETRY_DELAY_MS);
  const logger = createLogger({ level: first.logLevel, pretty: process.stdout.isTTY === true });
  for (const w of warnings.splice(0)) logger.warn(w);

  // Refused credentials at start end the process with exit 3, a configuration the service
  // refuses (organization header, a data source by id) with exit 2 (not restarted by the
  // units); once running, a refusal degrades the mappings and is retried at a slow pace instead.
  // One token provider for the check and the daemon: one grant at start. Its log is held
  // back until the check is over (a refusal there ends the process: see credentials-at-start).
  const tokensLog = logger.child({});
  tokensLog.level = 'silent';
  const tokens = createTokenProviderFromConfig(first, { logger: tokensLog });
  const { refused, dataSources } = await credentialsRefusedAtStart(first, logger, tokens);
  // Two mappings on one data source, however each names it: refused before anything starts (exit 2).
  const shared = sharedDataSourceProblems(first.mappings, resolvedIn(dataSources ?? []));
  if (shared.length > 0 && !refused) {
    await tokens.close();
    throw usageError(shared.join('\n'));
  }
  if (refused) {
    await tokens.close();
    const exit = disposition(refused).exitCode;
    logger.fatal({ err: describeFailure(refused).message }, `the ${exit === ExitCode.AUTH ? 'credentials were' : 'configuration was'} refused at start; not retrying (exit ${exit})`);
    throw refused;
  }
  tokensLog.level = logger.level;

  let daemon: Awaited<ReturnType<typeof Daemon.start>>;
  try {
    let initial: typeof first | undefined = first;
    daemon = await Daemon.start({
      loadConfig: () => {
        // The first load was done above (its errors exit 2 before anything starts).
        const c = initial ?? load();
        initial = undefined;
        for (const w of warnings.splice(0)) logger.warn(w);
        return c;
      },
      logger,
      retryBaseMs,
      fdLimit: openFileLimit(),
      tokens,
    });
  } catch (e) {
    // Not started: the provider was not handed over (closing it twice is harmless).
    await tokens.close().catch(() => undefined);
    // A state error (locked: 1, newer or corrupt: 2) exits as its disposition says (cli/exit.ts).
    // The status port is taken: a configuration problem (exit 2, which the units do not
    // restart on), named with the setting and the fix, not a bare "listen EADDRINUSE".
    const listen = first.status.listen;
    const busy = listen ? listenFailureMessage(e, listen) : undefined;
    if (busy) throw usageError(busy);
    throw e;
  }

  return await new Promise<number>((resolve) => {
    let stopping = false;
    const stop = (signal: string): void => {
      if (stopping) {
        logger.warn({ signal }, 'second signal: exiting now');
        process.exit(ExitCode.FAILURE);
      }
      stopping = true;
      logger.info({ signal }, 'signal received');
      daemon.stop().then(
        () => resolve(ExitCode.OK),
        (e: unknown) => {
          logger.error({ err: e instanceof Error ? e.message : String(e) }, 'stop failed');
          resolve(ExitCode.FAILURE);
        },
      );
    };
    const reload = (): void => {
      logger.info('SIGHUP: reloading the configuration');
      void daemon.reload();
    };
    // Signals held since the entry file started (a reload or stop asked for while the
    // daemon started) come first; one reload stands for several.
    let reloadQueued = false;
    claimSignals((signal) => {
      if (signal !== 'SIGHUP') return stop(signal);
      if (reloadQueued) return;
      reloadQueued = true;
      queueMicrotask(() => {
        reloadQueued = false;
        if (!stopping) reload();
      });
    });
  });
}

/**
 * DSSYNC_RETRY_DELAY_MS: the first retry delay of a failing mapping (default 5000 ms; it
 * doubles on each failure up to 5 min). Lower it to recover faster from short outages.
 */
function parseRetryDelay(text: string | undefined): number | undefined {
  if (text === undefined || text.trim() === '') return undefined;
  const ms = Number(text);
  if (!Number.isInteger(ms) || ms < 100 || ms > 300_000) {
    throw usageError(`DSSYNC_RETRY_DELAY_MS must be a whole number of milliseconds from 100 to 300000, got "${text}"`);
  }
  return ms;
}

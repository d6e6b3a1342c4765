/**
 * `dssync sync`: one pass of every mapping (DESIGN §6). Exit 0 when every data source holds
 * exactly its folder's files (with --dry-run: when the plan could be made), 1 when some
 * work could not be done, 2 for configuration errors, 3 when the credentials are refused.
 */
import { disposition } from '../errors.js';
import type { Argv, CommandModule } from 'yargs';
import { setMaxListeners } from 'node:events';
import { isApiError } from '../api/errors.js';
import type { DatastoreClient } from '../api/client.js';
import { requireMappings } from '../config/load.js';
import type { Config } from '../config/types.js';
import { DataSourceMissingError } from '../engine/data-source.js';
import type { buildMirror as BuildMirror } from '../daemon/build-mirror.js';
import type { Logger } from '../log.js';
import type { StateStore } from '../state/store.js';
import { configFromArgs } from './context.js';
import { CliError, ExitCode } from './exit.js';
import type { GlobalArgs } from './options.js';
import { ProgressLine } from './progress.js';
import { formatSyncHuman, formatSyncJson, outcomeOk, type MappingOutcome } from './sync-report.js';

interface SyncArgs extends GlobalArgs {
  dryRun: boolean;
  allowMassDelete: boolean;
}

export const syncCommand: CommandModule<GlobalArgs, SyncArgs> = {
  command: 'sync',
  describe: 'Mirror every mapping once; exit 0 when in sync',
  builder: (y) =>
    y
      .option('dry-run', { type: 'boolean', default: false, describe: 'Print the plan (uploads, replacements, renames, deletions); change nothing' })
      .option('allow-mass-delete', {
        type: 'boolean',
        default: false,
        describe: 'Let this pass delete more than maxDeletePercent of a data source, or empty it when the folder is empty',
      })
      .example('$0 sync --config /etc/dssync/config.json', 'one pass')
      .example('$0 sync --config config.json --dry-run', 'show what a pass would do')
      // yargs types the dashed names only; it also sets the camelCase ones used here.
      .example('$0 sync --config config.json --json', 'a summary for scripts') as unknown as Argv<SyncArgs>,
  handler: async (args) => {
    process.exitCode = await runSync(args);
  },
};

export async function runSync(args: SyncArgs, env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const config = requireMappings(configFromArgs(args, env, (m) => void process.stderr.write(`dssync: warning: ${m}\n`)));
  // The engine loads only for this command: `dssync --help` and the admin commands stay fast.
  const [{ pino }, { createLogger }, { StateStore }, { createClientFromConfig }, { buildMirror }] = await Promise.all([
    import('pino'),
    import('../log.js'),
    import('../state/store.js'),
    import('../api/from-config.js'),
    import('../daemon/build-mirror.js'),
  ]);
  // stdout carries the summary; logs go to stderr. On a terminal the progress line
  // replaces the per-document log lines.
  const progress = new ProgressLine();
  const logger = createLogger({
    level: progress.enabled && !env.DSSYNC_LOG_LEVEL ? 'warn' : config.logLevel,
    destination: pino.destination({ fd: 2, sync: true }),
  });
  const controller = new AbortController();
  // Every request of the pass listens on this one signal.
  setMaxListeners(0, controller.signal);
  const onSignal = (): void => controller.abort();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  const store = await StateStore.open(config.statePath, { logger, onCorrupt: 'reset' }).catch((e: unknown) => {
    throw new CliError(e instanceof Error ? e.message : String(e), ExitCode.FAILURE);
  });
  const api = createClientFromConfig(config, { logger });
  const outcomes: MappingOutcome[] = [];
  try {
    for (let i = 0; i < config.mappings.length && !controller.signal.aborted; i++) {
      outcomes.push(await syncMapping(config, i, { args, api, store, logger, progress, signal: controller.signal, buildMirror }));
    }
  } finally {
    progress.clear();
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    await store.close();
    await api.close();
  }
  process.stdout.write(args.json ? formatSyncJson(outcomes) : formatSyncHuman(outcomes));
  if (outcomes.every(outcomeOk)) return ExitCode.OK;
  return outcomes.some((o) => o.configProblem) ? ExitCode.USAGE : ExitCode.FAILURE;
}

interface SyncDeps {
  args: SyncArgs;
  buildMirror: typeof BuildMirror;
  api: DatastoreClient;
  store: StateStore;
  logger: Logger;
  progress: ProgressLine;
  signal: AbortSignal;
}

async function syncMapping(config: Config, index: number, d: SyncDeps): Promise<MappingOutcome> {
  const mapping = config.mappings[index]!;
  try {
    const mirror = await d.buildMirror(config, mapping, index, {
      api: d.api,
      state: d.store,
      logger: d.logger,
      onOp: d.progress.onOp,
      signal: d.signal,
      create: !d.args.dryRun,
    });
    const report = await mirror.fullPass({ dryRun: d.args.dryRun, allowMassDelete: d.args.allowMassDelete, signal: d.signal });
    return { mappingId: mapping.id, dataSourceId: mirror.dataSourceId, report };
  } catch (e) {
    // Fatal for the process (credentials refused...): no other mapping can do better (src/errors.ts).
    if (isApiError(e) && disposition(e).kind === 'fatalForProcess' && e.code !== 'E_ABORTED') throw e;
    if (e instanceof DataSourceMissingError) {
      if (e.wouldCreate && d.args.dryRun) return { mappingId: mapping.id, note: e.message };
      return { mappingId: mapping.id, error: e.message, configProblem: true };
    }
    if (isApiError(e) && e.code === 'E_NOT_FOUND') {
      return { mappingId: mapping.id, error: `the data source of ${mapping.id} no longer exists (${e.message}); check the config`, configProblem: true };
    }
    if (isApiError(e) && e.code === 'E_ABORTED') return { mappingId: mapping.id, error: 'interrupted' };
    const message = e instanceof Error ? e.message : String(e);
    d.logger.error({ mapping: mapping.id, err: message }, 'mapping failed');
    return { mappingId: mapping.id, error: message };
  }
}

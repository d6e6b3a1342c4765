/**
 * `dssync adopt` and `dssync identity reset`: the two explicit commands that settle who owns
 * a mapping's documents when the state cannot (docs/reliability.md, "Identity: who owns a
 * document"). Sync never takes another installation's documents by itself, and never
 * deletes what it is in doubt about.
 */
import type { Argv, CommandModule } from 'yargs';
import type { CheckResult } from '../../check-result.js';
import { requireMappings } from '../../config/load.js';
import type { Config, MappingConfig } from '../../config/types.js';
import { configFromArgs } from '../context.js';
import { ExitCode, usageError } from '../exit.js';
import { commandGroup, type GlobalArgs } from '../options.js';
import { realClock } from '../../time/clock.js';

interface AdoptArgs extends GlobalArgs {
  mapping: string;
  from?: string | undefined;
  dryRun: boolean;
  force: boolean;
}

export const adoptCommand: CommandModule<GlobalArgs, AdoptArgs> = {
  command: 'adopt',
  describe: "Take over a mapping's documents written by another dssync installation (a lost or new state): record them as ours, upload nothing",
  builder: (y) =>
    y
      .option('mapping', { type: 'string', demandOption: true, describe: 'The mapping id (config mappings[].id)' })
      .option('from', { type: 'string', describe: 'Only documents of this installation id (required when several have written for the mapping)' })
      .option('dry-run', { type: 'boolean', default: false, describe: 'Say what would be adopted; change nothing' })
      .option('force', { type: 'boolean', default: false, describe: "Take documents of a writer that holds the mapping's live lease too (refused without it)" })
      .example('$0 adopt --config config.json --mapping ds:abc --dry-run', 'what a lost state would take over')
      .example('$0 adopt --config config.json --mapping ds:abc --from 3f9c0a1b2c3d4e5f', 'take over one former installation') as unknown as Argv<AdoptArgs>,
  handler: async (args) => {
    process.exitCode = await runAdopt(args);
  },
};

interface ResetArgs extends GlobalArgs {
  dryRun: boolean;
}

export const identityCommand = commandGroup('identity <command>', "The installation's identity (who owns a document)", (y) =>
  y
    .command({
      command: 'reset',
      describe: 'Draw a new installation id and forget what the state records (a cloned host, a copied state file)',
      builder: (yy) => yy.option('dry-run', { type: 'boolean', default: false, describe: 'Say what would change; change nothing' }) as unknown as Argv<ResetArgs>,
      handler: async (args: ResetArgs) => {
        process.exitCode = await runIdentityReset(args);
      },
    } as CommandModule<GlobalArgs, ResetArgs>)
    .demandCommand(1, 'name a subcommand: reset'),
);

function findMapping(config: Config, id: string): MappingConfig {
  const m = config.mappings.find((x) => x.id === id);
  if (!m) throw usageError(`--mapping ${JSON.stringify(id)} is not a mapping of the config; its mappings are ${config.mappings.map((x) => JSON.stringify(x.id)).join(', ')}`);
  return m;
}

export async function runAdopt(args: AdoptArgs, env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const config = requireMappings(configFromArgs(args, env, (m) => void process.stderr.write(`dssync: warning: ${m}\n`)));
  const mapping = findMapping(config, args.mapping);
  const [{ createLogger }, { StateStore, readStateFile }, { ReadOnlyState }, { createClientFromConfig }, { resolveDataSource }, { adoptDocuments }, { establishIdentity }, { mappingLease }] = await Promise.all([
    import('../../log.js'),
    import('../../state/store.js'),
    import('../../state/read-only-state.js'),
    import('../../compose/client.js'),
    import('../../engine/data-source.js'),
    import('../../engine/adopt.js'),
    import('../../engine/installation.js'),
    import('../../daemon/mapping/lease.js'),
  ]);
  const logger = createLogger({ level: config.logLevel, fd: 2 });
  const state = args.dryRun ? new ReadOnlyState(await readStateFile(config.statePath)) : await StateStore.open(config.statePath, { logger, onCorrupt: 'reset' });
  const api = createClientFromConfig(config, { logger });
  try {
    const ds = await resolveDataSource(api, mapping, `mappings[${config.mappings.indexOf(mapping)}]`, { create: false });
    // Adopt writes: it takes the mapping's lease as a sync does (docs/reliability.md, "The
    // lease"); a live holder's documents are then refused without --force. A dry run takes none.
    const installationId = establishIdentity(state, { pinned: config.installationId, statePath: config.statePath }).installationId;
    const lease = args.dryRun ? undefined : mappingLease({ api, mappingId: mapping.id, root: mapping.path, statePath: config.statePath, clock: realClock, logger, filesTracked: () => state.mapping(mapping.id)?.files.size ?? 0 }, ds.id, installationId);
    await lease?.acquire();
    const r = await adoptDocuments({ api, state, config, mapping, dataSourceId: ds.id, from: args.from, dryRun: args.dryRun, force: args.force, lease: lease?.view(), now: () => realClock.now() }).finally(() => lease?.stop());
    if (r.refused) {
      process.stderr.write(`dssync: ${r.refused}\n`);
      return ExitCode.FAILURE;
    }
    const verb = args.dryRun ? 'would adopt' : 'adopted';
    const lines = [
      `${verb} ${r.adopted.length} document(s) of mapping ${mapping.id} (data source ${ds.id}) from installation ${r.from ?? '(none found)'} as installation ${r.installationId}`,
      ...r.adopted.slice(0, 20).map((a) => `  ${a.path}  ${a.documentId}`),
      ...(r.adopted.length > 20 ? [`  … ${r.adopted.length - 20} more`] : []),
      ...(r.left.length > 0 ? [`left ${r.left.length} document(s) untouched (a document of ours, or another of theirs, already holds the path): ${r.left.slice(0, 5).join(', ')}`] : []),
      ...(r.failed > 0 ? [`${r.failed} metadata update(s) failed: run the same adopt again`] : []),
      args.dryRun ? 'nothing was changed' : `next: 'dssync sync --config F' uploads what no document holds and deletes what no file has (subject to the mass-delete guard)`,
    ];
    process.stdout.write(args.json ? `${JSON.stringify({ mappingId: mapping.id, dataSourceId: ds.id, ...r })}\n` : `${lines.join('\n')}\n`);
    return r.failed > 0 ? ExitCode.FAILURE : ExitCode.OK;
  } finally {
    if ('close' in state) await state.close();
    await api.close();
  }
}

export async function runIdentityReset(args: ResetArgs, env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const config = configFromArgs(args, env, (m) => void process.stderr.write(`dssync: warning: ${m}\n`));
  if (config.installationId !== undefined) {
    throw usageError(
      `the installation id is pinned (${env.DSSYNC_INSTALLATION_ID?.trim() ? 'DSSYNC_INSTALLATION_ID' : '"installationId" in the config'}): give this host its own pinned id instead of resetting it`,
    );
  }
  const [{ StateStore }, { resetIdentity }] = await Promise.all([import('../../state/store.js'), import('../../engine/installation.js')]);
  const store = await StateStore.open(config.statePath);
  try {
    const before = store.identity?.installationId;
    const mappings = store.mappingIds();
    if (args.dryRun) {
      process.stdout.write(`would draw a new installation id (now ${before ?? 'none stored'}) and forget what the state records of ${mappings.length} mapping(s): ${mappings.join(', ') || '-'}; nothing was changed\n`);
      return ExitCode.OK;
    }
    const next = resetIdentity(store);
    process.stdout.write(
      `installation id ${before ?? '(none stored)'} -> ${next.installationId}; forgot the state's records of ${mappings.length} mapping(s): ${mappings.join(', ') || '-'}. ` +
        `This host no longer owns the documents written under the old id (they are left untouched). If it mirrors the same folder into the same data source as the other host, give it its own mapping id or data source\n`,
    );
    return ExitCode.OK;
  } finally {
    await store.close();
  }
}

/**
 * `config check`'s identity lines: the id the next sync runs under (stored, drawn,
 * derived from an older state, or pinned, and by what), the state file's real path, and
 * the mappings whose recorded folder is not the configured one.
 */
export async function identityChecks(config: Config, env: NodeJS.ProcessEnv): Promise<CheckResult[]> {
  const [{ readStateFile }, { ReadOnlyState }, { establishIdentity }, { folderChangeProblem }, { realpath }, { basename, dirname, join }] = await Promise.all([
    import('../../state/store.js'),
    import('../../state/read-only-state.js'),
    import('../../engine/installation.js'),
    import('../../daemon/mapping/build-mirror.js'),
    import('node:fs/promises'),
    import('node:path'),
  ]);
  let file;
  try {
    file = await readStateFile(config.statePath);
  } catch (e) {
    return [{ check: 'identity', level: 'warn', message: `the installation id cannot be told: ${e instanceof Error ? e.message : String(e)} (a sync moves a corrupt state aside and draws a new id: then run 'dssync adopt')` }];
  }
  const state = new ReadOnlyState(file);
  const stored = file?.identity;
  const id = establishIdentity(state, { pinned: config.installationId, statePath: config.statePath });
  // The real path of its folder: the snapshot itself may not exist yet (only its journal).
  const real = await realpath(dirname(config.statePath))
    .then((d) => join(d, basename(config.statePath)))
    .catch(() => undefined);
  const by = env.DSSYNC_INSTALLATION_ID?.trim() ? 'DSSYNC_INSTALLATION_ID' : '"installationId" in the config';
  const how =
    id.origin === 'pinned'
      ? `pinned by ${by}${stored && stored.installationId !== id.installationId ? `; replaces the stored ${stored.installationId} (documents the state records under it are re-marked at the next sync)` : ''}`
      : stored
        ? `${stored.origin === 'derived' ? 'derived from the host name and state path by an older dssync' : 'drawn at random'} and stored in the state file`
        : file
          ? 'derived from the host name and state path (an older state file): stored at the next sync, and kept from then on'
          : 'none yet: a random one is drawn and stored by the first sync';
  const out: CheckResult[] = [
    {
      check: 'identity',
      level: 'ok',
      message: `installation id ${file || id.origin === 'pinned' ? id.installationId : '(to be drawn)'}: ${how}; state file ${real ?? `${config.statePath} (not created yet)`}`,
    },
  ];
  for (const m of config.mappings) {
    const recorded = file?.mappings[m.id];
    const problem = await folderChangeProblem(config.statePath, m.id, recorded?.root, m.path);
    if (problem) out.push({ check: 'identity', level: 'fail', mapping: m.id, message: problem });
  }
  return out;
}

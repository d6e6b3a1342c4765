/**
 * `dssync datasources list | get | create | update | delete` (DESIGN §6).
 * Each operation takes a CliContext, so it can run against a fake client in tests;
 * the yargs handlers only validate arguments and build the context.
 */
import type { Argv, CommandModule } from 'yargs';
import { ApiError, isApiError } from '../../api/errors.js';
import { idProblem } from '../../api/ids.js';
import type { DataSourceRecord } from '../../api/records.js';
import {
  explainNotFound,
  isNotFound,
  missingDataSourceMessage,
  requireValue,
  withContext,
  type CliContext,
} from '../context.js';
import { askOnTerminal } from '../confirm.js';
import { CliError, usageError } from '../exit.js';
import { commandGroup, DS, wideOption, withDs, type DsArgs, type GlobalArgs } from '../options.js';
import {
  formatDataSource,
  formatDataSources,
  formatJsonDeleted,
  formatJsonRecord,
  formatJsonRecords,
} from '../output.js';

// ---- operations --------------------------------------------------------------------

export async function listDataSources(ctx: CliContext): Promise<void> {
  const records = await ctx.api.listDataSources();
  ctx.out(ctx.json ? formatJsonRecords(records) : formatDataSources(records, { wide: ctx.wide }));
}

/**
 * `get` takes an id or a name: an id is asked for first; when no data source has it, the
 * one whose name is exactly it (a name is what the App and the config show). Several of
 * that name: exit 2 with their ids, as nothing tells which one was meant. A name that
 * cannot be an id (a space: the service answers 400, a "/") goes to the names at once.
 */
export async function getDataSource(ctx: CliContext, idOrName: string): Promise<void> {
  let record: DataSourceRecord;
  try {
    if (idProblem(idOrName) !== undefined) throw new ApiError({ code: 'E_NOT_FOUND', retryable: false, message: 'not an id' });
    record = await ctx.api.getDataSource(idOrName);
  } catch (e) {
    // A 400 to the GET: the service's ids have no such shape (a wrong header would fail the listing too).
    if (!isNotFound(e) && !(isApiError(e) && e.status === 400)) throw e;
    const named = (await ctx.api.listDataSources()).filter((d) => d.name === idOrName);
    if (named.length === 0) {
      throw new CliError(`no data source has the id or the name "${idOrName}" (\`dssync datasources list\` shows each one's id and name)`);
    }
    if (named.length > 1) {
      throw usageError(`${named.length} data sources are named "${idOrName}": ${named.map((d) => d.id).join(', ')}; name one by its id`);
    }
    record = named[0]!;
  }
  ctx.out(ctx.json ? formatJsonRecord(record) : formatDataSource(record));
}

export async function createDataSource(ctx: CliContext, name: string, connectorIds: string[]): Promise<void> {
  const record = await ctx.api.createDataSource({ name, llmConnectorIds: connectorIds });
  ctx.out(ctx.json ? formatJsonRecord(record) : `Created data source ${record.id}.\n${formatDataSource(record)}`);
}

export async function updateDataSource(ctx: CliContext, id: string, name: string): Promise<void> {
  const record = await explainNotFound(() => ctx.api.updateDataSource(id, { name }), () => missingDataSourceMessage(id));
  ctx.out(ctx.json ? formatJsonRecord(record) : `Updated data source ${record.id}.\n${formatDataSource(record)}`);
}

export interface DeleteConfirmation {
  /** --yes: the operator (or script) already said yes. */
  yes: boolean;
  /** Asks the operator; undefined when nobody can be asked (no terminal). */
  ask?: ((question: string) => Promise<boolean | undefined>) | undefined;
}

/**
 * Looks the data source up first: the service's DELETE treats an unknown id as already
 * gone, and an operator who mistyped an id must hear so rather than read "Deleted".
 * A data source holding documents is deleted only after a yes (--yes, or typed at the
 * prompt): it cannot be undone, and the count says what would go.
 */
export async function deleteDataSource(ctx: CliContext, id: string, confirm: DeleteConfirmation = { yes: false }): Promise<void> {
  const record = await explainNotFound(() => ctx.api.getDataSource(id), () => missingDataSourceMessage(id));
  if (!confirm.yes) {
    const count = (await ctx.api.listDocuments(id)).length;
    if (count > 0) {
      const what = `data source ${id}${record.name ? ` ("${record.name}")` : ''} holds ${count} document${count === 1 ? '' : 's'}`;
      const answer = await confirm.ask?.(`Delete ${what}? This cannot be undone.`);
      if (answer === undefined) throw usageError(`${what}; add --yes to delete it and them (nothing was deleted)`);
      if (!answer) throw new CliError(`not deleted: ${what}`);
    }
  }
  await ctx.api.deleteDataSource(id);
  ctx.out(ctx.json ? formatJsonDeleted(id) : `Deleted data source ${id}.\n`);
}

// ---- argument checks ---------------------------------------------------------------

/** `--connector a --connector b` and `--connector a,b` both give [a, b]; no empty id. */
export function connectorIds(values: unknown): string[] {
  const list = (Array.isArray(values) ? values : [values]).flatMap((v) =>
    typeof v === 'string' || typeof v === 'number' ? String(v).split(',') : [],
  );
  const ids = list.map((v) => v.trim());
  if (ids.length === 0 || ids.some((v) => v === '')) {
    throw usageError('--connector must name a language-model connector id (repeat it for several), e.g. --connector conn-1');
  }
  return [...new Set(ids)];
}

// ---- yargs -------------------------------------------------------------------------

interface CreateArgs extends GlobalArgs {
  name: string;
  connector: string[];
}
interface UpdateArgs extends DsArgs {
  name: string;
}


const listCommand: CommandModule<GlobalArgs, GlobalArgs> = {
  command: 'list',
  describe: 'List all data sources of the organization',
  builder: (y) =>
    y.option('wide', wideOption).example('$0 datasources list', 'Table of id, name and connectors').example('$0 datasources list --json', 'Normalised records as JSON'),
  handler: (args) => withContext(args, (ctx) => listDataSources(ctx)),
};

const getCommand: CommandModule<GlobalArgs, DsArgs> = {
  command: 'get <ds>',
  describe: 'Show one data source, by id or by exact name',
  builder: (y) =>
    y
      .positional('ds', { type: 'string', describe: 'Data source id, or its exact name (several of that name: exit 2 with their ids)', demandOption: true })
      .example('$0 datasources get ds_123', 'Show the data source ds_123')
      .example('$0 datasources get Policies', 'Show the data source named "Policies"'),
  handler: async (args) => {
    const id = requireValue(args.ds, DS);
    await withContext(args, (ctx) => getDataSource(ctx, id));
  },
};

const createCommand: CommandModule<GlobalArgs, CreateArgs> = {
  command: 'create',
  describe: 'Create a data source (connector ids come from the service operator)',
  builder: (y) =>
    y
      .option('name', { type: 'string', describe: 'Display name', demandOption: true, requiresArg: true })
      .option('connector', {
        type: 'string',
        array: true,
        describe: 'Language-model connector id; repeat for several',
        demandOption: true,
        requiresArg: true,
      })
      .example('$0 datasources create --name Handbook --connector conn-1', 'Create a data source')
      .example('$0 datasources create --name Policies --connector conn-1 --connector conn-2', 'With two connectors'),
  handler: async (args) => {
    const name = requireValue(args.name, '--name');
    const ids = connectorIds(args.connector);
    await withContext(args, (ctx) => createDataSource(ctx, name, ids));
  },
};

const updateCommand: CommandModule<GlobalArgs, UpdateArgs> = {
  command: 'update <ds>',
  describe: 'Rename a data source',
  builder: (y) =>
    withDs(y)
      .option('name', { type: 'string', describe: 'New display name', demandOption: true, requiresArg: true })
      .example('$0 datasources update ds_123 --name "Staff handbook"', 'Rename ds_123'),
  handler: async (args) => {
    const id = requireValue(args.ds, DS);
    const name = requireValue(args.name, '--name');
    await withContext(args, (ctx) => updateDataSource(ctx, id, name));
  },
};

const deleteCommand: CommandModule<GlobalArgs, DsArgs & { yes: boolean }> = {
  command: 'delete <ds>',
  describe: 'Delete a data source and its documents (asks first when it holds documents)',
  builder: (y) =>
    withDs(y)
      .option('yes', { type: 'boolean', default: false, describe: 'Delete without asking, even when it holds documents (for scripts)' })
      .example('$0 datasources delete ds_123', 'Delete ds_123; asks when it holds documents')
      .example('$0 datasources delete ds_123 --yes', 'Delete without asking') as unknown as Argv<DsArgs & { yes: boolean }>,
  handler: async (args) => {
    const id = requireValue(args.ds, DS);
    await withContext(args, (ctx) => deleteDataSource(ctx, id, { yes: args.yes, ask: askOnTerminal }));
  },
};

export const datasourcesCommand = commandGroup('datasources', 'Administer data sources: list, get, create, update, delete', (y) =>
  y
    .command(listCommand)
    .command(getCommand)
    .command(createCommand)
    .command(updateCommand)
    .command(deleteCommand)
    .demandCommand(1, 'Name a datasources subcommand: list, get, create, update or delete.')
    .example('$0 datasources list', 'List the data sources'),
);

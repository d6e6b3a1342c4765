/**
 * `dssync apps data-sources <llmAppId>` (DESIGN §6): the data sources enabled for an
 * App. The interface offers only this read.
 */
import type { CommandModule } from 'yargs';
import { explainNotFound, requireValue, withContext, type CliContext } from '../context.js';
import { commandGroup, wideOption, type GlobalArgs } from '../options.js';
import { formatDataSources, formatJsonRecords } from '../output.js';

export async function listAppDataSources(ctx: CliContext, appId: string): Promise<void> {
  const records = await explainNotFound(() => ctx.api.listAppDataSources(appId), () => `app ${appId} not found`);
  ctx.out(ctx.json ? formatJsonRecords(records) : formatDataSources(records, { wide: ctx.wide }));
}

interface AppArgs extends GlobalArgs {
  llmAppId: string;
}

const dataSourcesCommand: CommandModule<GlobalArgs, AppArgs> = {
  command: 'data-sources <llmAppId>',
  describe: 'List the data sources enabled for an App',
  builder: (y) =>
    y
      .positional('llmAppId', { type: 'string', describe: 'App id', demandOption: true })
      .option('wide', wideOption)
      .example('$0 apps data-sources app_42', 'Table of the data sources app_42 uses')
      .example('$0 apps data-sources app_42 --json', 'Normalised records as JSON'),
  handler: async (args) => {
    const appId = requireValue(args.llmAppId, 'the App id <llmAppId>');
    await withContext(args, (ctx) => listAppDataSources(ctx, appId));
  },
};

export const appsCommand = commandGroup('apps', 'Read what an App uses: data-sources', (y) =>
  y
    .command(dataSourcesCommand)
    .demandCommand(1, 'Name an apps subcommand: data-sources.')
    .example('$0 apps data-sources app_42', 'List the data sources of app_42'),
);

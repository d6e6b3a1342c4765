/**
 * Options shared by every command. Connection settings follow DESIGN §6: flag, then
 * environment, then the config file. There is deliberately no --token flag.
 */
import type { Argv, CommandModule, Options } from 'yargs';

export const globalOptions = {
  config: {
    type: 'string',
    describe: 'Config file (JSON). Default: $DSSYNC_CONFIG',
    global: true,
  },
  'base-url': {
    type: 'string',
    describe: 'Service address. Default: $DSSYNC_BASE_URL, then "baseUrl" of the config file',
    global: true,
  },
  org: {
    type: 'string',
    describe: 'Organization id. Default: $DSSYNC_ORG, then "organizationId" of the config file',
    global: true,
  },
  'token-file': {
    type: 'string',
    describe: 'File holding the access token. Default: $DSSYNC_TOKEN_FILE, $DSSYNC_TOKEN, then "tokenFile"',
    global: true,
  },
  json: {
    type: 'boolean',
    describe: 'Machine-readable output',
    default: false,
    global: true,
  },
} as const satisfies Record<string, Options>;

/** The parsed global options, as every handler receives them. */
export interface GlobalArgs {
  config?: string | undefined;
  baseUrl?: string | undefined;
  org?: string | undefined;
  tokenFile?: string | undefined;
  json: boolean;
}

/** Leaves global options that do not apply to a command out of its --help (they still parse). */
export function hideOptions<T>(y: Argv<T>, names: ReadonlyArray<keyof typeof globalOptions>): Argv<T> {
  return names.reduce((acc, n) => acc.hide(n), y);
}

/** --wide for the commands that print tables. */
export const wideOption = { type: 'boolean', default: false, describe: 'Show values in full (tables cut long ones to fit)' } as const satisfies Options;

/** The positionals `<ds>` and `<doc>` of the administration commands, and their names when one is empty. */
export const withDs = <T>(y: Argv<T>) => y.positional('ds', { type: 'string', describe: 'Data source id', demandOption: true });
export const withDoc = <T>(y: Argv<T>) => y.positional('doc', { type: 'string', describe: 'Document id', demandOption: true });
export const DS = 'the data source id <ds>';
export const DOC = 'the document id <doc>';
export interface DsArgs extends GlobalArgs {
  ds: string;
}
export interface DocArgs extends DsArgs {
  doc: string;
}

/** A command that only groups subcommands: its builder demands one of them. */
export function commandGroup(command: string, describe: string, builder: (y: Argv<GlobalArgs>) => Argv<GlobalArgs>): CommandModule<GlobalArgs, GlobalArgs> {
  // Never reached: demandCommand requires a subcommand.
  return { command, describe, builder, handler: () => undefined };
}

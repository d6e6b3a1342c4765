/**
 * Options shared by every command. Connection settings follow DESIGN §6: flag, then
 * environment, then the config file. There is deliberately no --token flag.
 */
import type { Options } from 'yargs';

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

/**
 * Every top-level command, one module per command group (DESIGN §2), by the first word of
 * its `command`. A command line that starts with a command's name loads that module alone
 * (with what it imports); help, completion, and a line that starts otherwise load them all,
 * as yargs needs every command to list them, complete them or place a global option before
 * one. Add a group here.
 */
import type { CommandModule } from 'yargs';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyCommand = CommandModule<any, any>;

export const COMMANDS: Readonly<Record<string, () => Promise<AnyCommand>>> = {
  datasources: async () => (await import('./datasources.js')).datasourcesCommand,
  documents: async () => (await import('./documents.js')).documentsCommand,
  chunks: async () => (await import('./chunks.js')).chunksCommand,
  apps: async () => (await import('./apps.js')).appsCommand,
  emulator: async () => (await import('./emulator.js')).emulatorCommand,
  sync: async () => (await import('./sync.js')).syncCommand,
  adopt: async () => (await import('./identity.js')).adoptCommand,
  identity: async () => (await import('./identity.js')).identityCommand,
  run: async () => (await import('./run.js')).runCommand,
  status: async () => (await import('./status.js')).statusCommand,
  pause: async () => (await import('./daemon-actions.js')).pauseCommand,
  resume: async () => (await import('./daemon-actions.js')).resumeCommand,
  'confirm-delete': async () => (await import('./daemon-actions.js')).confirmDeleteCommand,
  config: async () => (await import('./config-check.js')).configCommand,
  auth: async () => (await import('./auth.js')).authCommand,
  probe: async () => (await import('./probe.js')).probeCommand,
  demo: async () => (await import('./demo.js')).demoCommand,
};

/** The commands yargs is given for `argv`: the one it starts with, or all of them. */
export async function commandModules(argv: readonly string[]): Promise<AnyCommand[]> {
  const first = argv[0];
  const named = first !== undefined && Object.hasOwn(COMMANDS, first) ? COMMANDS[first] : undefined;
  return named ? [await named()] : Promise.all(Object.values(COMMANDS).map((load) => load()));
}

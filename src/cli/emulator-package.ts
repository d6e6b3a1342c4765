/**
 * The one way the CLI reaches the service emulator: a dynamic import of the workspace
 * package `@dssync/emulator` (packages/emulator). The daemon package does not depend on
 * it (its dependencies stay off the servers that run the daemon): a clone has it (npm
 * workspaces link it into node_modules), an installed release does not. Only `dssync
 * emulator` and `dssync demo` load it, and only when they run.
 */
import { CliError } from './exit.js';

/** The package's public module, typed by its declarations; erased from the built CLI. */
export type EmulatorModule = typeof import('@dssync/emulator');

export const EMULATOR_PACKAGE = '@dssync/emulator';

/** What an installation without the emulator says when asked for it (tested in tarball.test.ts). */
export function emulatorMissingMessage(command: string, cause: string): string {
  return (
    `dssync ${command} needs the service emulator, the package ${EMULATOR_PACKAGE}, which is not installed ` +
    `(a release installs the daemon only). From a clone of the dssync repository: ` +
    `npm ci, then npx dssync ${command} (cause: ${cause})`
  );
}

/**
 * Loads the emulator for `command`, or throws a CliError (exit 1) saying how to get it.
 * `specifier` is the package's name; a test passes another to see the message.
 */
export async function loadEmulator(command: string, specifier: string = EMULATOR_PACKAGE): Promise<EmulatorModule> {
  try {
    return (await import(specifier)) as EmulatorModule;
  } catch (err) {
    // Missing: the package itself (an installed release) or its build (a clone before
    // `npm run build`). Any other failure is the emulator's own and is rethrown as is.
    if ((err as NodeJS.ErrnoException).code !== 'ERR_MODULE_NOT_FOUND') throw err;
    throw new CliError(emulatorMissingMessage(command, (err as Error).message));
  }
}

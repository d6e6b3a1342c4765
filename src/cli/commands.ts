/**
 * Every top-level command, one module per command group (DESIGN §2). Add a group here.
 */
import type { CommandModule } from 'yargs';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export const commandModules: CommandModule<any, any>[] = [];

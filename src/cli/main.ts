#!/usr/bin/env node
/**
 * The `dssync` command. Thin: it parses arguments and hands each command to its module;
 * every error ends here as one line on stderr and an exit code (DESIGN §6).
 */
import yargs, { type CommandModule } from 'yargs';
import { hideBin } from 'yargs/helpers';
import { describeFailure, ExitCode, usageError } from './exit.js';
import { globalOptions } from './options.js';
import { commandModules } from './commands.js';

export async function main(argv: string[]): Promise<number> {
  let exitCode: number = ExitCode.OK;
  const parser = yargs(argv)
    .scriptName('dssync')
    .usage('$0 <command> [options]\n\nMirror local folders into data sources of a document service, and administer the service.')
    .options(globalOptions)
    .command(commandModules as unknown as CommandModule[])
    .demandCommand(1, 'Name a command; see dssync --help.')
    .strict()
    .recommendCommands()
    .completion('completion', 'Print a shell completion script (bash/zsh): dssync completion >> ~/.bashrc')
    .help()
    .alias('help', 'h')
    .version()
    .wrap(Math.min(110, process.stdout.columns || 100))
    .fail((msg, err) => {
      // Usage errors from yargs come with a message; errors thrown by handlers with err.
      if (err) throw err;
      // Throw rather than return: yargs would otherwise go on and run the handler with
      // the missing or bad argument (e.g. create without --connector).
      throw usageError(`${msg}\nRun with --help for usage.`);
    });
  try {
    await parser.parseAsync();
  } catch (err) {
    const { exitCode: code, message } = describeFailure(err);
    process.stderr.write(`dssync: ${message}\n`);
    if (process.env.DSSYNC_DEBUG && err instanceof Error && err.stack) process.stderr.write(`${err.stack}\n`);
    return code;
  }
  // Handlers may set process.exitCode (e.g. sync with failures) instead of throwing.
  if (exitCode === ExitCode.OK && typeof process.exitCode === 'number') exitCode = process.exitCode;
  return exitCode;
}

main(hideBin(process.argv)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`dssync: ${describeFailure(err).message}\n`);
    process.exitCode = ExitCode.FAILURE;
  },
);

/**
 * The `dssync` command, loaded by the entry file (main.ts). Thin: it parses arguments and hands each command to its module;
 * every error ends here as one line on stderr and an exit code (DESIGN §6).
 */
import yargs, { type CommandModule } from 'yargs';
import { describeFailure, ExitCode, usageError } from './exit.js';
import { globalOptions } from './options.js';
import { printableLines } from '../printable.js';
import { scrub } from '../secrets.js';
import { commandModules } from './commands/index.js';
import { explainUsageError, type UsageContext } from './arg-errors.js';
import { versionLine } from './version.js';

/** What yargs's usage object (the third argument of fail) tells of where the error happened. */
function usageContext(usage: unknown, typed: readonly string[]): UsageContext {
  const u = usage as { getUsage?: () => unknown; getDescriptions?: () => unknown } | undefined;
  const lines = typeof u?.getUsage === 'function' ? u.getUsage() : undefined;
  const first = Array.isArray(lines) && Array.isArray(lines[0]) && typeof lines[0][0] === 'string' ? lines[0][0] : undefined;
  const descriptions = typeof u?.getDescriptions === 'function' ? u.getDescriptions() : undefined;
  const options = descriptions && typeof descriptions === 'object' ? Object.keys(descriptions) : [];
  // The top-level usage line is the program's description, not a command's.
  return { usage: first && !first.includes('<command>') ? first : undefined, options, typed };
}

/** Shells `dssync completion <shell>` can write a script for. */
const SHELLS = ['bash', 'zsh'];

export async function main(argv: string[]): Promise<number> {
  let exitCode: number = ExitCode.OK;
  // `dssync completion zsh`: yargs picks the shell from the environment only.
  if (argv[0] === 'completion' && argv[1] !== undefined && !argv[1].startsWith('-')) {
    if (!SHELLS.includes(argv[1])) {
      process.stderr.write(`dssync: completion scripts exist for ${SHELLS.join(' and ')}, not "${argv[1]}"\n`);
      return ExitCode.USAGE;
    }
    if (argv[1] === 'zsh') process.env.ZSH_NAME = 'zsh';
    else delete process.env.ZSH_NAME;
    if (argv[1] === 'bash') process.env.SHELL = '/bin/bash';
    argv = [argv[0], ...argv.slice(2)];
  }
  const parser = yargs(argv)
    .scriptName('dssync')
    .usage('$0 <command> [options]\n\nMirror local folders into data sources of a document service, and administer the service.')
    .options(globalOptions)
    .command((await commandModules(argv)) as unknown as CommandModule[])
    .demandCommand(1, 'Name a command; see dssync --help.')
    .strict()
    .recommendCommands()
    .completion('completion', 'Print a shell completion script: dssync completion bash >> ~/.bashrc, or completion zsh')
    .help()
    .alias('help', 'h')
    .version(versionLine())
    // Wrapped to the terminal only when help is asked for: yargs renders (and wraps, at a
    // cost in CPU) the whole help text on every run, for a failure our fail() never shows.
    .wrap(asksForHelp(argv) ? Math.min(110, process.stdout.columns || 100) : null)
    .fail((msg, err, usage) => {
      // Usage errors from yargs come with a message; errors thrown by handlers with err.
      if (err) throw err;
      // Throw rather than return: yargs would otherwise go on and run the handler with
      // the missing or bad argument (e.g. create without --connector).
      const ctx = usageContext(usage, argv);
      throw usageError(`${explainUsageError(msg, ctx)}\nRun ${ctx.usage ? ctx.usage.replace(/^\$0\b/, 'dssync').replace(/ [<[].*$/, '') : 'dssync'} --help for usage.`);
    });
  try {
    await parser.parseAsync();
  } catch (err) {
    const { exitCode: code, message } = describeFailure(err);
    // Messages may quote file names and the service's words: escape control characters.
    process.stderr.write(`dssync: ${printableLines(message)}\n`);
    // The stack starts with the message, which may quote a secret: scrubbed like it.
    if (process.env.DSSYNC_DEBUG && err instanceof Error && err.stack) process.stderr.write(`${printableLines(scrub(err.stack))}\n`);
    return code;
  }
  // Handlers may set process.exitCode (e.g. sync with failures) instead of throwing.
  if (exitCode === ExitCode.OK && typeof process.exitCode === 'number') exitCode = process.exitCode;
  return exitCode;
}

/** Runs the command line and sets the exit code (called by the entry file). */
export function start(args: string[]): Promise<void> {
  return main(args).then(
    (code) => {
      process.exitCode = code;
    },
    (err: unknown) => {
      process.stderr.write(`dssync: ${describeFailure(err).message}\n`);
      process.exitCode = ExitCode.FAILURE;
    },
  );
}

/** Whether this command line asks for help text (the only output the wrap width is for). */
function asksForHelp(argv: readonly string[]): boolean {
  return argv.some((a) => a === '--help' || a === '-h');
}

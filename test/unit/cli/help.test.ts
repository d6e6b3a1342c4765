/**
 * `--help` of every administration command shows its usage and examples. Parsed in
 * process with the same command modules as the binary (spawning the binary 17 times
 * would cost seconds; the integration tests run it for one).
 */
import yargs, { type CommandModule } from 'yargs';
import { describe, expect, it } from 'vitest';
import { appsCommand } from '../../../src/cli/commands/apps.js';
import { chunksCommand } from '../../../src/cli/commands/chunks.js';
import { datasourcesCommand } from '../../../src/cli/commands/datasources.js';
import { documentsCommand } from '../../../src/cli/commands/documents.js';
import { globalOptions } from '../../../src/cli/options.js';

async function helpOf(args: string[]): Promise<string> {
  let text = '';
  await yargs()
    .scriptName('dssync')
    .options(globalOptions)
    .command([datasourcesCommand, documentsCommand, chunksCommand, appsCommand] as unknown as CommandModule[])
    .strict()
    .help()
    .exitProcess(false)
    .parseAsync([...args, '--help'], {}, (_err, _argv, output) => {
      text = output;
    });
  return text;
}

const COMMANDS = [
  ['datasources'],
  ['datasources', 'list'],
  ['datasources', 'get'],
  ['datasources', 'create'],
  ['datasources', 'update'],
  ['datasources', 'delete'],
  ['documents'],
  ['documents', 'list'],
  ['documents', 'get'],
  ['documents', 'upload'],
  ['documents', 'update'],
  ['documents', 'delete'],
  ['chunks'],
  ['chunks', 'list'],
  ['chunks', 'get'],
  ['apps'],
  ['apps', 'data-sources'],
];

describe('--help', () => {
  it.each(COMMANDS.map((c) => [c.join(' ')]))('dssync %s --help shows usage and examples', async (name) => {
    const text = await helpOf(name.split(' '));
    expect(text).toContain(`dssync ${name}`);
    expect(text).toMatch(/Examples:\n {2}dssync /);
    // No --token option anywhere: the token would show in `ps`.
    expect(text).not.toMatch(/--token\b(?!-file)/);
  });

  it('documents the positional ids in the usage line', async () => {
    expect(await helpOf(['documents', 'upload'])).toContain('dssync documents upload <ds> <file..>');
    expect(await helpOf(['chunks', 'get'])).toContain('dssync chunks get <doc> <chunk>');
    expect(await helpOf(['documents', 'update'])).toMatch(/--metadata/);
  });
});

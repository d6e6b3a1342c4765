/**
 * The command table (src/cli/commands/index.ts): each name is its module's command, and a
 * command line gets that module alone only when it starts with the name; otherwise every
 * command, as help, completion and a global option before the command need.
 */
import { describe, expect, it } from 'vitest';
import { COMMANDS, commandModules } from '../../../src/cli/commands/index.js';

const firstWord = (command: unknown): string => String(Array.isArray(command) ? command[0] : command).split(' ')[0]!;

describe('command table', () => {
  it('names each command by the first word of its module\'s command', async () => {
    for (const [name, load] of Object.entries(COMMANDS)) expect(firstWord((await load()).command), name).toBe(name);
  });

  it('loads only the command a line starts with', async () => {
    const only = await commandModules(['sync', '--config', 'x.json']);
    expect(only.map((c) => firstWord(c.command))).toEqual(['sync']);
    expect((await commandModules(['confirm-delete', '--all'])).map((c) => firstWord(c.command))).toEqual(['confirm-delete']);
  });

  it('loads every command for help, completion, a global option first, or a name it does not know', async () => {
    const all = Object.keys(COMMANDS);
    for (const argv of [[], ['--help'], ['completion'], ['--config', 'sync', 'status'], ['sycn'], ['__proto__'], ['toString']]) {
      expect((await commandModules(argv)).map((c) => firstWord(c.command)), argv.join(' ')).toEqual(all);
    }
  });
});

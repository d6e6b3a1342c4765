import { describe, expect, it } from 'vitest';
import { loadEmulator } from '../../../src/cli/emulator-package.js';
import { CliError, describeFailure, ExitCode } from '../../../src/cli/exit.js';

describe('loadEmulator (the CLI reaches the emulator package only by a dynamic import)', () => {
  it('loads the workspace package in a clone', async () => {
    const emulator = await loadEmulator('emulator');
    expect(typeof emulator.startEmulator).toBe('function');
  });

  it('without the package, fails with exit 1 and says how to get the emulator', async () => {
    const err = await loadEmulator('demo', '@dssync/no-such-emulator').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CliError);
    const { exitCode, message } = describeFailure(err);
    expect(exitCode).toBe(ExitCode.FAILURE);
    expect(message).toContain('dssync demo needs the service emulator, the package @dssync/emulator, which is not installed');
    expect(message).toContain('From a clone of the dssync repository: npm ci, then npx dssync demo');
    expect(message).toContain("Cannot find package '@dssync/no-such-emulator'");
  });

  it('rethrows any other failure of the emulator as it is', async () => {
    const err = await loadEmulator('emulator', 'data:text/javascript,throw new Error("broken emulator")').catch((e: unknown) => e);
    expect(err).not.toBeInstanceOf(CliError);
    expect((err as Error).message).toBe('broken emulator');
  });
});

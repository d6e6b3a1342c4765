import { describe, expect, it } from 'vitest';
import { emulatorOptionsFromArgs, type EmulatorArgs } from '../../../src/cli/commands/emulator.js';

const args = (extra: Partial<EmulatorArgs>): EmulatorArgs => ({ host: '127.0.0.1', json: false, ...extra });

describe('dssync emulator options', () => {
  it('turns flags into emulator options, faults included', () => {
    expect(
      emulatorOptionsFromArgs(
        args({
          port: '8080',
          org: ['a', 'b,c'],
          dataDir: '/tmp/x',
          pageSize: '5',
          maxFileSize: '1024',
          maxFiles: '10',
          latencyMs: '20',
          rateLimitRps: '2.5',
          errorRate: '0.1',
          dropRate: '0',
          ambiguousRate: '1',
          seed: '42',
          permissiveFormats: true,
        }),
        {},
      ),
    ).toEqual({
      host: '127.0.0.1',
      port: 8080,
      orgs: ['a', 'b', 'c'],
      dataDir: '/tmp/x',
      pageSize: 5,
      maxFileBytes: 1024,
      maxFilesPerUpload: 10,
      permissiveFormats: true,
      faults: { latencyMs: 20, rateLimitRps: 2.5, errorRate: 0.1, dropRate: 0, ambiguousRate: 1, seed: 42 },
    });
    expect(emulatorOptionsFromArgs(args({}), {})).toEqual({ host: '127.0.0.1' });
  });

  it('takes the token from --token, else from DSSYNC_EMULATOR_TOKEN', () => {
    expect(emulatorOptionsFromArgs(args({}), { DSSYNC_EMULATOR_TOKEN: 'env-t' }).token).toBe('env-t');
    expect(emulatorOptionsFromArgs(args({ token: 'flag-t' }), { DSSYNC_EMULATOR_TOKEN: 'env-t' }).token).toBe('flag-t');
  });

  it('refuses a bad value with a usage error (exit 2) naming the option and quoting the value', () => {
    const cases: Array<[Partial<EmulatorArgs>, string]> = [
      [{ port: 'abc' }, '--port'],
      [{ port: '70000' }, '--port'],
      [{ port: '' }, '--port'],
      [{ pageSize: '0' }, '--page-size'],
      [{ pageSize: '2.5' }, '--page-size'],
      [{ maxFileSize: '-1' }, '--max-file-size'],
      [{ errorRate: '1.5' }, '--error-rate'],
      [{ dropRate: 'NaN' }, '--drop-rate'],
      [{ rateLimitRps: '0' }, '--rate-limit-rps'],
      [{ seed: 'x' }, '--seed'],
      [{ org: [''] }, '--org'],
      [{ token: 'has space' }, '--token'],
    ];
    for (const [extra, option] of cases) {
      expect(() => emulatorOptionsFromArgs(args(extra), {}), option).toThrow(expect.objectContaining({ code: 'E_USAGE' }));
      expect(() => emulatorOptionsFromArgs(args(extra), {}), option).toThrow(option);
    }
  });
});

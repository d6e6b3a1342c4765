import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../../src/config/connection.js';
import { configFromArgs, withContext, type CliContext } from '../../../src/cli/context.js';
import { describeFailure, ExitCode } from '../../../src/cli/exit.js';
import { FakeApi } from '../../helpers/fake-api.js';
import { staticToken } from '../../../src/auth/settings.js';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'dssync-cli-ctx-'));
  await writeFile(join(dir, 'token'), 'file-token\n');
  await chmod(join(dir, 'token'), 0o600);
  await writeFile(
    join(dir, 'config.json'),
    JSON.stringify({ baseUrl: 'https://file.example', organizationId: 'file-org', tokenFile: 'token' }),
  );
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('connection settings', () => {
  it('takes flag over environment over config file', () => {
    const config = join(dir, 'config.json');
    const fromFile = configFromArgs({ json: false, config }, {}).connection;
    expect(fromFile).toMatchObject({ baseUrl: 'https://file.example', organizationId: 'file-org' });
    expect(staticToken(fromFile)).toBe('file-token');

    const env = { DSSYNC_BASE_URL: 'https://env.example', DSSYNC_ORG: 'env-org', DSSYNC_TOKEN: 'env-token' };
    const fromEnv = configFromArgs({ json: false, config }, env).connection;
    expect(fromEnv).toMatchObject({ baseUrl: 'https://env.example', organizationId: 'env-org' });
    expect(staticToken(fromEnv)).toBe('env-token');

    const fromFlags = configFromArgs({ json: false, config, baseUrl: 'https://flag.example', org: 'flag-org' }, env).connection;
    expect(fromFlags).toMatchObject({ baseUrl: 'https://flag.example', organizationId: 'flag-org' });
  });

  it('finds the config file through DSSYNC_CONFIG, with a tokenFile relative to it', () => {
    const c = configFromArgs({ json: false }, { DSSYNC_CONFIG: join(dir, 'config.json') }).connection;
    expect(staticToken(c)).toBe('file-token');
    expect(c.tokenSource).toBe(`tokenFile ${join(dir, 'token')}`);
  });

  it('a missing setting is a configuration error (exit 2) naming the setting', () => {
    for (const [env, setting] of [
      [{ DSSYNC_ORG: 'o', DSSYNC_TOKEN: 't' }, 'DSSYNC_BASE_URL'],
      [{ DSSYNC_BASE_URL: 'https://x', DSSYNC_TOKEN: 't' }, 'DSSYNC_ORG'],
      [{ DSSYNC_BASE_URL: 'https://x', DSSYNC_ORG: 'o' }, 'DSSYNC_TOKEN'],
    ] as const) {
      let err: unknown;
      try {
        configFromArgs({ json: false }, env);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(ConfigError);
      const { exitCode, message } = describeFailure(err);
      expect(exitCode).toBe(ExitCode.USAGE);
      expect(message).toContain(setting);
    }
  });

  it('an unreadable or malformed config file is a configuration error (exit 2) naming the file', async () => {
    await writeFile(join(dir, 'bad.json'), '{ nope');
    const env = { DSSYNC_BASE_URL: 'https://x', DSSYNC_ORG: 'o', DSSYNC_TOKEN: 't' };
    for (const name of ['missing.json', 'bad.json']) {
      let err: unknown;
      try {
        configFromArgs({ json: false, config: join(dir, name) }, env);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(ConfigError);
      expect(describeFailure(err).exitCode).toBe(ExitCode.USAGE);
      expect(describeFailure(err).message).toContain(name);
    }
  });

  it('runs the command with the resolved connection and closes the client, also on failure', async () => {
    const api = Object.assign(new FakeApi({ dataSources: 'listed' }), { closed: 0, close: async () => void api.closed++ });
    let seen: unknown;
    let ctxSeen: CliContext | undefined;
    await withContext(
      { json: true, baseUrl: 'https://x.example/' },
      async (ctx) => {
        ctxSeen = ctx;
      },
      { env: { DSSYNC_ORG: 'o', DSSYNC_TOKEN: 't' }, createApi: (c) => ((seen = c.connection), api) },
    );
    expect(ctxSeen?.api).toBe(api);
    expect(ctxSeen?.json).toBe(true);
    expect(seen).toMatchObject({ baseUrl: 'https://x.example', organizationId: 'o' });
    expect(api.closed).toBe(1);

    const boom = withContext({ json: false }, () => Promise.reject(new Error('boom')), {
      env: { DSSYNC_BASE_URL: 'https://x', DSSYNC_ORG: 'o', DSSYNC_TOKEN: 't' },
      createApi: () => api,
    });
    await expect(boom).rejects.toThrow('boom');
    expect(api.closed).toBe(2);

    let created = false;
    const missing = withContext({ json: false }, async () => undefined, { env: {}, createApi: () => ((created = true), api) });
    await expect(missing).rejects.toBeInstanceOf(ConfigError);
    expect(created).toBe(false);
  });
});

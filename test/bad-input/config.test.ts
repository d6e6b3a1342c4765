/**
 * Bad-input catalogue, configuration (C-cases): every mistake an operator makes in the
 * config file, the token file or the environment. Each case runs `dssync sync` (in process,
 * the command's own entry point) against an already mirrored data source: a configuration
 * error must name the field and the fix before anything is touched; a configuration that
 * is valid but points somewhere wrong must not delete anything.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { runSync } from '../../src/cli/commands/sync.js';
import { createWorld, TOKEN, variantConfig, type World } from './world.js';

let world: World;
beforeAll(async () => {
  world = await createWorld();
});
afterAll(async () => {
  await world?.close();
});

interface Outcome {
  /** The exit code, when the command returned one. */
  code?: number;
  /** The error's message, when it threw (main.ts prints it and exits 2 for a ConfigError). */
  error?: string;
  errorName?: string;
  stdout: string;
  /** Requests the emulator received during the run. */
  requests: number;
}

async function sync(configPath: string, env: Record<string, string> = world.ws.env, folderMoved = false): Promise<Outcome> {
  const before = world.ws.emu.stats().requests;
  let stdout = '';
  const spy = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    stdout += String(chunk);
    return true;
  });
  const stderr = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
  try {
    const code = await runSync({ config: configPath, dryRun: false, allowMassDelete: false, folderMoved, json: true } as Parameters<typeof runSync>[0], env);
    expect(stdout).not.toContain(TOKEN);
    return { code, stdout, requests: world.ws.emu.stats().requests - before };
  } catch (e) {
    expect(String(e instanceof Error ? e.message : e)).not.toContain(TOKEN);
    return { error: e instanceof Error ? e.message : String(e), errorName: (e as Error).name, stdout, requests: world.ws.emu.stats().requests - before };
  } finally {
    spy.mockRestore();
    stderr.mockRestore();
  }
}

/** A configuration error: named, with the fix, before any request; nothing lost. */
async function expectConfigError(configPath: string, message: RegExp, env?: Record<string, string>): Promise<string> {
  const r = await sync(configPath, env);
  expect(r.error, `expected a configuration error, got exit ${r.code}: ${r.stdout.slice(0, 300)}`).toMatch(message);
  expect(r.errorName).toMatch(/ConfigError|ConfigFileError|SecretFileError/);
  expect(r.requests).toBe(0);
  await world.expectNothingLost();
  return r.error!;
}

const edit = (name: string, f: (c: Record<string, unknown>) => void): Promise<string> => variantConfig(world, name, f);
const mapping0 = (c: Record<string, unknown>): Record<string, unknown> => (c.mappings as Record<string, unknown>[])[0]!;

async function raw(name: string, text: string): Promise<string> {
  const p = join(world.ws.dir, `${name}.json`);
  await writeFile(p, text, { mode: 0o600 });
  return p;
}

describe('bad-input catalogue: configuration', () => {
  it('C01 not JSON (a trailing comma): line and column named', async () => {
    await expectConfigError(await raw('c01', '{\n  "baseUrl": "http://x",\n}\n'), /line 3, column 1\): not valid JSON: a comma must not follow the last member of an object/);
  });

  it('C02 a misspelt key: "did you mean"', async () => {
    await expectConfigError(await edit('c02', (c) => (c.mapings = c.mappings)), /mapings.*unknown key; did you mean "mappings"\?/);
  });

  it('C03 a number given as a string', async () => {
    await expectConfigError(await edit('c03', (c) => (c.queue = { concurrency: '4' })), /queue\.concurrency.*must be a whole number >= 1 \(e\.g\. \d+\), got "4"/);
  });

  it('C04 a relative mapping path', async () => {
    await expectConfigError(await edit('c04', (c) => (mapping0(c).path = 'share')), /mappings\[0\]\.path.*must be an absolute path, got "share"/);
  });

  it('C05 a mapping naming its data source twice (id and name)', async () => {
    await expectConfigError(await edit('c05', (c) => (mapping0(c).dataSourceId = 'ds-1')), /mappings\[0\].*set either "dataSourceId".*or "dataSource".*not both/);
  });

  it('C06 two mappings with the same id', async () => {
    await expectConfigError(
      await edit('c06', (c) => (c.mappings = [mapping0(c), { ...mapping0(c), path: `${String(mapping0(c).path)}-2` }])),
      /mappings\[1\].*is also the id of mappings\[0\].*give each mapping a distinct "id"/,
    );
  });

  it('C07 a baseUrl that is not http(s)', async () => {
    await expectConfigError(await edit('c07', (c) => (c.baseUrl = 'ftp://files.example.com')), /baseUrl.*must be an http:\/\/ or https:\/\/ URL/);
  });

  it('C08 a baseUrl carrying a password: refused, and the password is not repeated', async () => {
    const msg = await expectConfigError(await edit('c08', (c) => (c.baseUrl = 'https://admin:hunter2secret@service.example.com')), /baseUrl.*without credentials.*got "https:\/\/\*\*\*@service\.example\.com"/);
    expect(msg).not.toContain('hunter2secret');
    expect(msg).not.toContain('admin');
  });

  it('C09a a password in DSSYNC_BASE_URL (the environment wins over the file): refused, not repeated', async () => {
    const msg = await expectConfigError(world.ws.configPath, /baseUrl "ftp:\/\/\*\*\*@files\.example\.com" must start with http:\/\/ or https:\/\//, {
      ...world.ws.env,
      DSSYNC_BASE_URL: 'ftp://admin:hunter2secret@files.example.com',
    });
    expect(msg).not.toContain('hunter2secret');
  });

  it('C09 a status address that is not host:port', async () => {
    await expectConfigError(await edit('c09', (c) => (c.status = { listen: 'everywhere' })), /status\.listen.*"everywhere" is not host:port/);
  });

  it('C10 an unknown log level', async () => {
    await expectConfigError(await edit('c10', (c) => (c.logLevel = 'verbose')), /logLevel.*must be one of "fatal"/);
  });

  it('C11 an ignore file outside the mapped folder', async () => {
    await expectConfigError(await edit('c11', (c) => (mapping0(c).ignoreFile = '../../etc/ignore')), /mappings\[0\]\.ignoreFile.*must be a file name inside the mapped folder/);
  });

  it('C12 a URL template with an unknown placeholder', async () => {
    await expectConfigError(await edit('c12', (c) => (mapping0(c).urlTemplate = 'https://intranet/{nope}')), /mappings\[0\]\.urlTemplate.*\{nope\}/);
  });

  it('C13 maxDeletePercent out of range', async () => {
    await expectConfigError(await edit('c13', (c) => (mapping0(c).maxDeletePercent = 150)), /mappings\[0\]\.maxDeletePercent.*from 0 to 100/);
  });

  it('C14 the JSON holds an array instead of an object', async () => {
    await expectConfigError(await raw('c14', '[]'), /must hold a JSON object/);
  });

  it('C15 no mapping at all', async () => {
    await expectConfigError(await edit('c15', (c) => (c.mappings = [])), /no folder to mirror: add at least one entry to "mappings"/);
  });

  it('C16 the config file does not exist', async () => {
    await expectConfigError(join(world.ws.dir, 'nope.json'), /the config file .*nope\.json \(from --config\) does not exist; check the path/);
  });

  it('C17 the config file is a folder', async () => {
    await mkdir(join(world.ws.dir, 'c17.json'), { recursive: true });
    await expectConfigError(join(world.ws.dir, 'c17.json'), /is a folder; name the JSON config file/);
  });

  it('C18 no token anywhere', async () => {
    await expectConfigError(world.ws.configPath, /no access token: set the DSSYNC_TOKEN environment variable, --token-file/, { DSSYNC_LOG_LEVEL: 'warn' });
  });

  it('C19 an empty token file', async () => {
    const tokenFile = join(world.ws.dir, 'empty-token');
    await writeFile(tokenFile, '\n', { mode: 0o600 });
    await expectConfigError(await edit('c19', (c) => (c.tokenFile = tokenFile)), /the token file .*empty-token is empty/, { DSSYNC_LOG_LEVEL: 'warn' });
  });

  it('C20 a token file holding more than the token (e.g. "Bearer <token>"): refused without repeating it', async () => {
    const tokenFile = join(world.ws.dir, 'two-words');
    await writeFile(tokenFile, `Bearer ${TOKEN}\n`, { mode: 0o600 });
    const msg = await expectConfigError(await edit('c20', (c) => (c.tokenFile = tokenFile)), /holds more than one word; it must hold the token alone/, { DSSYNC_LOG_LEVEL: 'warn' });
    expect(msg).not.toContain(TOKEN);
  });

  it('C21 a token file that does not exist', async () => {
    await expectConfigError(await edit('c21', (c) => (c.tokenFile = '/nonexistent/token')), /the token file \/nonexistent\/token \(from tokenFile\) does not exist: create it holding the secret alone \(chmod 600\), or correct tokenFile/, { DSSYNC_LOG_LEVEL: 'warn' });
  });

  it('C22 the mapped path is a file, not a folder: an outage, nothing deleted', async () => {
    const file = join(world.ws.dir, 'not-a-folder.txt');
    await writeFile(file, 'x');
    const config = await edit('c22', (c) => (mapping0(c).path = file));
    // Another folder than the state records: refused first, naming both (issue 23).
    const refused = await sync(config);
    expect(refused.code).toBe(2);
    expect(refused.stdout).toMatch(/records the folder .* but the config maps .*not-a-folder\.txt/);
    // Said to be a real move: still an outage, nothing deleted.
    const r = await sync(config, world.ws.env, true);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/is not a folder: treated as an outage \(is the drive mounted\?\); nothing was deleted/);
    await world.expectNothingLost();
  });

  it('C23 the mapped path points to an empty folder (a typo, an unmounted share): nothing deleted', async () => {
    const empty = join(world.ws.dir, 'empty-folder');
    await mkdir(empty, { recursive: true });
    const r = await sync(await edit('c23', (c) => (mapping0(c).path = empty)), world.ws.env, true);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/is empty while the data source holds \d+ of its documents: treated as an outage/);
    await world.expectNothingLost();
  });

  it('C24 a dataSourceId that does not exist: exit 2, naming the id and how to find the right one', async () => {
    const r = await sync(
      await edit('c24', (c) => {
        delete mapping0(c).dataSource;
        mapping0(c).dataSourceId = 'ds_doesnotexist';
      }),
    );
    expect(r.code).toBe(2);
    expect(r.stdout).toMatch(/data source ds_doesnotexist \(mappings\[0\]\.dataSourceId\) does not exist for this organization; check the id with: dssync datasources list/);
    await world.expectNothingLost();
  });

  it('C25 the wrong organization: the credentials are refused (exit 3 in main), nothing written', async () => {
    const r = await sync(await edit('c25', (c) => (c.organizationId = 'org-of-someone-else')));
    expect(r.error).toMatch(/403 Forbidden: organization "org-of-someone-else" is not accessible/);
    expect(r.requests).toBeGreaterThan(0);
    await world.expectNothingLost();
  });

  it('C26 the state path is a folder: a clear error naming it, nothing sent', async () => {
    const dir = join(world.ws.dir, 'state-is-a-folder');
    await mkdir(dir, { recursive: true });
    const r = await sync(await edit('c26', (c) => (c.statePath = dir)));
    expect(r.error ?? r.stdout).toMatch(/state-is-a-folder/);
    expect(r.error ?? r.stdout).toMatch(/EISDIR|is a folder|directory/i);
    expect(r.requests).toBe(0);
    await world.expectNothingLost();
  });

  it('C27 an installationId that is not one (config, then DSSYNC_INSTALLATION_ID): named, nothing sent', async () => {
    await expectConfigError(await edit('c27', (c) => (c.installationId = 'my id!')), /"installationId" "my id!" is not an installation id: use 4-64 letters/);
    await expectConfigError(world.ws.configPath, /DSSYNC_INSTALLATION_ID "x" is not an installation id/, { DSSYNC_INSTALLATION_ID: 'x' });
  });

  it('C28 baseUrl plain http:// to another host: refused before any request, saying why and how to allow it', async () => {
    const msg = await expectConfigError(
      await edit('c28', (c) => (c.baseUrl = 'http://service.invalid:8080')),
      /baseUrl http:\/\/service\.invalid:8080\/ is plain http:\/\/ to another host: the token and every file would cross the network in clear text/,
    );
    expect(msg).toContain('"allowInsecureHttp": true');
  });

  it('C29 auth.tokenUrl plain http:// to another host: refused the same way', async () => {
    await expectConfigError(
      await edit('c29', (c) => (c.auth = { type: 'oauth2', tokenUrl: 'http://auth.invalid/realms/r/protocol/openid-connect/token', grantType: 'client_credentials', clientId: 'c' })),
      /"auth\.tokenUrl" http:\/\/auth\.invalid\/realms\/r\/protocol\/openid-connect\/token is plain http:\/\/ to another host: the password, the client secret and the tokens would cross/,
      { ...world.ws.env, DSSYNC_CLIENT_SECRET: 'a-client-secret' },
    );
  });
});

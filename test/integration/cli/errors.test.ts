/**
 * Exit codes and messages of the administration commands (DESIGN §6: 0 ok, 1 failure,
 * 2 usage or configuration, 3 credentials refused), run as the built binary.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator } from '@dssync/emulator';
import { jsonOf, requireBuiltBinary, runCli, type CliResult } from './run-cli.js';

type Emulator = Awaited<ReturnType<typeof startEmulator>>;

let emu: Emulator;
let dir: string;
let env: Record<string, string>;
let dsId: string;

const cli = (...args: string[]): Promise<CliResult> => runCli(args, env);
/** A stack trace line, as Node prints them. */
const STACK_LINE = /^\s+at /m;

function expectExit(r: CliResult, code: number, ...inStderr: (string | RegExp)[]): void {
  expect(r.code, `stdout: ${r.stdout}\nstderr: ${r.stderr}`).toBe(code);
  expect(r.stdout).toBe('');
  expect(r.stderr).toMatch(/^dssync: /);
  expect(r.stderr).not.toMatch(STACK_LINE);
  for (const s of inStderr) expect(r.stderr).toMatch(s);
}

beforeAll(async () => {
  requireBuiltBinary();
  emu = await startEmulator();
  env = { DSSYNC_BASE_URL: emu.url, DSSYNC_ORG: 'dev-org', DSSYNC_TOKEN: 'dev-token' };
  dir = await mkdtemp(join(tmpdir(), 'dssync-cli-errors-'));
  await writeFile(join(dir, 'present.txt'), 'here\n');
  const r = await cli('datasources', 'create', '--name', 'Errors', '--connector', 'conn-1', '--json');
  dsId = jsonOf<{ id: string }>(r).id;
});

afterAll(async () => {
  await emu?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('configuration errors (exit 2)', () => {
  it('a missing base URL, organization or token names the setting and how to set it', async () => {
    const full = { DSSYNC_BASE_URL: emu.url, DSSYNC_ORG: 'dev-org', DSSYNC_TOKEN: 'dev-token' };
    const without = (key: keyof typeof full): Record<string, string> => {
      const e: Record<string, string> = { ...full };
      delete e[key];
      return e;
    };
    const before = emu.stats().requests;
    const [noUrl, noOrg, noToken, badConfig] = await Promise.all([
      runCli(['datasources', 'list'], without('DSSYNC_BASE_URL')),
      runCli(['datasources', 'list'], without('DSSYNC_ORG')),
      runCli(['datasources', 'list'], without('DSSYNC_TOKEN')),
      runCli(['datasources', 'list', '--config', join(dir, 'no-such-config.json')], full),
    ]);
    expectExit(noUrl, 2, /--base-url/, /DSSYNC_BASE_URL/, /baseUrl/);
    expectExit(noOrg, 2, /--org/, /DSSYNC_ORG/, /organizationId/);
    expectExit(noToken, 2, /DSSYNC_TOKEN/, /--token-file/);
    expectExit(badConfig, 2, /no-such-config\.json/);
    expect(emu.stats().requests).toBe(before);
  });

  it('the connection comes from a config file, and a flag wins over the environment', async () => {
    await writeFile(join(dir, 'token'), 'dev-token\n');
    await chmod(join(dir, 'token'), 0o600);
    await writeFile(join(dir, 'config.json'), JSON.stringify({ baseUrl: emu.url, organizationId: 'dev-org', tokenFile: 'token' }));
    const [fromFile, flagWins] = await Promise.all([
      runCli(['datasources', 'get', dsId, '--config', join(dir, 'config.json')], {}),
      runCli(['datasources', 'get', dsId, '--base-url', emu.url], { ...env, DSSYNC_BASE_URL: 'http://127.0.0.1:9' }),
    ]);
    expect(fromFile.code, fromFile.stderr).toBe(0);
    expect(fromFile.stdout).toContain(dsId);
    expect(flagWins.code, flagWins.stderr).toBe(0);
  });
});

describe('credentials refused (exit 3)', () => {
  it('a wrong token exits 3 and the token appears nowhere in the output', async () => {
    const secret = 'wrong-secret-token-5c1f9e';
    await writeFile(join(dir, 'bad-token'), `${secret}\n`);
    await chmod(join(dir, 'bad-token'), 0o600);
    const [fromEnv, fromFile, otherOrg] = await Promise.all([
      runCli(['datasources', 'list'], { ...env, DSSYNC_TOKEN: secret }),
      runCli(['documents', 'list', dsId, '--token-file', join(dir, 'bad-token')], env),
      runCli(['datasources', 'list', '--org', 'some-other-org'], env),
    ]);
    for (const r of [fromEnv, fromFile]) {
      expectExit(r, 3, /refused the credentials/, /HTTP 401/);
      expect(r.stdout + r.stderr).not.toContain(secret);
    }
    expectExit(otherOrg, 3, /HTTP 40[13]/);
    expect(otherOrg.stderr).not.toContain('dev-token');
  });
});

describe('failures (exit 1)', () => {
  it('an unknown id names what was not found', async () => {
    const [ds, doc, docList, chunk, update, del] = await Promise.all([
      cli('datasources', 'get', 'ds_nope'),
      cli('documents', 'get', dsId, 'doc_nope'),
      cli('documents', 'list', 'ds_nope'),
      cli('chunks', 'get', 'doc_nope', 'chunk_nope'),
      cli('documents', 'update', 'ds_nope', 'doc_nope', '--name', 'x'),
      cli('datasources', 'delete', 'ds_nope'),
    ]);
    expectExit(ds, 1, /^dssync: no data source has the id or the name "ds_nope" \(`dssync datasources list` shows each one's id and name\)$/m);
    expectExit(doc, 1, new RegExp(`^dssync: document doc_nope not found in data source ${dsId}$`, 'm'));
    expectExit(docList, 1, /data source ds_nope not found/);
    expectExit(chunk, 1, /chunk chunk_nope of document doc_nope not found/);
    expectExit(update, 1, /data source ds_nope not found/);
    expectExit(del, 1, /data source ds_nope not found/);
  });

  it('a service answering 200 with something that is not JSON: a clear message with the status, no stack trace', async () => {
    const server: Server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end('<html>maintenance</html>');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const [list, get] = await Promise.all([
        runCli(['datasources', 'list'], { ...env, DSSYNC_BASE_URL: url }),
        runCli(['documents', 'get', 'ds_1', 'doc_1', '--json'], { ...env, DSSYNC_BASE_URL: url }),
      ]);
      expectExit(list, 1, /200/);
      expectExit(get, 1, /200/);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

describe('usage errors (exit 2)', () => {
  it('a missing upload file is named and nothing is sent', async () => {
    const before = emu.stats();
    const r = await cli('documents', 'upload', dsId, join(dir, 'present.txt'), join(dir, 'missing.txt'), dir);
    expectExit(r, 2, /missing\.txt: no such file/, new RegExp(`${dir}: is a directory`), /Nothing was sent/);
    const after = emu.stats();
    expect(after.uploads).toBe(before.uploads);
    expect(after.requests).toBe(before.requests);
  });

  it('bad arguments are refused before anything is sent', async () => {
    const before = emu.stats().requests;
    const [metadata, metadataArray, url, nothing, emptyId, emptyConnector, unknown, noSub, missingArg, extraArg, noConnector] =
      await Promise.all([
        cli('documents', 'update', dsId, 'doc_1', '--metadata', '{not json'),
        cli('documents', 'update', dsId, 'doc_1', '--metadata', '[1,2]'),
        cli('documents', 'update', dsId, 'doc_1', '--url', 'not a url'),
        cli('documents', 'update', dsId, 'doc_1'),
        cli('datasources', 'get', ''),
        cli('datasources', 'create', '--name', 'x', '--connector', ''),
        cli('bogus'),
        cli('documents'),
        cli('documents', 'get', dsId),
        cli('datasources', 'get', 'a', 'b'),
        cli('datasources', 'create', '--name', 'x'),
      ]);
    expectExit(metadata, 2, /--metadata is not valid JSON/);
    expectExit(metadataArray, 2, /--metadata must be a JSON object/);
    expectExit(url, 2, /--url "not a url"/);
    expectExit(nothing, 2, /nothing to update/);
    expectExit(emptyId, 2, /data source id <ds> must not be empty/);
    expectExit(emptyConnector, 2, /--connector/);
    expectExit(unknown, 2, /bogus/);
    expectExit(noSub, 2, /list, get, upload, update or delete/);
    expectExit(missingArg, 2);
    expectExit(extraArg, 2, /Unknown argument: b/);
    expectExit(noConnector, 2, /connector/);
    expect(emu.stats().requests).toBe(before);
  });
});

describe('help and completion', () => {
  // Every command's help is checked in process (test/unit/cli/help.test.ts); here the binary's.
  it('--help of a nested command prints its usage and examples on stdout, exit 0', async () => {
    const r = await runCli(['documents', 'upload', '--help']);
    expect(r.code).toBe(0);
    expect(r.stderr).toBe('');
    expect(r.stdout).toContain('dssync documents upload <ds> <file..>');
    expect(r.stdout).toContain('Examples:');
  });

  it('prints a completion script, and completes the nested commands', async () => {
    const [script, top, docs] = await Promise.all([
      runCli(['completion']),
      runCli(['--get-yargs-completions', 'dssync', '']),
      runCli(['--get-yargs-completions', 'dssync', 'documents', '']),
    ]);
    expect(script.code).toBe(0);
    expect(script.stdout).toContain('dssync --get-yargs-completions');
    expect(top.stdout.split('\n')).toEqual(expect.arrayContaining(['datasources', 'documents', 'chunks', 'apps']));
    expect(docs.stdout.split('\n')).toEqual(expect.arrayContaining(['list', 'get', 'upload', 'update', 'delete']));
  });
});

/**
 * Bad-input catalogue, command-line arguments (A-cases): the built `dssync` binary run as
 * an operator would, with arguments that are wrong. Each gets its exit code (2 for usage)
 * and a one-line message naming the argument, and changes nothing on the service.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requireBuiltBinary, runCli, type CliResult } from '../integration/cli/run-cli.js';
import { createWorld, TOKEN, type World } from './world.js';

let world: World;
let docId: string;
beforeAll(async () => {
  requireBuiltBinary();
  world = await createWorld();
  docId = world.ws.emu.store.listDocuments(world.dataSourceId)[0]!.document_id;
});
afterAll(async () => {
  await world?.close();
});

/** Runs the binary against the world's service (connection from the environment). */
function dssync(...args: string[]): Promise<CliResult> {
  return runCli(args, { DSSYNC_TOKEN: TOKEN, DSSYNC_BASE_URL: world.ws.emu.url, DSSYNC_ORG: 'org-test' });
}

async function expectUsage(r: CliResult, message: RegExp, code = 2): Promise<void> {
  expect(r.code, r.stderr).toBe(code);
  expect(r.stdout + r.stderr).not.toContain(TOKEN);
  expect(r.stderr).toMatch(message);
  expect(r.stdout).toBe('');
  await world.expectNothingLost();
}

describe('bad-input catalogue: command-line arguments', () => {
  it('A01 an unknown command', async () => {
    await expectUsage(await dssync('frobnicate'), /^dssync: Unknown command: frobnicate/m);
  });

  it('A02 the token given as a flag: there is no such flag (it would show in ps), and the value is not echoed', async () => {
    const r = await dssync('datasources', 'list', '--token', 'tok-on-the-command-line');
    await expectUsage(r, /Unknown argument: --token/);
    expect(r.stderr).not.toContain('tok-on-the-command-line');
  });

  it('A03 a missing positional id', async () => {
    await expectUsage(await dssync('documents', 'delete', world.dataSourceId), /^dssync: missing <doc>; usage: dssync documents delete <ds> <doc>$/m);
  });

  it('A04 --metadata that is not JSON', async () => {
    await expectUsage(await dssync('documents', 'update', world.dataSourceId, docId, '--metadata', '{team: hr'), /--metadata is not valid JSON .*give an object, e\.g\. --metadata/);
  });

  it('A05 --metadata that is JSON but not an object', async () => {
    await expectUsage(await dssync('documents', 'update', world.dataSourceId, docId, '--metadata', '[1,2]'), /--metadata must be a JSON object, not an array/);
  });

  it('A06 --url that is not an absolute URL', async () => {
    await expectUsage(await dssync('documents', 'update', world.dataSourceId, docId, '--url', 'handbook.pdf'), /--url "handbook\.pdf" is not an absolute URL/);
  });

  it('A07 an empty id', async () => {
    await expectUsage(await dssync('datasources', 'delete', ''), /must not be empty/);
    expect(world.ws.emu.store.listDataSources('org-test').map((d) => d.data_source_id)).toContain(world.dataSourceId);
  });

  it('A08 an upload without files', async () => {
    await expectUsage(await dssync('documents', 'upload', world.dataSourceId), /^dssync: missing <file\.\.>; usage: dssync documents upload <ds> <file\.\.>$/m);
  });

  it('A09 an upload of a file that does not exist: a usage error naming it, nothing sent', async () => {
    const before = world.ws.emu.stats().uploads;
    await expectUsage(await dssync('documents', 'upload', world.dataSourceId, '/nonexistent/report.txt'), /cannot upload \/nonexistent\/report\.txt: no such file\. Nothing was sent\./);
    expect(world.ws.emu.stats().uploads).toBe(before);
  });

  it('A10 a port out of range for the emulator', async () => {
    await expectUsage(await dssync('emulator', '--port', '70000'), /port/i);
  });

  it('A11 a path-traversal attempt as a document id: refused before any request (the id is checked before it goes into a URL), nothing touched', async () => {
    const r = await dssync('documents', 'delete', world.dataSourceId, '../../data-sources');
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/the document id "\.\.\/\.\.\/data-sources" cannot be part of a request's URL: it contains "\/"/);
    await world.expectNothingLost();
  });

  it('A12 --base-url that is not a URL', async () => {
    await expectUsage(await dssync('datasources', 'list', '--base-url', 'service.example.com'), /baseUrl "service\.example\.com" is not a URL/);
  });
});

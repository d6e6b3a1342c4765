/**
 * A configuration error the service reveals gives the same words and the same exit code in
 * every command (issue 37.2): a wrong organization header (the service's 400 "missing
 * …-organization-id"), a data source named by id that does not exist, a refused token.
 * `config check` names it and its fix, `sync` exits 2 (3 for credentials) with the same
 * advice, and `dssync run` stops with that exit code at once (the systemd units do not
 * restart 2 and 3: RestartPreventExitStatus=2 3) instead of retrying for ever. The built
 * binary against the emulator.
 */
import { writeFile } from 'node:fs/promises';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createWorkspace, ORG, TOKEN, type Workspace } from '../../helpers/mirror-check.js';
import { requireBuiltBinary, runCli } from './run-cli.js';

let ws: Workspace | undefined;
beforeAll(() => requireBuiltBinary());
afterEach(async () => {
  await ws?.close();
  ws = undefined;
});

interface Case {
  what: string;
  config: Record<string, unknown>;
  mapping: Record<string, unknown>;
  token: string;
  exit: number;
  /** The words every command must say. */
  words: RegExp;
}

const CASES: Case[] = [
  {
    what: 'a wrong organization header',
    config: { organizationHeader: 'X-Wrong-Organization' },
    mapping: {},
    token: TOKEN,
    exit: 2,
    words: /check "organizationHeader" \(dssync sends the organization id in X-Wrong-Organization/,
  },
  {
    what: 'a data source (by id) that does not exist',
    config: {},
    mapping: { dataSourceId: 'ds_gone', dataSource: undefined },
    token: TOKEN,
    exit: 2,
    words: /data source ds_gone \(mappings\[0\]\.dataSourceId\) does not exist for this organization/,
  },
  { what: 'a refused token', config: {}, mapping: {}, token: 'not-the-token-42', exit: 3, words: /credentials refused \(HTTP 401\)|refused the credentials \(HTTP 401\)/ },
];

describe('a configuration error the service reveals, in every command', () => {
  it.each(CASES)('$what: config check, sync and run give exit $exit and the same advice', async (c) => {
    const w = await createWorkspace({ config: { ...c.config, status: { listen: false } }, mapping: c.mapping });
    ws = w;
    await writeFile(`${w.share}/a.txt`, 'alpha');
    const env = { DSSYNC_TOKEN: c.token, DSSYNC_LOG_LEVEL: 'warn' };

    const check = await runCli(['config', 'check', '--config', w.configPath], env);
    expect(check.stdout).toMatch(c.words);
    expect(check.code).toBe(c.exit === 3 ? 3 : 1);

    const sync = await runCli(['sync', '--config', w.configPath], env);
    expect(sync.code, sync.stdout + sync.stderr).toBe(c.exit);
    expect(sync.stdout + sync.stderr).toMatch(c.words);

    // Before the fix `run` retried for ever (the test's timeout); now it stops, the unit with it.
    const run = await runCli(['run', '--config', w.configPath], env);
    expect(run.code, run.stdout + run.stderr).toBe(c.exit);
    expect(run.stdout + run.stderr).toMatch(c.words);
    expect(run.stdout + run.stderr).toContain(`not retrying (exit ${c.exit})`);
    expect(w.emu.store.listDataSources(ORG).flatMap((d) => w.emu.store.listDocuments(d.data_source_id))).toEqual([]);
  });
});

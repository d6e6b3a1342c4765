/**
 * `dssync config init` as an operator runs it: the built binary against the emulator, on
 * real folders. With flags (a script: nothing asked) and answering its questions on stdin
 * (a typed answer that fails is asked again). The config it writes passes `config check`
 * and a sync mirrors with it; no secret is in it; a refused answer given by a flag ends the
 * command with the exit code every command gives that error.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createWorkspace, fileDocuments, ORG, TOKEN, type Workspace } from '../../helpers/mirror-check.js';
import { BIN, jsonOf, requireBuiltBinary, runCli, runCliWithInput } from './run-cli.js';

const execFileAsync = promisify(execFile);
let ws: Workspace | undefined;
beforeAll(() => requireBuiltBinary());
afterEach(async () => {
  await ws?.close();
  ws = undefined;
});

/**
 * The binary on a terminal (a pty, through Python's pty module): each answer is typed once
 * its question shows, as a person would. Returns the exit code and all the terminal showed.
 */
async function onTerminal(args: readonly string[], dialogue: readonly [question: string, answer: string][], env: Record<string, string>): Promise<{ code: number; screen: string }> {
  const driver = `import json, os, pty, select, sys
args, dialogue, env = json.loads(sys.argv[1]), json.loads(sys.argv[2]), json.loads(sys.argv[3])
pid, fd = pty.fork()
if pid == 0:
    os.execve(args[0], args, env)
screen, at = b'', 0
def more():
    global screen
    r, _, _ = select.select([fd], [], [], 30)
    if not r: raise SystemExit('no output for 30 s; the screen so far:\\n' + screen.decode(errors='replace'))
    try: chunk = os.read(fd, 4096)
    except OSError: chunk = b''
    screen += chunk
    return chunk != b''
for question, answer in dialogue:
    while screen.find(question.encode(), at) < 0:
        if not more(): raise SystemExit('ended before the question ' + question + '\\n' + screen.decode(errors='replace'))
    at = screen.find(question.encode(), at) + len(question)
    os.write(fd, (answer + '\\r').encode())
while more(): pass
_, status = os.waitpid(pid, 0)
print(json.dumps({'code': os.waitstatus_to_exitcode(status), 'screen': screen.decode(errors='replace')}))`;
  const env2 = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/tmp', TERM: 'dumb', ...env };
  // Not spawnSync: the emulator answers from this process.
  const r = await execFileAsync('python3', ['-c', driver, JSON.stringify([process.execPath, BIN, ...args]), JSON.stringify(dialogue), JSON.stringify(env2)], { encoding: 'utf8', timeout: 120_000 }).catch((e: { stderr?: string }) => {
    throw new Error(`the terminal driver failed: ${e.stderr ?? String(e)}`, { cause: e });
  });
  return JSON.parse(r.stdout) as { code: number; screen: string };
}

async function setUp(): Promise<{ w: Workspace; folder: string; target: string }> {
  const w = await createWorkspace();
  ws = w;
  const folder = join(w.share, 'handbook');
  await mkdir(folder, { recursive: true });
  await writeFile(join(folder, 'a.txt'), 'alpha');
  return { w, folder, target: join(w.dir, 'etc', 'config.json') };
}

/** The flags of a script; `extra` adds to them, `baseUrl` replaces the emulator's address. */
function flags(w: Workspace, target: string, folder: string, extra: string[] = [], baseUrl = w.emu.url): string[] {
  return ['config', 'init', '--config', target, '--base-url', baseUrl, '--org', ORG, '--auth', 'static', '--folder', `${folder}=Handbook`, '--connector', 'conn-1', '--state-path', w.statePath, '--status-listen', '127.0.0.1:1', ...extra];
}

describe('dssync config init', () => {
  it('with flags: writes a config without the token that config check passes and a sync mirrors with', async () => {
    const { w, folder, target } = await setUp();
    const r = await runCli(flags(w, target, folder), { DSSYNC_TOKEN: TOKEN });
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toContain('✓ the service accepts the credentials');
    expect(r.stdout).toContain('a new data source "Handbook"');
    const text = await readFile(target, 'utf8');
    expect(text).not.toContain(TOKEN);
    expect(JSON.parse(text)).toMatchObject({ baseUrl: w.emu.url, organizationId: ORG, mappings: [{ path: folder, dataSource: { name: 'Handbook', llmConnectorIds: ['conn-1'] } }] });

    const check = await runCli(['config', 'check', '--config', target, '--json'], { DSSYNC_TOKEN: TOKEN });
    expect(check.code, check.stdout).toBe(0);
    expect(jsonOf<{ ok: boolean }>(check).ok).toBe(true);
    const sync = await runCli(['sync', '--config', target], { DSSYNC_TOKEN: TOKEN });
    expect(sync.code, sync.stdout + sync.stderr).toBe(0);
    const ds = w.emu.store.listDataSources(ORG).find((d) => d.name === 'Handbook');
    expect(fileDocuments(w.emu, ds!.data_source_id).map((d) => d.name)).toEqual(['a.txt']);
  });

  it('answering on stdin: a refused token is asked again, an existing data source is found by name, the token goes to a 0600 file', async () => {
    const { w, folder, target } = await setUp();
    const res = await fetch(`${w.emu.url}/datastore/v1/data-sources`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json', 'x-service-organization-id': ORG },
      body: JSON.stringify({ name: 'Handbook', llm_connector_ids: ['conn-1'] }),
    });
    const existing = { id: ((await res.json()) as { data_source_id: string }).data_source_id };
    const answers = [target, w.emu.url, ORG, '', 'static', 'wrong-token-123', 'static', TOKEN, folder, 'Handbook', ''].join('\n');
    const r = await runCliWithInput(['config', 'init', '--state-path', w.statePath, '--status-listen', '127.0.0.1:1'], `${answers}\n`);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toMatch(/✗ the service refused the credentials \(HTTP 401\)/);
    expect(r.stdout).toContain(`-> data source ${existing.id} ("Handbook")`);
    expect(r.stdout + r.stderr).not.toContain(TOKEN);
    expect(r.stdout + r.stderr).not.toContain('wrong-token-123');
    const tokenFile = join(w.dir, 'etc', 'token');
    // The config holds no secret and the units' dynamic user reads it; the token file is root's alone.
    expect((await stat(target)).mode & 0o777).toBe(0o644);
    expect((await stat(tokenFile)).mode & 0o777).toBe(0o600);
    expect((await readFile(tokenFile, 'utf8')).trim()).toBe(TOKEN);
    const config = JSON.parse(await readFile(target, 'utf8')) as Record<string, unknown>;
    expect(config).toMatchObject({ tokenFile, mappings: [{ path: folder, dataSourceId: existing.id }] });
    expect(JSON.stringify(config)).not.toContain(TOKEN);
    // No DSSYNC_TOKEN: the token comes from the file the config names.
    const check = await runCli(['config', 'check', '--config', target, '--json']);
    expect(check.code, check.stdout).toBe(0);
  });

  it('on a terminal: the typed token is not shown, and the config works', async () => {
    const { w, folder, target } = await setUp();
    const r = await onTerminal(
      ['config', 'init', '--state-path', w.statePath, '--status-listen', '127.0.0.1:1'],
      [
        ['Write the config to', target],
        ['Service address', w.emu.url],
        ['Organization id', ORG],
        ['Header carrying it', ''],
        ['Credential type', ''],
        ['Token (not shown', TOKEN],
        ['Folder to mirror', folder],
        ['Its data source', 'Handbook'],
        ['connector ids', 'conn-1'],
        ['Another folder', ''],
      ],
      {},
    );
    expect(r.code, r.screen).toBe(0);
    expect(r.screen).toContain('✓ the service accepts the credentials');
    expect(r.screen).not.toContain(TOKEN);
    const check = await runCli(['config', 'check', '--config', target, '--json']);
    expect(check.code, check.stdout).toBe(0);
  });

  it.each([
    ['a wrong organization header: 2, with the advice every command gives', ['--org-header', 'X-Wrong-Header'], '', { DSSYNC_TOKEN: TOKEN }, 2, /check "organizationHeader" \(dssync sends the organization id in X-Wrong-Header/],
    ['a refused token: 3, naming where it came from', [], '', { DSSYNC_TOKEN: 'not-the-token-123' }, 3, /refused the credentials \(HTTP 401\).*DSSYNC_TOKEN/],
    ['a path the service has no route under: 2, with the address to use', [], '/api', { DSSYNC_TOKEN: TOKEN }, 2, /baseUrl ".*\/api" looks wrong/],
  ])('%s', async (_what, extra, path, env, code, words) => {
    const { w, folder, target } = await setUp();
    const r = await runCli(flags(w, target, folder, extra, `${w.emu.url}${path}`), env);
    expect(r.code, r.stdout + r.stderr).toBe(code);
    expect(r.stdout + r.stderr).toMatch(words);
    await expect(stat(target)).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('a missing folder, an unanswered question and an existing config are usage errors naming the flag', async () => {
    const { w, folder, target } = await setUp();
    const missing = await runCli(flags(w, target, join(folder, 'nope')), { DSSYNC_TOKEN: TOKEN });
    expect(missing.code).toBe(2);
    expect(missing.stdout + missing.stderr).toContain(`--folder ${join(folder, 'nope')}: the folder`);

    const noConnector = await runCli(flags(w, target, folder).filter((a, i, all) => a !== '--connector' && all[i - 1] !== '--connector'), { DSSYNC_TOKEN: TOKEN });
    expect(noConnector.code).toBe(2);
    expect(noConnector.stderr).toMatch(/the input ended.*give it with --connector/);

    await mkdir(join(target, '..'), { recursive: true });
    await writeFile(target, '{}');
    const exists = await runCli(flags(w, target, folder), { DSSYNC_TOKEN: TOKEN });
    expect(exists.code).toBe(2);
    expect(exists.stderr).toContain('--force');
    expect(await readFile(target, 'utf8')).toBe('{}');
  });
});

/**
 * `dssync config check` as an operator runs it: the built binary, real folders and the
 * emulator. One line per check (✓ / ! / ✗); exit 0 with warnings, 1 when a check fails,
 * 2 for an invalid file, 3 when the credentials are refused. The token never shows.
 * The state-path checks also run in process on real temp files (modes a test can set).
 */
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { checkStatePath } from '../../../src/state/state-check.js';
import { createWorkspace, ORG, TOKEN, type Workspace } from '../../helpers/mirror-check.js';
import { jsonOf, requireBuiltBinary, runCli, type CliResult } from './run-cli.js';
import { corruptStateText, stateFileText } from '../../helpers/state-fixture.js';

interface CheckJson {
  ok: boolean;
  exitCode: number;
  config: { tokenSource: string | null };
  checks: { check: string; level: 'ok' | 'warn' | 'fail'; message: string; mapping?: string; fix?: string }[];
}

let ws: Workspace | undefined;
let tmp: string | undefined;
beforeAll(() => requireBuiltBinary());
afterEach(async () => {
  await ws?.close();
  ws = undefined;
  if (tmp) await rm(tmp, { recursive: true, force: true });
  tmp = undefined;
});

async function writeConfig(w: Workspace, extra: Record<string, unknown>, mappings: Record<string, unknown>[]): Promise<void> {
  const config = {
    baseUrl: w.emu.url,
    organizationId: ORG,
    statePath: w.statePath,
    queue: { requestsPerSecond: 200, concurrency: 4, maxAttempts: 2 },
    // Not the default 8787: a real daemon on this machine must not matter.
    status: { listen: '127.0.0.1:1' },
    ...extra,
    mappings,
  };
  await writeFile(w.configPath, JSON.stringify(config, null, 2), { mode: 0o600 });
}

const check = (w: Workspace, env: Record<string, string> = { DSSYNC_TOKEN: TOKEN }, ...extra: string[]): Promise<CliResult> =>
  runCli(['config', 'check', '--config', w.configPath, ...extra], env);

/** The check lines of the human output, by their symbol. */
function lines(r: CliResult, symbol: '✓' | '!' | '✗'): string[] {
  return r.stdout.split('\n').filter((l) => l.startsWith(`${symbol} `));
}

function expectNoToken(r: CliResult, ...tokens: string[]): void {
  for (const t of [TOKEN, ...tokens]) expect(r.stdout + r.stderr).not.toContain(t);
}

/** Calls the emulator's API directly (setting up what a test needs). */
async function emulatorCall(w: Workspace, method: string, path: string, body: unknown, withOrg = true): Promise<Record<string, unknown>> {
  const res = await fetch(`${w.emu.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json', ...(withOrg ? { 'x-service-organization-id': ORG } : {}) },
    body: JSON.stringify(body),
  });
  if (!res.ok) throw new Error(`${method} ${path}: HTTP ${res.status} ${await res.text()}`);
  return (await res.json()) as Record<string, unknown>;
}

async function createDataSource(w: Workspace, name: string): Promise<string> {
  const r = await emulatorCall(w, 'POST', '/datastore/v1/data-sources', { name, llm_connector_ids: ['conn-1'] });
  return String(r.data_source_id ?? r.id);
}

describe('dssync config check', () => {
  it('passes every check for a synced mapping and reports what it found (exit 0)', { timeout: 60_000 }, async () => {
    ws = await createWorkspace();
    await ws.write('a.txt', 'alpha');
    await ws.write('docs/b.md', '# bravo');
    await ws.write('docs/deep/c.txt', 'charlie');
    await ws.write('.hidden/x.txt', 'not mirrored');
    await writeConfig(ws, {}, [{ id: 'share', path: ws.share, dataSource: { name: 'Share', llmConnectorIds: ['conn-1'] } }]);
    expect((await ws.sync()).code).toBe(0);

    const r = await check(ws);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(lines(r, '!'), r.stdout).toEqual([]);
    expect(lines(r, '✗'), r.stdout).toEqual([]);
    expect(r.stdout).toMatch(/^config file: +.*config\.json$/m);
    expect(r.stdout).toMatch(/^token: +from the DSSYNC_TOKEN environment variable$/m);
    expect(r.stdout).toContain(`✓ ${ws.configPath} is valid (1 mapping)`);
    // The mapped folder, docs and docs/deep; .hidden is excluded and not counted.
    expect(r.stdout).toContain(`✓ mapping share: ${ws.share}: 3 folders, 3 files included`);
    expect(r.stdout).toContain(`✓ ${ws.emu.url} accepts the credentials (organization ${ORG}, 1 data source)`);
    expect(r.stdout).toMatch(/^✓ mapping share: data source \S+ \("Share"\)$/m);
    expect(r.stdout).toMatch(/^✓ 3 folders to watch, \d+ with a margin: \d+% of max_user_watches \d+/m);
    expect(r.stdout).toContain("✓ folders are watched on one inotify instance of dssync's own (its native module loads)");
    expect(r.stdout).toContain('✓ status endpoint 127.0.0.1:1 (this machine only)');
    expect(r.stdout).toContain(`✓ state file ${ws.statePath}: its folder is writable`);
    expect(r.stdout.trimEnd().endsWith('All checks passed.')).toBe(true);
    expectNoToken(r);

    const json = jsonOf<CheckJson>(await check(ws, undefined, '--json'));
    expect(json.ok).toBe(true);
    expect(json.exitCode).toBe(0);
    expect(json.config.tokenSource).toBe('the DSSYNC_TOKEN environment variable');
    // inotify: the watch budget, then which watch a daemon here would use.
    expect(json.checks.map((c) => c.check)).toEqual(['config', 'folder', 'service', 'data-source', 'inotify', 'inotify', 'watch', 'status-listen', 'state', 'identity']);
    // How the folder is watched (issue 12): a temp folder on a local disk gets events.
    expect(json.checks.find((c) => c.check === 'watch')?.message).toMatch(/watched by events|polled every 10 s/);
    expect(json.checks.every((c) => c.level === 'ok')).toBe(true);
  });

  it('fails for a missing folder and an unknown data source id (exit 1)', { timeout: 60_000 }, async () => {
    ws = await createWorkspace();
    const missing = join(ws.dir, 'not-mounted');
    await writeConfig(ws, {}, [{ id: 'gone', path: missing, dataSourceId: 'ds_does_not_exist' }]);
    const r = await check(ws);
    expect(r.code, r.stdout + r.stderr).toBe(1);
    expect(r.stdout).toContain(`✗ mapping gone: the folder ${missing} does not exist`);
    expect(r.stdout).toContain('✗ mapping gone: data source ds_does_not_exist (mappings[0].dataSourceId) does not exist');
    // The local checks still run.
    expect(r.stdout).toMatch(/^✓ 0 folders to watch \(1 mapping not counted: folder unavailable\)/m);
    expect(r.stdout.trimEnd().endsWith('2 checks failed.')).toBe(true);
    expectNoToken(r);
  });

  it('reports refused credentials without printing any token (exit 3)', { timeout: 60_000 }, async () => {
    ws = await createWorkspace();
    await ws.write('a.txt', 'alpha');
    await writeConfig(ws, {}, [{ id: 'share', path: ws.share, dataSource: { name: 'Share', llmConnectorIds: ['conn-1'] } }]);
    const wrong = 'wrong-token-Xy7';
    const r = await check(ws, { DSSYNC_TOKEN: wrong });
    expect(r.code, r.stdout + r.stderr).toBe(3);
    expect(r.stdout).toMatch(/^✗ credentials refused \(HTTP 40[13]\) by .* for organization org-test; data source checks skipped$/m);
    expect(r.stdout).toContain('check the token (from the DSSYNC_TOKEN environment variable)');
    expect(r.stdout).not.toMatch(/mapping share: data source/);
    expectNoToken(r, wrong);

    // The same through a token file: the file is named, its content never shown.
    const tokenFile = join(ws.dir, 'token');
    await writeFile(tokenFile, `${wrong}\n`, { mode: 0o600 });
    const viaFile = await check(ws, { DSSYNC_TOKEN_FILE: tokenFile }, '--json');
    expect(viaFile.code).toBe(3);
    expect(jsonOf<CheckJson>(viaFile).config.tokenSource).toBe(`DSSYNC_TOKEN_FILE ${tokenFile}`);
    expectNoToken(viaFile, wrong);
  });

  it('warns for a data source the App does not use, and one not created yet (exit 0)', { timeout: 60_000 }, async () => {
    ws = await createWorkspace();
    for (const d of ['one', 'two', 'three']) await ws.write(`${d}/a.txt`, 'alpha');
    const enabled = await createDataSource(ws, 'Enabled');
    const other = await createDataSource(ws, 'Other');
    // docs/emulator.md "Apps": the admin route enables an explicit set for an App.
    await emulatorCall(ws, 'PUT', '/_emulator/apps/app-1', { organization_id: ORG, data_source_ids: [enabled] }, false);
    await writeConfig(ws, { appId: 'app-1' }, [
      { id: 'one', path: join(ws.share, 'one'), dataSourceId: enabled },
      { id: 'two', path: join(ws.share, 'two'), dataSourceId: other },
      { id: 'three', path: join(ws.share, 'three'), dataSource: { name: 'Not Yet', llmConnectorIds: ['conn-1'] } },
    ]);
    const r = await check(ws);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toContain(`✓ mapping one: App app-1 uses data source ${enabled}`);
    expect(r.stdout).toContain(`! mapping two: data source ${other} is not enabled for App app-1`);
    expect(r.stdout).toContain(`dssync apps data-sources app-1`);
    expect(r.stdout).toContain('! mapping three: no data source is named "Not Yet" yet: it will be created on the first sync');
    expect(r.stdout).toContain('! mapping three: once the first sync has created its data source, enable it for App app-1');
    expect(lines(r, '✗')).toEqual([]);
    expect(r.stdout.trimEnd().endsWith('No check failed; 3 warnings.')).toBe(true);
    expectNoToken(r);
  });

  it('warns that a non-loopback status address is reachable from other machines', { timeout: 30_000 }, async () => {
    ws = await createWorkspace();
    await ws.write('a.txt', 'alpha');
    await writeConfig(ws, { status: { listen: '0.0.0.0:8799' } }, [{ id: 'share', path: ws.share, dataSource: { name: 'Share', llmConnectorIds: ['conn-1'] } }]);
    const r = await check(ws, undefined, '--json');
    expect(r.code).toBe(0);
    const listen = jsonOf<CheckJson>(r).checks.filter((c) => c.check === 'status-listen');
    expect(listen).toEqual([expect.objectContaining({ level: 'warn', fix: 'set "status": { "listen": "127.0.0.1:8799" }, or add "tokenFile" to "status" to read the page from other machines' })]);
    // Said once, by its check, not again as a load warning.
    expect(jsonOf<CheckJson>(r).checks.filter((c) => c.message.includes('0.0.0.0:8799'))).toHaveLength(1);
  });

  it('exits 2 for an invalid config file, naming the field', { timeout: 30_000 }, async () => {
    ws = await createWorkspace();
    await writeFile(ws.configPath, JSON.stringify({ baseUrl: ws.emu.url, organizationId: ORG, mappings: [{ path: ws.share }] }));
    const r = await check(ws);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('mappings[0]');
    expectNoToken(r);
  });
});

describe('state path checks', () => {
  it('accepts a writable folder, or one to be created under a writable one', async () => {
    tmp = await mkdtemp(join(tmpdir(), 'dssync-check-'));
    expect(await checkStatePath(join(tmp, 'state.json'))).toEqual([expect.objectContaining({ level: 'ok', message: expect.stringContaining('its folder is writable') })]);
    expect(await checkStatePath(join(tmp, 'a', 'b', 'state.json'))).toEqual([
      expect.objectContaining({ level: 'ok', message: expect.stringContaining(`will be created (under ${tmp}, writable)`) }),
    ]);
  });

  it('warns when the state file is readable by every user, or corrupt', async () => {
    tmp = await mkdtemp(join(tmpdir(), 'dssync-check-'));
    const path = join(tmp, 'state.json');
    await writeFile(path, stateFileText());
    await chmod(path, 0o644);
    const open = await checkStatePath(path);
    expect(open.map((r) => r.level)).toEqual(['ok', 'warn']);
    expect(open[1]).toMatchObject({ message: expect.stringContaining('readable by every user'), fix: `chmod 600 ${path}` });

    await writeFile(path, corruptStateText());
    await chmod(path, 0o600);
    const corrupt = await checkStatePath(path);
    expect(corrupt.map((r) => r.level)).toEqual(['ok', 'warn']);
    expect(corrupt[1]?.message).toContain('is corrupt');
  });

  it('fails when the state file\'s folder is a file', async () => {
    tmp = await mkdtemp(join(tmpdir(), 'dssync-check-'));
    await mkdir(join(tmp, 'x'));
    await writeFile(join(tmp, 'x', 'file'), '');
    const r = await checkStatePath(join(tmp, 'x', 'file', 'state.json'));
    expect(r.map((c) => c.level)).toEqual(['fail']);
  });
});

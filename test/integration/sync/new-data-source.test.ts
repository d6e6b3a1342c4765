/**
 * A data source dssync creates (docs/reliability.md, "A data source dssync creates"), with
 * the built CLI against the emulator: born under its provisional name, held from its first
 * claim, named before `dssync sync` ends; two processes creating one at once leave one data
 * source of that name, every file in it once, the other process's deleted. The race is
 * sequenced with a test pause, not timing: A stops before it looks for another data source
 * of its name, B creates and names its own meanwhile.
 */
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { provisionalName } from '../../../src/engine/data-source.js';
import { CONVERGED, ORG, checkFolderConvergence, createWorkspace, fileDocuments, type Workspace } from '../../helpers/mirror-check.js';
import { waitFor } from '../../helpers/wait-for.js';
import { jsonOf, requireBuiltBinary, runCli } from '../cli/run-cli.js';
import { daemonWorkspace, startDaemon, waitConverged, type DaemonProcess } from '../daemon/daemon-process.js';

const PINNED = 'pinned-replicas';

let ws: Workspace | undefined;
const daemons: DaemonProcess[] = [];
beforeAll(() => requireBuiltBinary());
afterEach(async () => {
  for (const d of daemons.splice(0)) await d.kill();
  await ws?.close();
  ws = undefined;
});

const dataSources = (w: Workspace) => w.emu.store.listDataSources(ORG).map((d) => ({ id: d.data_source_id, name: d.name }));

/** A second process's config: the same share, folder and pinned id, its own state. */
async function replica(w: Workspace, name: string): Promise<string> {
  const config = JSON.parse(await readFile(w.configPath, 'utf8')) as Record<string, unknown>;
  const path = join(w.dir, `${name}.json`);
  await writeFile(path, JSON.stringify({ ...config, statePath: join(w.dir, name, 'state.json') }), { mode: 0o600 });
  return path;
}

describe('a data source dssync creates', () => {
  it('is created under its provisional name, held from its first claim, and named before the sync ends', { timeout: 60_000 }, async () => {
    const w = (ws = await createWorkspace({ config: { installationId: PINNED } }));
    for (let i = 0; i < 30; i++) await w.write(`d${i % 3}/f${i}.txt`, `file ${i}\n`);
    const r = await runCli(['sync', '--config', w.configPath, '--json'], { ...w.env, DSSYNC_LOG_LEVEL: 'info' });
    expect(r.code, r.stderr).toBe(0);
    expect(dataSources(w)).toEqual([{ id: jsonOf<{ mappings: { dataSourceId: string }[] }>(r).mappings[0]!.dataSourceId, name: 'Share' }]);
    expect(await checkFolderConvergence(w.emu, w.dataSourceId(), w.share)).toEqual(CONVERGED);
    const logs = r.stderr.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as { msg: string; why?: string });
    expect(logs.some((l) => l.msg.startsWith('created the data source (under its provisional name'))).toBe(true);
    // Taken with its first claim, no settle: the marker was new.
    expect(logs.find((l) => l.msg.endsWith('taken: this process writes'))?.why).toBe('a new lease document');
    expect(logs.some((l) => l.msg === 'data source named "Share"')).toBe(true);
  });

  it('two processes creating it at once: the one named second gives way, deletes its own, and its next sync adopts the other\'s documents', { timeout: 120_000 }, async () => {
    const w = (ws = await createWorkspace({ config: { installationId: PINNED } }));
    for (let i = 0; i < 12; i++) await w.write(`f${i}.txt`, `file ${i}\n`);
    const hooks = join(w.dir, 'hooks');
    await mkdir(hooks);
    // A creates its data source, claims it, uploads, and stops before it looks for another of its name.
    const a = runCli(['sync', '--config', w.configPath, '--json'], { ...w.env, DSSYNC_TEST_HOOKS: `${w.env.DSSYNC_TEST_HOOKS},pause:data-source-naming=${hooks}` });
    await waitFor(() => existsSync(join(hooks, 'data-source-naming.0.paused')), { timeout: 30_000, what: "A's naming" });
    const mine = JSON.parse(await readFile(join(hooks, 'data-source-naming.0.paused'), 'utf8')) as string;
    expect(dataSources(w)).toEqual([{ id: mine, name: provisionalName('Share') }]);

    // B (its own state) finds no data source named Share: it creates its own and names it.
    const b = await runCli(['sync', '--config', await replica(w, 'replica-b'), '--json'], w.env);
    expect(b.code, b.stderr).toBe(0);
    const theirs = jsonOf<{ mappings: { dataSourceId: string }[] }>(b).mappings[0]!.dataSourceId;
    expect(theirs).not.toBe(mine);

    // A looks, finds B's named Share: it deletes its own (with what it sent) and says so.
    await writeFile(join(hooks, 'data-source-naming.0.resume'), '');
    const ra = await a;
    expect(ra.code, ra.stdout + ra.stderr).toBe(1);
    expect(jsonOf<{ mappings: { error?: string }[] }>(ra).mappings[0]?.error).toContain(`another dssync created the data source "Share" (${theirs}) at the same time`);
    expect(dataSources(w)).toEqual([{ id: theirs, name: 'Share' }]);
    expect(await checkFolderConvergence(w.emu, theirs, w.share)).toEqual(CONVERGED);

    // A's next sync follows B's data source (its state records it now): B's documents are its own installation's, nothing is uploaded twice.
    const again = await runCli(['sync', '--config', w.configPath, '--json'], w.env);
    expect(again.code, again.stderr).toBe(0);
    expect(jsonOf<{ mappings: { dataSourceId: string; counts: Record<string, number> }[] }>(again).mappings[0]).toMatchObject({ dataSourceId: theirs, counts: { uploaded: 0 } });
    expect(fileDocuments(w.emu, theirs)).toHaveLength(12);
    expect(await checkFolderConvergence(w.emu, theirs, w.share)).toEqual(CONVERGED);
  });

  it('a daemon that gave way mirrors into the other data source once its lease is free: one data source, every file once', { timeout: 120_000 }, async () => {
    const w = (ws = await daemonWorkspace({ config: { installationId: PINNED } }));
    for (let i = 0; i < 12; i++) await w.write(`f${i}.txt`, `file ${i}\n`);
    const hooks = join(w.dir, 'hooks');
    await mkdir(hooks);
    const a = await startDaemon(w, { env: { DSSYNC_TEST_HOOKS: `${w.env.DSSYNC_TEST_HOOKS},pause:data-source-naming=${hooks}` } });
    daemons.push(a);
    await waitFor(() => existsSync(join(hooks, 'data-source-naming.0.paused')), { timeout: 30_000, what: "A's naming" });
    const b = await runCli(['sync', '--config', await replica(w, 'replica-b'), '--json'], w.env);
    expect(b.code, b.stderr).toBe(0);
    const theirs = jsonOf<{ mappings: { dataSourceId: string }[] }>(b).mappings[0]!.dataSourceId;

    await writeFile(join(hooks, 'data-source-naming.0.resume'), '');
    await waitFor(async () => (await a.status()).mappings[0]?.dataSourceId === theirs && (await a.status()).mappings[0]?.lease?.state === 'held', { timeout: 60_000, what: 'A mirrors into B\'s data source' });
    await w.write('after.txt', 'written after the race\n');
    await waitConverged(w, 'the folder, mirrored by A into B\'s data source');
    expect(dataSources(w)).toEqual([{ id: theirs, name: 'Share' }]);
    expect(fileDocuments(w.emu, theirs)).toHaveLength(13);
    expect(a.logs().some((l) => l.msg.startsWith('another dssync created the data source "Share"'))).toBe(true);
    // Its own deletion is not taken for a data source deleted in the App.
    expect(a.logs().some((l) => l.msg.includes('no longer exists'))).toBe(false);
  });
});

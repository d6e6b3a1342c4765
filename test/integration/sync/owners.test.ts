/**
 * Issue 9, defect 6 with the built CLI against the emulator: two configs, each with its own
 * state file, mapping different folders to one data source with prune "all", never delete
 * each other's documents; and one config with two mappings on one data source is refused.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createWorkspace, type Workspace, fileDocuments } from '../../helpers/mirror-check.js';
import { requireBuiltBinary, runCli } from '../cli/run-cli.js';

let ws: Workspace | undefined;
beforeAll(() => requireBuiltBinary());
afterEach(async () => {
  await ws?.close();
  ws = undefined;
});

describe('another owner on the same data source (issue 9, defect 6)', () => {
  it('two configs with their own state files keep each other\'s documents, even with prune all', { timeout: 60_000 }, async () => {
    ws = await createWorkspace({ mapping: { prune: 'all' } });
    await ws.write('a.txt', 'first host a');
    await ws.write('b.txt', 'first host b');
    expect((await ws.sync()).code).toBe(0);
    const dsId = ws.dataSourceId();

    // A copy of the config on "another host": its own folder and state file, the same
    // data source by name, so the same default mapping id (`name:Share`) as the first's.
    const share2 = join(ws.dir, 'share2');
    await mkdir(share2);
    await writeFile(join(share2, 'c.txt'), 'second host c');
    const config2 = join(ws.dir, 'config2.json');
    const first = JSON.parse(await import('node:fs/promises').then((f) => f.readFile(ws!.configPath, 'utf8'))) as Record<string, unknown>;
    await writeFile(
      config2,
      JSON.stringify({ ...first, statePath: join(ws.dir, 'state2', 'state.json'), mappings: [{ path: share2, dataSource: { name: 'Share', llmConnectorIds: ['conn-1'] }, prune: 'all' }] }),
      { mode: 0o600 },
    );
    const second = await runCli(['sync', '--config', config2], ws.env);
    // The first host's documents are reported as another owner's: not "in sync", nothing deleted.
    expect(second.stdout + second.stderr).toMatch(/conflict: document .* another dssync installation/);
    const names = () => fileDocuments(ws!.emu, dsId).map((d) => d.name).sort();
    expect(names()).toEqual(['a.txt', 'b.txt', 'c.txt']);

    // And the first config, with prune all, leaves the second's document alone.
    await ws.sync();
    await runCli(['sync', '--config', config2], ws.env);
    expect(names()).toEqual(['a.txt', 'b.txt', 'c.txt']);
  });

  it('one config with two mappings on one data source is refused by sync and config check', { timeout: 60_000 }, async () => {
    ws = await createWorkspace();
    const share2 = join(ws.dir, 'share2');
    await mkdir(share2);
    const cfg = JSON.parse(await import('node:fs/promises').then((f) => f.readFile(ws!.configPath, 'utf8'))) as { mappings: Record<string, unknown>[] };
    cfg.mappings = [
      { path: ws.share, id: 'one', dataSourceId: 'ds-shared' },
      { path: share2, id: 'two', dataSourceId: 'ds-shared' },
    ];
    await writeFile(ws.configPath, JSON.stringify(cfg), { mode: 0o600 });
    const check = await ws.cli(['config', 'check', '--config', ws.configPath]);
    expect(check.code).not.toBe(0);
    expect(check.stdout + check.stderr).toMatch(/mappings "one", "two" write into the same data source/);
    const sync = await ws.sync();
    expect(sync.code).not.toBe(0);
    expect(sync.stdout + sync.stderr).toMatch(/write into the same data source/);
  });

  it('refuses one mapping by name and one by id of the same data source (config check, sync, run: exit 2, both named), before writing anything', { timeout: 90_000 }, async () => {
    ws = await createWorkspace();
    await ws.write('a.txt', 'shared a');
    // The data source exists (by name) before the config names it twice.
    expect((await ws.sync()).code).toBe(0);
    const dsId = ws.dataSourceId();
    const before = ws.emu.store.listDocuments(dsId).length;
    const share2 = join(ws.dir, 'share2');
    await mkdir(share2);
    await writeFile(join(share2, 'b.txt'), 'second b');
    const cfg = JSON.parse(await import('node:fs/promises').then((f) => f.readFile(ws!.configPath, 'utf8'))) as { mappings: Record<string, unknown>[] };
    const byId = { path: share2, id: 'by-id', dataSourceId: dsId };
    for (const mappings of [
      [{ ...cfg.mappings[0], id: 'by-name' }, byId],
      [byId, { path: ws.share, id: 'by-name' , dataSourceId: dsId }],
    ]) {
      await writeFile(ws.configPath, JSON.stringify({ ...cfg, mappings }), { mode: 0o600 });
      const check = await ws.cli(['config', 'check', '--config', ws.configPath]);
      expect(check.code, check.stdout + check.stderr).toBe(2);
      expect(check.stdout).toMatch(/mappings "(by-name", "by-id|by-id", "by-name)" write into the same data source \(id "[^"]+"\)/);
      const sync = await ws.sync();
      expect(sync.code, sync.stdout + sync.stderr).toBe(2);
      expect(sync.stdout + sync.stderr).toMatch(/mappings "(by-name", "by-id|by-id", "by-name)" write into the same data source/);
      const run = await runCli(['run', '--config', ws.configPath], ws.env);
      expect(run.code, run.stdout + run.stderr).toBe(2);
      expect(run.stdout + run.stderr).toMatch(/mappings "(by-name", "by-id|by-id", "by-name)" write into the same data source/);
      // Nothing was written into the data source by either mapping.
      expect(ws.emu.store.listDocuments(dsId)).toHaveLength(before);
    }
  });
});

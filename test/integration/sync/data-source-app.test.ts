/**
 * A data source renamed or deleted in the App (issue 23, defects 8 and 9), with the built
 * CLI against the emulator: `dssync datasources update --name` / `delete`, then `dssync sync`.
 * A rename is followed by the recorded id (no second data source under the old name) and
 * named in the report; a deleted one is created again by name and everything uploaded.
 */
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { CONVERGED, ORG, checkFolderConvergence, createWorkspace, type Workspace } from '../../helpers/mirror-check.js';
import { jsonOf, requireBuiltBinary } from '../cli/run-cli.js';

interface SyncJson {
  ok: boolean;
  mappings: { dataSourceId?: string; ok: boolean; counts?: Record<string, number>; notices?: string[]; error?: string }[];
}

let ws: Workspace | undefined;
beforeAll(() => requireBuiltBinary());
afterEach(async () => {
  await ws?.close();
  ws = undefined;
});

function named(w: Workspace, name: string): string[] {
  return w.emu.store
    .listDataSources(ORG)
    .filter((d) => d.name === name)
    .map((d) => d.data_source_id);
}

describe('a data source renamed or deleted in the App', () => {
  it('renamed: the next sync follows it by id, keeps it in sync, creates none under the old name and names the rename', { timeout: 60_000 }, async () => {
    const w = (ws = await createWorkspace());
    await w.write('a.txt', 'alpha\n');
    await w.write('b.txt', 'beta\n');
    expect((await w.sync()).code).toBe(0);
    const id = w.dataSourceId();

    const renamed = await w.cli(['datasources', 'update', id, '--name', 'Share (archive)', '--config', w.configPath]);
    expect(renamed.code, renamed.stderr).toBe(0);
    await w.write('c.txt', 'gamma\n');
    await rm(join(w.share, 'a.txt'));

    const r = await w.sync('--json');
    expect(r.code, r.stdout + r.stderr).toBe(0);
    const m = jsonOf<SyncJson>(r).mappings[0];
    expect(m?.dataSourceId).toBe(id);
    expect(m?.notices?.join('\n')).toContain(`data source ${id} was renamed to "Share (archive)" in the App`);
    expect(m?.notices?.join('\n')).toContain('dssync follows it by id');
    expect(named(w, 'Share')).toEqual([]);
    expect(await checkFolderConvergence(w.emu, id, w.share)).toEqual(CONVERGED);

    // The human report says it too, every sync until it is settled.
    const human = await w.sync();
    expect(human.code).toBe(0);
    expect(human.stdout).toMatch(/NOTE: data source \S+ was renamed to "Share \(archive\)" in the App/);

    // Renamed back: silent again.
    expect((await w.cli(['datasources', 'update', id, '--name', 'Share', '--config', w.configPath])).code).toBe(0);
    const back = await w.sync('--json');
    expect(jsonOf<SyncJson>(back).mappings[0]?.notices).toBeUndefined();
  });

  it('deleted: the next sync says so, creates it again by name and uploads every file', { timeout: 60_000 }, async () => {
    const w = (ws = await createWorkspace());
    for (const n of ['a.txt', 'b.txt', 'sub/c.txt']) await w.write(n, `${n}\n`);
    expect((await w.sync()).code).toBe(0);
    const old = w.dataSourceId();

    const del = await w.cli(['datasources', 'delete', old, '--yes', '--config', w.configPath]);
    expect(del.code, del.stderr).toBe(0);

    const r = await w.sync('--json');
    expect(r.code, r.stdout + r.stderr).toBe(0);
    const m = jsonOf<SyncJson>(r).mappings[0];
    const now = w.dataSourceId();
    expect(now).not.toBe(old);
    expect(named(w, 'Share')).toEqual([now]);
    expect(m?.counts?.uploaded).toBe(3);
    expect(m?.notices?.join('\n')).toMatch(new RegExp(`data source ${old}, recorded for this mapping, no longer exists \\(deleted in the App\\?\\); created a new one, ${now}, named "Share"; the state's 3 record\\(s\\) of ${old} are dropped`));
    expect(await checkFolderConvergence(w.emu, now, w.share)).toEqual(CONVERGED);
  });
});

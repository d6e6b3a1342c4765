/**
 * Upgrades and downgrades of the state file (docs/upgrading.md), with the built CLI and the
 * emulator: a state in the previous format (3, as dssync 0.1.0 wrote it: no identity in the
 * header, documents marked with the id derived from host and state path) loads, is rewritten
 * in the current format and syncs with no upload; a state of a newer format is refused
 * (exit 2: the operator must act, so the units do not restart it; docs/cli.md "Exit codes")
 * with a message naming both formats and the release to install, and left as it was, as
 * is one of format 1 or 2 (one JSON object, no longer read: issue 27.7); a state locked by a live process is exit 1 (a later start may find it free).
 */
import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { installationIdFor } from '../../../src/engine/installation.js';
import { encodeStateToString } from '../../../src/state/encoder.js';
import { acquireLock } from '../../../src/state/lock.js';
import { readStateFile } from '../../../src/state/store.js';
import { CONVERGED, checkConvergence, createWorkspace, type Workspace, fileDocuments } from '../../helpers/mirror-check.js';
import { toFormat3 } from '../../helpers/state-v3.js';
import { jsonOf, requireBuiltBinary, runCli } from '../cli/run-cli.js';

interface SyncJson {
  ok: boolean;
  mappings: { counts: Record<string, number> }[];
}

let ws: Workspace | undefined;
beforeAll(() => requireBuiltBinary());
afterEach(async () => {
  await ws?.close();
  ws = undefined;
});

describe('the state file across versions', () => {
  it('a format-3 state (dssync 0.1.0) loads, is rewritten as format 4 and syncs with no upload', { timeout: 60_000 }, async () => {
    ws = await createWorkspace();
    for (const n of ['a.txt', 'b.md', 'sub/c.txt']) await ws.write(n, `${n}\n`);
    // 0.1.0 marked its documents with the id derived from the host and the state's path.
    const derived = installationIdFor(ws.statePath, hostname());
    const first = await runCli(['sync', '--config', ws.configPath, '--json'], { ...ws.env, DSSYNC_INSTALLATION_ID: derived });
    expect(first.code, first.stderr).toBe(0);
    expect(jsonOf<SyncJson>(first).mappings[0]?.counts.uploaded).toBe(3);
    // The state as 0.1.0 left it: a snapshot in format 3 (no identity), no journal after it, no identity file.
    const state = await readStateFile(ws.statePath);
    expect(state?.identity?.installationId).toBe(derived);
    const old = toFormat3(encodeStateToString({ ...state!, identity: undefined }));
    expect(old.split('\n')[0]).toMatch(/^dssync-state 3 \{"journalSeq":\d+\}$/);
    await writeFile(ws.statePath, old);
    await rm(`${ws.statePath}.journal`, { force: true });
    // (0.1.0 wrote no identity file: one beside a state without an identity is used.)
    await rm(`${ws.statePath}.identity.json`, { force: true });
    const uploadsBefore = fileDocuments(ws.emu, ws.dataSourceId()).length;

    const second = await ws.sync('--json');
    expect(second.code, second.stderr).toBe(0);
    const counts = jsonOf<SyncJson>(second).mappings[0]?.counts;
    expect(counts).toMatchObject({ uploaded: 0, replaced: 0, updated: 0, deleted: 0, unchanged: 3 });
    expect(fileDocuments(ws.emu, ws.dataSourceId()).length).toBe(uploadsBefore);
    // Rewritten in format 4 at once; the identity derived as 0.1.0's documents carry it.
    expect((await readFile(ws.statePath, 'utf8')).startsWith('dssync-state 5 {"needs":"0.3.0",')).toBe(true);
    expect((await readStateFile(ws.statePath))?.identity).toEqual({ installationId: derived, origin: 'derived', formerIds: [] });
  });

  it('a format-3 state (dssync 0.1.0) started under a new host name: its documents stay ours, re-marked; the old id is kept, so a later run recovers a document of it the state never recorded', { timeout: 90_000 }, async () => {
    ws = await createWorkspace();
    for (const n of ['a.txt', 'b.md', 'sub/c.txt']) await ws.write(n, `${n}\n`);
    // 0.1.0 on the host before the move marked its documents with the id derived from that host name.
    const old = installationIdFor(ws.statePath, 'host-before-the-move');
    const now = installationIdFor(ws.statePath, hostname());
    expect(old).not.toBe(now);
    expect((await runCli(['sync', '--config', ws.configPath], { ...ws.env, DSSYNC_INSTALLATION_ID: old })).code).toBe(0);
    const state = await readStateFile(ws.statePath);
    await writeFile(ws.statePath, toFormat3(encodeStateToString({ ...state!, identity: undefined })));
    await rm(`${ws.statePath}.journal`, { force: true });
    await rm(`${ws.statePath}.identity.json`, { force: true });
    await ws.write('a.txt', 'a.txt edited\n');
    await rm(`${ws.share}/b.md`);

    // The first start in the container: nothing uploaded again, the changed file replaced, the deleted one's document deleted.
    const moved = await ws.sync('--json');
    expect(moved.code, moved.stderr).toBe(0);
    expect(jsonOf<SyncJson>(moved).mappings[0]?.counts).toMatchObject({ uploaded: 0, replaced: 1, deleted: 1 });
    const installations = () => fileDocuments(ws!.emu, ws!.dataSourceId()).map((d) => `${String(d.metadata?.['dssync_path'])} ${String(d.metadata?.['dssync_installation'])}`).sort();
    expect(installations()).toEqual([`a.txt ${now}`, `sub/c.txt ${now}`]);
    expect((await readStateFile(ws.statePath))?.identity).toEqual({ installationId: now, origin: 'derived', formerIds: [old] });
    expect(JSON.parse(await readFile(`${ws.statePath}.identity.json`, 'utf8'))).toMatchObject({ formerIds: [old] });

    // The old host, still running during the move, uploaded one more file of the share (its own folder and state).
    const oldHost = join(ws.dir, 'old-host');
    await mkdir(join(oldHost, 'share'), { recursive: true });
    await writeFile(join(oldHost, 'share', 'late.txt'), 'late\n');
    await ws.write('late.txt', 'late\n');
    const config = JSON.parse(await readFile(ws.configPath, 'utf8')) as { statePath: string; mappings: { path: string }[] };
    await writeFile(join(oldHost, 'config.json'), JSON.stringify({ ...config, statePath: join(oldHost, 'state.json'), mappings: [{ ...config.mappings[0], path: join(oldHost, 'share') }] }));
    // (It sees the container's documents as another installation's: reported, exit 1.)
    await runCli(['sync', '--config', join(oldHost, 'config.json')], { ...ws.env, DSSYNC_INSTALLATION_ID: old });
    expect(installations()).toContain(`late.txt ${old}`);

    // A later run: no document it records carries the old id any more; the kept former id makes late.txt's ours.
    const later = await ws.sync('--json');
    expect(later.code, later.stderr).toBe(0);
    expect(jsonOf<SyncJson>(later).mappings[0]?.counts).toMatchObject({ uploaded: 0, deleted: 0 });
    expect(installations()).toEqual([`a.txt ${now}`, `late.txt ${now}`, `sub/c.txt ${now}`]);
  });

  it('a 0.1.0 state restored on a new host after a later run lost an upload: the upload left under its marked name, of the old id, is deleted as ours (sim seed 4031)', { timeout: 90_000 }, async () => {
    ws = await createWorkspace();
    await ws.write('a.txt', 'a.txt\n');
    const old = installationIdFor(ws.statePath, 'host-before-the-move');
    const onOldHost = { ...ws.env, DSSYNC_INSTALLATION_ID: old };
    expect((await runCli(['sync', '--config', ws.configPath], onOldHost)).code).toBe(0);
    // The backup: the state as 0.1.0 left it.
    const backup = toFormat3(encodeStateToString({ ...(await readStateFile(ws.statePath))!, identity: undefined }));
    // A later run on the old host loses the answer of an upload; the service commits it afterwards, under its marked name.
    await ws.write('b.txt', 'b.txt\n');
    ws.emu.setFaults({ holdUploads: true });
    expect((await runCli(['sync', '--config', ws.configPath], onOldHost)).code).not.toBe(0);
    ws.emu.setFaults({});
    expect(ws.emu.commitHeld()).toBeGreaterThan(0);
    const names = (): string[] => fileDocuments(ws!.emu, ws!.dataSourceId()).map((d) => d.name ?? '').sort();
    expect(names().filter((n) => n.startsWith('.dssync-upload-')).length).toBeGreaterThan(0);
    // The backup restored on the new host: no intent names the upload, and the id is derived from the new host name.
    await writeFile(ws.statePath, backup);
    await rm(`${ws.statePath}.journal`, { force: true });
    await rm(`${ws.statePath}.identity.json`, { force: true });

    const moved = await ws.sync('--json');
    expect(moved.code, moved.stderr).toBe(0);
    expect((await readStateFile(ws.statePath))?.identity).toMatchObject({ installationId: installationIdFor(ws.statePath, hostname()), formerIds: [old] });
    expect(jsonOf<SyncJson>(moved).mappings[0]?.counts).toMatchObject({ uploaded: 1, deleted: 3 });
    expect(names()).toEqual(['a.txt', 'b.txt']);
    expect(await checkConvergence(ws)).toEqual(CONVERGED);
  });

  /**
   * A state file refused with exit 2 by every command that reads it (sync, run, adopt,
   * identity reset, status: one registry, errors/codes.ts), left as it was, nothing moved
   * aside (even with onCorrupt 'reset'), nothing sent.
   */
  const refusals: { name: string; text: string; says: (statePath: string) => string[] }[] = [
    {
      name: 'a state of a newer format is refused with exit 2, naming both formats and the release to install, and left alone',
      text: 'dssync-state 6 {"needs":"0.4.0","journalSeq":4,"shape":"unknown to 0.3.0"}\n{"mapping":"ds:x"}\nend 2 00000000\n',
      says: (p) => [`state file ${p} is in state format 6, written by dssync 0.4.0 or newer; this dssync reads formats up to 5 (that of dssync 0.3.0): install dssync 0.4.0 or newer`],
    },
    {
      name: 'a state of format 1 or 2 (one JSON object, no longer read) is refused with exit 2, naming the release that reads it, and left alone',
      text: '{"version":2,"journalSeq":0,"mappings":{"ds:x":{"dataSourceId":"ds_1","root":"/srv","intents":{},"rejected":{},"files":[]}}}',
      says: (p) => [`state file ${p} is one JSON object: state format 1 or 2 (development builds of dssync 0.1.0), which this dssync no longer reads`, 'Run dssync 0.3.0 once with this state'],
    },
  ];
  for (const { name, text, says } of refusals) {
    it(name, { timeout: 60_000 }, async () => {
      ws = await createWorkspace();
      await ws.write('a.txt', 'alpha\n');
      await mkdir(dirname(ws.statePath), { recursive: true });
      await writeFile(ws.statePath, text);
      const c = ['--config', ws.configPath];
      for (const args of [['sync', ...c], ['run', ...c], ['adopt', ...c, '--mapping', 'name:Share'], ['identity', 'reset', ...c], ['status', ...c]]) {
        const r = await ws.cli(args);
        expect(r.code, `${args[0]}: ${r.stderr}`).toBe(2);
        for (const words of says(ws.statePath)) expect(r.stderr).toContain(words);
        expect(await readFile(ws.statePath, 'utf8')).toBe(text);
      }
      expect((await readdir(dirname(ws.statePath))).filter((n) => n.includes('.corrupt-'))).toEqual([]);
      expect(ws.emu.store.listDataSources('org-test')).toHaveLength(0);
    });
  }

  it('a state locked by a live process is exit 1 for every command that locks it (sync, run, adopt, identity reset), naming the holder', { timeout: 60_000 }, async () => {
    ws = await createWorkspace();
    await ws.write('a.txt', 'alpha\n');
    await mkdir(dirname(ws.statePath), { recursive: true });
    // This test's own process holds the lock: alive for as long as the commands run.
    const lock = await acquireLock(ws.statePath);
    try {
      const c = ['--config', ws.configPath];
      for (const args of [['sync', ...c], ['run', ...c], ['adopt', ...c, '--mapping', 'name:Share'], ['identity', 'reset', ...c]]) {
        const r = await ws.cli(args);
        expect(r.code, `${args[0]}: ${r.stderr}`).toBe(1);
        expect(r.stderr).toContain(`is held by process ${process.pid}`);
      }
    } finally {
      await lock.release();
    }
  });
});

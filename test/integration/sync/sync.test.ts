/**
 * `dssync sync` as an operator runs it: the built binary, a real folder under a temp dir,
 * the emulator over loopback HTTP.
 */
import { rename, rm, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { CONVERGED, checkConvergence, createWorkspace, writeRequests, SYNC_LEASE_WRITES, TOKEN, type Workspace, fileDocuments, filesUploaded } from '../../helpers/mirror-check.js';
import { jsonOf, requireBuiltBinary, runCli } from '../cli/run-cli.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { corruptStateText } from '../../helpers/state-fixture.js';

interface SyncJson {
  ok: boolean;
  mappings: { ok: boolean; counts: Record<string, number>; skipped: { path: string; reason: string }[]; failures: { path: string; message: string; status?: number }[]; blocked?: { kind: string; message: string }; plan?: { op: string; path: string; from?: string }[]; error?: string }[];
}

let ws: Workspace | undefined;
beforeAll(() => requireBuiltBinary());
afterEach(async () => {
  await ws?.close();
  ws = undefined;
});

const AWKWARD_NAMES = [
  'with space.txt',
  `quote's "double".md`,
  'hash#1.txt',
  'percent%20sign.txt',
  'Réunion d’équipe – procès-verbal.txt',
  `${'deep/'.repeat(12)}${'long-name-'.repeat(10)}.txt`,
];

describe('dssync sync', () => {
  it('mirrors a folder, then a second pass makes no remote write', { timeout: 60_000 }, async () => {
    ws = await createWorkspace();
    for (const [i, name] of AWKWARD_NAMES.entries()) await ws.write(name, `file ${i}\n`);
    // The same name in NFD on disk is the NFC identity.
    await ws.write('cafe\u0301.txt', 'nfd name\n');
    await ws.write('sub/notes.md', '# notes\n');
    await ws.write('.hidden/secret.txt', 'never sent');
    await ws.write('~$lock.docx', 'office lock');
    await ws.write('image.png', 'not a document type');

    const first = await ws.sync('--json');
    expect(first.code, first.stderr).toBe(0);
    const report = jsonOf<SyncJson>(first);
    expect(report.ok).toBe(true);
    expect(report.mappings[0]?.counts.uploaded).toBe(AWKWARD_NAMES.length + 2);
    expect(await checkConvergence(ws)).toEqual(CONVERGED);
    const names = fileDocuments(ws.emu, ws.dataSourceId()).map((d) => d.name);
    expect(names).toContain('café.txt'.normalize('NFC'));
    expect(names).toContain('Réunion d’équipe – procès-verbal.txt');

    // One upload request for the 8 files (batch of 20), one update per document; and the lease's marker.
    expect(ws.emu.stats().uploads).toBe(2);

    const writesBefore = writeRequests(ws.emu);
    const listings = (): number => Object.entries(ws!.emu.stats().byRoute).filter(([k]) => /^GET .*\/documents$/.test(k)).reduce((n, [, v]) => n + v, 0);
    const listingsBefore = listings();
    const second = await ws.sync('--json');
    expect(second.code).toBe(0);
    expect(jsonOf<SyncJson>(second).mappings[0]?.counts.unchanged).toBe(AWKWARD_NAMES.length + 2);
    // None for a document: the lease's claim and release only.
    expect(writeRequests(ws.emu)).toBe(writesBefore + SYNC_LEASE_WRITES);
    // One listing, the pass's own: the lease reads the marker it remembered instead of listing (issue 39).
    expect(listings() - listingsBefore).toBe(1);
  });

  it('carries edits, renames, folder moves and deletions over; renamed documents keep their id', { timeout: 60_000 }, async () => {
    ws = await createWorkspace();
    await ws.write('a.txt', 'alpha');
    await ws.write('b.txt', 'bravo');
    await ws.write('c.txt', 'charlie');
    await ws.write('dir/x.md', 'x-ray');
    await ws.write('dir/sub/y.md', 'yankee');
    expect((await ws.sync()).code).toBe(0);
    const idOf = (path: string) => fileDocuments(ws!.emu, ws!.dataSourceId()).find((d) => d.metadata?.dssync_path === path)?.document_id;
    const idB = idOf('b.txt');
    const idY = idOf('dir/sub/y.md');

    await ws.write('a.txt', 'alpha, edited');
    await rename(join(ws.share, 'b.txt'), join(ws.share, 'b-renamed.txt'));
    await rm(join(ws.share, 'c.txt'));
    await rename(join(ws.share, 'dir'), join(ws.share, 'moved'));
    // a.txt's new content is older than the stability window (2 s) when the sync looks.
    await sleep(2_100);

    const dry = await ws.sync('--dry-run', '--json');
    expect(dry.code).toBe(0);
    const plan = jsonOf<SyncJson>(dry).mappings[0]?.plan?.map((p) => `${p.op} ${p.from ? `${p.from} -> ` : ''}${p.path}`).sort();
    expect(plan).toEqual(['delete c.txt', 'rename b.txt -> b-renamed.txt', 'rename dir/sub/y.md -> moved/sub/y.md', 'rename dir/x.md -> moved/x.md', 'replace a.txt']);

    const uploadsBefore = filesUploaded(ws.emu);
    const r = await ws.sync('--json');
    expect(r.code, r.stderr).toBe(0);
    expect(jsonOf<SyncJson>(r).mappings[0]?.counts).toMatchObject({ replaced: 1, renamed: 3, deleted: 1 });
    expect(filesUploaded(ws.emu) - uploadsBefore).toBe(1);
    expect(idOf('b-renamed.txt')).toBe(idB);
    expect(idOf('moved/sub/y.md')).toBe(idY);
    expect(await checkConvergence(ws)).toEqual(CONVERGED);
  });

  it('rebuilds a deleted state file from the documents by itself when its identity file is left, uploading nothing', { timeout: 60_000 }, async () => {
    ws = await createWorkspace();
    for (let i = 0; i < 30; i++) await ws.write(`f${i}.txt`, `content ${i}`);
    expect((await ws.sync()).code).toBe(0);
    // The state on disk is a snapshot and its journal: lose both; <statePath>.identity.json stays.
    await rm(ws.statePath, { force: true });
    await rm(`${ws.statePath}.journal`, { force: true });
    const uploads = filesUploaded(ws.emu);
    const r = await ws.sync('--json');
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.stderr).toMatch(/is missing: kept the installation's identity/);
    expect(jsonOf<SyncJson>(r).mappings[0]?.counts).toMatchObject({ uploaded: 0, deleted: 0, unchanged: 30 });
    expect(filesUploaded(ws.emu)).toBe(uploads);
    expect(await checkConvergence(ws)).toEqual(CONVERGED);
  });

  it('rebuilds a state lost with its identity file after one dssync adopt, uploading nothing', { timeout: 60_000 }, async () => {
    ws = await createWorkspace();
    for (let i = 0; i < 30; i++) await ws.write(`f${i}.txt`, `content ${i}`);
    expect((await ws.sync()).code).toBe(0);
    for (const f of ['', '.journal', '.identity.json']) await rm(`${ws.statePath}${f}`, { force: true });
    const uploads = filesUploaded(ws.emu);
    // A new state draws a new id: it holds every upload, names the command (issue 23)...
    const held = await ws.sync();
    expect(held.code).toBe(1);
    expect(held.stdout).toMatch(/dssync adopt --config F --mapping name:Share/);
    // ...which records the documents; the pass then adopts them, uploading nothing.
    expect((await ws.cli(['adopt', '--config', ws.configPath, '--mapping', 'name:Share'])).code).toBe(0);
    const r = await ws.sync('--json');
    expect(r.code).toBe(0);
    expect(jsonOf<SyncJson>(r).mappings[0]?.counts.adopted).toBe(30);
    expect(filesUploaded(ws.emu)).toBe(uploads);
    expect(await checkConvergence(ws)).toEqual(CONVERGED);
  });

  it('recovers from a corrupt state file by itself (its identity kept beside it), without re-uploading', { timeout: 60_000 }, async () => {
    ws = await createWorkspace();
    for (let i = 0; i < 5; i++) await ws.write(`f${i}.txt`, `content ${i}`);
    expect((await ws.sync()).code).toBe(0);
    await writeFile(ws.statePath, corruptStateText());
    const uploads = filesUploaded(ws.emu);
    const r = await ws.sync();
    // Moved aside, rebuilt with the identity file's id and sessions: no adopt needed (issue 23).
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.stderr).toMatch(/corrupt/);
    expect(r.stdout).not.toMatch(/dssync adopt/);
    expect(filesUploaded(ws.emu)).toBe(uploads);
    expect(await checkConvergence(ws)).toEqual(CONVERGED);
  });

  it('converges under 5xx errors, rate limits and lost answers, with no duplicate', { timeout: 120_000 }, async () => {
    ws = await createWorkspace({ emulator: { faults: { errorRate: 0.15, ambiguousRate: 0.1, rateLimitRps: 40, seed: 7 } } });
    for (let i = 0; i < 60; i++) await ws.write(`dir${i % 4}/f${i}.txt`, `content ${i}`);
    let code: number | null = 1;
    for (let attempt = 0; attempt < 6 && code !== 0; attempt++) code = (await ws.sync()).code;
    expect(code).toBe(0);
    const stats = ws.emu.stats();
    expect(stats.injectedErrors + stats.ambiguous + stats.rateLimited).toBeGreaterThan(0);
    expect(await checkConvergence(ws)).toEqual(CONVERGED);
  });

  it('treats a missing or emptied folder as an outage: nothing deleted', { timeout: 60_000 }, async () => {
    ws = await createWorkspace();
    for (let i = 0; i < 3; i++) await ws.write(`f${i}.txt`, `content ${i}`);
    expect((await ws.sync()).code).toBe(0);

    await rename(ws.share, `${ws.share}.away`);
    const missing = await ws.sync();
    expect(missing.code).toBe(1);
    expect(missing.stdout).toMatch(/is missing.*outage/);
    expect(fileDocuments(ws.emu, ws.dataSourceId())).toHaveLength(3);

    await mkdir(ws.share);
    const empty = await ws.sync();
    expect(empty.code).toBe(1);
    expect(empty.stdout).toMatch(/is empty.*--allow-mass-delete/);
    expect(fileDocuments(ws.emu, ws.dataSourceId())).toHaveLength(3);

    const allowed = await ws.sync('--allow-mass-delete');
    expect(allowed.code).toBe(0);
    expect(fileDocuments(ws.emu, ws.dataSourceId())).toHaveLength(0);
  });

  it('refuses a pass that would delete more than maxDeletePercent, unless allowed', { timeout: 60_000 }, async () => {
    ws = await createWorkspace({ mapping: { maxDeletePercent: 50 } });
    for (let i = 0; i < 30; i++) await ws.write(`f${i}.txt`, `content ${i}`);
    expect((await ws.sync()).code).toBe(0);
    for (let i = 0; i < 20; i++) await rm(join(ws.share, `f${i}.txt`));
    const blocked = await ws.sync('--json');
    expect(blocked.code).toBe(1);
    expect(jsonOf<SyncJson>(blocked).mappings[0]?.blocked?.kind).toBe('mass-delete');
    expect(fileDocuments(ws.emu, ws.dataSourceId())).toHaveLength(30);
    const allowed = await ws.sync('--allow-mass-delete');
    expect(allowed.code).toBe(0);
    expect(await checkConvergence(ws)).toEqual(CONVERGED);
  });

  it('reports too-large and refused files by path, syncs the rest, and retries them only when they change', { timeout: 60_000 }, async () => {
    ws = await createWorkspace({
      emulator: { maxFileBytes: 2000 },
      mapping: { maxFileBytes: 5000, include: ['**/*.txt', '**/*.bin'] },
    });
    await ws.write('ok.txt', 'fine');
    await ws.write('huge.txt', 'x'.repeat(6000)); // over dssync's own limit: never sent
    await ws.write('big.txt', 'y'.repeat(3000)); // over the service's limit: 413
    await ws.write('blob.bin', 'binary'); // a type the service refuses: 415
    const r = await ws.sync('--json');
    expect(r.code).toBe(1);
    const m = jsonOf<SyncJson>(r).mappings[0]!;
    expect(m.skipped.map((s) => s.path)).toContain('huge.txt');
    expect(m.failures.map((f) => `${f.path} ${f.status}`).sort()).toEqual(['big.txt 413', 'blob.bin 415']);
    // The 413 names the file by its path in the folder, not the marked name it was sent
    // under (issue 25.10), with the service's limit and the file's size.
    const tooLarge = m.failures.find((f) => f.status === 413)!;
    expect(tooLarge.message).not.toContain('dssync-upload');
    expect(tooLarge.message).toContain('file "big.txt" is larger than the limit of 2000 bytes');
    expect(tooLarge.message).toContain('the file is 3000 bytes');
    expect(fileDocuments(ws.emu, ws.dataSourceId()).map((d) => d.name)).toEqual(['ok.txt']);

    const writesBefore = writeRequests(ws.emu);
    const again = await ws.sync('--json');
    expect(again.code).toBe(1);
    expect(jsonOf<SyncJson>(again).mappings[0]!.skipped.map((s) => s.path).sort()).toEqual(['big.txt', 'blob.bin', 'huge.txt']);
    expect(writeRequests(ws.emu)).toBe(writesBefore + SYNC_LEASE_WRITES);

    await ws.write('big.txt', 'small now');
    const fixed = await ws.sync('--json');
    expect(jsonOf<SyncJson>(fixed).mappings[0]!.skipped.map((s) => s.path).sort()).toEqual(['blob.bin', 'huge.txt']);
    expect(fileDocuments(ws.emu, ws.dataSourceId()).map((d) => d.name).sort()).toEqual(['big.txt', 'ok.txt']);
  });

  it('names the field of an invalid config and exits 2', async () => {
    ws = await createWorkspace();
    await writeFile(ws.configPath, JSON.stringify({ baseUrl: ws.emu.url, organizationId: 'o', mappings: [{ path: 'relative/path', dataSourceId: 'x' }] }));
    const r = await ws.sync();
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/mappings\[0\]\.path/);
    expect(`${r.stdout}${r.stderr}`).not.toContain(TOKEN);
  });

  it('says clearly when the data source was deleted remotely', { timeout: 60_000 }, async () => {
    ws = await createWorkspace();
    await ws.write('a.txt', 'alpha');
    expect((await ws.sync()).code).toBe(0);
    const id = ws.dataSourceId();
    await writeFile(ws.configPath, JSON.stringify({ baseUrl: ws.emu.url, organizationId: 'org-test', statePath: ws.statePath, mappings: [{ path: ws.share, dataSourceId: id }] }));
    expect((await ws.cli(['datasources', 'delete', id, '--yes', '--config', ws.configPath])).code).toBe(0);
    const r = await ws.sync();
    expect(r.code).toBe(2);
    expect(`${r.stdout}${r.stderr}`).toMatch(new RegExp(`data source ${id}.*does not exist`));
  });

  it('exits 3 when the token is refused, without printing it', async () => {
    ws = await createWorkspace();
    await ws.write('a.txt', 'alpha');
    const bad = await runCli(['sync', '--config', ws.configPath], { DSSYNC_TOKEN: 'wrong-token-XYZ' });
    expect(bad.code).toBe(3);
    expect(`${bad.stdout}${bad.stderr}`).not.toContain('wrong-token-XYZ');
  });
});

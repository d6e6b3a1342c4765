/**
 * Issue 23, defects 4 and 5, with the built CLI against the emulator: an upload the
 * service commits after the client gave up on its answer (the emulator's holdUploads: the
 * answer is a destroyed connection, the documents are stored when the test says so), and
 * names the service rewrites (rewriteNames). Each test ends with the data source equal to
 * the folder: one document per file, no orphan without metadata.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { NameRewrite } from '@dssync/emulator';
import { CONVERGED, checkConvergence, createWorkspace, type Workspace, fileDocuments } from '../../helpers/mirror-check.js';
import { requireBuiltBinary, runCli } from '../cli/run-cli.js';

let ws: Workspace | undefined;
beforeAll(() => requireBuiltBinary());
afterEach(async () => {
  await ws?.close();
  ws = undefined;
});

function names(w: Workspace): string[] {
  return fileDocuments(w.emu, w.dataSourceId())
    .map((d) => d.name ?? '')
    .sort();
}

describe('late commits and rewritten names (issue 23, defects 4 and 5)', () => {
  it('an upload committed after a restart, its answer given up 61 s before: recognised and removed, not a permanent duplicate', { timeout: 60_000 }, async () => {
    ws = await createWorkspace();
    // The mapping's lease marker is made by a first sync of the empty folder: the uploads held below are the file's alone.
    await ws.sync();
    await ws.write('a.txt', 'alpha');
    // The earlier run: every upload answer is lost; its clock reads 61 s behind this one's, as
    // if it had waited out a 60 s timeout before the next run started.
    const offsetFile = join(ws.dir, 'wall-offset');
    await writeFile(offsetFile, '-61000');
    ws.emu.setFaults({ holdUploads: true });
    const lost = await runCli(['sync', '--config', ws.configPath], { ...ws.env, DSSYNC_TEST_HOOKS: `wall-offset-file=${offsetFile}` });
    expect(lost.code, lost.stdout + lost.stderr).not.toBe(0);
    expect(names(ws)).toEqual([]);
    // The next run lists at once: nothing of those uploads is visible yet.
    ws.emu.setFaults({});
    const next = await ws.sync();
    expect(next.code, next.stdout + next.stderr).toBe(0);
    expect(names(ws)).toEqual(['a.txt']);
    // The service commits the earlier uploads now.
    expect(ws.emu.commitHeld()).toBeGreaterThan(0);
    expect(names(ws).filter((n) => n.includes('.dssync-upload-')).length).toBeGreaterThan(0);
    const after = await ws.sync();
    expect(after.code, after.stdout + after.stderr).toBe(0);
    expect(names(ws)).toEqual(['a.txt']);
    expect(await checkConvergence(ws)).toEqual(CONVERGED);
  });

  it.each<[NameRewrite, string]>([
    ['quoted', 'dir/a\\b.txt'],
    ['basename', 'sub/c.txt'],
    ['trim', ' lead.txt'],
  ])('a lost answer on a service that rewrites names (%s): the landed upload of %j is recognised by its nonce', { timeout: 60_000 }, async (rewrite, file) => {
    ws = await createWorkspace();
    await ws.write(file, 'content');
    ws.emu.setFaults({ rewriteNames: rewrite, holdUploads: true });
    const lost = await ws.sync();
    expect(lost.code, lost.stdout + lost.stderr).not.toBe(0);
    ws.emu.setFaults({ rewriteNames: rewrite });
    expect(ws.emu.commitHeld()).toBeGreaterThan(0);
    const landed = names(ws);
    expect(landed.every((n) => n.includes('.dssync-upload-') && !n.startsWith(file.slice(0, file.lastIndexOf('.'))))).toBe(true);
    const next = await ws.sync();
    expect(next.code, next.stdout + next.stderr).toBe(0);
    // One of the landed uploads became the file's document (renamed, with metadata); the
    // others, uploads of the same file, were deleted as duplicates: nothing uploaded again.
    expect(names(ws)).toEqual([file]);
    expect(await checkConvergence(ws)).toEqual(CONVERGED);
  });

  it('a lost upload that never shows under its mark is reported once its intent is settled, never silent', { timeout: 60_000 }, async () => {
    ws = await createWorkspace();
    // The mapping's lease marker is made by a first sync of the empty folder: the uploads held below are the file's alone.
    await ws.sync();
    await ws.write('a.txt', 'alpha');
    // An earlier run, 16 minutes ago by its clock, whose answers were all lost.
    const offsetFile = join(ws.dir, 'wall-offset');
    await writeFile(offsetFile, String(-16 * 60_000));
    ws.emu.setFaults({ holdUploads: true });
    const lost = await runCli(['sync', '--config', ws.configPath], { ...ws.env, DSSYNC_TEST_HOOKS: `wall-offset-file=${offsetFile}` });
    expect(lost.code, lost.stdout + lost.stderr).not.toBe(0);
    ws.emu.setFaults({});
    const r = await ws.sync();
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toMatch(/lost upload not found {2}a\.txt: .*a\.dssync-upload-[0-9a-f]+\.txt/);
    expect(names(ws)).toEqual(['a.txt']);
  });

  it('a service that ignores the new name of an update: found at the first upload, the files end under their own names, and the run says so', { timeout: 60_000 }, async () => {
    ws = await createWorkspace();
    await ws.write('a.txt', 'alpha');
    await ws.write('sub/b.txt', 'beta');
    ws.emu.setFaults({ ignoreRename: true });
    const r = await ws.sync();
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.stdout + r.stderr).toMatch(/ignores a document's new name/);
    expect(names(ws)).toEqual(['a.txt', 'sub/b.txt']);
    expect(await checkConvergence(ws)).toEqual(CONVERGED);
    // A second run finds it again at its first upload; nothing already in place is touched.
    await ws.write('c.txt', 'gamma');
    const again = await ws.sync();
    expect(again.code, again.stdout + again.stderr).toBe(0);
    expect(names(ws)).toEqual(['a.txt', 'c.txt', 'sub/b.txt']);
    expect(await checkConvergence(ws)).toEqual(CONVERGED);
  });
});

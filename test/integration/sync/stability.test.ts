/**
 * `dssync sync` and a file being written (issue 23, defect 6, for the one-shot sync): the
 * pass applies the daemon's stability window, so a file changed within it is never sent as
 * it is then; the sync waits a window and looks again (up to --wait-changing), or reports
 * it as changing (exit 1). "Changed within the window" is made certain, not a matter of
 * timing, with an mtime in the future (as a file written just before a clock stepped back):
 * only two looks a window apart that see the same stat release it.
 */
import { rename, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { CONVERGED, checkConvergence, createWorkspace, type Workspace, fileDocuments } from '../../helpers/mirror-check.js';
import { jsonOf, requireBuiltBinary, runCli } from '../cli/run-cli.js';

let ws: Workspace | undefined;
beforeAll(() => requireBuiltBinary());
afterEach(async () => {
  await ws?.close();
  ws = undefined;
});

/** A file whose times say it is being written (an hour ahead of the wall clock). */
async function writeChanging(w: Workspace, path: string, content: string): Promise<void> {
  await w.write(path, content);
  const future = new Date(Date.now() + 3_600_000);
  await utimes(join(w.share, path), future, future);
}

function names(w: Workspace): string[] {
  return fileDocuments(w.emu, w.dataSourceId())
    .map((d) => d.name ?? '')
    .sort();
}

describe('dssync sync: files being written', () => {
  it('with --wait-changing 0: a changing file is not sent, named as changing, exit 1 (--json: changing); a negative wait is a usage error', { timeout: 60_000 }, async () => {
    ws = await createWorkspace();
    await ws.write('done.txt', 'done');
    expect((await ws.sync()).code).toBe(0);
    await writeChanging(ws, 'growing.txt', 'first half');
    const r = await ws.sync('--wait-changing', '0');
    expect(r.code, r.stdout + r.stderr).toBe(1);
    expect(r.stdout).toMatch(/^ {2}changing growing\.txt: changed within the last 2 s \(being written\?\); not sent, the next run sends it$/m);
    expect(r.stdout).toMatch(/Not in sync: see above\./);
    expect(names(ws)).toEqual(['done.txt']);
    const json = jsonOf<{ ok: boolean; mappings: { changing?: string[] }[] }>(await ws.sync('--wait-changing', '0', '--json'));
    expect(json.ok).toBe(false);
    expect(json.mappings[0]!.changing).toEqual(['growing.txt']);
    const bad = await ws.sync('--wait-changing', '-1');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--wait-changing must be a number of seconds, 0 or more/);
  });

  it('by default: it looks again after the window; a file whose stat held still is sent, one summary, In sync', { timeout: 60_000 }, async () => {
    ws = await createWorkspace();
    await ws.write('done.txt', 'done');
    await writeChanging(ws, 'report.txt', 'whole report');
    const r = await ws.sync('--log-level', 'info');
    expect(r.code, r.stdout + r.stderr).toBe(0);
    // done.txt too, when the run starts within 2 s of its write.
    expect(r.stderr).toMatch(/[12] file\(s\) changed within the last 2 s \(being written\?\): looking again in 2 s/);
    expect(r.stdout).toMatch(/: 2 uploaded, 0 replaced, 0 renamed, 0 updated, 0 deleted, 0 unchanged, 0 skipped, 0 failed\nIn sync\./);
    expect(names(ws)).toEqual(['done.txt', 'report.txt']);
    expect(await checkConvergence(ws)).toEqual(CONVERGED);
  });

  it('ten files renamed just before a sync are ten renames (same document ids), not uploads and deletes (issue 34, case 12)', { timeout: 60_000 }, async () => {
    ws = await createWorkspace();
    const past = new Date(Date.now() - 600_000);
    for (let i = 0; i < 10; i++) {
      await ws.write(`f${i}.txt`, `content ${i}`);
      await utimes(join(ws.share, `f${i}.txt`), past, past);
    }
    expect((await ws.sync()).code).toBe(0);
    const idsBefore = new Map(fileDocuments(ws.emu, ws.dataSourceId()).map((d) => [`moved-${d.name ?? ''}`, d.document_id]));
    for (let i = 0; i < 10; i++) await rename(join(ws.share, `f${i}.txt`), join(ws.share, `moved-f${i}.txt`));
    // The renames' new ctime is "within the window" whatever the machine's speed: this sync's
    // wall clock reads an hour behind (a time in the future is never taken for stable).
    const offsetFile = join(ws.dir, 'wall-offset');
    await writeFile(offsetFile, '-3600000');
    ws.emu.resetStats();
    const r = await runCli(['sync', '--config', ws.configPath, '--json', '--wait-changing', '0'], { ...ws.env, DSSYNC_TEST_HOOKS: `wall-offset-file=${offsetFile}` });
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(jsonOf<{ mappings: { counts: Record<string, number> }[] }>(r).mappings[0]?.counts).toMatchObject({ renamed: 10, uploaded: 0, deleted: 0 });
    expect(ws.emu.stats().filesUploaded).toBe(0);
    // The files' documents (the lease marker, no file's, keeps its name).
    expect(new Map(fileDocuments(ws.emu, ws.dataSourceId()).map((d) => [d.name ?? '', d.document_id]))).toEqual(idsBefore);
    expect(await checkConvergence(ws)).toEqual(CONVERGED);
  });
});

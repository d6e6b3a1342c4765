/**
 * Issue 36.4: the state's folder and files against another local user. A folder writable by
 * others and not sticky is refused at start (exit 2, naming the folder and the fix) and by
 * `config check`; a link planted at `state.json.journal` is never followed (its target is
 * neither written, created nor chmodded), by a real `dssync sync` against the emulator.
 */
import { chmod, mkdir, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createWorkspace, type Workspace } from '../../helpers/mirror-check.js';
import { requireBuiltBinary, runCli } from '../cli/run-cli.js';

let ws: Workspace | undefined;
beforeAll(() => requireBuiltBinary());
afterEach(async () => {
  await ws?.close();
  ws = undefined;
});

describe("security: the state's folder (issue 36.4)", () => {
  it('a folder every user may write to, not sticky, is refused by sync, run and config check; sticky passes', { timeout: 60_000 }, async () => {
    ws = await createWorkspace();
    const w = ws;
    const folder = dirname(w.statePath);
    await mkdir(folder, { recursive: true });
    await chmod(folder, 0o777);
    await w.write('a.txt', 'alpha');
    for (const command of [['sync'], ['run']]) {
      const r = await runCli([...command, '--config', w.configPath], w.env);
      expect(r.code, `${command[0]}: ${r.stderr}`).toBe(2);
      expect(r.stderr).toContain(`the state's folder ${folder} is writable by every user and not sticky (mode 777)`);
      expect(r.stderr).toContain(`Fix: chmod go-w ${folder}`);
    }
    expect(existsSync(w.statePath)).toBe(false);
    expect(w.emu.stats().byRoute).not.toHaveProperty(['POST /datastore/v1/data-sources/:data_source_id/documents/upload']);
    const check = await runCli(['config', 'check', '--config', w.configPath], w.env);
    expect(check.code).not.toBe(0);
    expect(check.stdout).toContain(`✗ state file ${w.statePath}: the state's folder ${folder} is writable by every user`);
    // Group-writable too; sticky (as /tmp) is safe: others cannot replace what is ours there.
    await chmod(folder, 0o770);
    expect((await runCli(['sync', '--config', w.configPath], w.env)).stderr).toContain('is writable by its group and not sticky (mode 770)');
    await chmod(folder, 0o1777);
    const ok = await runCli(['sync', '--config', w.configPath], w.env);
    expect(ok.code, ok.stderr).toBe(0);
  });

  it('a link planted at state.json.journal is never followed: its target keeps its bytes and mode, a missing one is not created', { timeout: 60_000 }, async () => {
    ws = await createWorkspace();
    const w = ws;
    await w.write('a.txt', 'alpha');
    const folder = dirname(w.statePath);
    await mkdir(folder, { recursive: true, mode: 0o700 });
    const victim = join(w.dir, 'victim.txt');
    await writeFile(victim, 'the victim file\n', { mode: 0o644 });
    await chmod(victim, 0o644);
    await symlink(victim, `${w.statePath}.journal`);
    const r = await runCli(['sync', '--config', w.configPath], w.env);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain(`${w.statePath}.journal is a symbolic link: the state's files are never opened through one`);
    expect(await readFile(victim, 'utf8')).toBe('the victim file\n');
    expect((await stat(victim)).mode & 0o777).toBe(0o644);

    // A link to a file that does not exist yet: an append through it would create it.
    const absent = join(w.dir, 'absent.txt');
    await rm(`${w.statePath}.journal`);
    await symlink(absent, `${w.statePath}.journal`);
    await runCli(['sync', '--config', w.configPath], w.env);
    expect(existsSync(absent)).toBe(false);
  });
});

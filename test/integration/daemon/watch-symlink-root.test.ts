/**
 * Issue 23, defect 10: a mapped folder that is a symlink re-pointed (`ln -sfn releases/2
 * current`, the usual deploy switch). The daemon watches what the configured path leads to;
 * when it leads elsewhere, it watches the new folder and runs a full pass, instead of
 * following the old target until the hourly rescan.
 */
import { mkdir, mkdtemp, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { daemonTests } from '../../helpers/daemon-test.js';
import { checkFolderConvergence, type Workspace } from '../../helpers/mirror-check.js';
import { docAt, waitConverged } from './daemon-process.js';

const daemons = daemonTests();
let deploy = '';
beforeAll(async () => {
  deploy = await mkdtemp(join(tmpdir(), 'dssync-deploy-'));
});
afterAll(async () => {
  await rm(deploy, { recursive: true, force: true });
});

/** `ln -sfn target link`, atomically (a new link renamed over the old one). */
async function repoint(link: string, target: string): Promise<void> {
  await symlink(target, `${link}.new`);
  await rename(`${link}.new`, link);
}

describe('dssync run: a mapped folder that is a symlink', () => {
  it('re-pointed to another release: the new target is mirrored and watched, without waiting for the periodic rescan', { timeout: 120_000 }, async () => {
    const current = join(deploy, 'current');
    for (const [rel, files] of [['releases/1', { 'a.txt': 'one', 'shared.txt': 'same' }], ['releases/2', { 'b.txt': 'two', 'shared.txt': 'same' }]] as const) {
      await mkdir(join(deploy, rel), { recursive: true });
      for (const [name, content] of Object.entries(files)) await writeFile(join(deploy, rel, name), content);
    }
    await symlink('releases/1', current);
    const converged = (x: Workspace, what: string): Promise<void> => waitConverged(x, what, 60_000, () => checkFolderConvergence(x.emu, x.dataSourceId(), current));
    const { w } = await daemons.start({ mapping: { path: current }, startupDone: (x) => converged(x, 'release 1') });
    expect(docAt(w, 'a.txt')).toHaveLength(1);

    await repoint(current, 'releases/2');
    await converged(w, 'release 2 after the switch');
    expect(docAt(w, 'a.txt')).toHaveLength(0);
    expect(docAt(w, 'b.txt')).toHaveLength(1);

    // Watched there now: a new file in the new release is an event.
    await writeFile(join(deploy, 'releases/2', 'c.txt'), 'three');
    await converged(w, 'a file added to release 2');
    expect(docAt(w, 'c.txt')).toHaveLength(1);
  });
});

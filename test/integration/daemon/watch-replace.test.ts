/**
 * Issue 9, defects 3 and 5, end to end: a real `dssync run`, a real folder, the emulator.
 * - A folder replaced under its own name (`mv docs old; mkdir docs`, the deploy pattern
 *   `rm -rf docs; mv staging docs`) is watched again: changes in the new folder reach the
 *   service without waiting for the hourly rescan, and the moved file stays one document.
 * - An edited ignore file applies at once, both ways.
 * The periodic rescan is an hour away: whatever converges here was seen by the watcher.
 */
import { execFileSync } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { daemonTests } from '../../helpers/daemon-test.js';
import type { Workspace } from '../../helpers/mirror-check.js';
import { docAt, waitConverged, waitFor, waitIdle, type DaemonProcess } from './daemon-process.js';
import { filesUploaded } from '../../helpers/mirror-check.js';

const daemons = daemonTests();

const fullPasses = (d: DaemonProcess): number => d.logs().filter((l) => l.msg === 'full pass done').length;
const idOf = (w: Workspace, path: string): string | undefined => {
  const docs = docAt(w, path);
  expect(docs.length, `documents at ${path}`).toBeLessThanOrEqual(1);
  return docs[0]?.document_id;
};

describe('dssync run: a folder replaced under its own name is watched again (issue 9, defect 3)', () => {
  it('mv docs old; mkdir docs: files written in the new docs reach the service', { timeout: 120_000 }, async () => {
    const { w, d: daemon } = await daemons.start({ config: { rescanIntervalSeconds: 3600 }, files: { 'docs/a.txt': 'alpha' } });
    const aId = idOf(w, 'docs/a.txt');

    execFileSync('sh', ['-c', 'mv docs old && mkdir docs && echo bravo > docs/b.txt'], { cwd: w.share });
    await waitConverged(w, 'docs moved to old, a new docs with b.txt');
    await waitIdle(daemon);
    expect(idOf(w, 'old/a.txt')).toBe(aId); // moved: a rename, not delete + upload

    // The new folder is watched (not only walked once): a later write in it is seen too,
    // and one in the old folder is reported under its new name.
    await writeFile(join(w.share, 'docs', 'c.txt'), 'charlie');
    await writeFile(join(w.share, 'old', 'a.txt'), 'alpha, edited in its new place');
    await waitConverged(w, 'writes in the new docs and in old');
    await waitIdle(daemon);
    expect(docAt(w, 'docs/a.txt')).toEqual([]);
    expect(fullPasses(daemon)).toBe(1); // only the startup pass: the watcher saw it all
  });

  it('rm -rf docs; mv staging docs: the staged file is renamed (same document), later writes are seen', { timeout: 120_000 }, async () => {
    const { w, d: daemon } = await daemons.start({
      config: { rescanIntervalSeconds: 3600 },
      files: { 'docs/index.txt': 'release 1', 'docs/only-in-1.txt': 'gone in release 2', 'staging/index.txt': 'release 2', 'staging/notes.txt': 'release 2 notes' },
    });
    const notesId = idOf(w, 'staging/notes.txt');
    const uploads = filesUploaded(w.emu);

    // As a deploy script does it: the new folder is in place before the watcher looks.
    execFileSync('sh', ['-c', 'rm -rf docs && mv staging docs'], { cwd: w.share });
    await waitConverged(w, 'the staging folder deployed as docs');
    await waitIdle(daemon);
    expect(idOf(w, 'docs/notes.txt')).toBe(notesId);
    expect(filesUploaded(w.emu)).toBe(uploads); // renames only, no upload

    await writeFile(join(w.share, 'docs', 'after-deploy.txt'), 'written after the deploy');
    await waitConverged(w, 'a write in the deployed folder');
    await waitIdle(daemon);
    expect(fullPasses(daemon)).toBe(1);
  });
});

describe('dssync run: an edited .dssyncignore applies at once (issue 9, defect 5)', () => {
  it('newly excluded documents are deleted (prune "ours"), newly included files uploaded and their folders watched', { timeout: 120_000 }, async () => {
    const presentIn = (w: Workspace, p: string): boolean => docAt(w, p).length === 1;
    const { w, d } = await daemons.start({
      config: { rescanIntervalSeconds: 3600 },
      files: { '.dssyncignore': 'private/\n', 'pub.txt': 'public', 'drafts/d1.txt': 'draft one', 'private/secret.txt': 'secret' },
      // private/ is excluded: the folder and the data source differ on purpose.
      startupDone: (x) => waitFor(() => presentIn(x, 'pub.txt') && presentIn(x, 'drafts/d1.txt'), { timeout: 60_000, what: 'the startup pass' }),
    });
    const present = (p: string): boolean => presentIn(w, p);
    expect(present('private/secret.txt')).toBe(false);

    // Exclude drafts/: its document follows the deletion rules (ours: deleted).
    await writeFile(join(w.share, '.dssyncignore'), 'private/\ndrafts/\n');
    await waitFor(() => !present('drafts/d1.txt'), { timeout: 60_000, what: 'drafts/d1.txt deleted after drafts/ was excluded' });
    await waitIdle(d);
    expect(present('pub.txt')).toBe(true);

    // Include everything again: drafts/ and private/ (excluded, hence unwatched, at start).
    await writeFile(join(w.share, '.dssyncignore'), '# nothing excluded\n');
    await waitFor(() => present('drafts/d1.txt') && present('private/secret.txt'), { timeout: 60_000, what: 'drafts/ and private/ uploaded after the rules were removed' });
    await waitIdle(d);
    const passes = fullPasses(d);

    // private/ is watched now: a new file there is seen without another full pass.
    await writeFile(join(w.share, 'private', 'later.txt'), 'written after the ignore file changed');
    await waitConverged(w, 'a write in the newly included folder');
    await waitIdle(d);
    expect(fullPasses(d)).toBe(passes);
  });
});

/**
 * Histories the simulation found, written out against the World (world.ts) so that they
 * keep being lived through whatever the random generation draws: each ends with the
 * invariants (invariants.ts).
 */
import { unmarkedName } from '../../src/engine/document-fields.js';
import { expect, it } from 'vitest';
import { churnDuringStartPass } from './commands.js';
import { checkInvariants } from './invariants.js';
import { sha256 } from '../helpers/fake-local.js';
import { IGNORE_FILE, SIM_LEASE, World, type SimConfig } from './world.js';

const config: SimConfig = { prune: 'ours', exclude: [], include: ['**/*.{txt,md}'], maxFileBytes: 1_000_000, maxDeletePercent: 50, massDeleteMinimum: 3 };

/** One command of a history, as commands/index.ts runs it: the change, then the daemon settled (restarted if it crashed). */
function stepper(w: World): (run: () => void | Promise<void>) => Promise<void> {
  return async (run) => {
    await run();
    await w.settle();
    await w.restartIfCrashed();
  };
}

/** A started world whose folder holds one file the histories leave alone (`renamesIgnored`: by its service). */
async function startedWorld(renamesIgnored = false): Promise<World> {
  const w = new World(config, { updateClears: false, paging: 'none', pageSize: 2, ...(renamesIgnored ? { renamesIgnored } : {}) });
  w.local.write('keep.txt', 'keep');
  await w.start();
  return w;
}

/** A started world past its start, with `p` written and synced. */
async function withSyncedFile(p: string, content: string): Promise<{ w: World; step: ReturnType<typeof stepper> }> {
  const w = await startedWorld();
  const step = stepper(w);
  await step(() => w.advance(10_000));
  await step(async () => {
    w.write(p, content);
    await w.advance(10_000);
  });
  return { w, step };
}

/** `p` grows past 5 bytes, and the daemon restarts with maxFileBytes 5: excluded at its full pass. */
async function growPastMaxFileBytes(w: World, p: string): Promise<void> {
  w.write(p, 'too large for five bytes');
  await w.restart({ ...config, maxFileBytes: 5 });
  await w.advance(10_000);
}

/** editorSave(p, content) as commands.ts runs it: a hidden temp file renamed over the file. */
function editorSave(w: World, p: string, content: string): void {
  w.write('.save-tmp', content);
  w.rename('.save-tmp', p);
}

/** writeInHalvesAcrossReload(p, pauseMs) as commands.ts runs it (the `id`th slow write): returns the half. */
async function writeInHalvesAcrossReload(w: World, p: string, pauseMs: number, id: number): Promise<string> {
  const half = `half${id}|`;
  w.write(p, '');
  await w.advance(pauseMs);
  w.write(p, half);
  await w.advance(pauseMs);
  await w.restart();
  await w.advance(pauseMs);
  w.write(p, `${half}rest${id}|`);
  return half;
}

/** slowWrite(p, chunks, pauseMs apart) as commands.ts runs it (the `id`th slow write): truncated, then appended. */
async function slowWrite(w: World, p: string, pauseMs: number, chunks = 2, id: number | string = 1): Promise<void> {
  let text = '';
  w.write(p, text);
  for (let i = 0; i < chunks; i++) {
    await w.advance(pauseMs);
    text += `slow${id}.${i}|`;
    w.write(p, text);
  }
}

/** The service takes the next upload of `name` but commits it only later (its answer lost). */
function lateCommitOfNextUpload(w: World, name: string, fault: 'late-commit' | 'late-commit-after-deadline' = 'late-commit'): void {
  const real = w.service.uploadDocuments.bind(w.service);
  w.service.uploadDocuments = (ds, files) => {
    if (files.some((f) => unmarkedName(f.name) === name)) {
      w.service.faults.unshift(fault);
      w.service.uploadDocuments = real;
    }
    return real(ds, files);
  };
}

it('seed 7: the late-landing upload of a file that then grows past maxFileBytes is deleted, not left behind', async () => {
  const w = await startedWorld();
  // faults(late-commit) at a.txt's upload, restart, write(a.txt, x), crash(torn 0)
  w.local.write('a.txt', 'x');
  lateCommitOfNextUpload(w, 'a.txt');
  await w.restart(config);
  w.crashNow(0);
  await w.restartIfCrashed();
  // slowWrite(a.txt, 2 chunks, 200 ms apart), restartWithConfig(maxFileBytes: 5), chmod644(a.txt)
  await slowWrite(w, 'a.txt', 200);
  await w.settle();
  await w.restart({ ...config, maxFileBytes: 5 });
  w.setUnreadable('a.txt', false);
  await w.settle();
  await checkInvariants(w);
}, 60_000);

it('seed 20261201: an unreadable file whose replace a crash cut keeps one document of ours, not two', async () => {
  const w = await startedWorld();
  const step = stepper(w);
  await step(() => w.write('other/e.txt', 'x'));
  await step(() => w.crashNow(0));
  await step(() => void (w.service.faults = ['none', 'none', 'none', 'rate-limited', 'none']));
  await step(() => {
    const f = w.local.fileAt('other/e.txt')!;
    w.write('other/e.txt', 'y', f.mtimeMs);
  });
  await step(() => w.crashNow(0));
  await step(() => w.setUnreadable('other/e.txt', true));
  await checkInvariants(w);
}, 60_000);

it('seed 20261132: a file renamed over another right after a slow write leaves no document of ours behind', async () => {
  const w = await startedWorld();
  const step = stepper(w);
  await step(() => w.write('a.txt', 'x'));
  await step(() => void (w.service.faults = ['server-error']));
  await step(async () => {
    w.write('b.txt', '');
    let text = '';
    for (let i = 0; i < 3; i++) {
      await w.advance(1500);
      text += `slow1.${i}|`;
      w.write('b.txt', text);
    }
  });
  await step(() => w.advance(2500));
  await step(() => w.rename('b.txt', 'a.txt'));
  await step(() => {
    w.write('.save-tmp', 'x');
    w.rename('.save-tmp', 'a.txt');
  });
  await checkInvariants(w);
}, 60_000);

it('seed 3002, history 4,121: an uploaded document whose metadata update was dropped is settled by the next listing, not left without metadata until the hourly rescan', async () => {
  const w = await startedWorld();
  const step = stepper(w);
  // The start's listing, keep.txt's upload, then its metadata update: the connection drops.
  await step(() => void (w.service.faults = ['none', 'none', 'dropped']));
  await step(() => w.advance(2500));
  await step(() => w.stepWall(-3_600_000));
  await checkInvariants(w);
}, 60_000);

it('issue 23, defect 4: an upload given up after its 60 s deadline, the process gone, the service committing 15 s after the next one listed: no document left behind', async () => {
  const w = await startedWorld();
  const step = stepper(w);
  lateCommitOfNextUpload(w, 'a.txt', 'late-commit-after-deadline');
  // The upload waits out the deadline, the process ends; the next one lists at once.
  await step(() => w.write('a.txt', 'x'));
  // The service commits the first upload now.
  await step(() => w.advance(20_000));
  await checkInvariants(w);
}, 60_000);

// Seeds 2001 and 2005: a second process started from a copied state takes the lease, its
// uploads land while it dies (answer lost) and nothing of ours is recorded. The daemon,
// holding the lease again, plans them as lost uploads (owner rule O19): three deletes out of
// three documents, held by the mass-delete guard; `dssync sync --allow-mass-delete` takes
// the lease too, so it recovers them.
it('seeds 2001, 2005: what a second process with a copied state uploaded as it crashed is recovered once the operator allows the deletes', async () => {
  const w = await startedWorld();
  const step = stepper(w);
  await step(() => void (w.service.faults = ['crash-before', 'none', 'crash-after']));
  await step(() => w.startTwin('copied-state'));
  await step(() => slowWrite(w, 'a.txt', 200, 2, 'a.txt'));
  await step(() => slowWrite(w, 'other/e.txt', 200, 2, 'other/e.txt'));
  await step(() => w.advance(2500));
  await step(() => w.startTwin('copied-state'));
  await step(() => w.advance(100));
  await step(() => w.personDeletesOurs(0));
  await checkInvariants(w);
}, 60_000);

// Found by the long run of seed 7 (history 266) once the simulated daemon's full passes got
// their stability window, as the real daemon's have (issue 23 defect 6): three hand uploads
// under one name, then a restart with prune "all" at the same instant as keep.txt was
// written. Full passes set keep.txt aside (changed within the window), and the prune of the
// three documents is then not held by the mass-delete guard (3 of at most 3 within 10 min,
// max 50 %, minimum 3). Not fixed yet (docs/reliability.md, "Found by the simulation, not
// fixed"): `it.fails` turns red when the fix lands, to be made an ordinary `it`.
it('seed 7: a restart with prune "all" while the only file is set aside by the stability window keeps the delete window', async () => {
  const w = await startedWorld();
  const step = stepper(w);
  for (let i = 0; i < 3; i++) await step(() => w.personUpload('a.txt', 'x'));
  await step(() => w.restart({ ...config, prune: 'all' }));
  await checkInvariants(w);
});

// Found by the long run of seed 8 (history 623): a slow writer's prefix uploaded by an
// incremental pass after a file written in halves across a restart was swapped away and the
// ignore file rewritten (docs/reliability.md, "The simulation").
it('seed 8: a slow write after a swap and an ignore-file edit is never uploaded half-written', async () => {
  const w = new World(config, { updateClears: false, paging: 'none', pageSize: 2 });
  w.local.write('keep.txt', 'keep');
  await w.start();
  const step = stepper(w);
  await step(() => w.advance(100));
  // writeInHalvesAcrossReload(a.txt, 300 ms)
  await step(async () => void w.partials.add(sha256(await writeInHalvesAcrossReload(w, 'a.txt', 300, 1))));
  const swap = (a: string, b: string): void => {
    w.rename(a, '.swap-tmp');
    w.rename(b, a);
    w.rename('.swap-tmp', b);
  };
  await step(() => swap('a.txt', 'sub/a.txt'));
  await step(() => w.write('.dssyncignore', ''));
  // slowWrite(a.txt, 2 chunks, 1500 ms apart)
  await step(async () => {
    w.write('a.txt', '');
    await w.advance(1500);
    w.write('a.txt', 'slow2.0|');
    await w.advance(1500);
    w.partials.add(sha256('slow2.0|'));
    w.write('a.txt', 'slow2.0|slow2.1|');
  });
  await step(() => swap('a.txt', 'a.txt'));
  await checkInvariants(w);
}, 60_000);

// Another writer with our identity (issue 23 defect 2: a VM image cloned with its state):
// its documents carry our installation id and upload tag but its own writer session, which
// this state never recorded (docs/reliability.md, "Identity"). Found with SIM_CLONED_WRITER
// (seed 42): taken for ours, they were deleted instead of reported.
it('a clone\'s upload caught before its metadata (our tag, its own session) is reported, not deleted as our late commit', async () => {
  const w = await startedWorld();
  const step = stepper(w);
  await step(() => w.write('a.txt', 'x'));
  await step(() => w.cloneUpload('b.txt', 'yy', true));
  await step(() => w.restart());
  await checkInvariants(w);
}, 60_000);

it('a clone\'s edit of a file both track (our identity, another hash, its own session) is reported, not deleted as a stale version of ours', async () => {
  const w = await startedWorld();
  const step = stepper(w);
  await step(() => w.write('sub/a.txt', 'x'));
  // The daemon's document of sub/a.txt first (its follow-up comes a window after the write).
  await step(() => w.advance(2_500));
  await step(() => w.cloneUpload('sub/a.txt', 'yy'));
  await step(() => w.restart());
  await checkInvariants(w);
}, 60_000);

// Found by the long run of seed 7 (history 2,645) on the sim2 branch: a file set aside, then
// released by another pass, truncated and rewritten before the runner's follow-up came; the
// follow-up (an incremental pass naming it) had no record left and sent the first half.
// Re-made for today's schedule (the long run's steps no longer reached it): b.txt is set
// aside by a full pass 200 ms after it is written, released by the incremental pass of its
// creation's events a window after the write, then truncated and half rewritten just before
// the full pass's follow-up.
it('seed 7: a file released before its follow-up and rewritten meanwhile is not sent half-written by the follow-up', async () => {
  const w = await startedWorld();
  const step = stepper(w);
  await step(async () => {
    w.write('b.txt', 'one|');
    await w.advance(2_150);
    w.write('b.txt', '');
    w.write('b.txt', 'half|');
    w.partials.add(sha256('half|'));
    await w.advance(400);
    w.write('b.txt', 'half|rest|');
  });
  await checkInvariants(w);
}, 60_000);

// Found by the long run of seed 7 (history 4,302) on the sim2 branch: a folder move whose
// rename of the document a crash cut after the request; the restart's full pass set the moved
// file aside (its ctime young, its mtime in the future after a backward step) and forgot the
// old path's entry, so the state no longer knew the document; the follow-up, an incremental
// pass, uploaded the file again: a duplicate until the hourly rescan.
it('seed 7: a set-aside file whose document the full pass could not judge is not sent blind by the follow-up (no duplicate)', async () => {
  const w = await startedWorld();
  const step = stepper(w);
  await step(() => {
    w.remove('other/e.txt');
    w.write('other/e.txt', 'x');
  });
  await step(async () => {
    w.write('a.txt', '');
    await w.advance(1500);
    w.write('a.txt', 'slow1.0|');
    await w.advance(1500);
    w.partials.add(sha256('slow1.0|'));
    w.write('a.txt', 'slow1.0|slow1.1|');
  });
  await step(() => w.rename('other', 'sub'));
  await step(() => w.stepWall(-3_600_000));
  await step(() => void (w.service.faults = ['crash-after']));
  await step(() => w.advance(10_000));
  await checkInvariants(w);
}, 60_000);

// Found by the long run of seed 7 (history 5,468) on the sim2 branch, with writer sessions:
// a process's session was made durable only by its first upload's intent, but a metadata
// update (adopting a lost answer's document) needs none; cut by a crash after the request,
// the next process found its own document carrying an unrecorded session and took it for a
// clone's: the mapping stopped, the file never converged. Since ownership v2 the process that
// holds the lease also recovers a document of a session nobody holds (owner.ts `writerGone`),
// so the history fails only with both that and the session's flush reverted.
it('seed 7: a crash after a metadata update leaves no document of ours under a session the state lost', async () => {
  const w = await startedWorld();
  const step = stepper(w);
  await step(() => w.write('sub/deep/d.txt', 'x'));
  // The upload's answer lost to a crash; the next process's metadata update adopting its
  // document cut by a crash after the request.
  await step(() => void (w.service.faults = ['none', 'crash-after', 'none', 'crash-after']));
  await step(() => w.advance(61_000));
  await step(() => w.setUnreadable('a.txt', false));
  await checkInvariants(w);
}, 60_000);

// Found by the long run of seed 7 (history 6,427) on the sim2 branch: the guard's base with
// prune "all" added what it may prune to the state's count, which still held the entry of a
// document a person deleted: 3 deletions out of "6" passed, out of 5 in the data source.
// Two of ours are deleted here: the check's base counts every document of the data source,
// the lease's marker included, so one entry counted twice is within its over-count (the
// guard's 6 is the check's 6); with two, 3 deletions out of "6" pass where the data source
// holds 5, the marker included.
it('seed 7: prune "all" after a person deleted two of our documents keeps the delete window', async () => {
  const w = new World({ ...config }, { updateClears: false, paging: 'offset', pageSize: 2 });
  w.local.write('keep.txt', 'keep');
  await w.start();
  const step = stepper(w);
  await step(() => w.write('a.txt', 'x'));
  await step(() => w.write('b.txt', 'yy'));
  await step(() => w.advance(61_000));
  for (let i = 0; i < 3; i++) await step(() => w.personUpload('c.md', 'x'));
  await step(() => w.personDeletesOurs(0));
  await step(() => w.personDeletesOurs(0));
  await step(() => w.restart({ ...config, prune: 'all', include: ['**/*.txt'] }));
  await checkInvariants(w);
}, 60_000);

it('seed 16, history 35,859: a file created and deleted during two starts, its metadata answer lost, leaves no document of ours', async () => {
  const w = await startedWorld();
  const step = stepper(w);
  // The first start's follow-up uploads a.txt, whose metadata answer is lost, and fails
  // keep.txt's metadata update (503), left for the next start. The second start sets a.txt
  // aside with that document unjudged; a.txt is deleted once keep.txt's update acted, and
  // the follow-up finds it gone.
  await step(() => void (w.service.faults = ['none', 'none', 'ambiguous', 'server-error']));
  await step(() => churnDuringStartPass(w, 'a.txt', 'x'));
  await step(() => w.advance(2_500));
  await step(() => churnDuringStartPass(w, 'a.txt', 'x'));
  await checkInvariants(w);
}, 60_000);

it('seed 18, history 3,627: a rename whose answer was lost, its old path written anew and set aside, leaves one record per document (the mapping does not stop)', async () => {
  const w = await startedWorld();
  const step = stepper(w);
  // editorSave(sub/deep/d.txt, x), advance(2500)
  await step(() => {
    w.write('sub/deep/.save-tmp', 'x');
    w.rename('sub/deep/.save-tmp', 'sub/deep/d.txt');
  });
  await step(() => w.advance(2_500));
  // replaceFolder(sub): the rename of d0002 to sub.old/deep/d.txt acts, its answer is lost.
  await step(() => {
    w.rename('sub', 'sub.old');
    w.mkdir('sub');
  });
  await step(() => void (w.service.faults = ['ambiguous', 'none']));
  // slowWrite(a.txt, 2 chunks, 200 ms apart)
  await step(() => slowWrite(w, 'a.txt', 200));
  // writeInHalvesAcrossReload(sub/deep/d.txt, 300 ms): the start's pass sets it aside
  // while adopting the renamed document at sub.old/deep/d.txt.
  await step(async () => void (await writeInHalvesAcrossReload(w, 'sub/deep/d.txt', 300, 2)));
  // writeIgnoreFile(""): a full pass, whose listing "lacked" d0002 at sub/deep/d.txt.
  await step(() => w.write('.dssyncignore', ''));
  await checkInvariants(w);
}, 60_000);

// Seed 3001, history 6,805 (a fault of the oracle): names lower-cased and cut at 44 bytes by
// the service; a.txt, b.txt and keep.txt sent in one upload whose answer was lost; a.txt made
// unreadable before any listing showed them. The next start recognises the three by their
// marks: b.txt and keep.txt get their metadata, a.txt is set aside and its open intent keeps
// its upload, stored as ".dssync-upload-<nonce>.a.ds", until the file can be read.
it('seed 3001, history 6,805: an unreadable file keeps its open upload under a name the service cut', async () => {
  const w = new World(config, { updateClears: false, paging: 'none', pageSize: 2, nameRule: { lower: true, maxBytes: 44 }, renamesIgnored: false });
  w.local.write('keep.txt', 'keep');
  await w.start();
  const step = stepper(w);
  const editorSave = (p: string, c: string): void => {
    const tmp = p.includes('/') ? `${p.slice(0, p.lastIndexOf('/'))}/.save-tmp` : '.save-tmp';
    w.write(tmp, c);
    w.rename(tmp, p);
  };
  await step(() => w.write('a.txt', 'x'));
  await step(() => editorSave('b.txt', 'x'));
  await step(() => void (w.service.faults = ['none', 'server-error', 'ambiguous', 'server-error', 'none']));
  await step(() => editorSave('sub/a.txt', 'x'));
  await step(() => w.damageJournal('flip', 0));
  await step(() => w.advance(1_000));
  // A file not included, across a restart.
  await step(async () => void (await writeInHalvesAcrossReload(w, 'x.log', 800, 1)));
  await step(() => w.setUnreadable('a.txt', true));
  await step(() => w.crashNow(0));
  await checkInvariants(w);
}, 60_000);

it('seed 4002: a journal damaged with its identity file lost but the identity kept, our document deleted by a person, then the 0.1.0 upgrade: no lost id', async () => {
  const w = await startedWorld();
  const step = stepper(w);
  await step(() => w.advance(61_000));
  await step(() => w.damageJournal('flip', 0, true));
  await step(() => w.personDeletesOurs(0));
  await step(() => w.upgradeFrom010UnderNewHostName());
  await step(() => churnDuringStartPass(w, 'a.txt', 'x'));
  await checkInvariants(w);
});

it('seed 4001: a lost upload whose intent went with the journal, then the 0.1.0 upgrade: its mark carries an id nobody knows any more, and it is left', async () => {
  const w = await startedWorld();
  const step = stepper(w);
  await step(() => void (w.service.faults = ['none', 'late-commit-after-deadline', 'none']));
  await step(() => w.advance(10_000));
  await step(() => w.damageJournal('cut', 0));
  await step(() => w.upgradeFrom010UnderNewHostName());
  await step(() => w.stepWall(-3_600_000));
  await checkInvariants(w);
});

it('seeds 4003, 4004: a file touched as the 0.1.0 state starts under a new host name is re-marked within the quiet time, not at the hourly rescan', async () => {
  const w = await startedWorld();
  const step = stepper(w);
  await step(() => w.write('sub/a.txt', 'x'));
  await step(() => w.advance(2500));
  await step(() => w.upgradeFrom010UnderNewHostName());
  // chmod 644: a new ctime, so the start's full pass sets the file aside.
  await step(() => w.setUnreadable('sub/a.txt', false));
  await checkInvariants(w);
}, 60_000);

it("seed 4021: a person uploads a document of our file's name and content after our unmarked upload (a service that ignores new names), then the journal's first record is damaged: the person's document is kept", async () => {
  const w = new World(config, { updateClears: false, paging: 'none', pageSize: 2, renamesIgnored: true });
  w.local.write('keep.txt', 'keep');
  await w.start();
  const step = stepper(w);
  await step(() => w.write('other/e.txt', '12'));
  await step(() => w.stepWall(5_000));
  await step(async () => {
    w.write('a.txt', '');
    for (let i = 0; i < 2; i++) {
      await w.advance(200);
      w.write('a.txt', `slow1.${'0'.repeat(i)}|`);
    }
  });
  await step(() => w.personUpload('other/e.txt', '12'));
  await step(() => w.damageJournal('flip', 0));
  await checkInvariants(w);
});

it("seed 9206: the journal damaged twice, the wall clock stepped back to the first damage's instant in between: the second copy is kept beside the first, not over it", async () => {
  const w = await startedWorld();
  const step = stepper(w);
  await step(() => w.write('a.txt', 'x'));
  await step(() => w.write('b.txt', 'x'));
  await step(() => w.advance(2_000));
  const wall = (): number => w.clock.t + w.clock.wallOffset;
  const firstDamage = wall();
  await step(() => w.damageJournal('flip', 0));
  await step(() => w.write('c.txt', 'x'));
  await step(() => w.advance(1_000));
  await step(() => w.write('d.txt', 'x'));
  await step(() => w.advance(1_000));
  await step(() => w.stepWall(firstDamage - wall()));
  await step(() => w.damageJournal('flip', 0));
  await checkInvariants(w);
});

/**
 * A backup of the state, then the 0.1.0 upgrade under a new host name, whose first pass
 * re-marks keep.txt's document with the new id (owner rule O4): restored from that backup,
 * the state records a document carrying the upgraded id, a former id of ours from then on.
 */
async function backedUpThenUpgraded(): Promise<{ w: World; step: ReturnType<typeof stepper> }> {
  const w = await startedWorld();
  const step = stepper(w);
  await step(() => w.advance(2_500));
  await step(() => w.takeBackup());
  await step(() => w.upgradeFrom010UnderNewHostName());
  await step(() => w.advance(2_500));
  return { w, step };
}

it('seed 4021, history 8,593: a clone uploads under the upgraded id, then the state is restored from before the upgrade: a writer of a former id is another installation (listed, untouched), not another writer with our identity', async () => {
  const { w, step } = await backedUpThenUpgraded();
  await step(() => w.cloneUpload('other/e.txt', '12', true));
  await step(() => w.restoreBackup(0));
  await checkInvariants(w);
}, 60_000);

it('beside seed 4021, history 8,593 (written by hand): an upload of the upgraded id lands late, then the state is restored from before the upgrade: a late commit of a former id of ours, deleted', async () => {
  const { w, step } = await backedUpThenUpgraded();
  lateCommitOfNextUpload(w, 'a.txt', 'late-commit-after-deadline');
  await step(() => w.write('a.txt', 'x'));
  await step(() => w.advance(10_000));
  await step(() => w.restoreBackup(0));
  await checkInvariants(w);
}, 60_000);

it("seed 4031: a marked upload left by a crash, the state restored from a backup before it, then the 0.1.0 upgrade under a new host name: its mark carries a former id's tag, and it is deleted as our lost upload", async () => {
  const w = await startedWorld();
  const step = stepper(w);
  await step(() => slowWrite(w, 'a.txt', 900));
  await step(async () => void (await writeInHalvesAcrossReload(w, 'a.txt', 300, 2)));
  await step(() => w.stepWall(3_600_000));
  await step(() => w.takeBackup());
  // The upload of a.txt is committed under its marked name; its metadata update never comes.
  await step(() => w.crashNow(0));
  await step(() => void (w.service.faults = ['none', 'none', 'rate-limited']));
  await step(() => w.advance(100));
  await step(() => w.restoreBackup(0));
  await step(() => w.upgradeFrom010UnderNewHostName());
  await step(() => w.personUpload('a.txt', 'x'));
  await checkInvariants(w);
});

it('seed 5001, history 8,294: a backup of the id from before the upgrade is not restored under a second process of the upgraded id; once that process stops, the restored daemon deletes its document of a folder now ignored', async () => {
  const w = new World({ ...config, include: ['**/*.txt'], maxFileBytes: 5, maxDeletePercent: 100, massDeleteMinimum: 1000 }, { updateClears: false, paging: 'offset', pageSize: 3, renamesIgnored: true });
  w.local.write('keep.txt', 'keep');
  await w.start();
  const step = stepper(w);
  // slowWrite(sub/deep/d.txt, 2 chunks, 500 ms apart): too large at maxFileBytes 5, then rewritten at its size limit with its mtime put back.
  await step(() => slowWrite(w, 'sub/deep/d.txt', 500));
  await step(() => w.write('sub/deep/d.txt', 'zzz', w.local.fileAt('sub/deep/d.txt')!.mtimeMs));
  // The backup holds the drawn id and no record (taken before the first pass recorded anything).
  await step(() => w.takeBackup());
  await step(() => w.advance(2_500));
  await step(() => w.restoreBackup(0));
  // The upgrade's state records nothing, so the drawn id is not a former id of the derived one.
  await step(() => w.upgradeFrom010UnderNewHostName());
  const upgraded = w.installationId;
  await step(() => w.restartBothTogether('copied-state'));
  await step(() => w.write(IGNORE_FILE, 'sub/\n'));
  await step(() => w.restoreBackup(0));
  expect(w.installationId, 'restored under the second process').toBe(upgraded);
  await checkInvariants(w);
  await step(() => w.stopTwin());
  await step(() => w.restoreBackup(0));
  expect(w.installationId).not.toBe(upgraded);
  await checkInvariants(w);
  expect(w.service.docs_().filter((d) => d.metadata['dssync_path'] === 'sub/deep/d.txt')).toEqual([]);
}, 60_000);

it("seed 6002, history 3,791: a copy of an upgraded 0.1.0 state taken before the daemon wrote its identity is another installation, not a second process with our identity: not started", async () => {
  const w = new World({ ...config, exclude: ['**/deep/**'], maxFileBytes: 5 }, { updateClears: true, paging: 'offset', pageSize: 2, nameRule: { maxBytes: 44 }, renamesIgnored: false });
  w.local.write('keep.txt', 'keep');
  await w.start();
  const step = stepper(w);
  await step(() => w.advance(400));
  await step(() => w.write('a.txt', 'same'));
  await step(() => slowWrite(w, 'other/e.txt', 900, 4, 1));
  await step(() => slowWrite(w, 'sub/a.txt', 500, 3, 2));
  // The record of a.txt's document is lost. The process the cut restarted is stopped while its
  // first claim is in flight: the claim ends and is released, so the upgraded daemon takes over at once.
  await step(() => w.damageJournal('cut', 0));
  await step(() => w.upgradeFrom010UnderNewHostName());
  // a.txt too large from now on: its document stays as it was, under the id before the upgrade.
  await step(() => {
    w.rename('a.txt', '.swap-tmp');
    w.rename('sub/a.txt', 'a.txt');
    w.rename('.swap-tmp', 'sub/a.txt');
  });
  // A process on another host with this copy would derive its own id and re-mark keep.txt's
  // document, the one record that teaches the daemon the id before the upgrade.
  await step(() => w.startTwin('copied-state'));
  expect(w.twinLive(), 'a copy without our identity started as a second process of ours').toBe(false);
  await step(() => w.damageJournal('empty', 0));
  await checkInvariants(w);
}, 60_000);

it('the lead, from seed 6002 history 3,791: a daemon stopped while its first claim is in flight releases it; the next one, under a new host name, takes over at once, not at expiry', async () => {
  const w = await startedWorld();
  await w.advance(1_000);
  // Restarted: the new process finds the marker and claims it; stopped while the claim waits out its settle time, for a restart under a new host name.
  await w.restart();
  await w.renameHost();
  await w.advance(SIM_LEASE.settleMs * 2);
  expect(w.proc!.lease?.holds()).toBe(true);
  await checkInvariants(w);
});

it("seed 9101, history 9,922: a journal emptied after a folder's move, the folder moved again: the rename takes the state's older record of the document with it, and other/e.txt is uploaded", async () => {
  const w = await startedWorld();
  const step = stepper(w);
  // d.txt's record reaches the snapshot; its move to staging/ (carried out at once by the restart's first pass), the journal alone.
  await step(() => w.write('sub/deep/d.txt', '12'));
  await step(() => w.advance(61_000));
  await step(() => w.restart());
  await step(() => w.rename('sub/deep', 'staging'));
  // Another installation's document holds other/e.txt, whose file is being written: the follow-up of the set-aside file asks for a full pass.
  await step(() => w.foreignUpload('other/e.txt', '12'));
  await step(() => slowWrite(w, 'other/e.txt', 200));
  // The state goes back to sub/deep/d.txt, the document says staging/d.txt, the file is in staging.old/: renamed from
  // staging/d.txt, the record at sub/deep/d.txt goes too (one document at two paths failed every full pass's listing check).
  await step(() => w.damageJournal('empty', 0));
  await step(() => {
    w.rename('staging', 'staging.old');
    w.mkdir('staging');
  });
  await checkInvariants(w);
});

it("seed 9304, history 4,016: a journal damaged after a file's delete, the file written anew during the start's full pass: its stale record goes and the file is uploaded", async () => {
  const w = await startedWorld();
  const step = stepper(w);
  // churn.txt is uploaded (its record reaches the snapshot) and deleted (the journal alone holds that).
  await step(() => churnDuringStartPass(w, 'churn.txt', 'same'));
  await step(() => w.advance(10_000));
  // Written again with the same content during a start that a stop cuts before any write.
  await step(() => churnDuringStartPass(w, 'churn.txt', 'same'));
  // The journal's first record damaged: the state records churn.txt's deleted document again. The
  // full pass sets churn.txt aside (written 0.1 s ago) and finds that document nowhere: the record
  // goes, so the follow-up uploads the file instead of finding it "unchanged" until the next full pass.
  await step(() => w.damageJournal('flip', 0));
  await checkInvariants(w);
});

it('seed 9510, history 3,933: a state older than the service (a journal cut after a rename), upgraded from 0.1.0 under a new host name: the renamed document is re-marked at its new path, not uploaded again', async () => {
  const w = await startedWorld();
  const step = stepper(w);
  await step(() => w.write('sub/a.txt', 'x'));
  await step(() => w.advance(2_500));
  await step(() => w.restart({ ...config, maxFileBytes: 5 }));
  // swap(b.txt, sub/a.txt): the rename reaches the service (its metadata names b.txt); only the journal holds it.
  await step(() => w.rename('sub/a.txt', 'b.txt'));
  await step(async () => void (await writeInHalvesAcrossReload(w, 'a.txt', 300, 1)));
  await step(async () => {
    w.mkdir('sub');
    await w.advance(11_000);
    await slowWrite(w, 'sub/a.txt', 900, 2, 2);
  });
  await step(() => w.damageJournal('cut', 0));
  // The state records the document at sub/a.txt (too large now: excluded) under the old id; its
  // metadata, a former id's, says b.txt: the newest path, where it is re-marked.
  await step(() => w.upgradeFrom010UnderNewHostName());
  await step(() => w.startTwin('copied-state'));
  await checkInvariants(w);
});

it("seed 9604, history 4,585: a service that appends \" (1)\" and ignores renames, our unmarked upload's answer lost to a journal damaged later, a person's document of the file's name and size: the person's document is kept", async () => {
  const w = new World(config, { updateClears: false, paging: 'none', pageSize: 2, nameRule: { suffix: ' (1)' }, renamesIgnored: true });
  w.local.write('keep.txt', 'keep');
  await w.start();
  const step = stepper(w);
  await step(() => w.write('sub/deep/d.txt', 'yy'));
  await step(() => w.rename('sub/deep/d.txt', 'sub/a.txt'));
  await step(() => void (w.service.faults = ['rate-limited-retry-after', 'none']));
  // The marked uploads are sent again unmarked (the service ignores new names); their
  // documents, "sub/a.txt (1)", carry their metadata.
  await step(() => w.advance(61_000));
  await step(() => w.personUpload('sub/a.txt', '12'));
  // The state comes back from before the upload's answer: its intent open, its document known
  // by its metadata only, under a name the service rewrote.
  await step(() => w.damageJournal('flip', 0));
  await checkInvariants(w);
});

it("seed 9803, history 2,030: an unmarked upload committed late (a service that ignores new names), a person's document of its name and size, the host renamed: the person's document is left alone", async () => {
  const w = new World(config, { updateClears: false, paging: 'none', pageSize: 2, renamesIgnored: true });
  w.local.write('keep.txt', 'keep');
  await w.start();
  const step = stepper(w);
  await step(() => {
    w.remove('sub/a.txt');
    w.write('sub/a.txt', 'other');
  });
  await step(() => void (w.service.faults = ['none', 'none', 'none', 'late-commit', 'none']));
  await step(() => slowWrite(w, 'sub/c.md', 1500, 2));
  await step(() => w.restart());
  // With the first pass listing beside the lease's claim settle (branch leasesettle), this
  // upload landed in that wait, between the restart's listing and its unmarked upload of
  // sub/a.txt (answer lost, committed late), and was taken for the lost answer.
  await step(() => w.personUpload('sub/a.txt', 'other'));
  await step(() => w.renameHost());
  await checkInvariants(w);
});

it('seed 9926, history 9,623: a file set aside by the start, found gone by an earlier pass, written anew before its follow-up: the follow-up does not send the first chunk', async () => {
  const w = new World({ ...config, exclude: ['**/deep/**'] }, { updateClears: false, paging: 'none', pageSize: 2 });
  w.local.write('keep.txt', 'keep');
  await w.start();
  const step = stepper(w);
  // The start's full pass sets a.txt aside (written as its first call begins); a swap moves
  // it away, and the pass its events bring finds it gone; a slow writer then makes it anew
  // within a window of the follow-up the start's pass asked for. With the first pass
  // walking beside the lease's claim settle (branch leasesettle), that follow-up found no
  // record of a.txt and sent its first chunk.
  await step(() => churnDuringStartPass(w, 'a.txt', 'x'));
  await step(() => {
    w.rename('a.txt', '.swap-tmp');
    w.rename('x.log', 'a.txt');
    w.rename('.swap-tmp', 'x.log');
  });
  await step(() => slowWrite(w, 'sub/deep/d.txt', 500, 3, 1));
  await step(async () => {
    await slowWrite(w, 'a.txt', 500, 2, 2);
    w.partials.add(sha256('slow2.0|'));
  });
  await step(() => w.personRenamesOurs(0, 'renamed.txt'));
  await checkInvariants(w);
});

it('seed 9942, history 305: a document the state lost (a damaged journal) of a file that cannot be read is recorded, so that the file\'s delete deletes it', async () => {
  const { w, step } = await withSyncedFile('sub/c.md', 'x');
  // The journal holding sub/c.md's record is lost while the daemon is down; the file cannot
  // be read when it starts again. Its full pass recognises the document as ours from the
  // listing but set the file aside unrecorded, so the pass the file's delete brought (an
  // incremental one: no listing) found nothing to delete, and the document stayed an orphan
  // until the next periodic full pass.
  await step(() => w.setUnreadable('sub/c.md', true));
  await step(async () => {
    await w.damageJournal('empty', 0);
    await w.advance(10_000);
  });
  await step(() => w.remove('sub/c.md'));
  await checkInvariants(w);
});

it('seed 20012, history 1,873: a document deleted at the path its metadata names loses its record at a path set aside too, so that the file there is uploaded', async () => {
  const { w, step } = await withSyncedFile('b.txt', 'x');
  // A state older than the listing (here a restored backup; in the seed, a journal emptied by
  // a power cut) records b.txt's document at b.txt, while the listing shows it at a.txt, where
  // a rename had moved it. The file was moved back to b.txt while the daemon was down: at the
  // start's pass a.txt is gone (its document deleted) and b.txt is set aside (just moved).
  // The record of the deleted document stayed at b.txt, so b.txt was taken for synced.
  await step(() => w.takeBackup());
  await step(async () => {
    w.rename('b.txt', 'a.txt');
    await w.advance(10_000);
  });
  await step(async () => {
    w.rename('a.txt', 'b.txt');
    await w.restoreBackup(0);
    await w.advance(10_000);
  });
  await checkInvariants(w);
});

it('beside seed 9932, history 8,426 (written by hand): an excluded file whose document a person deleted loses its record at the next full pass, so that, saved again with the content it was synced with, it is uploaded', async () => {
  const { w, step } = await withSyncedFile('b.txt', 'ab');
  // A person deletes b.txt's document; the file grows past maxFileBytes and the daemon
  // restarts: the full pass excludes b.txt and its listing shows its recorded document
  // nowhere. The record was kept (only a file set aside for being unreadable or written
  // lost it), so the editor's save of the synced content was taken for synced.
  await step(() => {
    const docs = w.service.docs_();
    w.personDeletesOurs(docs.filter((d) => d.metadata['dssync_installation'] === w.installationId).findIndex((d) => d.metadata['dssync_path'] === 'b.txt'));
  });
  await step(() => growPastMaxFileBytes(w, 'b.txt'));
  await step(() => editorSave(w, 'b.txt', 'ab'));
  await checkInvariants(w);
});

it('seed 9932, history 8,426 (as main reaches it): a file excluded at the first pass after the 0.1.0 upgrade under a new host name, saved back to its synced content, has its document re-marked within the quiet time, not at the hourly rescan', async () => {
  const { w, step } = await withSyncedFile('b.txt', 'ab');
  await step(() => growPastMaxFileBytes(w, 'b.txt'));
  // The upgrade's first pass re-marks every recorded document of the old id but b.txt's: it
  // is excluded, so set aside. The editor's save of the synced content then brought an
  // incremental pass, which found the file as recorded and had no listing to re-mark with.
  await step(async () => {
    await w.upgradeFrom010UnderNewHostName();
    await w.advance(10_000);
  });
  await step(() => editorSave(w, 'b.txt', 'ab'));
  await checkInvariants(w);
});

it("seed 20219, history 1,941: with renames ignored, a person's document of a file's name and size is not taken for the lost answer of a request whose other document is listed marked", async () => {
  // Uploads go under their real names, so a lost answer is told by name and size. The damaged
  // journal brought back the snapshot's open intent of a.txt and keep.txt, although its
  // answer had come and both documents had been marked: keep.txt's is listed with our
  // metadata; a.txt's a person deleted, and uploaded a document of a.txt of the same size.
  // That one was tied to the open intent and marked as a.txt's: the App kept its content.
  const w = await startedWorld(true);
  const step = stepper(w);
  await step(() => {
    w.remove('a.txt');
    w.write('a.txt', 'four');
  });
  await step(async () => void (await writeInHalvesAcrossReload(w, 'x.log', 800, 1)));
  await step(async () => void (await writeInHalvesAcrossReload(w, 'sub/c.md', 300, 2)));
  await step(() => w.personUpload('a.txt', 'same', true));
  await step(() => w.personDeletesOurs(0));
  await step(() => w.damageJournal('flip', 0));
  await step(() => w.advance(100));
  await checkInvariants(w);
}, 60_000);

/**
 * What a history is made of: fast-check commands over the World. Each names itself as it
 * prints in a shrunk history; each leaves the world settled (the daemon's work for the
 * instant done; a crashed process restarted).
 */
import fc from 'fast-check';
import { DEFAULT_AGGREGATOR_OPTIONS } from '../../src/local/watch/aggregator.js';
import { sha256 } from '../helpers/fake-local.js';
import type { Fault } from './fake-service.js';
import { IGNORE_FILE, type SimConfig, type TwinKind, type World } from './world.js';

export type Cmd = fc.AsyncCommand<object, World>;

/**
 * Defect classes under repair elsewhere, off until main has the fix (then on by default;
 * SIM_<NAME>=0 turns one off, =1 on):
 * - SIM_RACY (on: fixed on main, engine/racy.ts): same-size rewrites with an equal or
 *   restored mtime (issue 9 defect 4, the racy quick check): writes at the instant of a
 *   pass, mtime put back, swaps.
 * - SIM_PERSON_SAME_SIZE (on: fixed on main): people's uploads with the same full name and
 *   size as our files; once claimed by an upload intent and deleted as our duplicate.
 * - SIM_SLOW_NEW_FOLDER (on: found by this simulation, fixed in aggregator.ts): a file written with pauses
 *   into a folder just created is uploaded half-written. Its events fold into the pending
 *   folder's entry (aggregator.ts holderOf), which has no stability window: released
 *   debounceMs after the last write, the walk of the new folder reads the partial file;
 *   and, released as part of the folder, the file's size is not remembered, so its next
 *   'change' does not count as growth either. Seed 42, shrunk: slowWrite(sub/a.txt, 2
 *   chunks, 900 ms apart) with "sub" new; also a folder just moved in (seed 20261124:
 *   deployOver(sub) then slowWrite(sub/c.md)). While off, a slow writer's folder exists,
 *   and its events are released, before the writer starts.
 * - SIM_SLOW_ACROSS_RESTART (on: found, fixed in aggregator.ts, the start window): a daemon (re)started while a file is being
 *   written with pauses uploads a prefix in an incremental pass: the aggregator's memory of
 *   sizes dies with the process, so the first 'change' after the start has no earlier size
 *   to show growth and is released debounceMs later. Seed 42, shrunk: faults(crash-before),
 *   slowWrite(a.txt, 2 chunks, 500 ms apart). While off, the prefixes of a slow write
 *   during which the process restarted are not held against it.
 * - SIM_PERSON_RACES_UPLOAD (on: found, fixed in engine/plan.ts, mirror.ts, executor.ts): a
 *   person uploads a document of the full name and size of a file dssync is about to upload
 *   by an incremental pass (no listing since); dssync's upload answer is lost (late commit,
 *   crash at the request); the first listing after it showed only the person's document,
 *   which the intent pinned as ours and marked with our metadata (the intent's "existed
 *   before" set was only as fresh as the last listing). Seed 20261126, shrunk:
 *   deleteAndRecreate(sub/c.md, same), crashAtNextCall, personUploads(sub/c.md, same),
 *   advance(10000); seed 20261127: write(a.txt, 12), personUploads(sub/a.txt, ab),
 *   rename(a.txt, sub/a.txt), crashAtNextCall, ... Fix: only a listing of the upload's own
 *   pass ties a lost answer's document to it by name and size; otherwise the document is
 *   doubtful (left alone, reported, the file sent again). Since uploads are sent under a
 *   marked name (engine/document-fields.ts markUploadName), such an upload's document is
 *   told by that name, and the oracle lets no unmarked upload of ours stay. While off, people's documents under
 *   our files' full names have sizes no file of ours has (base names and free names keep them).
 * - SIM_WALL_BACK_REPAIR (on: found by this simulation, fixed in engine/mirror.ts: a file whose
 *   stat is the one the state recorded is not being written, whatever its times): after the wall clock
 *   steps back, every file written within the step has an mtime in the future, and every
 *   full pass sets it aside (stability window, "a future time counts as young") even when
 *   its stat is the one the state synced; the follow-up is an incremental pass, which has no
 *   listing. So a document of ours a person deleted is uploaded again only once the wall
 *   clock has caught up with the mtime: up to the size of the step (an hour). Seed 42,
 *   shrunk: slowWrite(a.txt, 2 chunks, 1500 ms apart), stepWallClock(-3600 s),
 *   personDeletesOurDocument(#0), writeIgnoreFile(""); seed 8 (long run, history 840):
 *   stepWallClock(+3600 s), slowWrite(a.txt, 2 chunks, 200 ms apart), advance(2500),
 *   personRenamesOurDocument(#7, renamed.txt), stepWallClock(-3600 s). While off, the final
 *   restart comes after the wall clock caught up with the newest mtime (invariants.ts).
 * - SIM_CLONED_WRITER (on: found by this simulation, fixed with writer sessions, engine/plan.ts
 *   ourSession): another writer with our installation and mapping ids (issue 23 defect 2: a
 *   cloned host, a copied state, two configs on one state) uploads a document this state
 *   never recorded — with its metadata at once, or caught in flight under its marked name
 *   (our upload tag, its own session) before its metadata; it must never be deleted, and
 *   the pass must report 'another-writer'. Seed 42, shrunk: churnDuringStartPass(a.txt, x),
 *   rename(a.txt, other/e.txt), clonedHostUploads(other/e.txt, 12),
 *   hostRenamedAndRestarted() -> the clone's document at a path we track deleted as a stale
 *   version of ours (plan.ts ourOwnWrite).
 * - SIM_RESTORE_BACKUP (on: issue 34 case 4): a backup of the state's folder is taken while
 *   the daemon runs, and later the daemon is stopped, the folder restored from it, and the
 *   daemon started again. Every pass holds the mapping's lease while no clone writes
 *   (world.ts), so what was written since the backup is recovered (owner.ts rows O9, O19):
 *   the invariants ask for convergence with no command.
 */
export const FLAGS = {
  racy: flag('SIM_RACY', true),
  personSameSize: flag('SIM_PERSON_SAME_SIZE', true),
  slowWriteNewFolder: flag('SIM_SLOW_NEW_FOLDER', true),
  slowWriteAcrossRestart: flag('SIM_SLOW_ACROSS_RESTART', true),
  personRacesUpload: flag('SIM_PERSON_RACES_UPLOAD', true),
  wallBackRepair: flag('SIM_WALL_BACK_REPAIR', true),
  clonedWriter: flag('SIM_CLONED_WRITER', true),
  restoreBackup: flag('SIM_RESTORE_BACKUP', true),
  twoProcesses: flag('SIM_TWO_PROCESSES', true),
  nameRules: flag('SIM_NAME_RULES', true),
  journalDamage: flag('SIM_JOURNAL_DAMAGE', true),
  identityFileLost: flag('SIM_IDENTITY_FILE_LOST', true),
  upgradeNewHostName: flag('SIM_UPGRADE_NEW_HOST_NAME', true),
};

function flag(name: string, byDefault: boolean): boolean {
  const v = process.env[name];
  return v === undefined || v === '' ? byDefault : v === '1';
}

/** Paths the history plays with: two folders deep, a name shared across folders, an excluded .log. */
export const FILES = ['a.txt', 'b.txt', 'sub/a.txt', 'sub/c.md', 'sub/deep/d.txt', 'other/e.txt', 'x.log'];
export const DIRS = ['sub', 'sub/deep', 'other', 'staging'];
/** Contents with equal sizes among them (yy/12/ab, same/four) and one of 10 bytes (too large at maxFileBytes 5). */
export const CONTENTS = ['x', 'yy', '12', 'ab', 'zzz', 'same', 'four', 'other', 'ten bytes!'];
const IGNORE_TEXTS = ['', 'sub/\n', '*.md\n', 'other/\n', 'deep\n'];

const file = fc.constantFrom(...FILES);
const dir = fc.constantFrom(...DIRS);
const content = fc.constantFrom(...CONTENTS);

let slowWrites = 0;
/** The stability window of the daemon (aggregator settleMs, every full pass): a file unchanged this long is complete. */
const STABLE_MS = DEFAULT_AGGREGATOR_OPTIONS.settleMs;

const cmd = (name: string, run: (w: World) => Promise<void> | void): Cmd => ({
  check: () => true,
  run: async (_m, w) => {
    w.commandsRun++;
    await run(w);
    // Without the racy cases, no two writes share an instant with each other or with a pass.
    if (!FLAGS.racy) await w.advance(1);
    await w.settle();
    await w.restartIfCrashed();
  },
  toString: () => name,
});

const FAULTS: Fault[] = ['none', 'server-error', 'rate-limited', 'rate-limited-retry-after', 'ambiguous', 'dropped', 'late-commit', 'late-commit-after-deadline', 'crash-before', 'crash-after', 'write-between-pages'];

export const configArb: fc.Arbitrary<SimConfig> = fc.record({
  prune: fc.constantFrom<'ours' | 'all'>('ours', 'ours', 'all'),
  exclude: fc.constantFrom<string[]>([], [], ['other/**'], ['**/deep/**']),
  include: fc.constantFrom<string[]>(['**/*.{txt,md}'], ['**/*.{txt,md}'], ['**/*.txt']),
  maxFileBytes: fc.constantFrom(1_000_000, 1_000_000, 5),
  maxDeletePercent: fc.constantFrom(50, 100),
  massDeleteMinimum: fc.constantFrom(3, 1000),
});

function personContent(c: string, name: string): string {
  // With a class off, people's contents (under our files' full names) have sizes no file of ours has.
  return FLAGS.personSameSize && (FLAGS.personRacesUpload || !FILES.includes(name)) ? c : `by a person: ${c}`;
}

/**
 * churnDuringStartPass: a restart during which `p` is written as the start's first service
 * call begins and deleted once a write call has acted (also lived through by histories.test.ts).
 */
export async function churnDuringStartPass(w: World, p: string, c: string): Promise<void> {
  let created = false;
  w.service.duringCall = (when, write) => {
    if (!created && when === 'before') {
      w.write(p, c);
      created = true;
    } else if (created && when === 'after' && write) {
      w.remove(p);
      return true;
    }
    return false;
  };
  await w.restart();
}

export function commands(): fc.Arbitrary<Cmd>[] {
  const list: fc.Arbitrary<Cmd>[] = [
    // Local changes.
    fc.tuple(file, content).map(([p, c]) => cmd(`write(${p}, ${c})`, (w) => w.write(p, c))),
    fc.tuple(file, content).map(([p, c]) =>
      cmd(`editorSave(${p}, ${c})`, (w) => {
        // An editor's atomic save: a hidden temp file renamed over the file (a new inode).
        const tmp = p.includes('/') ? `${p.slice(0, p.lastIndexOf('/'))}/.save-tmp` : '.save-tmp';
        w.write(tmp, c);
        w.rename(tmp, p);
      }),
    ),
    fc.tuple(file, file).map(([a, b]) => cmd(`rename(${a}, ${b})`, (w) => w.rename(a, b))),
    file.map((p) => cmd(`delete(${p})`, (w) => w.remove(p))),
    fc.tuple(file, content).map(([p, c]) =>
      cmd(`deleteAndRecreate(${p}, ${c})`, (w) => {
        w.remove(p);
        w.write(p, c);
      }),
    ),
    fc.tuple(dir, dir).map(([a, b]) => cmd(`moveFolder(${a}, ${b})`, (w) => w.rename(a, b))),
    fc.tuple(dir, fc.boolean()).map(([d, staging]) =>
      cmd(staging ? `deployOver(${d})` : `replaceFolder(${d})`, (w) => {
        if (staging) {
          // rm -rf docs; mv staging docs
          w.remove(d);
          w.rename('staging', d);
        } else {
          // mv docs docs.old; mkdir docs
          w.rename(d, `${d}.old`);
          w.mkdir(d);
        }
      }),
    ),
    fc.constantFrom(...IGNORE_TEXTS, undefined).map((t) =>
      cmd(t === undefined ? 'deleteIgnoreFile' : `writeIgnoreFile(${JSON.stringify(t)})`, (w) => (t === undefined ? w.remove(IGNORE_FILE) : w.write(IGNORE_FILE, t))),
    ),
    fc.tuple(file, fc.boolean()).map(([p, on]) => cmd(`${on ? 'chmod000' : 'chmod644'}(${p})`, (w) => w.setUnreadable(p, on))),
    fc.tuple(file, fc.integer({ min: 2, max: 5 }), fc.constantFrom(200, 500, 900, 1500)).map(([p, chunks, pauseMs]) =>
      cmd(`slowWrite(${p}, ${chunks} chunks, ${pauseMs} ms apart)`, async (w) => {
        // A writer that pauses between writes (a copy over a slow link, a log): truncated
        // first, then appended; the App must never see a prefix (issue 9 defect 7).
        const id = ++slowWrites;
        const restarts = w.restarts;
        const partials: string[] = [];
        let text = '';
        const folder = p.includes('/') ? p.slice(0, p.lastIndexOf('/')) : '';
        if (!FLAGS.slowWriteNewFolder && folder !== '') {
          // The folder exists and its own events (a move, a replacement) are released before
          // the writer starts: past the aggregator's maxWaitMs (10 s).
          w.mkdir(folder);
          await w.advance(11_000);
        }
        w.write(p, '');
        for (let i = 0; i < chunks; i++) {
          const t0 = w.now;
          await w.advance(pauseMs);
          // The state before this pause was partial only when the pause stayed short: a
          // request that took simulated time (a deadline waited out) can stretch it past
          // the stability window, and a file unchanged that long is complete to anyone.
          if (i > 0 && w.now - t0 < STABLE_MS) partials.push(sha256(text));
          text += `slow${id}.${i}|`;
          w.write(p, text);
        }
        if (FLAGS.slowWriteAcrossRestart || w.restarts === restarts) for (const h of partials) w.partials.add(h);
      }),
    ),
    // People, and another installation, on the data source.
    fc.tuple(fc.constantFrom(...FILES, 'c.md', 'd.txt', 'notes.txt'), content).map(([name, c]) =>
      cmd(`personUploads(${name}, ${personContent(c, name)})`, (w) => w.personUpload(name, personContent(c, name), FLAGS.personRacesUpload)),
    ),
    fc.tuple(file, content).map(([p, c]) => cmd(`otherInstallationUploads(${p}, ${c})`, (w) => w.foreignUpload(p, c))),
    fc.nat(20).map((i) => cmd(`personDeletesOurDocument(#${i})`, (w) => w.personDeletesOurs(i))),
    fc.tuple(fc.nat(20), fc.constantFrom('renamed.txt', 'a.txt', 'sub/a.txt')).map(([i, n]) => cmd(`personRenamesOurDocument(#${i}, ${n})`, (w) => w.personRenamesOurs(i, n))),
    // Service faults: the next calls fail so.
    fc.array(fc.constantFrom(...FAULTS), { minLength: 1, maxLength: 6 }).map((faults) =>
      cmd(`faults(${faults.join(',')})`, (w) => {
        w.service.faults = [...faults];
      }),
    ),
    // The machine.
    fc.constantFrom(0, 0, 0.5, 1).map((torn) =>
      cmd(`crash(torn ${torn})`, async (w) => {
        w.crashNow(torn);
        await w.restartIfCrashed();
      }),
    ),
    fc.constantFrom(0, 0.5).map((torn) => cmd(`crashAtNextCall(torn ${torn})`, (w) => void (w.tornNext = torn, w.service.faults.unshift('crash-before')))),
    configArb.map((c) => cmd(`restartWithConfig(${JSON.stringify(c)})`, (w) => w.restart(c))),
    fc.constant(cmd('hostRenamedAndRestarted()', (w) => w.renameHost())),
    // The wall clock steps (chrony at a VM's boot, an NTP correction; issue 23 defect 7):
    // timers and windows run on monotonic time and must not stall or fire early.
    fc.constantFrom(-3_600_000, -600_000, -5_000, 5_000, 600_000, 3_600_000).map((ms) => cmd(`stepWallClock(${ms > 0 ? '+' : ''}${ms / 1000} s)`, (w) => w.stepWall(ms))),
    // A file written in two halves with a reload (a full pass at start) in the pause
    // (issue 23 defect 6): the start's pass must not send the first half. The whole pause
    // stays under the stability window (settleMs, 2 s): a longer one is a finished file to
    // any observer (the issue's 4 s case is the integration test's, with its window).
    fc.tuple(file, fc.constantFrom(300, 800)).map(([p, pauseMs]) =>
      cmd(`writeInHalvesAcrossReload(${p}, ${pauseMs} ms)`, async (w) => {
        const id = ++slowWrites;
        const half = `half${id}|`;
        // As slowWrite: opened with O_TRUNC and seen empty, then a pause, then the first half
        // (a shorter text written at once and left alone is an edit to any observer: the
        // aggregator sends it after debounceMs, and nothing can tell it from a finished file).
        w.write(p, '');
        await w.advance(pauseMs);
        w.write(p, half);
        const t0 = w.now;
        await w.advance(pauseMs);
        await w.restart();
        await w.advance(pauseMs);
        // (A restart whose pass waited out a deadline makes the pause too long: see slowWrite.)
        if (w.now - t0 < STABLE_MS) w.partials.add(sha256(half));
        w.write(p, `${half}rest${id}|`);
      }),
    ),
    // A file created while the start's pass runs (at its first request, so its walk finds
    // it) and deleted once its first write request has acted (issue 23 defect 11).
    fc.tuple(fc.constantFrom('a.txt', 'sub/c.md', 'churn.txt'), content).map(([p, c]) =>
      cmd(`churnDuringStartPass(${p}, ${c})`, (w) => churnDuringStartPass(w, p, c)),
    ),
    fc.constantFrom(100, 400, 1_000, 2_500, 10_000, 61_000).map((ms) => cmd(`advance(${ms})`, (w) => w.advance(ms))),
    fc.constantFrom(100, 1_000, 2_500).map((ms) => cmd(`advance(${ms})`, (w) => w.advance(ms))),
  ];
  // Another writer with our identity (a cloned host, a copied state, two configs on one state).
  if (FLAGS.clonedWriter) list.push(fc.tuple(file, content, fc.boolean()).map(([p, c, inFlight]) => cmd(`clonedHostUploads(${p}, ${c}${inFlight ? ', in flight' : ''})`, (w) => w.cloneUpload(p, c, inFlight))));
  // The state restored from an older backup (issue 34 case 4): recovered without a command.
  if (FLAGS.restoreBackup) list.push(fc.constant(cmd('stateBackedUp()', (w) => w.takeBackup())), fc.nat(3).map((i) => cmd(`stateRestoredFromBackup(#${i} from the newest)`, (w) => w.restoreBackup(i))));
  // The journal damaged while the daemon is down, its identity file kept (issue 34 case 1), or lost with it.
  if (FLAGS.journalDamage) {
    list.push(
      fc.tuple(fc.constantFrom<'flip' | 'cut' | 'empty'>('flip', 'flip', 'cut', 'cut', 'empty'), fc.double({ min: 0, max: 1, noNaN: true }), fc.constantFrom(false, false, FLAGS.identityFileLost)).map(([kind, at, lost]) =>
        cmd(`${kind === 'empty' ? 'journalEmptiedByPowerCut(' : `journal${kind === 'flip' ? 'ByteFlipped' : 'Cut'}(at ${(at * 100).toFixed(1)}%`}${lost ? ', identity file lost' : ''})`, (w) => w.damageJournal(kind, at, lost)),
      ),
    );
  }
  // A state of dssync 0.1.0 started under a new host name (issue 34 case 5).
  if (FLAGS.upgradeNewHostName) list.push(fc.constant(cmd('upgradedFrom010UnderNewHostName()', (w) => w.upgradeFrom010UnderNewHostName())));
  if (FLAGS.twoProcesses) {
    const twinKind = fc.constantFrom<TwinKind>('copied-state', 'pinned-replica');
    list.push(
      twinKind.map((k) => cmd(`secondProcessStarts(${k})`, (w) => w.startTwin(k))),
      twinKind.map((k) => cmd(`bothStartTogether(${k})`, (w) => w.restartBothTogether(k))),
      fc.constant(cmd('secondProcessKilled()', (w) => w.killTwin())),
      fc.constant(cmd('secondProcessStopped()', (w) => w.stopTwin())),
    );
  }
  if (FLAGS.racy) {
    list.push(
      fc.tuple(file, content).map(([p, c]) =>
        cmd(`sameSizeEditRestoringMtime(${p}, ${c})`, (w) => {
          // rsync --times, touch -r, an archive extracted over it: size and mtime as before.
          const f = w.local.fileAt(p);
          if (!f) return w.write(p, c);
          const same = c.length === f.data.length ? c : CONTENTS.find((x) => x.length === f.data.length && x !== f.data.toString()) ?? c;
          w.write(p, same, f.mtimeMs);
        }),
      ),
      fc.tuple(file, file).map(([a, b]) =>
        cmd(`swap(${a}, ${b})`, (w) => {
          // mv a t; mv b a; mv t b
          const tmp = '.swap-tmp';
          w.rename(a, tmp);
          w.rename(b, a);
          w.rename(tmp, b);
        }),
      ),
    );
  }
  return list;
}

/**
 * The stability window of every pass (MirrorDeps.stabilityMs): which files changed too
 * recently to be read whole, set aside until a later look finds them stable, and which of
 * them a listing left unjudged. The mirror asks it while it prepares the local side of a
 * round; it keeps its records across passes.
 */
import type { DocumentRecord } from '../api/records.js';
import type { EntryStat, MappingState } from '../state/schema.js';
import type { ChangeScope, ScanResult } from './local-side.js';
import type { OwnerOf } from './owner.js';
import type { LocalFileInfo } from './plan.js';
import { sameStat, type StatNow } from './racy.js';

export interface StabilityOptions {
  /** The window (ms; 0: none). */
  windowMs: number;
  /** The wall clock: file times are compared with it. */
  now: () => number;
  /** A clock that never steps: two looks a window apart. */
  monotonic: () => number;
}

export class StabilityWindow {
  /**
   * Files set aside by the stability window, with their stat and when it was first seen so
   * (monotonic): a pass that finds the same stat a window later takes the file as stable.
   * `gone`: a full walk no longer found it, while the runner's follow-up still names it.
   * `released`: found stable at this stat, kept for a follow-up that may still name it
   * (forget).
   */
  private readonly settling = new Map<string, SettlingRecord>();
  /**
   * Files the last full pass set aside (being written, unreadable, excluded) while its
   * listing showed a document of ours for the path that the state does not record there (a
   * move whose record a crash cut, a lost answer): their remote side was left unjudged, and
   * the state cannot stand in for it. An incremental pass that finds one readable and stable
   * (the follow-up, a chmod, a file back under maxFileBytes) does not send it blind (a
   * duplicate of the listed document) but holds it and asks for a full pass
   * (`needsFullPass`). So too a recorded document the listing would re-mark (owner rule O4):
   * an incremental pass has no listing to re-mark it with (seeds 4003, 9932).
   */
  private unjudged = new Set<string>();

  constructor(private readonly o: StabilityOptions) {}

  /** A full listing is in: the paths set aside (`aside`; undefined: none) it left unjudged (see `unjudged`). */
  judged(remote: readonly DocumentRecord[], aside: ((path: string) => boolean) | undefined, mapping: MappingState, whose: OwnerOf<unknown>): void {
    this.unjudged = aside === undefined ? new Set() : unjudgedRemote(remote, aside, mapping, whose);
  }

  /** True when an incremental pass must not send `path`: a listing left it unjudged. */
  needsListing(path: string): boolean {
    return this.unjudged.has(path);
  }

  /**
   * What is no longer waited for. The runner's follow-up of a set-aside file is an
   * incremental pass naming it a window later, and an incremental pass judges only a file it
   * has a record of (the aggregator holds the others). So a record outlives the file's
   * release and its absence from a full walk (forgotten early, the follow-up could meet a
   * new writer's first chunk there with no record and send it half-written). A
   * file a full walk does not find is remembered as gone; a released one keeps the stat it
   * was released at, and any other stat at the follow-up is judged by the window again. A
   * pass that names the path and finds it gone keeps it as gone too (it need not be the
   * follow-up: seed 9926). A record is dropped when a pass that names the path finds the
   * file unchanged since its release; past MAX_SETTLING records the released and gone ones go.
   */
  forget(scan: ScanResult, scope: ChangeScope | undefined, mapping: MappingState): void {
    if (this.settling.size === 0) return;
    const named = scope ? new Set(scope.files) : undefined;
    for (const [path, held] of this.settling) {
      if (scan.files.has(path)) continue;
      // Vouched: unchanged from the state's record, so stable at that stat.
      const vouched = scan.vouched?.has(path) ? mapping.files.statOf(path) : undefined;
      if (!named && vouched) this.settling.set(path, { ...statOf(vouched), since: held.since, released: true });
      // Gone from a full walk, or from a pass that names it: remembered as gone, since the
      // follow-up may still come and meet a new writer's first chunk there (seed 9926).
      else if (!named || (named.has(path) && !scan.vouched?.has(path))) this.settling.set(path, { ...held, gone: true, released: undefined });
    }
    if (this.settling.size > MAX_SETTLING) for (const [path, held] of this.settling) if ((held.released || held.gone) && this.settling.size > MAX_SETTLING) this.settling.delete(path);
  }

  /** A file found stable: remembered at this stat for a follow-up still to come (forget). */
  private release(file: LocalFileInfo, full: boolean): false {
    const held = this.settling.get(file.path);
    if (held === undefined) return false;
    const unchanged = held.released === true && sameStat(held, file);
    if (unchanged && !full) this.settling.delete(file.path);
    else if (!unchanged) this.settling.set(file.path, { ...statOf(file), since: this.o.monotonic(), released: true });
    return false;
  }

  /**
   * The stability rule of every full pass (MirrorDeps.stabilityMs): true when `file` changed
   * too recently to be read whole. Checked in full passes, and in any pass for a file set
   * aside before (an incremental pass is the follow-up; events are held by the aggregator).
   *
   * A file is stable when any of these holds, none of which needs the mtime to be behind
   * the wall clock: its stat (size, mtime, ctime, dev, inode) is the one the state recorded
   * when it was last read whole (nothing wrote it since: a write moves the ctime to the
   * writer's "now", whatever that is); two looks a window apart on the monotonic clock saw
   * the same stat; or, when its times are behind the wall clock, they are a window old.
   * The first keeps a file written before a backward clock step (its mtime in the future)
   * from being set aside by every full pass until the wall clock catches up.
   */
  mayBeBeingWritten(file: LocalFileInfo, full: boolean, entry: EntryStat | undefined): boolean {
    const windowMs = this.o.windowMs;
    const held = this.settling.get(file.path);
    if (windowMs <= 0 || (!full && !held)) return false;
    if (entry !== undefined && sameStat(entry, file)) return this.release(file, full);
    if (held?.released && sameStat(held, file)) return this.release(file, full);
    // File times are wall-clock: compared with the wall clock (a future time proves nothing).
    const age = this.o.now() - Math.max(file.mtimeMs, file.ctimeMs ?? -Infinity);
    const mono = this.o.monotonic();
    const same = held !== undefined && !held.gone && !held.released && sameStat(held, file);
    // Two stats a window apart that agree prove it too, whatever the wall clock did.
    if (age >= windowMs || (same && mono - held.since >= windowMs)) return this.release(file, full);
    this.settling.set(file.path, { ...statOf(file), since: same ? held.since : mono });
    return true;
  }
}

/**
 * The rule of a rename made within the window before a full pass: a file the state has no
 * entry for at its path, whose inode, size and mtime (and device, when both know it) are
 * those the state records for a path the walk no longer finds, is that file moved. A rename
 * moves the ctime, never the content, so the file is read at once (not set aside) and the
 * planner carries it out as a rename of the document, not an upload and a delete. The index
 * of vanished entries is built at the first question (a pass that sets nothing aside asks
 * none): `present` says whether the walk accounts for a path (found, vouched for, skipped).
 */
export function renamedFromVanished(files: MappingState['files'], present: (path: string) => boolean): (file: LocalFileInfo) => boolean {
  let vanished: Map<number, EntryStat[]> | undefined;
  const index = (): Map<number, EntryStat[]> => {
    const out = new Map<number, EntryStat[]>();
    for (const path of files.keys()) {
      if (present(path)) continue;
      const st = files.statOf(path);
      if (st?.ino === undefined) continue;
      out.set(st.ino, [...(out.get(st.ino) ?? []), st]);
    }
    return out;
  };
  return (file) => {
    if (file.ino === undefined || files.has(file.path)) return false;
    vanished ??= index();
    return (vanished.get(file.ino) ?? []).some((st) => st.size === file.size && st.mtimeMs === file.mtimeMs && (st.dev === undefined || file.dev === undefined || st.dev === file.dev));
  };
}

/**
 * Set-aside paths for which `remote` holds a document of this mapping (ours, or another
 * writer's of this mapping id, by the owner rule) that the state does not record at that
 * path, or that it records there and the plan would re-mark (another id of ours, metadata
 * missing: owner rule O4).
 */
function unjudgedRemote(remote: readonly DocumentRecord[], aside: (path: string) => boolean, mapping: MappingState, whose: OwnerOf<unknown>): Set<string> {
  const out = new Set<string>();
  for (const doc of remote) {
    const o = whose(doc);
    if (!('path' in o) || o.kind === 'other-mapping' || !aside(o.path)) continue;
    if (mapping.files.documentIdOf(o.path) !== doc.id || (o.kind === 'ours' && o.rewrite)) out.add(o.path);
  }
  return out;
}

interface SettlingRecord extends StatNow {
  /** When this stat was first seen (monotonic). */
  since: number;
  gone?: true | undefined;
  released?: true | undefined;
}

/** Records of set-aside files kept at most (Mirror.settling): released and gone ones are dropped first past it. */
const MAX_SETTLING = 100_000;

function statOf(st: StatNow): StatNow {
  return { size: st.size, mtimeMs: st.mtimeMs, ctimeMs: st.ctimeMs, dev: st.dev, ino: st.ino };
}

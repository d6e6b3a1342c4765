/**
 * A seeded first mirror kept in a folder (BENCH_SCALE_DIR), so that the restart over a
 * million files can be measured again and again without rebuilding its setup: writing the
 * tree takes ~5 min here and seeding the state and documents ~3 min, the restart itself
 * ~3 min. The folder holds
 *
 *   share/              the tree (bench/lib/tree.ts), mtimes a week back
 *   seed/state/         the state folder as the first mirror left it (lib/seed.ts: the seeded
 *                       state, then a real `dssync sync` that took the mapping's lease and
 *                       released it): the state file, its journal, the identity file and the
 *                       lease marker's id kept beside it; copied fresh to state/ before every run
 *   seed/documents.ndjson  the emulator's store as that first mirror left it, its lease marker
 *                       included: a header line (the snapshot without its documents), then one
 *                       document per line (one JSON document of a million records would pass
 *                       V8's string limit)
 *   state/              the state of the last run
 *   kept-set.json       what the set was built from; written last, so a set whose build
 *                       was interrupted is never taken for a complete one
 *
 * A set of format 1 (before the lease's first claim was part of the seed: `seed/state.json`,
 * no marker) is upgraded by the run that finds it (restart.ts): put back, given its lease by
 * the same `dssync sync`, kept again as format 2. Measured as it was, its "restart" would be
 * the mapping's first start under the lease (a listing to find a marker, its creation,
 * another listing, the settle wait).
 *
 * The state file's path is the same in every run (its installation id is derived from it).
 * Whether the tree is still as seeded is checked by the run itself: the daemon's first pass
 * over it reads no content and writes nothing, or the run reports it (restart.ts).
 */
import { createReadStream, createWriteStream } from 'node:fs';
import { chmod, copyFile, mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { once } from 'node:events';
import type { RunningEmulator } from '@dssync/emulator';
import type { StoreSnapshot } from '@dssync/emulator';
import type { TreeSpec } from './tree.js';

const MARKER = 'kept-set.json';
const FORMAT = 'dssync-bench-kept-set 2';
/** A set seeded before the lease: no marker document, no marker id beside the state. */
const FORMAT_WITHOUT_LEASE = 'dssync-bench-kept-set 1';

export interface KeptSetInfo {
  format: typeof FORMAT | typeof FORMAT_WITHOUT_LEASE;
  tree: TreeSpec;
  /** When the seeded state's files were hashed (ms since the epoch). */
  hashedAt: number;
  documents: number;
  builtAt: string;
}

/** A set kept in a folder: what it was built from, and whether it still lacks the lease of a first mirror (format 1). */
export interface KeptSet {
  info: KeptSetInfo;
  /** Seeded before the lease: the run gives it its lease and keeps it again (keepSet) before measuring. */
  withoutLease: boolean;
}

/** The folder's paths. `statePath` is where runs read and write the state. */
export function keptSetPaths(dir: string): { share: string; statePath: string; seedStateDir: string; seedStateWithoutLease: string; seedDocuments: string; marker: string } {
  return {
    share: join(dir, 'share'),
    statePath: join(dir, 'state', 'state.json'),
    seedStateDir: join(dir, 'seed', 'state'),
    seedStateWithoutLease: join(dir, 'seed', 'state.json'),
    seedDocuments: join(dir, 'seed', 'documents.ndjson'),
    marker: join(dir, MARKER),
  };
}

/**
 * Reads a set's kept-set.json (`text`, at `path`) for a run over `tree`: a set of this
 * benchmark and of this tree, or an error saying what to do.
 */
export function readKeptSetInfo(text: string, path: string, tree: TreeSpec): KeptSet {
  const info = JSON.parse(text) as KeptSetInfo;
  if (info.format !== FORMAT && info.format !== FORMAT_WITHOUT_LEASE) {
    throw new Error(`${path}: not a kept set of this benchmark (format ${JSON.stringify(info.format)}, expected ${JSON.stringify(FORMAT)}): remove the folder to build it again`);
  }
  const want = JSON.stringify(tree);
  if (JSON.stringify(info.tree) !== want) throw new Error(`${path}: the set kept there is of another tree (${JSON.stringify(info.tree)}, this run wants ${want}): name another BENCH_SCALE_DIR or remove this one`);
  return { info, withoutLease: info.format === FORMAT_WITHOUT_LEASE };
}

/**
 * The set kept in `dir` for this tree, or undefined when the folder is absent or empty (the
 * caller builds it there). Throws when it holds something else: an interrupted build, a set
 * of other sizes, or files that are not a set (never deleted here: the folder is the user's).
 */
export async function openKeptSet(dir: string, tree: TreeSpec): Promise<KeptSet | undefined> {
  const p = keptSetPaths(dir);
  let text: string;
  try {
    text = await readFile(p.marker, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
    const entries = await readdir(dir).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return [];
      throw err;
    });
    if (entries.length === 0) return undefined;
    throw new Error(`BENCH_SCALE_DIR=${dir} is not empty but holds no complete set (no ${MARKER}: a build was interrupted, or it is another folder): remove it, or name an absent or empty folder to build the set in`, { cause: e });
  }
  return readKeptSetInfo(text, p.marker, tree);
}

/**
 * Saves the first mirror as it is now (the state folder, the emulator's store) beside the
 * tree, then marks the set complete (format 2); a set of format 1 is replaced. Each part is
 * written aside and renamed into place, so an interrupted save leaves the set it replaces
 * whole.
 */
export async function keepSet(dir: string, info: Omit<KeptSetInfo, 'format' | 'builtAt' | 'documents'>, snap: StoreSnapshot): Promise<void> {
  const p = keptSetPaths(dir);
  const stateDir = dirname(p.statePath);
  const seedAside = `${p.seedStateDir}.new`;
  await rm(seedAside, { recursive: true, force: true });
  await mkdir(seedAside, { recursive: true, mode: 0o700 });
  for (const name of await readdir(stateDir)) {
    await copyFile(join(stateDir, name), join(seedAside, name));
    await chmod(join(seedAside, name), 0o600);
  }
  const docsAside = `${p.seedDocuments}.new`;
  const out = createWriteStream(docsAside, { mode: 0o600 });
  const write = async (line: string): Promise<void> => {
    if (!out.write(`${line}\n`)) await once(out, 'drain');
  };
  await write(JSON.stringify({ ...snap, documents: [] }));
  for (const d of snap.documents) await write(JSON.stringify(d));
  out.end();
  await once(out, 'finish');
  await rm(p.seedStateDir, { recursive: true, force: true });
  await rename(seedAside, p.seedStateDir);
  await rename(docsAside, p.seedDocuments);
  const marker: KeptSetInfo = { format: FORMAT, ...info, documents: snap.documents.length, builtAt: new Date().toISOString() };
  await writeFile(p.marker, `${JSON.stringify(marker, null, 2)}\n`);
  await rm(p.seedStateWithoutLease, { force: true });
}

/**
 * Puts the set back as the first mirror left it: the state folder copied fresh (what the
 * last run added removed) and the emulator's (empty) store filled from the saved documents.
 * A set of format 1 has only its seeded state file to put back.
 */
export async function restoreKeptSet(dir: string, set: KeptSet, emu: RunningEmulator): Promise<void> {
  const p = keptSetPaths(dir);
  const stateDir = dirname(p.statePath);
  await rm(stateDir, { recursive: true, force: true });
  await mkdir(stateDir, { recursive: true, mode: 0o700 });
  const copies: Array<[string, string]> = set.withoutLease
    ? [[p.seedStateWithoutLease, p.statePath]]
    : (await readdir(p.seedStateDir)).map((name) => [join(p.seedStateDir, name), join(stateDir, name)]);
  for (const [from, to] of copies) {
    await copyFile(from, to);
    await chmod(to, 0o600);
  }
  const lines = createInterface({ input: createReadStream(p.seedDocuments, 'utf8'), crlfDelay: Infinity });
  let snap: StoreSnapshot | undefined;
  for await (const line of lines) {
    if (line === '') continue;
    if (!snap) snap = JSON.parse(line) as StoreSnapshot;
    else snap.documents.push(JSON.parse(line) as StoreSnapshot['documents'][number]);
  }
  if (!snap) throw new Error(`${p.seedDocuments} is empty: remove ${dir} to build the set again`);
  (emu.store as unknown as { restore(s: StoreSnapshot): void }).restore(snap);
}

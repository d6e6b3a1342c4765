/**
 * A seeded first mirror kept in a folder (BENCH_SCALE_DIR), so that the restart over a
 * million files can be measured again and again without rebuilding its setup: writing the
 * tree takes ~5 min here and seeding the state and documents ~3 min, the restart itself
 * ~3 min. The folder holds
 *
 *   share/              the tree (bench/lib/tree.ts), mtimes a week back
 *   seed/state.json     the state file as seeded, copied fresh to state/ before every run
 *                       (a run appends to its journal and may fold it)
 *   seed/documents.ndjson  the emulator's store as seeded: a header line (the snapshot
 *                       without its documents), then one document per line (one JSON
 *                       document of a million records would pass V8's string limit)
 *   state/              the state of the last run
 *   kept-set.json       what the set was built from; written last, so a set whose build
 *                       was interrupted is never taken for a complete one
 *
 * The state file's path is the same in every run (its installation id is derived from it).
 * Whether the tree is still as seeded is checked by the run itself: the daemon's first pass
 * over it reads no content and writes nothing, or the run reports it (restart.ts).
 */
import { createReadStream, createWriteStream } from 'node:fs';
import { chmod, copyFile, mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { once } from 'node:events';
import type { RunningEmulator } from '@dssync/emulator';
import type { StoreSnapshot } from '@dssync/emulator';
import type { TreeSpec } from './tree.js';

const MARKER = 'kept-set.json';
const FORMAT = 'dssync-bench-kept-set 1';

export interface KeptSetInfo {
  format: typeof FORMAT;
  tree: TreeSpec;
  /** When the seeded state's files were hashed (ms since the epoch). */
  hashedAt: number;
  documents: number;
  builtAt: string;
}

/** The folder's paths. `statePath` is where runs read and write the state. */
export function keptSetPaths(dir: string): { share: string; statePath: string; seedState: string; seedDocuments: string; marker: string } {
  return {
    share: join(dir, 'share'),
    statePath: join(dir, 'state', 'state.json'),
    seedState: join(dir, 'seed', 'state.json'),
    seedDocuments: join(dir, 'seed', 'documents.ndjson'),
    marker: join(dir, MARKER),
  };
}

/**
 * The set kept in `dir` for this tree, or undefined when the folder is absent or empty (the
 * caller builds it there). Throws when it holds something else: an interrupted build, a set
 * of other sizes, or files that are not a set (never deleted here: the folder is the user's).
 */
export async function openKeptSet(dir: string, tree: TreeSpec): Promise<KeptSetInfo | undefined> {
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
  const info = JSON.parse(text) as KeptSetInfo;
  if (info.format !== FORMAT) throw new Error(`${p.marker}: not a kept set of this benchmark (format ${JSON.stringify(info.format)}, expected ${JSON.stringify(FORMAT)}): remove the folder to build it again`);
  const want = JSON.stringify(tree);
  if (JSON.stringify(info.tree) !== want) throw new Error(`${p.marker}: the set kept there is of another tree (${JSON.stringify(info.tree)}, this run wants ${want}): name another BENCH_SCALE_DIR or remove this one`);
  return info;
}

/** Saves the seeded state and documents beside the tree, then marks the set complete. */
export async function keepSet(dir: string, info: Omit<KeptSetInfo, 'format' | 'builtAt' | 'documents'>, snap: StoreSnapshot): Promise<void> {
  const p = keptSetPaths(dir);
  await mkdir(dirname(p.seedState), { recursive: true, mode: 0o700 });
  await copyFile(p.statePath, p.seedState);
  await chmod(p.seedState, 0o600);
  const out = createWriteStream(p.seedDocuments, { mode: 0o600 });
  const write = async (line: string): Promise<void> => {
    if (!out.write(`${line}\n`)) await once(out, 'drain');
  };
  await write(JSON.stringify({ ...snap, documents: [] }));
  for (const d of snap.documents) await write(JSON.stringify(d));
  out.end();
  await once(out, 'finish');
  const marker: KeptSetInfo = { format: FORMAT, ...info, documents: snap.documents.length, builtAt: new Date().toISOString() };
  await writeFile(p.marker, `${JSON.stringify(marker, null, 2)}\n`);
}

/**
 * Puts the set back as it was seeded: the state file copied fresh (the last run's journal
 * and lock removed) and the emulator's (empty) store filled from the saved documents.
 */
export async function restoreKeptSet(dir: string, emu: RunningEmulator): Promise<void> {
  const p = keptSetPaths(dir);
  await rm(dirname(p.statePath), { recursive: true, force: true });
  await mkdir(dirname(p.statePath), { recursive: true, mode: 0o700 });
  await copyFile(p.seedState, p.statePath);
  await chmod(p.statePath, 0o600);
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

/**
 * The world every bad-input case runs in: a folder already mirrored into a data source of
 * an in-process emulator (so there is something to lose), its state file and config, and
 * the proof that nothing was lost after the case: every document, local file and state
 * entry of the baseline still there and unchanged, and no duplicate.
 */
import { createHash } from 'node:crypto';
import { readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { expect } from 'vitest';
import { createClientFromConfig } from '../../src/compose/client.js';
import { loadConfig } from '../../src/config/load.js';
import type { Config } from '../../src/config/types.js';
import type { PassReport } from '../../src/engine/pass-report.js';
import { buildMirror } from '../../src/daemon/mapping/build-mirror.js';
import { silentLogger } from '../../src/log.js';
import { readStateFile, StateStore } from '../../src/state/store.js';
import { realClock } from '../../src/time/clock.js';
import { createWorkspace, localFiles, TOKEN, type Workspace } from '../helpers/mirror-check.js';

export { TOKEN };

/** Fast failure: two attempts, short timeouts (the slow-loris cases rely on bodyMs). */
export const QUEUE = { requestsPerSecond: 1000, concurrency: 4, maxAttempts: 2, timeouts: { connectMs: 1000, headersMs: 1500, bodyMs: 1000 } };

export interface Snapshot {
  /** document id -> "path sha" from its metadata. */
  docs: Map<string, string>;
  /** relative path -> sha256 of the local file. */
  local: Map<string, string>;
  /** relative path -> document id, from the state file. */
  state: Map<string, string>;
}

export interface World {
  ws: Workspace;
  dataSourceId: string;
  baseline: Snapshot;
  /** The configuration as the daemon would load it (baseUrl may be overridden). */
  config(over?: { baseUrl?: string }): Config;
  /** One full pass, in process, exactly as `dssync sync` runs it. */
  pass(over?: PassOptions): Promise<PassReport>;
  snapshot(): Promise<Snapshot>;
  /** Every baseline document, file and state entry is still there; no path has two documents. */
  expectNothingLost(): Promise<void>;
  close(): Promise<void>;
}

export const BASELINE_FILES = 8;

export interface PassOptions {
  baseUrl?: string;
  allowMassDelete?: boolean;
  /** A longer body deadline than QUEUE's 1 s, for a case whose point is not the deadline. */
  bodyMs?: number;
}

export async function createWorld(): Promise<World> {
  const ws = await createWorkspace({ config: { queue: QUEUE, status: { listen: false } } });
  for (let i = 0; i < BASELINE_FILES; i++) await ws.write(`keep/doc-${i}.txt`, `baseline document ${i}\n`);
  const config = (over: { baseUrl?: string } = {}): Config =>
    loadConfig({ file: ws.configPath, env: ws.env, flags: { baseUrl: over.baseUrl } });
  const pass = async (over: PassOptions = {}): Promise<PassReport> => {
    const loaded = config(over);
    const c: Config = over.bodyMs === undefined ? loaded : { ...loaded, queue: { ...loaded.queue, timeouts: { ...loaded.queue.timeouts, bodyMs: over.bodyMs } } };
    const store = await StateStore.open(c.statePath, { onCorrupt: 'reset' });
    const api = createClientFromConfig(c);
    try {
      const mirror = await buildMirror(c, c.mappings[0]!, 0, { api, state: store, logger: silentLogger, clock: realClock });
      return await mirror.fullPass({ allowMassDelete: over.allowMassDelete });
    } finally {
      await store.close().catch(() => undefined);
      await api.close();
    }
  };
  const first = await pass();
  if (!first.ok) throw new Error(`the baseline mirror failed: ${JSON.stringify(first.failures)}`);
  const dataSourceId = ws.dataSourceId();

  const snapshot = async (): Promise<Snapshot> => {
    const docs = new Map<string, string>();
    for (const d of ws.emu.store.listDocuments(dataSourceId)) docs.set(d.document_id, `${String(d.metadata?.dssync_path)} ${String(d.metadata?.dssync_sha256)}`);
    const state = new Map<string, string>();
    const st = await readStateFile(ws.statePath);
    for (const m of Object.values(st?.mappings ?? {})) for (const [p, e] of m.files) state.set(p, e.documentId);
    // Only the baseline's files are read back: cases add files with names no tool can open.
    const local = new Map<string, string>();
    for (const p of baselineLocal.keys()) local.set(p, sha(await readFile(join(ws.share, p)).catch(() => Buffer.from('(missing)'))));
    return { docs, local, state };
  };
  const baselineLocal = await localFiles(ws.share);
  const baseline = await snapshot();

  return {
    ws,
    dataSourceId,
    baseline,
    config,
    pass,
    snapshot,
    async expectNothingLost() {
      const now = await snapshot();
      for (const [id, what] of baseline.docs) expect(now.docs.get(id), `document ${id} (${what}) is still there, unchanged`).toBe(what);
      for (const [p, sha] of baseline.local) expect(now.local.get(p), `local file ${p} is unchanged`).toBe(sha);
      for (const [p, id] of baseline.state) expect(now.state.get(p), `state entry ${p}`).toBe(id);
      const paths = [...now.docs.values()].map((v) => v.split(' ')[0]);
      expect(paths.filter((p, i) => paths.indexOf(p) !== i), 'no path has two documents').toEqual([]);
    },
    close: () => ws.close(),
  };
}

/** sha256 of a string, for building expected metadata. */
export function sha(text: string | Buffer): string {
  return createHash('sha256').update(text).digest('hex');
}

/** Writes a config file next to the world's, from the world's config object changed by `edit`. */
export async function variantConfig(world: World, name: string, edit: (c: Record<string, unknown>) => void): Promise<string> {
  const c = JSON.parse(await readFile(world.ws.configPath, 'utf8')) as Record<string, unknown>;
  edit(c);
  const path = join(world.ws.dir, `${name}.json`);
  await writeFile(path, JSON.stringify(c, null, 2), { mode: 0o600 });
  return path;
}

export async function removeQuietly(path: string): Promise<void> {
  await rm(path, { recursive: true, force: true });
}

/**
 * Test helpers for mirror tests: a temp workspace (folder, state, config) wired to an
 * in-process emulator, and a convergence check that compares the data source with the
 * folder byte for byte (by SHA-256): nothing lost, nothing duplicated, no orphan, nothing stale.
 */
import { provisionalName } from '../../src/engine/data-source.js';
import { createHash } from 'node:crypto';
import { mkdtemp, mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative, sep } from 'node:path';
import { startEmulator, type EmulatorOptions, type RunningEmulator } from '@dssync/emulator';
import { runCli, type CliResult } from '../integration/cli/run-cli.js';
import { isLeaseDocument } from '../../src/engine/lease-view.js';

export const TOKEN = 'test-token-Zq9';
export const ORG = 'org-test';

export interface Workspace {
  dir: string;
  share: string;
  statePath: string;
  configPath: string;
  emu: RunningEmulator;
  env: Record<string, string>;
  /** Runs the built CLI with this workspace's config and environment. */
  cli(args: string[]): Promise<CliResult>;
  sync(...extra: string[]): Promise<CliResult>;
  dataSourceId(): string;
  write(rel: string, content: string | Buffer): Promise<void>;
  close(): Promise<void>;
}

export interface WorkspaceOptions {
  emulator?: EmulatorOptions;
  mapping?: Record<string, unknown>;
  config?: Record<string, unknown>;
  /**
   * The lease's settle wait of the processes started here: the real one (3 s), for the tests
   * of the lease itself, or by default LEASE_SETTLE_MS (src/test-hooks.ts `lease-settle-ms`).
   */
  lease?: 'real' | undefined;
}

/** The settle wait of a workspace's processes: a claim on this machine takes milliseconds, not seconds. */
export const LEASE_SETTLE_MS = 600;

export async function createWorkspace(opts: WorkspaceOptions = {}): Promise<Workspace> {
  const dir = await mkdtemp(join(tmpdir(), 'dssync-it-'));
  const share = join(dir, 'share');
  await mkdir(share, { recursive: true });
  const emu = await startEmulator({ token: TOKEN, orgs: [ORG], ...opts.emulator });
  const statePath = join(dir, 'state', 'state.json');
  const configPath = join(dir, 'config.json');
  const config = {
    baseUrl: emu.url,
    organizationId: ORG,
    statePath,
    queue: { requestsPerSecond: 200, concurrency: 4, maxAttempts: 6 },
    ...opts.config,
    mappings: [{ path: share, dataSource: { name: 'Share', llmConnectorIds: ['conn-1'] }, ...opts.mapping }],
  };
  await writeFile(configPath, JSON.stringify(config, null, 2), { mode: 0o600 });
  const env: Record<string, string> = { DSSYNC_TOKEN: TOKEN, DSSYNC_LOG_LEVEL: 'warn' };
  if (opts.lease !== 'real') env.DSSYNC_TEST_HOOKS = `lease-settle-ms=${LEASE_SETTLE_MS}`;
  const ws: Workspace = {
    dir,
    share,
    statePath,
    configPath,
    emu,
    env,
    cli: (args) => runCli(args, env),
    sync: (...extra) => runCli(['sync', '--config', configPath, ...extra], env),
    dataSourceId: () => {
      // Under its provisional name until its lease names it (engine/data-source.ts): the mapping's all the same.
      const all = emu.store.listDataSources(ORG);
      const ds = all.find((d) => d.name === 'Share') ?? all.find((d) => d.name === provisionalName('Share'));
      if (!ds) throw new Error('the data source was not created');
      return ds.data_source_id;
    },
    write: async (rel, content) => {
      const abs = join(share, rel);
      await mkdir(join(abs, '..'), { recursive: true });
      await writeFile(abs, content);
    },
    close: async () => {
      await emu.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
  return ws;
}

/** Every regular file under the folder that dssync's default filters include. */
export async function localFiles(root: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  const walk = async (d: string): Promise<void> => {
    for (const e of await readdir(d, { withFileTypes: true })) {
      if (e.name.startsWith('.') || e.name.startsWith('~$')) continue;
      const abs = join(d, e.name);
      if (e.isDirectory()) await walk(abs);
      else if (e.isFile() && /\.(txt|md|pdf|doc|docx|odt|rtf|html|htm|csv)$/i.test(e.name)) {
        const rel = relative(root, abs).split(sep).join('/').normalize('NFC');
        out.set(rel, createHash('sha256').update(await readFile(abs)).digest('hex'));
      }
    }
  };
  await walk(root);
  return out;
}

export interface Convergence {
  lost: string[];
  duplicates: string[];
  orphans: string[];
  stale: string[];
}

/** The documents of a data source that mirror files: all but the mapping's lease marker (docs/reliability.md, "The lease"). */
export function fileDocuments(emu: RunningEmulator, dataSourceId: string): ReturnType<RunningEmulator['store']['listDocuments']> {
  return emu.store.listDocuments(dataSourceId).filter((d) => !isLeaseDocument(d));
}

/** Files uploaded to the emulator, but the lease markers (one per data source a mapping wrote to). */
export function filesUploaded(emu: RunningEmulator): number {
  const markers = emu.store.listDataSources(ORG).flatMap((ds) => emu.store.listDocuments(ds.data_source_id).filter((d) => isLeaseDocument(d)));
  return emu.stats().filesUploaded - markers.length;
}

/** The write requests of each `dssync sync` for its lease: the claim and the release (docs/reliability.md, "The lease"). */
export const SYNC_LEASE_WRITES = 2;

/** Compares the data source with the folder. All four lists empty = converged. */
export async function checkConvergence(ws: Workspace): Promise<Convergence> {
  return checkFolderConvergence(ws.emu, ws.dataSourceId(), ws.share);
}

/** Compares any data source of the emulator with any folder (e.g. a second mapping). */
export async function checkFolderConvergence(emu: RunningEmulator, dataSourceId: string, root: string): Promise<Convergence> {
  const local = await localFiles(root);
  const docs = emu.store.listDocuments(dataSourceId);
  const byPath = new Map<string, string[]>();
  const orphans: string[] = [];
  for (const d of docs) {
    // The mapping's lease (docs/reliability.md, "The lease") is no file's document.
    if (isLeaseDocument(d)) continue;
    const path = d.metadata?.dssync_path;
    const sha = d.metadata?.dssync_sha256;
    if (typeof path !== 'string' || typeof sha !== 'string') {
      orphans.push(`${d.document_id} (${d.name})`);
      continue;
    }
    byPath.set(path, [...(byPath.get(path) ?? []), sha]);
  }
  const lost: string[] = [];
  const duplicates: string[] = [];
  const stale: string[] = [];
  for (const [path, sha] of local) {
    const shas = byPath.get(path);
    if (!shas) lost.push(path);
    else {
      if (shas.length > 1) duplicates.push(path);
      if (!shas.includes(sha)) stale.push(path);
    }
  }
  for (const path of byPath.keys()) if (!local.has(path)) orphans.push(path);
  return { lost, duplicates, orphans, stale };
}

export const CONVERGED: Convergence = { lost: [], duplicates: [], orphans: [], stale: [] };

/** Number of write requests (POST/PUT/DELETE) the emulator has seen. */
export function writeRequests(emu: RunningEmulator): number {
  return Object.entries(emu.stats().byRoute)
    .filter(([k]) => /^(POST|PUT|DELETE) /.test(k))
    .reduce((n, [, v]) => n + v, 0);
}

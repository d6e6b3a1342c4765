/**
 * The service emulator (DESIGN §3, docs/emulator.md): an HTTP server implementing every
 * operation of datastore-api.md with one concrete, documented choice for each unknown,
 * strict validation, organization isolation, text chunking, paging and fault injection.
 *
 *   const emu = await startEmulator({ pageSize: 5, faults: { rateLimitRps: 10 } });
 *   ... requests to emu.url with Authorization: Bearer dev-token and
 *       X-Service-Organization-Id: dev-org ...
 *   await emu.close();
 */
import { mkdtemp, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import PQueue from 'p-queue';
import { commitHeld, type EmulatorContext } from './context.js';
import { FaultInjector } from './faults.js';
import { OidcIssuer } from './routes/oidc.js';
import { checkFaultOptions, resolveOptions, type EmulatorOptions, type FaultOptions } from './options.js';
import { loadStore, StoreWriter } from './persistence.js';
import { buildServer } from './server.js';
import { StatsCollector, type EmulatorStats } from './stats.js';
import { MemoryStore, type EmulatorStore, type StoreCounts } from './store.js';

export type { EmulatorOptions, FaultOptions, NameRewrite, NameRule } from './options.js';
export type { EmulatorStats } from './stats.js';
export type { EmulatorStore, StoreCounts, StoreSnapshot } from './store.js';
export type { DataSourceRecord, DocumentRecord, ChunkRecord, DocumentStatus } from './records.js';
export type { ErrorBody, ErrorCode } from './errors.js';
export { DEFAULTS as EMULATOR_DEFAULTS, NAME_REWRITES, NAME_RULES, checkFaultOptions } from './options.js';
export { OIDC_DEFAULTS, TOKEN_PATH } from './routes/oidc.js';

export interface RunningEmulator {
  /** http://HOST:PORT, without a trailing slash. */
  url: string;
  /** Replaces every fault option at runtime (throws RangeError naming a bad field). */
  setFaults(faults: FaultOptions): void;
  /** Counters since start or the last resetStats(), plus the store's sizes. */
  stats(): EmulatorStats & { store: StoreCounts; oidc: OidcIssuer['counts'] };
  resetStats(): void;
  /** Stores the documents of the uploads held so far (FaultOptions.holdUploads); returns how many uploads. */
  commitHeld(): number;
  /** The OpenID Connect token endpoint (its URL is url + TOKEN_PATH) and its counters. */
  oidc: OidcIssuer;
  /** Direct read access to the data, for assertions. */
  store: EmulatorStore;
  /** Stops accepting requests, lets in-flight ones finish, flushes dataDir. Idempotent. */
  close(): Promise<void>;
}

export async function startEmulator(opts: EmulatorOptions = {}): Promise<RunningEmulator> {
  const options = resolveOptions(opts);
  let writer: StoreWriter | undefined;
  const store = new MemoryStore(Date.now, () => writer?.markDirty());
  if (options.dataDir !== undefined) {
    await loadStore(options.dataDir, store);
    writer = new StoreWriter(options.dataDir, store, 250, (err) => {
      process.stderr.write(`dssync emulator: cannot save data to ${options.dataDir}: ${(err as Error).message}\n`);
    });
  }
  let tempDir: Promise<string> | undefined;
  const ctx: EmulatorContext = {
    options,
    store,
    faults: new FaultInjector(options.faults),
    stats: new StatsCollector(),
    extraction: new PQueue({ concurrency: 2 }),
    tempDir: () => (tempDir ??= mkdtemp(join(tmpdir(), 'dssync-emulator-'))),
    oidc: new OidcIssuer(options.oidc),
    held: [],
  };
  const app = await buildServer(ctx);
  await app.listen({ host: options.host, port: options.port });
  const { port } = app.server.address() as AddressInfo;
  const host = options.host.includes(':') ? `[${options.host}]` : options.host;

  let closing: Promise<void> | undefined;
  return {
    url: `http://${host}:${port}`,
    setFaults: (faults) => ctx.faults.set(checkFaultOptions(faults)),
    stats: () => ({ ...ctx.stats.snapshot(), store: store.counts(), oidc: { ...ctx.oidc.counts } }),
    resetStats: () => ctx.stats.reset(),
    commitHeld: () => commitHeld(ctx),
    oidc: ctx.oidc,
    store,
    close: () =>
      (closing ??= (async () => {
        await app.close();
        await ctx.extraction.onIdle();
        await writer?.close();
        if (tempDir) await rm(await tempDir, { recursive: true, force: true });
      })()),
  };
}


/**
 * The daemon's composition root (DESIGN §2): the configuration, the state file (locked),
 * one client and one pacer for the service, a MappingRunner per mapping, the status
 * endpoint, and the process life: reload on SIGHUP, graceful stop on SIGTERM/SIGINT.
 */
import { setMaxListeners } from 'node:events';
import type { TokenProvider } from '../api/token-provider.js';
import { createClientFromConfig } from '../compose/client.js';
import type { DatastoreClient } from '../api/client.js';
import { DSSYNC_VERSION } from '../api/version.js';
import { ConfigError } from '../config/connection.js';
import { formatListenAddress, type ListenAddress } from '../config/listen.js';
import { requireMappings } from '../config/load.js';
import type { Config, MappingConfig } from '../config/types.js';
import type { Logger } from '../log.js';
import { StateStore } from '../state/store.js';
import { beginEarlyListing, type EarlyListing } from './early-listing.js';
import { dropStartListing } from './mapping/pass-loop.js';
import { MappingRunner } from './mapping/runner.js';
import type { RunnerEvents } from './mapping/pass-loop.js';
import { DaemonMetrics } from './status/metrics.js';
import { Reclaimer } from './reclaim.js';
import { installationStatus, type DaemonStatus } from './status/schema.js';
import { createStatusEndpoint, type StatusEndpoint } from './status/server.js';
import { statusSocketPath } from './status/web/status-socket.js';
import { generatedTokenPath, newStatusToken, readableWarning, readStatusToken, writeGeneratedToken } from './status/web/status-token.js';
import { DaemonHistory } from './status/web/history.js';
import { mappingCoverage, type MappingCoverage } from './status/coverage.js';
import { errnoOf } from '../errors/errno.js';
import { realClock, type Clock, type TimerHandle } from '../time/clock.js';
import { startWatchdog, watchdogSecondsFromEnv, type RunningWatchdog } from './watchdog.js';
import { testBlockMainThread, testWallOffset } from '../test-hooks.js';
import { RecordsFile, recordsPath, type MappingRecords } from './records-file.js';
import { FEED_SAVE_EVERY_MS, FeedFile, feedPath } from './feed-file.js';

/**
 * How long a pass in progress may go on after SIGTERM before its requests are aborted. Short:
 * a small pass ends well within it, a large one would not end anyway, and an abandoned upload
 * is settled by its intent at the next start. It leaves room for the state flush within the
 * 10 s operators expect.
 */
const STOP_GRACE_MS = 4_000;

/**
 * The same for a mapping that a reload (SIGHUP) replaces: no service manager is waiting to
 * kill the process, so a pass in progress gets longer to finish.
 */
const RELOAD_GRACE_MS = 8_000;

/** How often an unavailable status address is tried again. */
const ENDPOINT_RETRY_MS = 30_000;
/** Write errors that a full disk or quota gives, and that pass: not a configuration problem. */
const SPACE_ERRORS = new Set(['ENOSPC', 'EDQUOT']);

export interface DaemonOptions {
  /** Loads (or reloads) the configuration; throws ConfigError on a bad file. */
  loadConfig: () => Config;
  logger: Logger;
  /** Time for every timer, wait and timestamp of the daemon (a fake one in tests). */
  clock?: Clock;
  /** Extra listeners (the demo prints each mirrored file). */
  events?: RunnerEvents;
  /** First retry delay of a failing mapping (ms, default 5 s; doubles up to 5 min). */
  retryBaseMs?: number | undefined;
  /** The open-file limit (cli/fd-limit.ts): the status endpoint keeps its connections to a small share. */
  fdLimit?: number | undefined;
  /**
   * The token provider of the first configuration's credentials (`dssync run` checked them
   * with it: its token serves the first requests). The daemon owns it from here: it is
   * closed with the first client, at stop or when a reload changes the connection.
   */
  tokens?: TokenProvider | undefined;
}

export class Daemon {
  private config!: Config;
  private store!: StateStore;
  /** Each mapping's listing begun while the state loaded (early-listing.ts), until its runner takes it. */
  private readonly startListings = new Map<string, Promise<EarlyListing | undefined>>();
  private client!: DatastoreClient;
  private readonly runners = new Map<string, { runner: MappingRunner; mapping: MappingConfig }>();
  /** The problem lists and pass histories beside the state (records-file.ts). */
  private recordsFile!: RecordsFile;
  /** The page's recent history across restarts (feed-file.ts). */
  private feedFile!: FeedFile;
  private feedTimer: TimerHandle | undefined;
  /** Writing the status token file again after a full disk (statusToken). */
  private tokenRetry: TimerHandle | undefined;
  private loadedRecords = new Map<string, MappingRecords>();
  private server: StatusEndpoint | undefined;
  private readonly metrics: DaemonMetrics;
  /** Recent activity, problems and chart points for the status page (bounded). */
  private readonly history: DaemonHistory;
  private serverRetry: unknown;
  private readonly startedAt = new Date().toISOString();
  private stopping = false;
  private reloading: Promise<void> = Promise.resolve();
  private readonly clock: Clock;
  private readonly controller = new AbortController();
  private watchdog: RunningWatchdog | undefined;
  private readonly reclaimer: Reclaimer;

  private constructor(private readonly o: DaemonOptions) {
    this.clock = o.clock ?? realClock;
    this.reclaimer = new Reclaimer({ clock: this.clock, logger: o.logger });
    setMaxListeners(0, this.controller.signal);
    this.metrics = new DaemonMetrics(() => [...this.runners.values()].map((r) => r.runner.status()));
    this.history = new DaemonHistory(() => this.clock.now(), o.retryBaseMs);
  }

  /** Loads the config, takes the state lock, starts every mapping and the status endpoint. */
  static async start(o: DaemonOptions): Promise<Daemon> {
    testWallOffset();
    const d = new Daemon(o);
    d.config = requireMappings(o.loadConfig());
    d.client = d.newClient(d.config, o.tokens);
    d.recordsFile = new RecordsFile(recordsPath(d.config.statePath), o.logger);
    d.feedFile = new FeedFile(feedPath(d.config.statePath), o.logger);
    let kept: Promise<Map<string, MappingRecords>> | undefined;
    try {
      // Once the lock is held, what the last run kept beside the state is read first (no other
      // daemon writes it meanwhile): its page's feed before this run counts a request, and
      // its pauses before a mapping's listing begins while the state loads, where the lease
      // allows it (early-listing.ts): a paused mapping makes no request.
      const onLocked = (): void => {
        const records = d.readKept();
        kept = records;
        for (const m of d.config.mappings) {
          const begin = (r: Map<string, MappingRecords>): Promise<EarlyListing | undefined> | undefined =>
            r.get(m.id)?.paused ? undefined : beginEarlyListing({ client: d.client, mapping: m, statePath: d.config.statePath, clock: d.clock, signal: d.controller.signal });
          d.startListings.set(m.id, records.then(begin).catch(() => undefined));
        }
      };
      d.store = await StateStore.open(d.config.statePath, { logger: o.logger, onCorrupt: 'reset', clock: d.clock, onLocked });
    } catch (e) {
      d.controller.abort();
      for (const l of d.startListings.values()) await l.then(dropStartListing);
      await d.client.close();
      throw e;
    }
    try {
      d.loadedRecords = await (kept ?? d.readKept());
      d.scheduleFeedSave();
      d.startWatchdog();
      if (d.config.status.listen) await d.startEndpoint(d.config.status.listen);
      for (const [i, m] of d.config.mappings.entries()) d.startRunner(m, i);
      o.logger.info({ mappings: d.config.mappings.map((m) => m.id), statePath: d.config.statePath, version: DSSYNC_VERSION }, 'dssync running');
      return d;
    } catch (e) {
      for (const l of d.startListings.values()) void l.then(dropStartListing);
      if (d.feedTimer !== undefined) d.clock.clearTimeout(d.feedTimer);
      await d.server?.close();
      await d.store.close();
      await d.watchdog?.stop();
      throw e;
    }
  }

  /** The page's feed (restored into the history) and the mappings' records the last run kept beside the state. */
  private async readKept(): Promise<Map<string, MappingRecords>> {
    const feed = await this.feedFile.load();
    if (feed) this.history.restore(feed);
    return this.recordsFile.load();
  }

  /** A hung event loop ends the process so that systemd restarts it (watchdog.ts). */
  private startWatchdog(): void {
    const { seconds, problem } = watchdogSecondsFromEnv();
    if (problem) this.o.logger.warn(problem);
    this.watchdog = startWatchdog({ timeoutSeconds: seconds });
    if (this.watchdog) this.o.logger.info({ timeoutSeconds: seconds, thread: this.watchdog.kind }, 'watchdog started');
    else this.o.logger.warn('watchdog off (DSSYNC_WATCHDOG_SECONDS=0): a hung event loop will not be restarted');
    testBlockMainThread();
  }

  /** A count running now: asked again meanwhile, its answer is shared. */
  private counting: Promise<MappingCoverage[]> | undefined;

  /** Each mapping's coverage (coverage.ts), one count at a time. */
  private coverage(): Promise<MappingCoverage[]> {
    this.counting ??= (async () => {
      const out: MappingCoverage[] = [];
      for (const { mapping } of this.runners.values()) out.push(await mappingCoverage(mapping, this.store.mapping(mapping.id), false));
      return out;
    })().finally(() => (this.counting = undefined));
    return this.counting;
  }

  /**
   * The status endpoint. An address taken by another program (a second daemon with another
   * config, or a local user squatting the port) does not stop the daemon: syncing matters
   * more than its page. It logs an error naming status.listen and tries again every 30 s.
   * A bad token file does stop it (a configuration error, exit 2).
   */
  private async startEndpoint(listen: ListenAddress): Promise<void> {
    const token = this.statusToken();
    const endpoint = createStatusEndpoint({
      host: listen.host,
      port: listen.port,
      status: () => this.status(),
      metrics: () => this.metrics.text(),
      history: this.history,
      coverage: () => this.coverage(),
      actions: {
        rescan: (id) => {
          const r = this.runners.get(id);
          r?.runner.requestRescan();
          return r !== undefined;
        },
        retry: (id) => this.runners.get(id)?.runner.retryFailed(),
        pause: (id) => this.runners.get(id)?.runner.pause(),
        resume: (id) => this.runners.get(id)?.runner.resume(),
        confirmDelete: (id, digest) => this.runners.get(id)?.runner.confirmDeletes(digest),
      },
      access: { actions: this.config.status.actions, token, allowedHosts: this.config.status.allowedHosts },
      fdLimit: this.o.fdLimit,
      clock: this.clock,
      onError: (what, e) => this.o.logger.error({ err: e instanceof Error ? e.message : String(e) }, `${what} failed; trying again at its next turn`),
    });
    this.server = endpoint;
    // The CLI's way in: it serves while the port is taken, too.
    const socket = statusSocketPath(this.config.statePath);
    await endpoint.listenSocket(socket).then(
      () => this.o.logger.info({ socket }, 'status socket listening (dssync status, pause, resume, confirm-delete)'),
      (e: unknown) =>
        this.o.logger.warn(
          { socket, err: e instanceof Error ? e.message : String(e) },
          'the status socket could not start: dssync status and its actions use the TCP address, after checking that the daemon\'s user listens there',
        ),
    );
    const retry = (): void => {
      this.serverRetry = this.clock.setTimeout(() => void attempt().catch((e: unknown) => this.o.logger.error({ err: e instanceof Error ? e.message : String(e) }, 'the status endpoint could not start')), ENDPOINT_RETRY_MS);
    };
    const attempt = async (): Promise<void> => {
      this.serverRetry = undefined;
      if (this.stopping) return;
      try {
        const url = await endpoint.listenTcp();
        this.o.logger.info({ url }, 'status endpoint listening');
      } catch (e) {
        const err = e as NodeJS.ErrnoException;
        if (err.code !== 'EADDRINUSE' && err.code !== 'EACCES' && err.code !== 'EADDRNOTAVAIL') throw e;
        const addr = formatListenAddress(listen);
        const why = err.code === 'EADDRINUSE' ? 'is in use by another program (another dssync with another config?)' : err.code === 'EACCES' ? 'may not be used by this user' : 'is not an address of this machine';
        this.o.logger.error(
          { code: err.code, listen: addr },
          `status.listen ${addr} ${why}: running without the status endpoint's address (no /healthz, /status, page; dssync status works through the status socket); trying again every ${ENDPOINT_RETRY_MS / 1000} s. Fix: free the port or set another "status": { "listen": ... }`,
        );
        retry();
      }
    };
    await attempt();
  }

  /**
   * The status endpoint's token: status.tokenFile's, or one generated now beside the state
   * (0600, readable by this user and root only) that `dssync status` reads from there.
   */
  private statusToken(): string {
    const file = this.config.status.tokenFile;
    if (file === undefined) {
      const path = generatedTokenPath(this.config.statePath);
      try {
        return writeGeneratedToken(path);
      } catch (e) {
        const code = errnoOf(e);
        if (code !== undefined && SPACE_ERRORS.has(code)) {
          // The token of the previous start, still there, serves (dssync status reads it).
          const kept = keptToken(path);
          if (kept !== undefined) {
            this.o.logger.warn({ code, file: path }, `cannot write a new status token file ${path} (${code}): the existing one is kept. Fix: free space where the state is`);
            return kept;
          }
          // A full disk passes (the chaos suite's disk-full case): the endpoint runs with the
          // token kept in memory, so /healthz and /metrics answer (a liveness probe must not
          // restart the daemon over a full disk), and the file is written once there is space.
          const token = newStatusToken();
          this.o.logger.error(
            { code, file: path },
            `cannot write the status token file ${path} beside the state (${code}): the status endpoint runs with a token kept in memory (/healthz and /metrics answer; dssync status and the page cannot sign in until the file is written); trying again every ${ENDPOINT_RETRY_MS / 1000} s. Fix: free space where the state is`,
          );
          this.retryTokenFile(path, token);
          return token;
        }
        throw new ConfigError(`cannot write the status token file ${path} beside the state: ${e instanceof Error ? e.message : String(e)}; set status.tokenFile, or status.listen to false`, 'status.tokenFile');
      }
    }
    const read = readTokenOrConfigError(file);
    if (read.readableBy) this.o.logger.warn(readableWarning(file, read.readableBy));
    return read.token;
  }

  /** Writes the in-memory status token to its file once the disk has space again. */
  private retryTokenFile(path: string, token: string): void {
    this.tokenRetry = this.clock.setTimeout(() => {
      this.tokenRetry = undefined;
      if (this.stopping) return;
      try {
        writeGeneratedToken(path, token);
        this.o.logger.info({ file: path }, 'status token file written: dssync status and the page can sign in');
      } catch {
        this.retryTokenFile(path, token);
      }
    }, ENDPOINT_RETRY_MS);
  }

  get statusUrl(): string | undefined {
    return this.server?.url;
  }

  status(): DaemonStatus {
    const p = this.client.pacer.stats();
    return {
      version: DSSYNC_VERSION,
      pid: process.pid,
      startedAt: this.startedAt,
      configFile: this.config.file,
      statePath: this.config.statePath,
      installation: installationStatus(this.store.identity, this.store.recovery),
      baseUrl: this.config.connection.baseUrl,
      organizationId: this.config.connection.organizationId,
      stopping: this.stopping,
      requests: { total: p.requests, retries: p.retries, throttled: p.throttled, inFlight: p.inFlight, queued: p.queued, learnedRps: p.learnedRps },
      memory: (() => {
        // process.memoryUsage() reads /proc and throws EMFILE when descriptors run out.
        let m: NodeJS.MemoryUsage;
        try {
          m = process.memoryUsage();
        } catch {
          return undefined;
        }
        const mb = (n: number): number => Math.round(n / 1024 / 102.4) / 10;
        return { rssMB: mb(m.rss), heapUsedMB: mb(m.heapUsed), heapTotalMB: mb(m.heapTotal), externalMB: mb(m.external) };
      })(),
      state: (() => {
        const w = this.store.writeStats;
        return { writes: w.writes, lastWriteMs: w.lastWriteMs, lastBytes: w.lastBytes, lastMaxBlockMs: w.lastMaxBlockMs, loadMs: this.store.readStats?.loadMs };
      })(),
      mappings: [...this.runners.values()].map((r) => ({
        ...r.runner.status(),
        dataSourceName: r.mapping.dataSource?.name,
        currentPass: this.history.currentPass(r.mapping.id),
      })),
    };
  }

  /**
   * SIGHUP: reads the config again. Added mappings start, removed ones stop, changed ones
   * restart (their first pass is a full one, so nothing waiting is lost); a changed
   * connection restarts every mapping on a new client. Unchanged ones read their ignore
   * file again and run a full pass (MappingRunner.reload): a SIGHUP always has an effect.
   * A bad file changes nothing.
   */
  reload(): Promise<void> {
    this.reloading = this.reloading.then(() => this.doReload());
    return this.reloading;
  }

  private async doReload(): Promise<void> {
    if (this.stopping) return;
    let next: Config;
    try {
      next = requireMappings(this.o.loadConfig());
    } catch (e) {
      this.o.logger.error({ err: e instanceof Error ? e.message : String(e) }, 'reload failed: the configuration is invalid; keeping the running one');
      return;
    }
    if (next.statePath !== this.config.statePath) {
      this.o.logger.warn({ statePath: next.statePath }, 'statePath cannot change on reload; restart dssync to use the new one');
    }
    const connectionChanged =
      next.connection.baseUrl !== this.config.connection.baseUrl ||
      next.connection.organizationId !== this.config.connection.organizationId ||
      // Credentials from elsewhere, or a secret rotated in place: the operator reloads to use it.
      next.connection.tokenSource !== this.config.connection.tokenSource ||
      next.connection.organizationHeader !== this.config.connection.organizationHeader ||
      next.connection.credentialsDigest !== this.config.connection.credentialsDigest ||
      JSON.stringify(next.queue) !== JSON.stringify(this.config.queue) ||
      next.tls.caFile !== this.config.tls.caFile;
    const globalChanged = connectionChanged || next.debounceMs !== this.config.debounceMs || next.rescanIntervalSeconds !== this.config.rescanIntervalSeconds || JSON.stringify(next.ingestionCheck) !== JSON.stringify(this.config.ingestionCheck);
    const wanted = new Map(next.mappings.map((m, i) => [m.id, { m, i }]));
    const stops: Promise<void>[] = [];
    for (const [id, r] of this.runners) {
      const w = wanted.get(id);
      if (!w || globalChanged || JSON.stringify(w.m) !== JSON.stringify(r.mapping)) {
        stops.push(r.runner.stop(RELOAD_GRACE_MS));
        this.runners.delete(id);
      }
    }
    await Promise.all(stops);
    const oldClient = this.client;
    this.config = { ...next, statePath: this.config.statePath };
    if (connectionChanged) {
      this.client = this.newClient(this.config);
      await oldClient.close();
    }
    const kept = [...this.runners.values()];
    for (const [id, { m, i }] of wanted) if (!this.runners.has(id)) this.startRunner(m, i);
    await Promise.all(kept.map((r) => r.runner.reload()));
    this.o.logger.info({ mappings: [...wanted.keys()], unchanged: kept.map((r) => r.runner.id) }, 'configuration reloaded');
  }

  /**
   * SIGTERM/SIGINT: stop watching, let passes in progress finish (or abort them after a
   * grace period), flush the state, release the lock. Resolves within ~10 s.
   */
  async stop(): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    this.reclaimer.stop();
    this.o.logger.info('stopping');
    await this.reloading.catch(() => undefined);
    await Promise.all([...this.runners.values()].map((r) => r.runner.stop(STOP_GRACE_MS)));
    await this.saveRecords();
    if (this.feedTimer !== undefined) this.clock.clearTimeout(this.feedTimer);
    await this.feedFile.save(this.history.save());
    this.controller.abort();
    if (this.serverRetry !== undefined) this.clock.clearTimeout(this.serverRetry);
    if (this.tokenRetry !== undefined) this.clock.clearTimeout(this.tokenRetry);
    await this.server?.close();
    await this.client.close().catch(() => undefined);
    await this.store.close();
    await this.watchdog?.stop();
    this.o.logger.info('stopped');
  }

  private newClient(config: Config, tokens?: TokenProvider): DatastoreClient {
    return createClientFromConfig(config, {
      tokens,
      ownsTokens: true,
      logger: this.o.logger,
      clock: this.clock,
      onEvent: (e) => {
        this.metrics.onPacer(e);
        if (e.type === 'response') this.history.onRequest(e.status === 429 ? 'throttled' : 'answered');
        else if (e.type === 'retry') this.history.onRequest('retried');
      },
    });
  }

  /** The page's feed, saved every FEED_SAVE_EVERY_MS and at a clean stop (feed-file.ts). */
  private scheduleFeedSave(): void {
    this.feedTimer = this.clock.setTimeout(() => {
      void this.feedFile.save(this.history.save());
      if (!this.stopping) this.scheduleFeedSave();
    }, FEED_SAVE_EVERY_MS);
  }

  /** Each mapping's problem list and pass history, into `<statePath>.problems.json`. */
  private saveRecords(): Promise<void> {
    return this.recordsFile.save(() => new Map([...this.runners].map(([id, r]) => [id, r.runner.records()])));
  }

  private takeStartListing(id: string): Promise<EarlyListing | undefined> | undefined {
    const l = this.startListings.get(id);
    this.startListings.delete(id);
    return l;
  }

  private startRunner(mapping: MappingConfig, index: number): void {
    const runner = new MappingRunner({
      config: this.config,
      mapping,
      index,
      api: this.client,
      state: this.store,
      logger: this.o.logger,
      clock: this.clock,
      retryBaseMs: this.o.retryBaseMs,
      records: this.loadedRecords.get(mapping.id),
      onRecordsChanged: () => void this.saveRecords(),
      lease: { statePath: this.config.statePath },
      // The start's own, once: a mapping started by a reload lists after its claim's read.
      startListing: this.takeStartListing(mapping.id),
      events: {
        onOp: (id, e, lag) => {
          this.metrics.onOp(id, e, lag);
          this.history.onOp(id, e, lag);
          this.o.events?.onOp?.(id, e, lag);
        },
        onPassStart: (id, kind) => this.history.onPassStart(id, kind),
        onPass: (id, kind, report) => {
          this.history.onPassEnd(id, report.blocked);
          if (kind === 'full') this.reclaimer.afterFullPass();
          this.o.events?.onPass?.(id, kind, report);
        },
      },
    });
    this.runners.set(mapping.id, { runner, mapping });
    runner.start();
  }
}

function readTokenOrConfigError(file: string): ReturnType<typeof readStatusToken> {
  try {
    return readStatusToken(file);
  } catch (e) {
    throw new ConfigError(e instanceof Error ? e.message : String(e), 'status.tokenFile');
  }
}

/** The status token already in `path` (0600, written by an earlier start), if it can be read. */
function keptToken(path: string): string | undefined {
  try {
    const read = readStatusToken(path);
    return read.readableBy ? undefined : read.token;
  } catch {
    return undefined;
  }
}

/**
 * `dssync sync`: one pass of every mapping (DESIGN §6). Exit 0 when every data source holds
 * exactly its folder's files (with --dry-run: when the plan could be made), 1 when some
 * work could not be done, 2 for configuration errors, 3 when the credentials are refused.
 */
import { disposition } from '../../errors/disposition.js';
import type { Argv, CommandModule } from 'yargs';
import { setMaxListeners } from 'node:events';
import { isApiError } from '../../api/errors.js';
import type { DatastoreClient } from '../../api/client.js';
import { requireMappings } from '../../config/load.js';
import type { Config, MappingConfig } from '../../config/types.js';
import type { buildMirror as BuildMirror, lostDataSource as LostDataSource, passStabilityMs as PassStabilityMs } from '../../daemon/mapping/build-mirror.js';
import type { mappingLease as MappingLeaseOf, MappingLease } from '../../daemon/mapping/lease.js';
import type { Logger } from '../../log.js';
import type { ReadOnlyState } from '../../state/read-only-state.js';
import type { StateStore } from '../../state/store.js';
import { configFromArgs, oneShotReach } from '../context.js';
import { ExitCode, usageError } from '../exit.js';
import type { GlobalArgs } from '../options.js';
import { ProgressLine } from '../progress.js';
import { claimSignals } from '../signals.js';
import { testWallOffset } from '../../test-hooks.js';
import { formatSyncHuman, formatSyncJson, outcomeOk, type MappingOutcome, type NotIngestedFile } from './sync-report.js';
import { ingestionStatus } from '../../api/ingestion-status.js';
import type { OpEvent } from '../../engine/executor.js';
import type { Mirror, PassOptions } from '../../engine/mirror.js';
import type { PassReport } from '../../engine/pass-report.js';
import { initialSchedule, step } from '../../daemon/mapping/schedule.js';
import { realClock, type Clock } from '../../time/clock.js';
import { LeaseNotHeldError } from '../../daemon/mapping/lease-gate.js';

interface SyncArgs extends GlobalArgs {
  dryRun: boolean;
  logLevel?: string | undefined;
  allowMassDelete: boolean;
  folderMoved: boolean;
  /** Seconds to wait for files being written (default WAIT_CHANGING_S). */
  waitChanging?: number | undefined;
}

/** `--wait-changing`'s default: seconds a sync waits for files being written. */
const WAIT_CHANGING_S = 30;

export const syncCommand: CommandModule<GlobalArgs, SyncArgs> = {
  command: 'sync',
  describe: 'Mirror every mapping once; exit 0 when in sync',
  builder: (y) =>
    y
      .option('dry-run', { type: 'boolean', default: false, describe: 'Print the plan (uploads, replacements, renames, deletions); change nothing' })
      .option('log-level', { type: 'string', describe: 'fatal, error, warn, info, debug or trace (logs go to stderr). Default: $DSSYNC_LOG_LEVEL, then "logLevel"' })
      .option('allow-mass-delete', {
        type: 'boolean',
        default: false,
        describe: 'Let this pass delete more than maxDeletePercent of a data source, or empty it when the folder is empty',
      })
      .option('folder-moved', {
        type: 'boolean',
        default: false,
        describe: "A mapping's folder really moved: record the configured folder instead of refusing (docs/reliability.md, \"Identity\")",
      })
      .option('wait-changing', {
        type: 'number',
        default: WAIT_CHANGING_S,
        describe: 'Files changed within the stability window (being written?) are not sent half-written: wait up to this many seconds for them, then report them as changing (exit 1; the next run sends them). 0: do not wait',
      })
      .example('$0 sync --config /etc/dssync/config.json', 'one pass')
      .example('$0 sync --config config.json --dry-run', 'show what a pass would do')
      // yargs types the dashed names only; it also sets the camelCase ones used here.
      .example('$0 sync --config config.json --json', 'a summary for scripts') as unknown as Argv<SyncArgs>,
  handler: async (args) => {
    // Test-only (inert without DSSYNC_TEST_HOOKS): an earlier run's wall clock, for the late-commit tests.
    testWallOffset();
    process.exitCode = await runSync(args);
  },
};

export async function runSync(args: SyncArgs, env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const config = requireMappings(configFromArgs(args, env, (m) => void process.stderr.write(`dssync: warning: ${m}\n`)));
  if (args.waitChanging !== undefined && (!Number.isFinite(args.waitChanging) || args.waitChanging < 0)) {
    throw usageError(`--wait-changing must be a number of seconds, 0 or more (got ${String(args.waitChanging)})`);
  }
  // The engine loads only for this command: `dssync --help` and the admin commands stay fast.
  const [{ createLogger }, { StateStore, readStateFile }, { ReadOnlyState }, { createClientFromConfig }, { buildMirror, passStabilityMs, lostDataSource }, { mappingLease }] = await Promise.all([
    import('../../log.js'),
    import('../../state/store.js'),
    import('../../state/read-only-state.js'),
    import('../../compose/client.js'),
    import('../../daemon/mapping/build-mirror.js'),
    import('../../daemon/mapping/lease.js'),
  ]);
  // stdout carries the summary; logs go to stderr. On a terminal the progress line
  // replaces the per-document log lines.
  const progress = new ProgressLine(process.stderr, realClock);
  // On a terminal: one readable line per event, and none about a single file, which the
  // summary names anyway, unless a log level was asked for. JSON lines otherwise.
  const quiet = progress.enabled && !env.DSSYNC_LOG_LEVEL && !args.logLevel;
  const logger = createLogger({
    level: quiet ? 'warn' : config.logLevel,
    pretty: progress.enabled,
    fd: 2,
    omit: quiet ? (fields) => typeof fields.path === 'string' : undefined,
  });
  const controller = new AbortController();
  // Every request of the pass listens on this one signal.
  setMaxListeners(0, controller.signal);
  // Interrupted (Ctrl-C, SIGTERM, a closed terminal): stop sending, report what was done.
  const releaseSignals = claimSignals(() => controller.abort());
  // A dry run reads the state without its lock (beside a running daemon) and writes nothing.
  const store: SyncState = await (args.dryRun
    ? readStateFile(config.statePath).then((file) => new ReadOnlyState(file))
    : StateStore.open(config.statePath, { logger, onCorrupt: 'reset' })
  );
  const api = createClientFromConfig(config, {
    logger,
    ...oneShotReach(() => progress.clear()),
  });
  const outcomes: MappingOutcome[] = [];
  try {
    for (let i = 0; i < config.mappings.length && !controller.signal.aborted; i++) {
      outcomes.push(await syncMapping(config, i, { args, api, store, logger, progress, signal: controller.signal, buildMirror, passStabilityMs, lostDataSource, mappingLease }));
    }
  } finally {
    progress.clear();
    releaseSignals();
    if ('close' in store) await store.close();
    await api.close();
  }
  process.stdout.write(args.json ? formatSyncJson(outcomes) : formatSyncHuman(outcomes));
  if (outcomes.every(outcomeOk)) return ExitCode.OK;
  // The worst the mappings' errors ask for; a pass that left work undone is a failure.
  return outcomes.some((o) => o.exitCode === ExitCode.USAGE) ? ExitCode.USAGE : ExitCode.FAILURE;
}

/** The state a pass works on: the locked store, or a dry run's read-only copy. */
type SyncState = StateStore | ReadOnlyState;

interface SyncDeps {
  args: SyncArgs;
  buildMirror: typeof BuildMirror;
  passStabilityMs: typeof PassStabilityMs;
  lostDataSource: typeof LostDataSource;
  mappingLease: typeof MappingLeaseOf;
  api: DatastoreClient;
  store: SyncState;
  logger: Logger;
  progress: ProgressLine;
  signal: AbortSignal;
}

async function syncMapping(config: Config, index: number, d: SyncDeps): Promise<MappingOutcome> {
  const mapping = config.mappings[index]!;
  // Documents the service says it could not ingest (its status and reason, when it gives them).
  const notIngested: NotIngestedFile[] = [];
  // The data source renamed in the App (followed by id), or deleted and replaced.
  const notices: string[] = [];
  const onOp = (e: OpEvent): void => {
    d.progress.onOp(e);
    const ingestion = e.outcome === 'done' && e.record ? ingestionStatus(e.record) : undefined;
    if (ingestion?.failed) notIngested.push({ path: e.path, documentId: e.documentId, status: ingestion.status, reason: ingestion.reason });
  };
  const windowMs = d.passStabilityMs(config);
  // The pass writes only while it holds the mapping's lease (docs/reliability.md, "The lease"); a dry run writes nothing and takes none.
  let lease: MappingLease | undefined;
  let claim: Promise<void> | undefined;
  let dataSourceId: string | undefined;
  // An error into the outcome: its words, and its exit code from the registry (errors/codes.ts).
  const failed = (e: unknown, log = true): MappingOutcome => {
    const disp = disposition(e, 'mapping');
    const message = e instanceof Error ? e.message : String(e);
    // A configuration problem of the mapping has its fix in the message; anything else is logged too.
    if (log && disp.exitCode !== ExitCode.USAGE) d.logger.error({ mapping: mapping.id, err: message, cause: disp.reason }, 'mapping failed');
    return { mappingId: mapping.id, dataSourceId, error: message, exitCode: disp.exitCode, notices };
  };
  // A 404 met by the pass: the data source itself may be gone (the daemon's words and codes).
  const lost = (sawNotFound: boolean) => (sawNotFound && dataSourceId !== undefined ? d.lostDataSource(d.api, mapping, index, dataSourceId, d.signal) : Promise.resolve(undefined));
  try {
    const mirror = await d.buildMirror(config, mapping, index, {
      api: d.api,
      state: d.store,
      logger: d.logger,
      clock: realClock,
      onOp,
      onPlan: d.progress.onPlan,
      signal: d.signal,
      dryRun: d.args.dryRun,
      folderMoved: d.args.folderMoved,
      onNotice: (m) => notices.push(m),
      // The daemon's rule for every full pass: a file changed within the window is not read (a dry run previews all).
      stabilityMs: d.args.dryRun ? undefined : windowMs,
      lease: (id, installationId, birth) =>
        (lease = d.mappingLease(
          { api: d.api, mappingId: mapping.id, root: mapping.path, statePath: config.statePath, clock: realClock, logger: d.logger, filesTracked: () => d.store.mapping(mapping.id)?.files.size ?? 0 },
          id,
          installationId,
          undefined,
          birth,
        )),
    });
    dataSourceId = mirror.dataSourceId;
    // The walk and the listing run beside the claim's settle; the pass plans once it holds (build-mirror.ts leaseSettled).
    const held = lease;
    claim = held?.acquire().then((ok) => {
      if (ok && !d.signal.aborted) held.start();
    });
    const passOpts = { dryRun: d.args.dryRun, allowMassDelete: d.args.allowMassDelete, signal: d.signal };
    const report = d.args.dryRun
      ? await mirror.fullPass(passOpts)
      : await fullPassSettled(mirror, passOpts, { windowMs, waitMs: (d.args.waitChanging ?? WAIT_CHANGING_S) * 1000, clock: realClock, logger: d.logger, signal: d.signal });
    // A data source this sync created has its name before the sync ends (or gave way to another's: nothing of it is kept).
    const unnamed = lease !== undefined && !(await lease.named()) ? unnamedFailure(mapping, lease, d.store) : undefined;
    if (unnamed !== undefined) return failed(unnamed, !(unnamed instanceof LeaseNotHeldError));
    const gone = await lost(report.failures.some((f) => f.code === 'E_NOT_FOUND'));
    if (gone !== undefined) return failed(gone);
    // A dry run shows what each extension's files will become (cli/coverage.ts) before anything is sent.
    const coverage = d.args.dryRun ? await (await import('../../daemon/status/coverage.js')).mappingCoverage(mapping, (d.store as ReadOnlyState).mapping(mapping.id), true) : undefined;
    return { mappingId: mapping.id, dataSourceId, report, notIngested, notices, changing: report.settling?.length ? { paths: report.settling, windowMs } : undefined, coverage };
  } catch (e) {
    if (e instanceof LeaseNotHeldError && lease !== undefined && !lease.holds()) return failed(gaveWayFailure(mapping, lease, d.store) ?? new LeaseNotHeldError(heldElsewhere(mapping.id, lease)), false);
    const interrupted = isApiError(e) && e.code === 'E_ABORTED';
    if (interrupted) return { mappingId: mapping.id, error: 'interrupted' };
    // Fatal for the process (credentials refused, an unusable state...): no other mapping can do better.
    if (disposition(e, 'mapping').kind === 'fatalForProcess') throw e;
    return failed((await lost(isApiError(e) && e.code === 'E_NOT_FOUND')) ?? e);
  } finally {
    await claim;
    await lease?.stop();
  }
}

/**
 * A data source this sync created that has no name yet: it gave way to another process's of
 * the same name (the state now records that one), or its renaming failed (the next run names it).
 */
function unnamedFailure(mapping: MappingConfig, lease: MappingLease, store: SyncState): Error | undefined {
  const gaveWay = gaveWayFailure(mapping, lease, store);
  if (gaveWay !== undefined) return gaveWay;
  const why = lease.unnamed;
  if (why === undefined) return undefined;
  return new Error(
    `mapping ${mapping.id}: data source ${lease.dataSourceId} still has its provisional name, not ${JSON.stringify(mapping.dataSource?.name ?? '')}${why ? ` (${why})` : ''}; the next sync or the daemon names it`,
  );
}

/** The data source this sync created gave way to another's of its name: the state records that one, and the error says so. */
function gaveWayFailure(mapping: MappingConfig, lease: MappingLease, store: SyncState): LeaseNotHeldError | undefined {
  const to = lease.gaveWay;
  if (to === undefined) return undefined;
  store.ensureMapping(mapping.id, to, mapping.path);
  return new LeaseNotHeldError(
    `mapping ${mapping.id}: another dssync created the data source ${JSON.stringify(mapping.dataSource?.name ?? '')} (${to}) at the same time and mirrors the folder into it; the one this sync created, ${lease.dataSourceId}, was deleted with what it held`,
  );
}

/** Why a sync wrote nothing: another live process holds the lease (or it could not be taken). */
function heldElsewhere(mappingId: string, lease: MappingLease): string {
  const s = lease.status();
  if (s.holder !== undefined) {
    return `mapping ${mappingId}: another dssync holds its lease and writes to this data source (host ${s.holder.host}, session ${s.holder.session}${s.holder.since ? `, since ${s.holder.since}` : ''}); nothing was written. Stop that process first, or let it mirror (docs/reliability.md, "The lease")`;
  }
  return `mapping ${mappingId}: the lease could not be taken${s.error !== undefined ? ` (${s.error})` : ''}; nothing was written`;
}

export interface SettleOptions {
  windowMs: number;
  /** The longest the sync waits for files being written (0: not at all). */
  waitMs: number;
  clock: Pick<Clock, 'monotonic' | 'sleep'>;
  logger: Logger;
  signal: AbortSignal;
}

/** Counts of a pass that are writes done (kept across passes); the others are the last pass's. */
const WRITES = ['uploaded', 'replaced', 'renamed', 'updated', 'deleted', 'adopted', 'forgotten'] as const;

/**
 * Files being written: the pass applies the daemon's stability window (passStabilityMs), so
 * a file changed within it is set aside, never sent half-written. When to look again and
 * when to give up is the daemon's schedule (schedule.ts `setAside`) with `waitMs` as its
 * deadline; each look is a full pass (the mirror remembers what it set aside). What still
 * changes then is reported ("changing": exit 1) and sent by the next run. One summary: the
 * writes of every pass, the rest from the last.
 */
export async function fullPassSettled(mirror: Pick<Mirror, 'fullPass'>, passOpts: PassOptions, o: SettleOptions): Promise<PassReport> {
  let sched = initialSchedule({ rescanIntervalMs: 0, settleMs: o.windowMs, giveUpAt: o.clock.monotonic() + o.waitMs });
  const earlier = Object.fromEntries(WRITES.map((k) => [k, 0])) as Record<(typeof WRITES)[number], number>;
  let report = await mirror.fullPass(passOpts);
  while (report.settling?.length && !report.blocked && !o.signal.aborted) {
    const next = step(sched, { type: 'setAside' }, o.clock.monotonic());
    if (next.nextDeadline === undefined) break; // past the deadline
    o.logger.info(
      { files: report.settling.length, first: report.settling[0], waitMs: o.windowMs },
      `${report.settling.length} file(s) changed within the last ${o.windowMs / 1000} s (being written?): looking again in ${o.windowMs / 1000} s`,
    );
    try {
      await o.clock.sleep(next.nextDeadline - o.clock.monotonic(), o.signal);
    } catch {
      break; // interrupted: report what was done
    }
    sched = step(next.state, { type: 'tick' }, o.clock.monotonic()).state;
    for (const k of WRITES) earlier[k] += report.counts[k];
    report = await mirror.fullPass(passOpts);
  }
  const counts = { ...report.counts };
  for (const k of WRITES) counts[k] += earlier[k];
  // What an earlier pass wrote the last one found unchanged: counted once, as written.
  counts.unchanged = Math.max(0, counts.unchanged - (earlier.uploaded + earlier.replaced + earlier.renamed + earlier.updated + earlier.adopted));
  return { ...report, counts, ok: report.ok && !report.settling?.length };
}

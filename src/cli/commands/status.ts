/**
 * `dssync status`: what the daemon is doing, for humans and monitors (DESIGN §1.6, §6).
 *
 * It asks the running daemon first (GET /status on `status.listen`); when nothing answers
 * it reads the state file without taking its lock (readStateFile), so it works while a
 * daemon holds the lock and for a `sync` run from cron. It never needs the service's token
 * (it loads the settings only). The daemon's status token it reads by itself (status.tokenFile,
 * or the one the daemon writes beside its state): as the daemon's user or root, it asks the
 * daemon; as anyone else, it says why not and reads the state file if it may.
 *
 * Exit codes (the /healthz semantics, so scripts and monitors can use it): 0 when every
 * mapping is fine; 1 when a mapping is degraded or its last pass did not complete cleanly
 * (failed or skipped files, a stopped pass), the same condition under which `dssync sync`
 * exits 1; 1 when the state file cannot be read; 2 for configuration errors. A daemon that
 * is not running is not by itself a failure (a cron-driven `sync` needs none), and no
 * state file yet is exit 0.
 */
import { spawn } from 'node:child_process';
import { stat } from 'node:fs/promises';
import type { Argv, CommandModule } from 'yargs';
import { callDaemon, configMismatch, DAEMON_TIMEOUT_MS, daemonTarget, noDaemon, readDaemonToken, type DaemonTarget } from '../daemon-link.js';
import { childEnv } from '../../secrets.js';
import { settingsFromArgs } from '../context.js';
import type { Settings } from '../../config/types.js';
import { parseDaemonStatus, type DaemonStatus, type InstallationStatus, type MappingStatus, type PassRecordView } from '../../daemon/status/schema.js';
import { installationStatus } from '../../daemon/status/schema.js';
import { readRecords, recordsPath, type MappingRecords } from '../../daemon/records-file.js';
import { formatCoverage, type MappingCoverage } from '../coverage-table.js';
import { stateWrittenAt } from '../../state/state-check.js';
import type { Intent, PassRecord, StateFile } from '../../state/schema.js';
import { CliError, ExitCode, usageError } from '../exit.js';
import { hideOptions, type GlobalArgs } from '../options.js';
import { formatJson, formatSummary, truncate } from '../output.js';
import { printable } from '../../printable.js';
import { formatWatchLines } from '../watch-report.js';
import { realClock, type Clock } from '../../time/clock.js';

/** Longest list printed in full; longer ones end with "… and N more". */
export const LIST_LIMIT = 10;
/** A /status answer larger than this is not a dssync daemon's (it holds bounded lists). */
const MAX_STATUS_BYTES = 64 * 1024 * 1024;

interface StatusArgs extends GlobalArgs {
  url?: boolean | undefined;
  open?: boolean | undefined;
  history?: boolean | undefined;
  mapping?: string | undefined;
  pendingDeletes?: boolean | undefined;
  coverage?: boolean | undefined;
}

export const statusCommand: CommandModule<GlobalArgs, StatusArgs> = {
  command: 'status',
  describe: 'Show what dssync is doing: per mapping its phase, files, pending work, errors, last pass (exit 1 when one needs attention)',
  // It never talks to the service: the connection options do not apply.
  builder: (y) =>
    hideOptions(y, ['base-url', 'org', 'token-file'])
      .option('url', { type: 'boolean', describe: 'print a link to the status page that signs the browser in (one use, one minute)' })
      .option('open', { type: 'boolean', describe: 'the same, and open it in the desktop\'s browser when there is one' })
      .option('history', { type: 'boolean', describe: 'the last passes of each mapping (kind, start, duration, counts, first errors), kept across restarts' })
      .option('coverage', { type: 'boolean', describe: 'per mapping and extension: files sent as they are, converted, without text, skipped (and why), failed, pending; read from the folder and the state file' })
      .option('mapping', { type: 'string', describe: 'with --history, --coverage or --pending-deletes: only this mapping' })
      .option('pending-deletes', { type: 'boolean', describe: 'what the deletions stopped by the mass-delete guard would remove (ask the running daemon); confirm with dssync confirm-delete' })
      .example('$0 status --config /etc/dssync/config.json --mapping docs --pending-deletes', 'the documents a mass delete waiting for confirmation would remove')
      .example('$0 status --config /etc/dssync/config.json --history --mapping docs', 'the last 50 passes of mapping docs')
      .example('$0 status --config /etc/dssync/config.json --coverage', 'what reached the App, per extension')
      .example('$0 status --config /etc/dssync/config.json', 'asks the running daemon, or reads the state file')
      .example('$0 status --config config.json --json', 'the same for scripts')
      .example('sudo $0 status --config /etc/dssync/config.json --open', 'the status page, signed in') as unknown as Argv<StatusArgs>,
  handler: async (args) => {
    process.exitCode =
      args.url || args.open ? await runStatusLink(args, args.open === true) : args.history ? await runHistory(args) : args.coverage ? await runCoverage(args) : args.pendingDeletes ? await runPendingDeletes(args) : await runStatus(args);
  },
};

export interface StatusDeps {
  env?: NodeJS.ProcessEnv | undefined;
  out?: ((text: string) => void) | undefined;
  /** Its wall reading dates what is shown (ages of the daemon's wall timestamps); default the real clock (this command is the edge). */
  clock?: Clock | undefined;
  /** Reads the state file (default: readStateFile, loaded on demand). */
  readState?: ((path: string) => Promise<StateFile | undefined>) | undefined;
  probe?: ((target: DaemonTarget) => Promise<DaemonProbe>) | undefined;
}

export async function runStatus(args: GlobalArgs, deps: StatusDeps = {}): Promise<number> {
  const env = deps.env ?? process.env;
  const out = deps.out ?? ((t: string) => void process.stdout.write(t));
  const now = (deps.clock ?? realClock).now();
  // Load warnings (a non-loopback status address...) are `config check`'s business: here
  // they would repeat on every look.
  const settings = settingsFromArgs(args, env);

  const listen = settings.status.listen;
  const read = listen === false ? undefined : readDaemonToken(settings);
  let probe: DaemonProbe = listen === false ? { kind: 'off' } : await (deps.probe ?? probeDaemon)(daemonTarget(settings, listen, read?.token));
  // Refused without a token: why this user has none says more than the 401 does.
  if (probe.kind === 'refused' && read?.token === undefined && read?.reason) probe = { ...probe, reason: read.reason };
  // The daemon that answered must run this config: another's mappings, exit 0, would keep a
  // monitor green for a daemon that is not running. Then the state file answers.
  const other = probe.kind === 'answered' ? configMismatch(settings, probe.status) : undefined;
  if (probe.kind === 'answered' && other === undefined) {
    out(args.json ? formatJson({ source: 'daemon', url: probe.url, ...probe.status }) : formatDaemonStatus(probe.status, probe.url, now));
    return daemonExitCode(probe.status);
  }

  const state = await readState(settings.statePath, deps.readState);
  const daemon = other !== undefined && probe.kind !== 'off' ? { url: probe.url, reason: `no daemon for this config at ${probe.url}: ${other}` } : describeProbe(probe);
  // The files not mirrored, as the daemon last saved them: no daemon does not mean in sync.
  const records = state === undefined ? new Map<string, MappingRecords>() : await readRecords(recordsPath(settings.statePath));
  const report = stateFileReport(settings, state, daemon, records);
  if (args.json) {
    out(formatJson(report));
  } else {
    const modified = state === undefined ? undefined : (await stateWrittenAt(settings.statePath))?.toISOString();
    const snapshotWritten = await stat(settings.statePath).then(() => true, () => false);
    out(formatStateReport(report, now, modified, snapshotWritten));
  }
  return stateExitCode(report);
}

/**
 * `status --coverage`: each mapping's coverage (cli/coverage.ts), from its folder and the
 * state file, with or without a running daemon. Exit 1 when a file failed or has no text.
 */
export async function runCoverage(args: StatusArgs, deps: Pick<StatusDeps, 'out' | 'env' | 'readState'> = {}): Promise<number> {
  const out = deps.out ?? ((t: string) => void process.stdout.write(t));
  const settings = settingsFromArgs(args, deps.env);
  const mappings = settings.mappings.filter((m) => args.mapping === undefined || m.id === args.mapping);
  if (mappings.length === 0) throw usageError(args.mapping === undefined ? 'status --coverage: the config has no mappings' : `status --coverage: no mapping ${JSON.stringify(args.mapping)} in the config`);
  const state = await readState(settings.statePath, deps.readState);
  const coverage: MappingCoverage[] = [];
  const { mappingCoverage } = await import('../../daemon/status/coverage.js');
  for (const m of mappings) coverage.push(await mappingCoverage(m, state?.mappings[m.id], false));
  out(args.json ? formatJson({ coverage }) : coverage.map((c) => formatCoverage(c, false)).join('\n'));
  const attention = coverage.some((c) => c.error !== undefined || c.total.failed.conversion + c.total.failed.refused + c.total.noText + c.total.unchecked > 0);
  return attention ? ExitCode.FAILURE : ExitCode.OK;
}

// ---- asking the daemon ----------------------------------------------------------------

export type DaemonProbe =
  | { kind: 'answered'; url: string; status: DaemonStatus }
  /** Nothing listens there, or it did not answer in time. */
  | { kind: 'no-answer'; url: string; reason: string }
  /** Something answered, but not a dssync status endpoint. */
  | { kind: 'not-dssync'; url: string; reason: string }
  /** The daemon answered 401/403: this user could not give it its token. */
  | { kind: 'refused'; url: string; reason: string }
  /** `status.listen` is false. */
  | { kind: 'off' };

/** Asks the daemon for its status (daemon-link.ts: the socket, or a TCP listener of the daemon's user). */
export async function probeDaemon(target: DaemonTarget, timeoutMs = DAEMON_TIMEOUT_MS): Promise<DaemonProbe> {
  const url = target.tcp?.url ?? `unix:${target.socketPath}`;
  let answer: { status: number; body: Buffer };
  try {
    answer = await callDaemon(target, { method: 'GET', path: '/status', timeoutMs }, MAX_STATUS_BYTES);
  } catch (e) {
    const none = noDaemon(e);
    if (none) return { kind: none.kind, url, reason: none.message };
    const err = e as NodeJS.ErrnoException;
    return { kind: 'no-answer', url, reason: err.code ? `${err.code}: ${err.message}` : err.message };
  }
  if (answer.status === 401 || answer.status === 403) {
    return { kind: 'refused', url, reason: target.token === undefined ? 'it needs its status token' : "it does not accept this config's status token: it runs another config" };
  }
  if (answer.status !== 200) return { kind: 'not-dssync', url, reason: `GET /status answered HTTP ${answer.status}` };
  let body: unknown;
  try {
    body = JSON.parse(answer.body.toString('utf8'));
  } catch {
    return { kind: 'not-dssync', url, reason: 'GET /status did not answer JSON' };
  }
  const parsed = parseDaemonStatus(body);
  if (!parsed.ok) return { kind: 'not-dssync', url, reason: `GET /status answered something other than a dssync status (${parsed.reason})` };
  return { kind: 'answered', url, status: parsed.status };
}

function describeProbe(p: DaemonProbe): StateFileReport['daemon'] {
  switch (p.kind) {
    case 'off':
      return { url: null, reason: 'the status endpoint is off (status.listen is false)' };
    case 'no-answer':
      return { url: p.url, reason: `daemon not running (no answer at ${p.url}: ${p.reason})` };
    case 'not-dssync':
      return { url: p.url, reason: `no dssync daemon at ${p.url} (${p.reason}); is another program using that port?` };
    case 'refused':
      return { url: p.url, reason: `the daemon at ${p.url} did not answer: ${p.reason}` };
    case 'answered':
      return { url: p.url, reason: 'the daemon answered' };
  }
}

export function daemonExitCode(status: DaemonStatus): number {
  return status.mappings.some(mappingNeedsAttention) ? ExitCode.FAILURE : ExitCode.OK;
}

/**
 * The one "needs attention" rule, for the daemon's view and the state file's: the mapping
 * is degraded (only a running daemon can tell), or its last pass did not complete cleanly
 * (failed or skipped files, a stopped pass; files excluded by a setting do not count) —
 * the condition under which `dssync sync` exits 1.
 */
export function needsAttention(m: { degraded?: boolean; lastPassOk?: boolean | undefined }): boolean {
  return m.degraded === true || m.lastPassOk === false;
}

function mappingNeedsAttention(m: MappingStatus): boolean {
  // A file not mirrored (kept until it is, across passes) is attention too (issue 25.1).
  return needsAttention({ degraded: m.phase === 'degraded' || m.degraded.length > 0, lastPassOk: m.lastPass?.ok }) || (m.problemsTotal ?? m.problems?.length ?? 0) > 0;
}

function stateNeedsAttention(m: StateMappingView): boolean {
  return m.inConfig && (needsAttention({ lastPassOk: m.lastPass?.ok }) || m.notMirrored.total > 0);
}

// ---- the deletions waiting for a decision ----------------------------------------------

/**
 * `--pending-deletes`: per mapping (or the one of `--mapping`), what the pass stopped by the
 * mass-delete guard would delete. Asks the running daemon (only it holds the decision).
 * Exit 0 when listed, also when nothing waits.
 */
export async function runPendingDeletes(args: StatusArgs, out: (t: string) => void = (t) => void process.stdout.write(t)): Promise<number> {
  const { connectDaemon, mappingOf } = await import('./daemon-actions.js');
  const settings = settingsFromArgs(args);
  const d = await connectDaemon(settings, 'Without a daemon nothing waits: dssync sync --dry-run shows what a pass would delete.');
  const mappings = args.mapping === undefined ? d.status.mappings : [mappingOf(d.status, args.mapping)];
  if (args.json) {
    out(formatJson({ source: 'daemon', url: d.url, mappings: mappings.map((m) => ({ id: m.id, pendingDeletes: m.pendingDeletes ?? null })) }));
    return ExitCode.OK;
  }
  const blocks = mappings.map((m) => {
    const p = m.pendingDeletes;
    if (!p) return `mapping ${printable(m.id)}: no deletions waiting for a decision`;
    const more = p.total - p.paths.length;
    return [
      `mapping ${printable(m.id)}: ${p.total} document(s) would be deleted (${p.confirmed ? 'confirmed: the next pass deletes them' : `waiting since ${formatWhen(p.since, now())}`})`,
      `  ${printable(p.message)}`,
      ...p.paths.map((x) => `  - ${printable(x)}`),
      ...(more > 0 ? [`  … and ${more} more`] : []),
      ...(p.confirmed ? [] : [`  confirm: dssync confirm-delete --mapping ${m.id}; or put the files back (the wait ends by itself)`]),
    ].join('\n');
  });
  out(`${blocks.join('\n\n')}\n`);
  return ExitCode.OK;
}

// `status --pending-deletes` takes no deps: the command's edge, the real clock's wall reading.
const now = (): number => realClock.now();

// ---- a link to the page ---------------------------------------------------------------

/** `--url` / `--open`: asks the daemon for a one-time login code and prints the page's link. */
export async function runStatusLink(args: GlobalArgs, open: boolean, env: NodeJS.ProcessEnv = process.env, out: (t: string) => void = (t) => void process.stdout.write(t)): Promise<number> {
  const settings = settingsFromArgs(args, env);
  const listen = settings.status.listen;
  if (listen === false) throw new CliError('the status endpoint is off (status.listen is false): there is no page to open');
  const link = await loginLink(daemonTarget(settings, listen, readDaemonToken(settings).token));
  out(args.json ? formatJson({ url: link }) : `${link}\n(one use, within a minute; from another machine: ssh -L ${listen.port}:127.0.0.1:${listen.port} this-host, then open the link there)\n`);
  if (open && (env.DISPLAY || env.WAYLAND_DISPLAY)) {
    // Best effort: a server without a desktop has no browser; the printed link is the way.
    spawn('xdg-open', [link], { stdio: 'ignore', detached: true, env: childEnv(env) })
      .on('error', () => undefined)
      .unref();
  }
  return ExitCode.OK;
}

/** A one-time link to the page of the daemon at `target` (its TCP address: the page's). */
export async function loginLink(target: DaemonTarget, timeoutMs = DAEMON_TIMEOUT_MS * 2): Promise<string> {
  const page = target.tcp?.url;
  if (page === undefined) throw new CliError('the status endpoint is off (status.listen is false): there is no page to open');
  const fail = (why: string): CliError => new CliError(`cannot get a login code from the daemon at ${page}: ${why}`);
  let answer: { status: number; body: Buffer };
  try {
    answer = await callDaemon(target, { method: 'POST', path: '/login/code', timeoutMs }, 64 * 1024);
  } catch (e) {
    throw fail(noDaemon(e)?.kind === 'no-answer' ? `${(e as Error).message} (is the daemon running?)` : (e as Error).message);
  }
  if (answer.status === 401 || answer.status === 403) throw fail('it did not accept the status token (is it the daemon of this config?)');
  let body: { code?: unknown; error?: unknown } = {};
  try {
    body = JSON.parse(answer.body.toString('utf8')) as typeof body;
  } catch {
    // below
  }
  if (answer.status !== 200) throw fail(`HTTP ${answer.status}${typeof body.error === 'string' ? `: ${body.error}` : ''}`);
  if (typeof body.code !== 'string' || !/^[\w-]{16,128}$/.test(body.code)) throw fail('the answer holds no login code');
  return `${page}/login?code=${encodeURIComponent(body.code)}`;
}

// ---- the state file -------------------------------------------------------------------

async function readState(path: string, read?: (path: string) => Promise<StateFile | undefined>): Promise<StateFile | undefined> {
  return (read ?? (await import('../../state/store.js')).readStateFile)(path);
}

export interface IntentView {
  kind: Intent['kind'];
  startedAt: string;
  /** The paths it concerns (an upload may carry several files). */
  paths: string[];
}

export interface StateMappingView {
  id: string;
  /** The folder, from the config (or the state, for a mapping no longer configured). */
  path: string | null;
  dataSourceId: string | null;
  /** False for a mapping the state file holds but the config no longer names. */
  inConfig: boolean;
  /** False when the state file holds nothing for this mapping yet. */
  synced: boolean;
  filesTracked: number;
  /**
   * Open intents: remote writes begun and not recorded as finished (settled at the next
   * start). Not "pending": in the daemon's view that is the paths waiting for a pass.
   */
  unfinishedWrites: number;
  intents: IntentView[];
  rejected: { path: string; reason: string; status?: number | undefined; at: string }[];
  lastPass: PassRecord | null;
  /** Files not mirrored as the daemon last saved them (the records file), kept until fixed. */
  notMirrored: { total: number; files: { path: string; kind: string; reason: string; since: string }[] };
  /** Paused by the operator since then (the records file), or null. */
  paused: string | null;
}

export interface StateFileReport {
  source: 'state-file';
  statePath: string;
  stateFile: 'present' | 'missing';
  daemon: { url: string | null; reason: string };
  /** The identity the state file records (absent before the first sync). */
  installation?: InstallationStatus;
  mappings: StateMappingView[];
}

/** What the state file says of each configured mapping (and of any it holds besides). Pure. */
export function stateFileReport(
  settings: Pick<Settings, 'file' | 'statePath' | 'mappings'>,
  state: StateFile | undefined,
  daemon: StateFileReport['daemon'],
  records: ReadonlyMap<string, MappingRecords> = new Map(),
): StateFileReport {
  const views: StateMappingView[] = [];
  const seen = new Set<string>();
  for (const m of settings.mappings) {
    seen.add(m.id);
    views.push(mappingView(m.id, m.path, m.dataSourceId ?? null, true, state, records.get(m.id)));
  }
  // Without a config file (environment only) there is no list to compare with: the state's
  // mappings are all there is to show, not leftovers.
  const configured = settings.file !== undefined || settings.mappings.length > 0;
  for (const id of Object.keys(state?.mappings ?? {})) {
    if (!seen.has(id)) views.push(mappingView(id, null, null, !configured, state, records.get(id)));
  }
  const installation = installationStatus(state?.identity, undefined);
  return { source: 'state-file', statePath: settings.statePath, stateFile: state ? 'present' : 'missing', daemon, ...(installation ? { installation } : {}), mappings: views };
}

/** How many files of the kept list a state-file report names (the total is always given). */
const NOT_MIRRORED_SHOWN = 20;

function mappingView(id: string, path: string | null, configuredId: string | null, inConfig: boolean, state: StateFile | undefined, records: MappingRecords | undefined): StateMappingView {
  const s = state?.mappings[id];
  const intents = Object.values(s?.intents ?? {})
    .map(intentView)
    .sort((a, b) => a.startedAt.localeCompare(b.startedAt));
  const rejected = Object.entries(s?.rejected ?? {})
    .map(([p, r]) => ({ path: p, reason: r.reason, status: r.status, at: r.at }))
    .sort((a, b) => a.path.localeCompare(b.path));
  return {
    id,
    path: path ?? s?.root ?? null,
    dataSourceId: s?.dataSourceId ?? configuredId,
    inConfig,
    synced: s !== undefined,
    filesTracked: s?.files.size ?? 0,
    unfinishedWrites: intents.length,
    intents,
    rejected,
    lastPass: s?.lastPass ?? null,
    notMirrored: {
      total: (records?.problems.problems.length ?? 0) + (records?.problems.problemsOver ?? 0),
      files: (records?.problems.problems ?? []).slice(0, NOT_MIRRORED_SHOWN).map((p) => ({ path: p.path, kind: p.kind, reason: p.reason, since: p.since })),
    },
    paused: records?.paused?.since ?? null,
  };
}

function intentView(i: Intent): IntentView {
  return { kind: i.kind, startedAt: i.startedAt, paths: i.files.map((f) => f.path) };
}

export function stateExitCode(report: StateFileReport): number {
  return report.mappings.some(stateNeedsAttention) ? ExitCode.FAILURE : ExitCode.OK;
}

// ---- human output (pure) --------------------------------------------------------------

/** "2026-03-01T10:00:00Z (5m ago)": exact for logs, relative for a glance. */
export function formatWhen(iso: string | undefined | null, now: number): string {
  if (!iso) return '-';
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return iso;
  const exact = new Date(t).toISOString().replace(/\.\d{3}Z$/, 'Z');
  const diff = t - now;
  if (Math.abs(diff) < 1000) return `${exact} (now)`;
  return diff < 0 ? `${exact} (${formatDuration(-diff)} ago)` : `${exact} (in ${formatDuration(diff)})`;
}

/** 45s, 3m 20s, 2h 5m, 4d 3h: the two largest units. */
export function formatDuration(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  const units: [number, string][] = [
    [Math.floor(s / 86_400), 'd'],
    [Math.floor((s % 86_400) / 3600), 'h'],
    [Math.floor((s % 3600) / 60), 'm'],
    [s % 60, 's'],
  ];
  const first = units.findIndex(([n]) => n > 0);
  if (first === -1) return '0s';
  return units
    .slice(first, first + 2)
    .filter(([n], i) => i === 0 || n > 0)
    .map(([n, u]) => `${n}${u}`)
    .join(' ');
}

/** Lines of a list, at most `limit`, then "… and N more". */
export function limitedLines<T>(items: readonly T[], line: (item: T) => string, limit = LIST_LIMIT, total = items.length): string[] {
  const shown = items.slice(0, limit).map((i) => truncate(printable(line(i).replace(/\s+/g, ' ')), 300));
  const more = Math.max(total, items.length) - shown.length;
  if (more > 0) shown.push(`… and ${more} more`);
  return shown;
}

const COUNT_ORDER = ['uploaded', 'replaced', 'renamed', 'updated', 'deleted', 'adopted', 'forgotten', 'unchanged', 'skipped', 'failed'];

/** "3 uploaded, 1 deleted, 120 unchanged": the counts that are not zero, in a fixed order. */
export function formatCounts(counts: Readonly<Record<string, unknown>>): string {
  const keys = [...COUNT_ORDER.filter((k) => k in counts), ...Object.keys(counts).filter((k) => !COUNT_ORDER.includes(k)).sort()];
  const parts = keys.filter((k) => typeof counts[k] === 'number' && counts[k] !== 0).map((k) => `${String(counts[k])} ${k}`);
  return parts.length ? parts.join(', ') : 'no files';
}

function indent(text: string, by = '  '): string {
  return text
    .split('\n')
    .map((l) => (l === '' ? l : by + l))
    .join('\n');
}

/** A "name (N):" header followed by its indented, truncated lines; nothing for an empty list. */
function section<T>(title: string, items: readonly T[], line: (item: T) => string, total = items.length): string[] {
  if (items.length === 0) return [];
  const n = Math.max(total, items.length);
  return [`${title} (${n}):`, ...limitedLines(items, line, LIST_LIMIT, n).map((l) => `  ${l}`)];
}

function daemonMappingLines(m: MappingStatus, now: number): string {
  const pairs: [string, string][] = [
    ['path', m.path],
    ['data source', m.dataSourceId ?? '(not resolved yet)'],
  ];
  if (m.dataSourceNotice) pairs.push(['data source note', m.dataSourceNotice]);
  if (m.paused) pairs.push(['paused', `since ${formatWhen(m.paused.since, now)}: no request for this mapping; dssync resume --mapping ${m.id}`]);
  if (m.lease) pairs.push(['lease', leaseText(m.lease, now)]);
  if (m.degraded.length) pairs.push(['degraded', m.degraded.join('\n')]);
  if (m.pendingDeletes) {
    const p = m.pendingDeletes;
    pairs.push([
      'pending deletes',
      `${p.total} document(s) ${p.confirmed ? 'confirmed, deleted by the next pass' : `waiting for your decision since ${formatWhen(p.since, now)}: dssync status --mapping ${m.id} --pending-deletes lists them, dssync confirm-delete --mapping ${m.id} confirms`}`,
    ]);
  }
  pairs.push(['files tracked', String(m.filesTracked)], ['pending', `${m.pending} path(s) waiting for the next pass`]);
  const lp = m.lastPass;
  if (lp) {
    const { ok, finishedAt, kind, ...counts } = lp;
    pairs.push(['last pass', `${kind === 'full' ? 'full' : 'changes'}, ${ok ? 'ok' : 'NOT OK'}, ${formatWhen(finishedAt, now)}: ${formatCounts(counts)}`]);
  } else {
    pairs.push(['last pass', 'none yet']);
  }
  // The last full pass that completed, when it is not the one just shown.
  if (m.lastFullPassOkAt && m.lastFullPassOkAt !== lp?.finishedAt) pairs.push(['last full ok', formatWhen(m.lastFullPassOkAt, now)]);
  if (m.nextRescanAt) pairs.push(['next rescan', formatWhen(m.nextRescanAt, now)]);
  pairs.push(['watched dirs', String(m.watchedDirs)]);
  // Events or polling per mount, the interval achieved, the last cycle (issue 12).
  if (m.watch) pairs.push(['watch', formatWatchLines(m.watch, m.path).join('\n')]);
  const lists = [
    // Newest first: the list is kept oldest first.
    ...section('recent errors', [...m.recentErrors].reverse(), (e) => `${formatWhen(e.at, now)} ${e.path ? `${e.path}: ` : ''}${e.message}`, m.recentErrorsTotal),
    // Older daemons send only `skipped`.
    ...(m.problems
      ? section('not mirrored (kept until fixed)', m.problems, (p) => `${p.path}: ${p.kind}: ${p.reason} (since ${formatWhen(p.since, now)})`, m.problemsTotal)
      : section('skipped', m.skipped, (s) => `${s.path}: ${s.reason}`, m.skippedTotal)),
    ...section('excluded by a setting (not problems)', m.excluded ?? [], (e) => `${e.path}: ${e.reason}`, m.excludedTotal),
    ...section('not ingested', m.problems ? [] : m.notIngested, (n) => `${n.path}: ${n.reason ? `${n.reason}; ` : ''}document ${n.documentId}, uploaded ${formatWhen(n.uploadedAt, now)}`, m.notIngestedTotal),
  ];
  return [`mapping ${m.id}: ${m.phase}`, indent(formatSummary(pairs).trimEnd()), ...lists.map((l) => `  ${l}`)].join('\n');
}

const ORIGIN_TEXT = { drawn: 'drawn at random', derived: 'derived from host and state path (older state)', pinned: 'pinned by config or environment' } as const;

/** The installation id, its origin and former ids. */
export function installationText(i: InstallationStatus): string {
  const former = i.formerIds > 0 ? `, ${i.formerIds} former id(s)` : '';
  const pin = i.origin === 'pinned' ? '' : '; pin it with "installationId" or DSSYNC_INSTALLATION_ID for containers';
  return `${i.id} (${ORIGIN_TEXT[i.origin]}${former})${pin}`;
}

/** What a rebuild of the state at this start did (docs/reliability.md, "The identity file"). */
function rebuiltText(r: NonNullable<InstallationStatus['stateRebuilt']>): string {
  const how = {
    corrupt: `was corrupt${r.movedTo ? ` (moved to ${r.movedTo})` : ''}`,
    missing: 'was missing',
    empty: 'was lost (no snapshot and an empty journal)',
    damaged: `had a damaged journal${r.movedTo ? ` (a copy is at ${r.movedTo}; every valid record recovered)` : ''}`,
  }[r.kind];
  const id = r.identity === 'recovered' ? 'identity kept from the identity file, documents recognised from the listing' : "no identity file: a new id; the old one's documents wait for 'dssync adopt'";
  return `the state file ${how}; ${id}`;
}

export function formatDaemonStatus(s: DaemonStatus, url: string, now: number): string {
  const r = s.requests;
  const head = [
    `daemon: ${s.stopping ? 'stopping' : 'running'}, pid ${s.pid}, dssync ${s.version}, up ${formatDuration(now - Date.parse(s.startedAt))} (since ${formatWhen(s.startedAt, now).replace(/ \(.*\)$/, '')})`,
    indent(
      formatSummary([
        ['status', url],
        ['config', s.configFile ?? '-'],
        ['state file', s.statePath],
        ['installation', s.installation ? installationText(s.installation) : 'not established yet (no mapping has started)'],
        ...(s.installation?.stateRebuilt ? [['state rebuilt', rebuiltText(s.installation.stateRebuilt)] as [string, string]] : []),
        ['service', `${s.baseUrl} (organization ${s.organizationId})`],
        ['requests', `${r.total} total, ${r.retries} retries, ${r.throttled} throttled, ${r.inFlight} in flight, ${r.queued} queued`],
      ]).trimEnd(),
    ),
  ];
  const blocks = [head.join('\n'), ...s.mappings.map((m) => daemonMappingLines(m, now))];
  if (s.mappings.length === 0) blocks.push('No mappings.');
  const attention = s.mappings.filter(mappingNeedsAttention).map((m) => m.id);
  const paused = s.mappings.filter((m) => m.paused).map((m) => m.id);
  const standby = s.mappings.filter((m) => m.lease?.state === 'standby').map((m) => m.id);
  const pausedNote = (paused.length ? ` Paused: ${paused.join(', ')}.` : '') + (standby.length ? ` Standby (another process holds the lease): ${standby.join(', ')}.` : '');
  blocks.push(attention.length ? `Needs attention: ${attention.join(', ')}.${pausedNote}` : `All mappings ok.${pausedNote}`);
  return `${blocks.join('\n\n')}\n`;
}

/** The mapping's lease in one line (docs/reliability.md, "The lease"). */
function leaseText(l: NonNullable<MappingStatus['lease']>, now: number): string {
  switch (l.state) {
    case 'held':
      return `held by this process${l.since ? ` since ${formatWhen(l.since, now)}` : ''}: it writes`;
    case 'standby':
      return l.holder
        ? `standby: held by ${printable(l.holder.host)} (session ${printable(l.holder.session)}${l.holder.since ? `, since ${formatWhen(l.holder.since, now)}` : ''}); nothing is written here until it is released or expires`
        : 'standby';
    case 'at-risk':
      return `not renewed in time: writes stopped until it is claimed again${l.error ? ` (${l.error})` : ''}`;
    default:
      return `${l.state}${l.error ? ` (${l.error})` : ''}`;
  }
}

// ---- --history ---------------------------------------------------------------------------

export interface HistoryReport {
  source: 'daemon' | 'records-file';
  /** The daemon's address, or the records file read when no daemon of this config answered. */
  from: string;
  mappings: { id: string; history: PassRecordView[] }[];
}

/**
 * `status --history`: the last passes of each mapping, from the running daemon, or from
 * the records file beside the state when none answers (the daemon writes it after passes).
 */
export async function runHistory(args: StatusArgs, deps: StatusDeps = {}): Promise<number> {
  const env = deps.env ?? process.env;
  const out = deps.out ?? ((t: string) => void process.stdout.write(t));
  const now = (deps.clock ?? realClock).now();
  const settings = settingsFromArgs(args, env);
  const listen = settings.status.listen;
  const probe: DaemonProbe = listen === false ? { kind: 'off' } : await (deps.probe ?? probeDaemon)(daemonTarget(settings, listen, readDaemonToken(settings).token));
  let report: HistoryReport;
  if (probe.kind === 'answered' && configMismatch(settings, probe.status) === undefined) {
    report = { source: 'daemon', from: probe.url, mappings: probe.status.mappings.map((m) => ({ id: m.id, history: m.history ?? [] })) };
  } else {
    const file = recordsPath(settings.statePath);
    const records = await readRecords(file);
    report = { source: 'records-file', from: file, mappings: settings.mappings.map((m) => ({ id: m.id, history: records.get(m.id)?.history ?? [] })) };
  }
  if (args.mapping !== undefined) {
    const known = report.mappings.map((m) => m.id);
    if (!known.includes(args.mapping)) throw usageError(`--mapping: no mapping "${args.mapping}" (the config has: ${known.join(', ') || 'none'})`);
    report = { ...report, mappings: report.mappings.filter((m) => m.id === args.mapping) };
  }
  out(args.json ? formatJson(report) : formatHistory(report, now));
  return ExitCode.OK;
}

const HISTORY_COLUMNS = ['uploaded', 'replaced', 'renamed', 'deleted', 'skipped', 'failed'] as const;

/** One table per mapping, oldest pass first; a pass's errors on the lines below it. Pure. */
export function formatHistory(r: HistoryReport, now: number): string {
  const blocks = [`Pass history from ${r.source === 'daemon' ? `the daemon at ${r.from}` : `the records file ${r.from} (no daemon of this config answered)`}:`];
  for (const m of r.mappings) {
    if (m.history.length === 0) {
      blocks.push(`mapping ${m.id}: no passes recorded yet`);
      continue;
    }
    const head = ['started', 'kind', 'took', 'result', ...HISTORY_COLUMNS];
    const rows = m.history.map((p) => [formatWhen(p.startedAt, now), p.kind, formatDuration(p.durationMs).replace(/^0s$/, '<1s'), p.ok ? 'ok' : 'NOT OK', ...HISTORY_COLUMNS.map((k) => String(p[k]))]);
    const widths = head.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]?.length ?? 0)));
    const line = (cells: string[]): string => `  ${cells.map((c, i) => c.padEnd(widths[i] ?? 0)).join('  ')}`.trimEnd();
    const lines = [`mapping ${m.id}: last ${m.history.length} pass(es), oldest first`, line(head)];
    m.history.forEach((p, i) => {
      lines.push(line(rows[i] ?? []));
      for (const e of [...(p.error ? [p.error] : []), ...p.errors]) lines.push(`      ${truncate(printable(e), 300)}`);
    });
    blocks.push(lines.join('\n'));
  }
  return `${blocks.join('\n\n')}\n`;
}

function describeIntent(i: IntentView): string {
  const what = i.paths.length > 3 ? `${i.paths.slice(0, 3).join(', ')} and ${i.paths.length - 3} more` : i.paths.join(', ');
  return `${i.kind} ${what}`;
}

function stateMappingLines(m: StateMappingView, now: number): string {
  const title = `mapping ${m.id}${m.inConfig ? '' : ' (in the state file, no longer in the config)'}`;
  const pairs: [string, string][] = [
    ['path', m.path ?? '-'],
    ['data source', m.dataSourceId ?? '(not resolved yet)'],
  ];
  if (!m.synced) return [title, indent(formatSummary(pairs).trimEnd()), '  not synced yet'].join('\n');
  pairs.push(['files tracked', String(m.filesTracked)], ['unfinished writes', m.unfinishedWrites === 0 ? 'none' : `${m.unfinishedWrites} remote write(s) begun and not recorded as done, settled at the next start`]);
  const lp = m.lastPass;
  if (lp) {
    pairs.push(['last pass', `${lp.ok ? 'ok' : 'NOT OK'}, ${formatWhen(lp.finishedAt, now)}: ${formatCounts(lp.summary)}`]);
    if (lp.error) pairs.push(['last error', lp.error]);
  } else {
    pairs.push(['last pass', 'none recorded']);
  }
  const lists = [
    ...section('unfinished writes', m.intents, (i) => `${describeIntent(i)} (since ${formatWhen(i.startedAt, now)})`),
    ...section('rejected by the service (retried when the file changes)', m.rejected, (r) => `${r.path}: ${r.reason}${r.status ? ` (HTTP ${r.status})` : ''}`),
    ...section(
      `not mirrored (kept until fixed; as the daemon last saved them${m.notMirrored.total > m.notMirrored.files.length ? `, first ${m.notMirrored.files.length} of ${m.notMirrored.total}` : ''})`,
      m.notMirrored.files,
      (p) => `${p.path}: ${p.kind}: ${p.reason} (since ${formatWhen(p.since, now)})`,
    ),
  ];
  if (m.paused) pairs.push(['paused', `since ${formatWhen(m.paused, now)} (dssync resume --mapping ${m.id}, with the daemon running)`]);
  return [title, indent(formatSummary(pairs).trimEnd()), ...lists.map((l) => `  ${l}`)].join('\n');
}

/**
 * Which files hold the state: `statePath` itself is the snapshot, written at the first fold
 * (the journal past its bound, or a start), so after a first sync it may not exist while
 * its journal holds every change; the files beside it are named so none is taken for junk.
 */
export function stateFilesLine(statePath: string, snapshotWritten: boolean): string {
  const snapshot = snapshotWritten ? 'the snapshot' : 'the snapshot: not written yet, as a state of dssync 0.3.0 or older, written before the next change';
  return `state files: ${statePath} (${snapshot}), ${statePath}.journal (changes since the snapshot), ${statePath}.lock, ${statePath}.status-token, ${statePath}.problems.json, ${statePath}.feed.json, ${statePath}.identity.json (docs/config.md, statePath).`;
}

export function formatStateReport(report: StateFileReport, now: number, modifiedAt?: string, snapshotWritten?: boolean): string {
  const blocks: string[] = [`${report.daemon.reason}.`];
  if (report.stateFile === 'missing') {
    blocks[0] += `\nno state yet: dssync has not synced with this config (no state file at ${report.statePath}).`;
    return `${blocks.join('\n')}\n`;
  }
  blocks[0] += `\nFrom the state file ${report.statePath}${modifiedAt ? `, written ${formatWhen(modifiedAt, now)}` : ''}:`;
  if (report.installation) blocks[0] += `\ninstallation ${installationText(report.installation)}`;
  blocks.push(...report.mappings.map((m) => stateMappingLines(m, now)));
  if (report.mappings.length === 0) blocks.push('No mappings.');
  const attention = report.mappings.filter(stateNeedsAttention).map((m) => m.id);
  if (attention.length) blocks.push(`Needs attention (last pass not ok, or files not mirrored): ${attention.join(', ')}.`);
  if (snapshotWritten !== undefined) blocks.push(stateFilesLine(report.statePath, snapshotWritten));
  return `${blocks.join('\n\n')}\n`;
}

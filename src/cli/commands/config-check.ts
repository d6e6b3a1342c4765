/**
 * `dssync config check`: validates the configuration and everything it depends on, one
 * line per check (✓ fine, ! warning, ✗ failure), before a sync or the daemon trips over it:
 * the file loads; each mapped folder is there and what would be mirrored from it; the
 * service accepts the credentials; each data source resolves; the App sees them; the
 * inotify budget covers the folders to watch; the status endpoint stays local; the state
 * file's folder is writable and the file private.
 *
 * Exit: 0 when nothing failed (warnings allowed), 1 when a check failed, 2 when the config
 * itself is invalid (the ConfigError propagates to main.ts as for every command), 3 when
 * the service refused the credentials. The token is never printed: only where it comes from.
 */
import { CredentialsRefusedError } from '../../auth/renewing.js';
import { scrub } from '../../secrets.js';
import { realpath } from 'node:fs/promises';
import type { Argv, CommandModule } from 'yargs';
import type { DatastoreApi } from '../../api/api.js';
import { isApiError } from '../../api/errors.js';
import { describeConfig } from '../../config/describe.js';
import type { CheckLevel, CheckResult } from '../../check-result.js';
import type { ConfigError } from '../../errors/config.js';
import { formatListenAddress } from '../../config/listen.js';
import type { Config, MappingConfig } from '../../config/types.js';
import { DataSourceMissingError, resolveDataSource } from '../../engine/data-source.js';
import { sharedDataSourceProblems } from '../../engine/installation.js';
import { disposition } from '../../errors/disposition.js';
import { describeMountPlan, parseMountInfo, planMounts, readMountInfo } from '../../local/watch/mounts.js';
import type { DaemonStatus } from '../../daemon/status/schema.js';
import { configFromArgs, createCliApi, type ClosableApi } from '../context.js';
import { describeFailure, ExitCode } from '../exit.js';
import { identityChecks } from './identity.js';
import { initCommand } from './config-init.js';
import { commandGroup, type GlobalArgs } from '../options.js';
import { formatJson, formatSummary } from '../output.js';
import { probeDaemon, type DaemonProbe } from './status.js';
import { configMismatch, daemonTarget, readDaemonToken, type DaemonTarget } from '../daemon-link.js';
import { formatWatchLines } from '../watch-report.js';


const SYMBOL: Record<CheckLevel, string> = { ok: '✓', warn: '!', fail: '✗' };

/** A check makes few requests: it should report, not wait out a long retry schedule. */
const CHECK_MAX_ATTEMPTS = 3;

const checkCommand: CommandModule<GlobalArgs, GlobalArgs> = {
  command: 'check',
  describe: 'Validate the config and what it depends on (folders, credentials, data sources, App, inotify, state file)',
  builder: (y) =>
    y
      .example('$0 config check --config /etc/dssync/config.json', 'one line per check; exit 0 when none failed')
      .example('$0 config check --config config.json --json', 'the checks as JSON') as unknown as Argv<GlobalArgs>,
  handler: async (args) => {
    process.exitCode = await runConfigCheck(args);
  },
};

export const configCommand = commandGroup('config', 'Write the configuration (init) or check it (check)', (y) =>
  y
    .command(initCommand)
    .command(checkCommand)
    .demandCommand(1, 'Name a config subcommand: init or check.')
    .example('$0 config init --config /etc/dssync/config.json', 'asks each setting, checking it against the service')
    .example('$0 config check --config /etc/dssync/config.json', 'validate, resolve, report'),
);

export interface ConfigCheckDeps {
  env?: NodeJS.ProcessEnv | undefined;
  out?: ((text: string) => void) | undefined;
  /** Builds the client (default: createClientFromConfig). */
  createApi?: ((config: Config) => DatastoreApi & { close?: () => Promise<void> }) | undefined;
  /** Reads /proc files (tests pass other limits). */
  readProc?: ((path: string) => Promise<string>) | undefined;
  /** Asks the running daemon for its status (default: GET /status on status.listen). */
  probe?: ((target: DaemonTarget) => Promise<DaemonProbe>) | undefined;
}

/** The status of the daemon running this config, when one answers (its measured watch figures). */
async function runningDaemon(config: Config, probe: ConfigCheckDeps['probe']): Promise<DaemonStatus | undefined> {
  if (config.status.listen === false) return undefined;
  // The daemon answers /status to its token only (issue 24.1); as another user it is not asked.
  const p = await (probe ?? probeDaemon)(daemonTarget(config, config.status.listen, readDaemonToken(config).token));
  return p.kind === 'answered' && configMismatch(config, p.status) === undefined ? p.status : undefined;
}

export async function runConfigCheck(args: GlobalArgs, deps: ConfigCheckDeps = {}): Promise<number> {
  const env = deps.env ?? process.env;
  const out = deps.out ?? ((t: string) => void process.stdout.write(t));
  const loadWarnings: string[] = [];
  // A token (or password) that cannot be read is marked below, and the checks that do not
  // need it go on (issue 14.9).
  const secretErrors: ConfigError[] = [];
  // Throws ConfigError (exit 2) for an invalid file or a missing setting, as every command does.
  const config = configFromArgs(args, env, (m) => loadWarnings.push(m), (e) => secretErrors.push(e));
  // Each check lives in the layer that owns it; loaded here, so that other commands and
  // --help do not pay for them.
  const [{ checkFolder }, { inotifyCheck, readInotifyLimits }, { loadNativeInotify, nativeWatchCheck }, { checkListen, listenCheck }, { checkStatePath }] = await Promise.all([
    import('../../local/folder-check.js'),
    import('../../local/watch/inotify-budget.js'),
    import('../../local/watch/inotify.js'),
    import('../../daemon/listen-check.js'),
    import('../../state/state-check.js'),
  ]);

  const results: CheckResult[] = [];
  const report = (r: CheckResult): void => {
    results.push(r);
    if (!args.json) out(formatCheck(r));
  };
  if (!args.json) out(`${formatConfigHeader(config)}\n`);

  // 1. The config loads (it did, or we would not be here).
  const n = config.mappings.length;
  report({
    check: 'config',
    level: n === 0 ? 'warn' : 'ok',
    message:
      `${config.file ?? '(no config file: environment only)'} is valid` +
      (n === 0 ? ': no mappings, so "sync" and "run" have nothing to mirror' : ` (${n} mapping${n === 1 ? '' : 's'})`) +
      `; token from ${config.connection.tokenSource}; organization sent in the ${config.connection.organizationHeader} header`,
  });
  // The status address is check 7's subject; the other load warnings belong here.
  for (const w of loadWarnings.filter((m) => !m.startsWith('status.listen'))) report({ check: 'config', level: 'warn', message: w });
  // Mappings sharing a data source take each other's documents for another owner's (engine/installation.ts).
  const shared = sharedDataSourceProblems(config.mappings);
  for (const message of shared) report({ check: 'config', level: 'fail', message });
  for (const e of secretErrors) report({ check: 'token', level: 'fail', message: e.message });

  // 2. Each mapped folder.
  let folders = 0;
  let uncounted = 0;
  const filesOf = new Map<string, readonly string[]>();
  for (const m of config.mappings) {
    const r = await checkFolder(m);
    report(r.result);
    if (r.files) filesOf.set(m.id, r.files);
    // watch.mode "poll" takes no inotify watch.
    if (m.watch.mode === 'poll') continue;
    if (r.folders === undefined) uncounted++;
    else folders += r.folders;
  }

  // 3-5. The service: not without a token.
  let authRefused = false;
  if (secretErrors.length) {
    report({ check: 'service', level: 'fail', message: 'service, data source and App checks skipped: no token to present (see above)' });
  } else {
    const side = await checkServiceSide(config, deps, report);
    authRefused = side.authRefused;
    // Mappings that name one data source two ways (by name and by id) share it as well.
    for (const message of side.shared.filter((m) => !shared.includes(m))) {
      shared.push(message);
      report({ check: 'config', level: 'fail', message });
    }
  }

  // 6-8. This machine.
  report(inotifyCheck(folders, uncounted, await readInotifyLimits(deps.readProc)));
  if (config.mappings.some((m) => m.watch.mode !== 'poll')) report(nativeWatchCheck(folders, loadNativeInotify(env)));
  // How each folder is watched: events, or polling on network/FUSE mounts (issue 12), and
  // what the running daemon for this config measures (interval achieved, last cycle).
  const mountText = await readMountInfo();
  const running = await runningDaemon(config, deps.probe);
  for (const m of config.mappings) {
    const root = await realpath(m.path).catch(() => m.path);
    const lines = describeMountPlan(planMounts(parseMountInfo(mountText), root, m.watch.mode), root, m.watch, filesOf.get(m.id));
    report({ check: 'watch', level: 'ok', mapping: m.id, message: lines.join('\n') });
    const live = running?.mappings.find((s) => s.id === m.id)?.watch;
    if (live) {
      report({
        check: 'watch',
        level: live.problems.length > 0 ? 'warn' : 'ok',
        mapping: m.id,
        message: ['the running daemon:', ...formatWatchLines(live, m.path).map((l) => `  ${l}`), ...live.problems.map((p) => `  ${p}`)].join('\n'),
      });
    }
  }
  // The port is taken by the daemon running this very config: that is no conflict.
  if (running !== undefined && config.status.listen !== false) {
    const token = listenCheck(config.status.listen, config.status);
    report(token.level === 'ok' ? { check: 'status-listen', level: 'ok', message: `status endpoint ${formatListenAddress(config.status.listen)}: the daemon running this config (pid ${running.pid}) answers there` } : token);
  } else {
    report(await checkListen(config.status.listen, config.status));
  }
  for (const r of await checkStatePath(config.statePath)) report(r);
  for (const r of await identityChecks(config, env)) report(r);

  // An unreadable token, or two mappings on one data source, is a configuration error, as
  // for every other command (exit 2).
  const exitCode = authRefused
    ? ExitCode.AUTH
    : secretErrors.length > 0 || shared.length > 0
      ? ExitCode.USAGE
      : results.some((r) => r.level === 'fail')
        ? ExitCode.FAILURE
        : ExitCode.OK;
  if (args.json) out(formatJson({ ok: exitCode === ExitCode.OK, exitCode, config: describeConfig(config), checks: results }));
  else out(formatVerdict(results));
  return exitCode;
}

/**
 * Checks 3-5: the credentials, each data source, the App. Whether the credentials were
 * refused, and the mappings that resolved to one data source (engine/installation.ts).
 */
async function checkServiceSide(config: Config, deps: ConfigCheckDeps, report: (r: CheckResult) => void): Promise<{ authRefused: boolean; shared: string[] }> {
  const api = await (deps.createApi ?? defaultCreateApi)(config);
  let authRefused: boolean;
  let shared: string[] = [];
  try {
    const service = await checkService(api, config);
    authRefused = service.authRefused;
    for (const r of service.results) report(r);
    if (service.reachable) {
      const resolved = new Map<string, string>();
      const created: string[] = [];
      for (const [i, m] of config.mappings.entries()) {
        const r = await checkDataSource(api, m, i);
        if (r.authRefused) authRefused = true;
        if (r.id !== undefined) resolved.set(m.id, r.id);
        if (r.wouldCreate) created.push(m.id);
        report(r.result);
      }
      shared = sharedDataSourceProblems(config.mappings, (m) => resolved.get(m.id));
      if (config.appId !== undefined && !authRefused) {
        for (const r of await checkApp(api, config.appId, config.mappings, resolved, created)) report(r);
      }
    }
  } finally {
    await api.close?.();
  }
  return { authRefused, shared };
}

function defaultCreateApi(config: Config): Promise<ClosableApi> {
  return createCliApi({ ...config, queue: { ...config.queue, maxAttempts: Math.min(CHECK_MAX_ATTEMPTS, config.queue.maxAttempts) } });
}

// ---- output (pure) --------------------------------------------------------------------

export function formatCheck(r: CheckResult): string {
  const where = r.mapping ? `mapping ${r.mapping}: ` : '';
  const fix = r.fix ? `\n${r.fix.split('\n').map((l) => `    ${l}`).join('\n')}` : '';
  return `${SYMBOL[r.level]} ${where}${r.message}${fix}\n`;
}

/** What the config resolves to, safe to show: never the token, only where it comes from. */
export function formatConfigHeader(config: Config): string {
  const d = describeConfig(config);
  return formatSummary([
    ['config file', d.file ?? '-'],
    ['service', d.baseUrl ?? '-'],
    ['organization', d.organizationId ?? '-'],
    ['token', d.tokenSource ? `from ${d.tokenSource}` : '-'],
    ['state file', d.statePath],
    ['status endpoint', d.status.listen === false ? 'off' : d.status.listen],
    ['app', d.appId ?? '-'],
    ['mappings', d.mappings.length ? d.mappings.map((m) => `${m.id}: ${m.path} -> data source ${m.dataSource}`).join('\n') : '-'],
  ]);
}

export function formatVerdict(results: readonly CheckResult[]): string {
  const fails = results.filter((r) => r.level === 'fail').length;
  const warns = results.filter((r) => r.level === 'warn').length;
  const plural = (k: number, word: string): string => `${k} ${word}${k === 1 ? '' : 's'}`;
  if (fails) return `\n${plural(fails, 'check')} failed${warns ? `, ${plural(warns, 'warning')}` : ''}.\n`;
  if (warns) return `\nNo check failed; ${plural(warns, 'warning')}.\n`;
  return '\nAll checks passed.\n';
}

// ---- 3-5. the service -----------------------------------------------------------------

function isAuthError(e: unknown): boolean {
  return isApiError(e) && disposition(e).exitCode === 3;
}

function authResult(e: unknown, config: Config): CheckResult {
  // The token endpoint (or the token command) refused: it, not the service, is named, with
  // what it said and the settings of "auth" to change (issue 25.3).
  if (e instanceof CredentialsRefusedError) {
    return { check: 'service', level: 'fail', message: scrub(e.message), fix: e.advice ?? 'check the credentials of "auth"' };
  }
  const status = isApiError(e) && e.status !== undefined ? `HTTP ${e.status}` : 'refused';
  return {
    check: 'service',
    level: 'fail',
    message: `credentials refused (${status}) by ${config.connection.baseUrl} for organization ${config.connection.organizationId}`,
    fix: `check the token (from ${config.connection.tokenSource}) and the organization id (--org, DSSYNC_ORG, "organizationId")`,
  };
}

async function checkService(api: DatastoreApi, config: Config): Promise<{ results: CheckResult[]; reachable: boolean; authRefused: boolean }> {
  try {
    const all = await api.listDataSources();
    return {
      reachable: true,
      authRefused: false,
      results: [
        {
          check: 'service',
          level: 'ok',
          message: `${config.connection.baseUrl} accepts the credentials (organization ${config.connection.organizationId}, ${all.length} data source${all.length === 1 ? '' : 's'})`,
        },
      ],
    };
  } catch (e) {
    if (isAuthError(e)) {
      const r = authResult(e, config);
      return { reachable: false, authRefused: true, results: [{ ...r, message: `${r.message}; data source checks skipped` }] };
    }
    return {
      reachable: false,
      authRefused: false,
      results: [
        {
          check: 'service',
          level: 'fail',
          // The advice goes to the fix line below, not twice.
          message: `${config.connection.baseUrl} could not be used: ${isApiError(e) && e.advice !== undefined ? scrub(`${e.message} (HTTP ${e.status ?? '?'})`) : describeFailure(e).message}; data source checks skipped`,
          // A wrong address carries its own fix (api/address.ts), a refused header its advice.
          ...(isApiError(e) && e.code === 'E_WRONG_ADDRESS'
            ? {}
            : { fix: isApiError(e) && e.advice !== undefined ? e.advice : 'check baseUrl, the network and (for https) tls.caFile' }),
        },
      ],
    };
  }
}

async function checkDataSource(
  api: DatastoreApi,
  m: MappingConfig,
  index: number,
): Promise<{ result: CheckResult; id?: string | undefined; wouldCreate?: boolean; authRefused?: boolean }> {
  const base = { check: 'data-source', mapping: m.id };
  try {
    const r = await resolveDataSource(api, m, `mappings[${index}]`, { create: false });
    const name = r.record?.name;
    return { id: r.id, result: { ...base, level: 'ok', message: `data source ${r.id}${name ? ` ("${name}")` : ''}` } };
  } catch (e) {
    if (e instanceof DataSourceMissingError) {
      if (e.wouldCreate && m.dataSource) {
        return {
          wouldCreate: true,
          result: {
            ...base,
            level: 'warn',
            message: `no data source is named "${m.dataSource.name}" yet: it will be created on the first sync (connectors ${m.dataSource.llmConnectorIds.join(', ')})`,
          },
        };
      }
      return { result: { ...base, level: 'fail', message: e.message } };
    }
    if (isAuthError(e)) return { authRefused: true, result: { ...base, level: 'fail', message: `the service refused to show its data source: ${describeFailure(e).message}` } };
    return { result: { ...base, level: 'fail', message: `cannot resolve its data source: ${describeFailure(e).message}` } };
  }
}

async function checkApp(
  api: DatastoreApi,
  appId: string,
  mappings: readonly MappingConfig[],
  resolved: ReadonlyMap<string, string>,
  toCreate: readonly string[],
): Promise<CheckResult[]> {
  let enabled: Set<string>;
  try {
    enabled = new Set((await api.listAppDataSources(appId)).map((d) => d.id));
  } catch (e) {
    const notFound = isApiError(e) && e.code === 'E_NOT_FOUND';
    return [
      {
        check: 'app',
        level: 'warn',
        message: notFound ? `App ${appId} (appId) is not known to the service (HTTP 404); check "appId"` : `cannot list the data sources of App ${appId}: ${describeFailure(e).message}`,
      },
    ];
  }
  const results: CheckResult[] = [];
  for (const m of mappings) {
    const id = resolved.get(m.id);
    if (id === undefined) {
      if (toCreate.includes(m.id)) {
        results.push({ check: 'app', mapping: m.id, level: 'warn', message: `once the first sync has created its data source, enable it for App ${appId}` });
      }
      continue;
    }
    if (enabled.has(id)) results.push({ check: 'app', mapping: m.id, level: 'ok', message: `App ${appId} uses data source ${id}` });
    else {
      results.push({
        check: 'app',
        mapping: m.id,
        level: 'warn',
        message: `data source ${id} is not enabled for App ${appId}: the App does not see these documents`,
        fix: `enable data source ${id} for the App in the service (check with: dssync apps data-sources ${appId})`,
      });
    }
  }
  return results;
}


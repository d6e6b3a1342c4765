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
import { constants } from 'node:fs';
import { access, readFile, realpath, stat } from 'node:fs/promises';
import { userInfo } from 'node:os';
import { dirname } from 'node:path';
import type { Argv, CommandModule } from 'yargs';
import type { DatastoreApi } from '../api/api.js';
import { isApiError } from '../api/errors.js';
import { createClientFromConfig } from '../api/from-config.js';
import { describeConfig } from '../config/describe.js';
import { formatListenAddress, isLoopbackHost, type ListenAddress } from '../config/listen.js';
import { readStatusToken } from '../daemon/web/access.js';
import type { Config, MappingConfig } from '../config/types.js';
import { DataSourceMissingError, resolveDataSource } from '../engine/data-source.js';
import { sharedDataSourceProblems } from '../engine/installation.js';
import { disposition } from '../errors.js';
import { loadFilter } from '../local/filters.js';
import { describeMountPlan, parseMountInfo, planMounts, readMountInfo } from '../local/watch/mounts.js';
import { walkTree } from '../local/walk.js';
import { configFromArgs } from './context.js';
import { describeFailure, ExitCode } from './exit.js';
import type { GlobalArgs } from './options.js';
import { formatJson, formatSummary } from './output.js';

export type CheckLevel = 'ok' | 'warn' | 'fail';

export interface CheckResult {
  /** Which check: config, folder, service, data-source, app, inotify, status-listen, state. */
  check: string;
  level: CheckLevel;
  message: string;
  /** What to do about it (commands, file lines), when there is something to do. */
  fix?: string | undefined;
  mapping?: string | undefined;
}

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

export const configCommand: CommandModule<GlobalArgs, GlobalArgs> = {
  command: 'config',
  describe: 'Inspect the configuration: check',
  builder: (y) =>
    y
      .command(checkCommand)
      .demandCommand(1, 'Name a config subcommand: check.')
      .example('$0 config check --config /etc/dssync/config.json', 'validate, resolve, report'),
  // Never reached: demandCommand requires a subcommand.
  handler: () => undefined,
};

export interface ConfigCheckDeps {
  env?: NodeJS.ProcessEnv | undefined;
  out?: ((text: string) => void) | undefined;
  /** Builds the client (default: createClientFromConfig). */
  createApi?: ((config: Config) => DatastoreApi & { close?: () => Promise<void> }) | undefined;
  /** Reads /proc files (tests pass other limits). */
  readProc?: ((path: string) => Promise<string>) | undefined;
}

export async function runConfigCheck(args: GlobalArgs, deps: ConfigCheckDeps = {}): Promise<number> {
  const env = deps.env ?? process.env;
  const out = deps.out ?? ((t: string) => void process.stdout.write(t));
  const loadWarnings: string[] = [];
  // Throws ConfigError (exit 2) for an invalid file or a missing setting, as every command does.
  const config = configFromArgs(args, env, (m) => loadWarnings.push(m));

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
  for (const message of sharedDataSourceProblems(config.mappings)) report({ check: 'config', level: 'fail', message });

  // 2. Each mapped folder.
  let folders = 0;
  let uncounted = 0;
  for (const m of config.mappings) {
    const r = await checkFolder(m);
    report(r.result);
    if (r.folders === undefined) uncounted++;
    else folders += r.folders;
  }

  // 3-5. The service.
  const api = (deps.createApi ?? defaultCreateApi)(config);
  let authRefused: boolean;
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
      if (config.appId !== undefined && !authRefused) {
        for (const r of await checkApp(api, config.appId, config.mappings, resolved, created)) report(r);
      }
    }
  } finally {
    await api.close?.();
  }

  // 6-8. This machine.
  report(inotifyCheck(folders, uncounted, await readInotifyLimits(deps.readProc)));
  // How each folder is watched: events, or polling on network/FUSE mounts (issue 12; hook by watch).
  const mountText = await readMountInfo();
  for (const m of config.mappings) {
    const root = await realpath(m.path).catch(() => m.path);
    const lines = describeMountPlan(planMounts(parseMountInfo(mountText), root, m.watch.mode), root, m.watch);
    report({ check: 'watch', level: 'ok', mapping: m.id, message: lines.join('\n') });
  }
  report(listenCheck(config.status.listen, config.status));
  for (const r of await checkStatePath(config.statePath)) report(r);

  const exitCode = authRefused ? ExitCode.AUTH : results.some((r) => r.level === 'fail') ? ExitCode.FAILURE : ExitCode.OK;
  if (args.json) out(formatJson({ ok: exitCode === ExitCode.OK, exitCode, config: describeConfig(config), checks: results }));
  else out(formatVerdict(results));
  return exitCode;
}

function defaultCreateApi(config: Config): DatastoreApi & { close: () => Promise<void> } {
  return createClientFromConfig({ ...config, queue: { ...config.queue, maxAttempts: Math.min(CHECK_MAX_ATTEMPTS, config.queue.maxAttempts) } });
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

// ---- 2. folders -----------------------------------------------------------------------

async function checkFolder(m: MappingConfig): Promise<{ result: CheckResult; folders?: number | undefined }> {
  const base = { check: 'folder', mapping: m.id };
  let filter;
  try {
    filter = await loadFilter(m);
  } catch (e) {
    return { result: { ...base, level: 'fail', message: e instanceof Error ? e.message : String(e), fix: 'make the ignore file readable by the user dssync runs as' } };
  }
  const walk = await walkTree(m.path, filter, { maxFileBytes: m.maxFileBytes, followSymlinks: m.followSymlinks });
  switch (walk.rootStatus) {
    case 'missing':
      return { result: { ...base, level: 'fail', message: `the folder ${m.path} does not exist (not mounted?); nothing would be mirrored (and nothing deleted)` } };
    case 'not-a-directory':
      return { result: { ...base, level: 'fail', message: `${m.path} is not a folder; "path" must name the folder to mirror` } };
    case 'unreadable':
      return {
        result: {
          ...base,
          level: 'fail',
          message: `the folder ${m.path} cannot be read by this user (${walk.rootError?.code ?? 'error'})`,
          fix: 'give the user dssync runs as read access to it (systemd: ReadOnlyPaths= and the folder permissions)',
        },
      };
    case 'ok':
      break;
  }
  const files = walk.files.size;
  const tooLarge = walk.skipped.filter((s) => s.reason === 'too-large').length;
  const otherSkipped = walk.skipped.length - tooLarge;
  const notes = [
    tooLarge ? `${tooLarge} larger than maxFileBytes (${m.maxFileBytes} bytes) skipped` : '',
    otherSkipped ? `${otherSkipped} other entr${otherSkipped === 1 ? 'y' : 'ies'} skipped (links, special files, name collisions)` : '',
  ].filter(Boolean);
  // The mapped folder itself counts: it is watched like the ones below it.
  const dirs = walk.dirCount + 1;
  const counts = `${m.path}: ${dirs} folder${dirs === 1 ? '' : 's'}, ${files} file${files === 1 ? '' : 's'} included${notes.length ? `; ${notes.join('; ')}` : ''}`;
  if (walk.errors.length) {
    const first = walk.errors[0];
    return {
      folders: dirs,
      result: {
        ...base,
        level: 'warn',
        message: `${counts}; ${walk.errors.length} unreadable entr${walk.errors.length === 1 ? 'y' : 'ies'}, e.g. ${first?.path ?? ''} (${first?.code ?? ''})`,
        fix: 'dssync leaves what it cannot read alone; give the user dssync runs as read access to mirror it',
      },
    };
  }
  if (files === 0) {
    return { folders: dirs, result: { ...base, level: 'warn', message: `${counts}: no file would be mirrored; check "include", "exclude" and the ignore file` } };
  }
  return { folders: dirs, result: { ...base, level: 'ok', message: counts } };
}

// ---- 3-5. the service -----------------------------------------------------------------

function isAuthError(e: unknown): boolean {
  return isApiError(e) && disposition(e).exitCode === 3;
}

function authResult(e: unknown, config: Config): CheckResult {
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
          message: `${config.connection.baseUrl} could not be used: ${describeFailure(e).message}; data source checks skipped`,
          fix: 'check baseUrl, the network and (for https) tls.caFile',
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

// ---- 6. inotify -----------------------------------------------------------------------

export interface InotifyLimits {
  maxUserWatches?: number | undefined;
  maxUserInstances?: number | undefined;
  /** Why the limits could not be read. */
  error?: string | undefined;
}

export const INOTIFY_DIR = '/proc/sys/fs/inotify';
/** Share of max_user_watches above which the budget is tight (other programs watch too). */
export const INOTIFY_WARN_SHARE = 0.8;

export async function readInotifyLimits(read: (path: string) => Promise<string> = (p) => readFile(p, 'utf8')): Promise<InotifyLimits> {
  const one = async (name: string): Promise<number> => {
    const n = Number((await read(`${INOTIFY_DIR}/${name}`)).trim());
    if (!Number.isSafeInteger(n)) throw new Error(`${INOTIFY_DIR}/${name} does not hold a number`);
    return n;
  };
  try {
    return { maxUserWatches: await one('max_user_watches'), maxUserInstances: await one('max_user_instances') };
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    const platform = process.platform === 'linux' ? '' : ` (this is ${process.platform}, not Linux)`;
    return { error: `cannot read ${INOTIFY_DIR}${platform}: ${code ?? (e instanceof Error ? e.message : String(e))}` };
  }
}

/** Watches to plan for: the folders, plus room for growth and for the other mapped trees. */
export function watchesNeeded(folders: number): number {
  return Math.ceil(folders * 1.1) + 100;
}

/** A limit with room to grow: twice what is needed, rounded up, never below the usual 524288. */
export function suggestedWatchLimit(folders: number): number {
  const step = 65_536;
  return Math.max(524_288, Math.ceil((watchesNeeded(folders) * 2) / step) * step);
}

/**
 * dssync watches folders only (one inotify watch per folder: files are reported by their
 * folder's events), so the budget is the folder count of every mapping. Pure.
 */
export function inotifyCheck(folders: number, uncounted: number, limits: InotifyLimits): CheckResult {
  const base = { check: 'inotify' };
  const partial = uncounted ? ` (${uncounted} mapping${uncounted === 1 ? '' : 's'} not counted: folder unavailable)` : '';
  if (limits.error !== undefined || limits.maxUserWatches === undefined) {
    return { ...base, level: 'warn', message: `${limits.error ?? 'inotify limits unknown'}: cannot check the watch budget for ${folders} folders${partial}` };
  }
  const limit = limits.maxUserWatches;
  const needed = watchesNeeded(folders);
  const share = limit > 0 ? Math.round((needed / limit) * 100) : Infinity;
  const instances = limits.maxUserInstances === undefined ? '' : `, max_user_instances ${limits.maxUserInstances}`;
  const summary = `${folders} folder${folders === 1 ? '' : 's'} to watch${partial}, ${needed} with a margin: ${share}% of max_user_watches ${limit}${instances}`;
  if (needed > limit * INOTIFY_WARN_SHARE) {
    const n = suggestedWatchLimit(folders);
    return {
      ...base,
      level: 'warn',
      message: `${summary}: too tight, changes in unwatched folders would be seen only at the periodic rescan`,
      fix: `raise it now: sudo sysctl -w fs.inotify.max_user_watches=${n}\nand at boot: echo 'fs.inotify.max_user_watches=${n}' | sudo tee /etc/sysctl.d/90-dssync.conf`,
    };
  }
  if (limits.maxUserInstances !== undefined && limits.maxUserInstances < 1) {
    return { ...base, level: 'warn', message: `${summary}: max_user_instances is 0, so no folder can be watched`, fix: 'sudo sysctl -w fs.inotify.max_user_instances=128' };
  }
  return { ...base, level: 'ok', message: summary };
}

// ---- 7. status endpoint ---------------------------------------------------------------

export function listenCheck(listen: ListenAddress | false, status: { tokenFile?: string | undefined } = {}): CheckResult {
  const base = { check: 'status-listen' };
  if (listen === false) return { ...base, level: 'ok', message: 'status endpoint off (status.listen is false); "dssync status" reads the state file' };
  const addr = formatListenAddress(listen);
  if (isLoopbackHost(listen.host)) return { ...base, level: 'ok', message: `status endpoint ${addr} (this machine only)` };
  if (status.tokenFile !== undefined) {
    // The daemon reads it at start and refuses to start without it: say so now.
    try {
      readStatusToken(status.tokenFile);
    } catch (e) {
      return { ...base, level: 'fail', message: e instanceof Error ? e.message : String(e), fix: 'the daemon needs this file to start with a status address other machines can reach' };
    }
    return { ...base, level: 'ok', message: `status endpoint ${addr} is reachable from other machines; the page and /status need the token of status.tokenFile` };
  }
  return {
    ...base,
    level: 'warn',
    message: `status endpoint ${addr} is reachable from other machines and no status.tokenFile is set: other machines get /healthz and /metrics only (the page and /status answer 403)`,
    fix: `set "status": { "listen": "127.0.0.1:${listen.port}" }, or add "tokenFile" to "status" to read the page from other machines`,
  };
}

// ---- 8. state file --------------------------------------------------------------------

function currentUser(): string {
  try {
    const u = userInfo();
    return `${u.username} (uid ${u.uid})`;
  } catch {
    return typeof process.getuid === 'function' ? `uid ${process.getuid()}` : 'this user';
  }
}

async function isWritableDir(path: string): Promise<boolean> {
  try {
    await access(path, constants.W_OK | constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The nearest folder at or above `path` that exists. */
async function nearestExisting(path: string): Promise<{ path: string; isDir: boolean }> {
  let p = path;
  for (;;) {
    try {
      const s = await stat(p);
      return { path: p, isDir: s.isDirectory() };
    } catch {
      const up = dirname(p);
      if (up === p) return { path: p, isDir: false };
      p = up;
    }
  }
}

export async function checkStatePath(statePath: string): Promise<CheckResult[]> {
  const base = { check: 'state' };
  const dir = dirname(statePath);
  const results: CheckResult[] = [];
  const existing = await nearestExisting(dir);
  if (existing.path === dir) {
    if (!existing.isDir) results.push({ ...base, level: 'fail', message: `${dir} (the state file's folder) is not a folder` });
    else if (await isWritableDir(dir)) results.push({ ...base, level: 'ok', message: `state file ${statePath}: its folder is writable` });
    else {
      results.push({
        ...base,
        level: 'fail',
        message: `state file ${statePath}: its folder ${dir} is not writable by ${currentUser()}`,
        fix: 'run dssync as a user that can write it (systemd: StateDirectory=dssync), or set "statePath"',
      });
    }
  } else if (existing.isDir && (await isWritableDir(existing.path))) {
    results.push({ ...base, level: 'ok', message: `state file ${statePath}: its folder ${dir} will be created (under ${existing.path}, writable)` });
  } else {
    results.push({
      ...base,
      level: 'fail',
      message: `state file ${statePath}: its folder ${dir} does not exist and ${existing.path} is not writable by ${currentUser()}`,
      fix: `create it for the user dssync runs as (systemd: StateDirectory=dssync), or set "statePath"`,
    });
  }

  let st;
  try {
    st = await stat(statePath);
  } catch {
    return results; // No state file yet: the first sync writes it.
  }
  if (!st.isFile()) {
    results.push({ ...base, level: 'fail', message: `${statePath} exists and is not a file` });
    return results;
  }
  if ((st.mode & 0o004) !== 0) {
    results.push({
      ...base,
      level: 'warn',
      message: `the state file ${statePath} is readable by every user (it lists file names and document ids)`,
      fix: `chmod 600 ${statePath}`,
    });
  }
  try {
    const { readStateFile } = await import('../state/store.js');
    await readStateFile(statePath);
  } catch (e) {
    const { StateCorruptError } = await import('../state/errors.js');
    if (e instanceof StateCorruptError) {
      results.push({ ...base, level: 'warn', message: `the state file ${statePath} is corrupt (${e.detail}): the next sync moves it aside and rebuilds the state from the service` });
    } else {
      results.push({ ...base, level: 'warn', message: `cannot read the state file: ${e instanceof Error ? e.message : String(e)}` });
    }
  }
  return results;
}


/**
 * Loads the configuration: reads and validates the JSON file, applies environment
 * variables and flags (flag > environment > file > default), resolves relative paths and
 * fills in defaults. Every problem is a ConfigError naming the field, the file and the fix.
 */
import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, isAbsolute, join, resolve, sep } from 'node:path';
import type { z } from 'zod';
import type { AuthFileSettings } from '../auth/settings.js';
import { ConfigError, maskCredentials, resolveConnection, resolveOrganizationHeader, type ConnectionFlags } from './connection.js';
import { formatFieldPath, parseJsonText, type TextPosition } from './json-text.js';
import { formatListenAddress, isLoopbackHost, parseListenAddress, type ListenAddress } from './listen.js';
import { ConfigFileSchema, DEFAULTS, KNOWN_KEYS, LOG_LEVELS, type ConfigFile, type MappingFile } from './schema.js';
import type { Config, DataSourceSpec, LogLevel, MappingConfig, Settings } from './types.js';
import { errnoOf } from '../errors/errno.js';

/** One problem of a config file. */
export interface ConfigIssue {
  /** e.g. `mappings[1].path`; `""` for the file as a whole. */
  field: string;
  message: string;
  line?: number;
  column?: number;
}

/** A config file that cannot be used; `issues` lists every problem found. */
export class ConfigFileError extends ConfigError {
  override readonly name = 'ConfigFileError';
  override readonly code = 'E_CONFIG_FILE';
  constructor(
    readonly file: string,
    readonly issues: ConfigIssue[],
  ) {
    super(formatIssues(file, issues), issues[0]?.field || undefined);
  }
}

export interface ConfigFlags extends ConnectionFlags {
  statePath?: string | undefined;
  logLevel?: string | undefined;
}

export interface LoadConfigOptions {
  /** The config file from --config; DSSYNC_CONFIG is used when absent. */
  file?: string | undefined;
  env: NodeJS.ProcessEnv;
  flags?: ConfigFlags | undefined;
  /** Receives warnings (non-loopback status address, world-readable token file...). */
  warn?: ((message: string) => void) | undefined;
  /** Base for relative paths given by flags or the environment. Default: process.cwd(). */
  cwd?: string | undefined;
  /** Reads the config file; tests inject failures a root user cannot provoke. */
  readFile?: ((path: string) => string) | undefined;
  /** Receives an unreadable secret instead of the throw (`config check` goes on with the other checks). */
  onSecretError?: ((e: ConfigError) => void) | undefined;
}

/** Loads everything except the token: for commands that do not talk to the service. */
export function loadSettings(opts: LoadConfigOptions): Settings {
  const env = opts.env;
  const flags = opts.flags ?? {};
  const cwd = opts.cwd ?? process.cwd();
  const warn = opts.warn ?? (() => undefined);

  const fileArg = opts.file?.trim() ? { path: opts.file, from: '--config' } : undefined;
  const envArg = env.DSSYNC_CONFIG?.trim() ? { path: env.DSSYNC_CONFIG, from: 'DSSYNC_CONFIG' } : undefined;
  const source = fileArg ?? envArg;
  const file = source ? resolve(cwd, source.path) : undefined;
  const parsed: ConfigFile = file && source ? readConfigFile(file, source.from, opts.readFile) : {};
  const fileDir = file ? dirname(file) : cwd;
  const fromFile = (p: string | undefined): string | undefined => (p === undefined ? undefined : resolve(fileDir, p));
  const fromCwd = (p: string | undefined): string | undefined => (p?.trim() ? resolve(cwd, p.trim()) : undefined);

  const logLevel = pickLogLevel(flags.logLevel, env.DSSYNC_LOG_LEVEL, parsed.logLevel);
  const statePath =
    fromCwd(flags.statePath) ?? fromCwd(env.DSSYNC_STATE_PATH) ?? fromFile(parsed.statePath) ?? defaultStatePath(env);

  const listen = resolveListen(parsed.status?.listen, parsed.status?.tokenFile !== undefined, warn);
  const mappings = resolveMappings(parsed.mappings ?? [], file, warn, parsed.watch);
  const q = parsed.queue ?? {};
  const t = q.timeouts ?? {};

  const settings: Settings = {
    file,
    fileConnection: {
      baseUrl: parsed.baseUrl,
      allowInsecureHttp: parsed.allowInsecureHttp,
      organizationId: parsed.organizationId,
      organizationHeader: parsed.organizationHeader,
      tokenFile: fromFile(parsed.tokenFile),
      auth: resolveAuthPaths(parsed.auth, fromFile),
    },
    baseUrl: firstSet(flags.baseUrl, env.DSSYNC_BASE_URL, parsed.baseUrl),
    organizationId: firstSet(flags.org, env.DSSYNC_ORG, parsed.organizationId),
    organizationHeader: resolveOrganizationHeader(env.DSSYNC_ORG_HEADER, parsed.organizationHeader),
    statePath,
    installationId: pickInstallationId(env.DSSYNC_INSTALLATION_ID, parsed.installationId),
    appId: parsed.appId,
    logLevel,
    queue: {
      concurrency: q.concurrency ?? DEFAULTS.queue.concurrency,
      requestsPerSecond: q.requestsPerSecond ?? DEFAULTS.queue.requestsPerSecond,
      maxAttempts: q.maxAttempts ?? DEFAULTS.queue.maxAttempts,
      uploadBatchFiles: q.uploadBatchFiles ?? DEFAULTS.queue.uploadBatchFiles,
      uploadBatchBytes: q.uploadBatchBytes ?? DEFAULTS.queue.uploadBatchBytes,
      timeouts: {
        connectMs: t.connectMs ?? DEFAULTS.queue.timeouts.connectMs,
        headersMs: t.headersMs ?? DEFAULTS.queue.timeouts.headersMs,
        bodyMs: t.bodyMs ?? DEFAULTS.queue.timeouts.bodyMs,
      },
    },
    status: {
      listen,
      actions: parsed.status?.actions ?? (listen !== false && isLoopbackHost(listen.host)),
      tokenFile: fromFile(parsed.status?.tokenFile),
      allowedHosts: parsed.status?.allowedHosts ?? [...DEFAULTS.status.allowedHosts],
    },
    tls: { caFile: fromFile(parsed.tls?.caFile) },
    rescanIntervalSeconds: parsed.rescanIntervalSeconds ?? DEFAULTS.rescanIntervalSeconds,
    debounceMs: parsed.debounceMs ?? DEFAULTS.debounceMs,
    ingestionCheck: {
      enabled: parsed.ingestionCheck?.enabled ?? DEFAULTS.ingestionCheck.enabled,
      delaySeconds: parsed.ingestionCheck?.delaySeconds ?? DEFAULTS.ingestionCheck.delaySeconds,
    },
    mappings,
  };
  return deepFreeze(settings);
}

/**
 * Loads the configuration and resolves the connection (service address, organization,
 * token). The token is read now, so a missing or empty token is reported at start.
 */
export function loadConfig(opts: LoadConfigOptions): Config {
  const settings = loadSettings(opts);
  const connection = resolveConnection({
    flags: opts.flags ?? {},
    env: opts.env,
    file: settings.fileConnection,
    statePath: settings.statePath,
    warn: opts.warn,
    onSecretError: opts.onSecretError,
  });
  return deepFreeze({ ...settings, connection });
}

/** For sync/run: the configuration must name at least one mapping. */
export function requireMappings<T extends Settings>(config: T): T {
  if (config.mappings.length === 0) {
    const where = config.file ? `the config file ${config.file}` : 'a config file (--config or DSSYNC_CONFIG)';
    throw new ConfigError(
      `no folder to mirror: add at least one entry to "mappings" in ${where}, e.g. { "path": "/srv/share/handbook", "dataSourceId": "ds-123" }`,
      'mappings',
    );
  }
  return config;
}

/**
 * Where the state lives by default: under systemd's StateDirectory= when set, else the
 * XDG state folder of the user (~/.local/state/dssync/state.json).
 */
export function defaultStatePath(env: NodeJS.ProcessEnv): string {
  // systemd separates several StateDirectory= entries with ':'; the first is ours.
  const stateDir = env.STATE_DIRECTORY?.split(':')[0]?.trim();
  if (stateDir) return join(stateDir, 'state.json');
  const xdg = env.XDG_STATE_HOME?.trim();
  if (xdg && isAbsolute(xdg)) return join(xdg, 'dssync', 'state.json');
  const home = env.HOME?.trim() || homedir();
  return join(home, '.local', 'state', 'dssync', 'state.json');
}

// --- reading and validating the file ---------------------------------------------------

function readConfigFile(file: string, from: string, read?: (path: string) => string): ConfigFile {
  let text: string;
  try {
    text = read ? read(file) : readFileSync(file, 'utf8');
  } catch (e) {
    const code = errnoOf(e) ?? 'error';
    const why =
      code === 'ENOENT'
        ? 'does not exist; check the path'
        : code === 'EACCES' || code === 'EPERM'
          ? `cannot be read (permission denied, ${code}); make it readable by the user dssync runs as`
          : code === 'EISDIR'
            ? 'is a folder; name the JSON config file'
            : `cannot be read (${code})`;
    throw new ConfigError(`the config file ${file} (from ${from}) ${why}`, 'config');
  }
  const result = parseJsonText(text);
  if (!result.ok) {
    const { line, column, message } = result.problem;
    throw new ConfigFileError(file, [{ field: '', message: `not valid JSON: ${message}`, line, column }]);
  }
  const { value, positions, keyPositions } = result.json;
  const checked = ConfigFileSchema.safeParse(value, { reportInput: true });
  // Cross-field rules run on the raw value too, so one round of fixes clears every problem.
  const issues = semanticIssues(value, positions);
  if (!checked.success) issues.push(...zodIssues(checked.error.issues, positions, keyPositions));
  if (issues.length > 0 || !checked.success) throw new ConfigFileError(file, sortIssues(issues));
  return checked.data;
}

/**
 * Rules zod cannot see one field at a time: exactly one data source, unique ids. Runs on
 * the raw parsed JSON (possibly invalid elsewhere), so it only trusts what it checks.
 */
function semanticIssues(raw: unknown, positions: Map<string, TextPosition>): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  const add = (field: string, message: string): void => {
    issues.push({ field, message, ...positions.get(field) });
  };
  if (isRecord(raw) && isRecord(raw.auth)) {
    for (const key of ['password', 'clientSecret', 'client_secret', 'token', 'accessToken', 'refreshToken']) {
      if (raw.auth[key] !== undefined) {
        add(
          `auth.${key}`,
          'a secret is never written in the config file: use "passwordFile" / "clientSecretFile", the DSSYNC_PASSWORD / DSSYNC_CLIENT_SECRET environment variables, or a systemd credential (docs/auth.md)',
        );
      }
    }
  }
  const mappings = isRecord(raw) && Array.isArray(raw.mappings) ? (raw.mappings as unknown[]) : [];
  const idOwner = new Map<string, number>();
  mappings.forEach((m, i) => {
    if (!isRecord(m)) return;
    const at = `mappings[${i}]`;
    if (m.dataSourceId !== undefined && m.dataSource !== undefined) {
      add(at, 'set either "dataSourceId" (an existing data source) or "dataSource" (found by name or created), not both');
    } else if (m.dataSourceId === undefined && m.dataSource === undefined) {
      add(
        at,
        'name its data source: "dataSourceId": "ds-123", or "dataSource": { "name": "Handbook", "llmConnectorIds": ["conn-1"] }',
      );
    }
    if (typeof m.ignoreFile === 'string' && (isAbsolute(m.ignoreFile) || m.ignoreFile.split(/[\\/]/).includes('..'))) {
      add(`${at}.ignoreFile`, `must be a file name inside the mapped folder (e.g. ".dssyncignore"), got "${m.ignoreFile}"`);
    }
    const id = mappingId(m);
    if (id === undefined) return;
    const other = idOwner.get(id);
    if (other === undefined) {
      idOwner.set(id, i);
      return;
    }
    const otherPath = (mappings[other] as Record<string, unknown>).path;
    const derived = m.id === undefined ? ' (derived from its data source)' : '';
    add(
      m.id === undefined ? at : `${at}.id`,
      `mapping id "${id}"${derived} is also the id of mappings[${other}] (${String(otherPath)}); give each mapping a distinct "id"`,
    );
  });
  return issues;
}

/** Where a field is, or else where its closest present parent is (a missing key has no place). */
function nearestPosition(positions: Map<string, TextPosition>, path: readonly PropertyKey[]): TextPosition | undefined {
  for (let n = path.length; n >= 0; n--) {
    const p = positions.get(formatFieldPath(path.slice(0, n)));
    if (p) return p;
  }
  return undefined;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The mapping's id as given, or derived from its data source; undefined when unknowable. */
function mappingId(m: Record<string, unknown> | MappingFile): string | undefined {
  if (typeof m.id === 'string') return m.id.trim();
  if (m.id !== undefined) return undefined;
  if (typeof m.dataSourceId === 'string') return `ds:${m.dataSourceId.trim()}`;
  if (isRecord(m.dataSource) && typeof m.dataSource.name === 'string') return `name:${m.dataSource.name.trim()}`;
  return undefined;
}

function zodIssues(
  raw: z.core.$ZodIssue[],
  positions: Map<string, TextPosition>,
  keyPositions: Map<string, TextPosition>,
): ConfigIssue[] {
  const out: ConfigIssue[] = [];
  for (const issue of raw) {
    const field = formatFieldPath(issue.path);
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) {
        const keyField = formatFieldPath([...issue.path, key]);
        // A likely typo: within a third of the key's length (at least 2 edits).
        const known = (KNOWN_KEYS[field.replace(/\[\d+\]/g, '[]')] ?? []).filter((k) => !k.startsWith('$'));
        const suggestion = closest(key, known, Math.max(2, Math.floor(key.length / 3)));
        const hint = suggestion ? `; did you mean "${suggestion}"?` : '';
        out.push({ field: keyField, message: `unknown key${hint} (remove it or fix its spelling)`, ...keyPositions.get(keyField) });
      }
      continue;
    }
    let message = issue.message;
    const hasInput = 'input' in issue && issue.input !== undefined;
    if (issue.code === 'invalid_type' && !hasInput) message = `is required: ${message}`;
    else if (hasInput && !/\bgot\b/.test(message)) {
      const shown = describeInput(issue.input);
      if (shown && !(shown.startsWith('"') && message.includes(shown))) message = `${message}, got ${shown}`;
    }
    out.push({ field, message, ...nearestPosition(positions, issue.path) });
  }
  return out;
}

/** File order, so the operator can fix them top to bottom. */
function sortIssues(issues: ConfigIssue[]): ConfigIssue[] {
  return issues.sort((a, b) => (a.line ?? 0) - (b.line ?? 0) || (a.column ?? 0) - (b.column ?? 0));
}

function describeInput(input: unknown): string | undefined {
  if (input === null) return 'null';
  if (typeof input === 'string') {
    const shown = maskCredentials(input);
    return shown.length <= 60 ? JSON.stringify(shown) : 'a long string';
  }
  if (typeof input === 'number' || typeof input === 'boolean') return String(input);
  if (Array.isArray(input)) return 'a list';
  if (typeof input === 'object') return 'an object';
  return undefined;
}

/** The candidate nearest to `word` (case-insensitive edits) within `maxDistance`; the first of equals. */
export function closest(word: string, candidates: readonly string[], maxDistance: number): string | undefined {
  let best: string | undefined;
  let bestDistance = maxDistance + 1;
  for (const c of candidates) {
    const d = editDistance(word.toLowerCase(), c.toLowerCase());
    if (d < bestDistance) [best, bestDistance] = [c, d];
  }
  return best;
}

/** Levenshtein distance: the fewest single-letter edits that turn `a` into `b`. */
function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      cur.push(Math.min((prev[j] ?? 0) + 1, (cur[j - 1] ?? 0) + 1, (prev[j - 1] ?? 0) + cost));
    }
    prev = cur;
  }
  return prev[b.length] ?? 0;
}

function formatIssues(file: string, issues: ConfigIssue[]): string {
  const shown = issues.slice(0, 20).map((i) => {
    const where = i.line !== undefined ? ` (line ${i.line}, column ${i.column ?? 1})` : '';
    const name = i.field === '' ? 'file' : i.field;
    return `  ${name}${where}: ${i.message}`;
  });
  if (issues.length > 20) shown.push(`  ... and ${issues.length - 20} more`);
  return `invalid config file ${file}:\n${shown.join('\n')}`;
}

// --- resolving parts -------------------------------------------------------------------

function resolveMappings(
  raw: readonly MappingFile[],
  file: string | undefined,
  warn: (m: string) => void,
  watchTop?: ConfigFile['watch'],
): MappingConfig[] {
  const mappings = raw.map((m): MappingConfig => {
    const common = {
      id: mappingId(m) ?? '',
      path: resolve(m.path),
      include: m.include ?? [...DEFAULTS.mapping.include],
      // A format set to "skip" is excluded like any other file the mapping leaves out.
      exclude: [...(m.exclude ?? DEFAULTS.mapping.exclude), ...Object.entries(m.formats ?? {}).flatMap(([ext, p]) => (p === 'skip' ? [`**/*${ext}`] : []))],
      formats: { ...(m.formats ?? {}) },
      ignoreFile: m.ignoreFile ?? DEFAULTS.mapping.ignoreFile,
      maxFileBytes: m.maxFileBytes ?? DEFAULTS.mapping.maxFileBytes,
      urlTemplate: m.urlTemplate ?? DEFAULTS.mapping.urlTemplate,
      metadata: { ...(m.metadata ?? {}) },
      prune: m.prune ?? DEFAULTS.mapping.prune,
      maxDeletePercent: m.maxDeletePercent ?? DEFAULTS.mapping.maxDeletePercent,
      followSymlinks: m.followSymlinks ?? DEFAULTS.mapping.followSymlinks,
      watch: {
        mode: m.watch?.mode ?? watchTop?.mode ?? DEFAULTS.watch.mode,
        pollIntervalSeconds: m.watch?.pollIntervalSeconds ?? watchTop?.pollIntervalSeconds ?? DEFAULTS.watch.pollIntervalSeconds,
        pollBudgetPercent: m.watch?.pollBudgetPercent ?? watchTop?.pollBudgetPercent ?? DEFAULTS.watch.pollBudgetPercent,
      },
    };
    if (m.dataSourceId !== undefined) return { ...common, dataSourceId: m.dataSourceId.trim() };
    const ds = m.dataSource as DataSourceSpec; // semanticIssues guarantees exactly one is set
    return { ...common, dataSource: { name: ds.name.trim(), llmConnectorIds: ds.llmConnectorIds.map((c) => c.trim()) } };
  });
  // A folder inside another mapped folder is legal (a subset into its own data source) but
  // usually a mistake: its files would be mirrored twice.
  mappings.forEach((inner, i) => {
    mappings.forEach((outer, j) => {
      if (i !== j && (inner.path === outer.path || inner.path.startsWith(outer.path + sep))) {
        if (inner.path === outer.path && i < j) return; // report an identical pair once
        const rel = inner.path === outer.path ? 'is the same folder as' : 'is inside';
        warn(
          `mappings[${i}].path ${inner.path} ${rel} mappings[${j}].path ${outer.path}${file ? ` (${file})` : ''}: its files are mirrored by both mappings`,
        );
      }
    });
  });
  return mappings;
}

/** The auth object with its file paths resolved against the config file's folder. */
function resolveAuthPaths(auth: ConfigFile['auth'], fromFile: (p: string | undefined) => string | undefined): AuthFileSettings | undefined {
  if (auth === undefined || auth.type === 'static') return auth;
  if (auth.type === 'command') return { ...auth, timeoutSeconds: auth.timeoutSeconds ?? DEFAULTS.auth.timeoutSeconds };
  return { ...auth, passwordFile: fromFile(auth.passwordFile), clientSecretFile: fromFile(auth.clientSecretFile) };
}

function resolveListen(value: string | false | undefined, hasToken: boolean, warn: (m: string) => void): ListenAddress | false {
  if (value === false) return false;
  const parsed = parseListenAddress(value ?? DEFAULTS.statusListen);
  if ('error' in parsed) throw new ConfigError(`status.listen: ${parsed.error}`, 'status.listen'); // schema checked it
  if (!isLoopbackHost(parsed.host) && !hasToken) {
    warn(
      `status.listen is ${formatListenAddress(parsed)}: the status endpoint is reachable from other machines and no status.tokenFile is set (they get /healthz and /metrics only); use "127.0.0.1:${parsed.port}" unless that is intended`,
    );
  }
  return parsed;
}

function pickLogLevel(flag: string | undefined, envValue: string | undefined, fileValue: LogLevel | undefined): LogLevel {
  const check = (value: string, from: string): LogLevel => {
    const v = value.trim().toLowerCase();
    if ((LOG_LEVELS as readonly string[]).includes(v)) return v as LogLevel;
    throw new ConfigError(`${from} "${value}" is not a log level; use one of ${LOG_LEVELS.join(', ')}`, 'logLevel');
  };
  if (flag?.trim()) return check(flag, '--log-level');
  if (envValue?.trim()) return check(envValue, 'DSSYNC_LOG_LEVEL');
  return fileValue ?? DEFAULTS.logLevel;
}

/** What a pinned installation id may be: it is written into every document's metadata. */
export const INSTALLATION_ID_RE = /^[A-Za-z0-9][A-Za-z0-9._-]{3,63}$/;

function pickInstallationId(envValue: string | undefined, fileValue: string | undefined): string | undefined {
  const check = (value: string, from: string): string => {
    if (INSTALLATION_ID_RE.test(value)) return value;
    throw new ConfigError(`${from} ${JSON.stringify(value)} is not an installation id: use 4-64 letters, digits, ".", "_" or "-", starting with a letter or digit`, 'installationId');
  };
  if (envValue !== undefined && envValue.trim() !== '') return check(envValue.trim(), 'DSSYNC_INSTALLATION_ID');
  if (fileValue !== undefined) return check(fileValue, '"installationId"');
  return undefined;
}

function firstSet(...values: (string | undefined)[]): string | undefined {
  return values.find((v) => v?.trim())?.trim();
}

/** Freezes an object graph (functions included) so no layer can change the config. */
export function deepFreeze<T>(value: T): T {
  if (value !== null && (typeof value === 'object' || typeof value === 'function') && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const key of Reflect.ownKeys(value as object)) {
      deepFreeze((value as Record<PropertyKey, unknown>)[key]);
    }
  }
  return value;
}

/**
 * `dssync emulator` (DESIGN §6): runs the service emulator in the foreground. Prints
 * exactly one line on stdout, `listening on http://HOST:PORT`, once it accepts requests;
 * exits 0 after SIGTERM/SIGINT once in-flight requests are done and --data-dir is saved.
 */
import type { Argv, CommandModule } from 'yargs';
import type { EmulatorOptions, FaultOptions, NameRewrite, NameRule, RunningEmulator } from '@dssync/emulator';
import { loadEmulator } from '../emulator-package.js';
import { CliError, usageError } from '../exit.js';
import { hideOptions, type GlobalArgs } from '../options.js';
import { untilStopSignal } from '../signals.js';

export interface EmulatorArgs extends Omit<GlobalArgs, 'org'> {
  host: string;
  port?: unknown;
  token?: string;
  org?: unknown;
  dataDir?: string;
  pageSize?: unknown;
  maxFileSize?: unknown;
  maxFiles?: unknown;
  latencyMs?: unknown;
  rateLimitRps?: unknown;
  errorRate?: unknown;
  dropRate?: unknown;
  ambiguousRate?: unknown;
  rewriteNames?: string;
  ignoreRename?: boolean;
  ignoreUrl?: boolean;
  nameRules?: string;
  nameMaxBytes?: unknown;
  seed?: unknown;
  tokenTtl?: unknown;
  orgHeader?: string;
  permissiveFormats?: boolean;
}

/**
 * The emulator's name rewrites, repeated here on purpose (four words): the CLI validates
 * and documents --rewrite-names without loading the emulator, and the daemon package has no
 * run-time dependency on it. The two checks below fail to compile if either list changes alone.
 */
const NAME_REWRITES = ['quoted', 'basename', 'trim', 'nfd'] as const satisfies readonly NameRewrite[];
type SameAs<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const _sameRewrites: SameAs<(typeof NAME_REWRITES)[number], NameRewrite> = true;
/** The emulator's rules for every stored name, repeated for the same reason. */
const NAME_RULES = ['lower', 'no-extension', 'suffix'] as const satisfies readonly NameRule[];
const _sameRules: SameAs<(typeof NAME_RULES)[number], NameRule> = true;

/**
 * Numeric options are declared without a type: yargs does not validate numbers ('abc' ->
 * NaN) and the error should quote what the operator typed; their help says "a number".
 */
function numberOption(
  value: unknown,
  option: string,
  check: { min: number; max?: number; integer?: boolean },
): number | undefined {
  if (value === undefined) return undefined;
  const n = typeof value === 'number' ? value : typeof value === 'string' && value.trim() !== '' ? Number(value) : NaN;
  const max = check.max ?? Number.MAX_SAFE_INTEGER;
  if (!Number.isFinite(n) || n < check.min || n > max || (check.integer && !Number.isInteger(n))) {
    const what = check.integer ? 'an integer' : 'a number';
    throw usageError(`--${option} must be ${what} from ${check.min} to ${max}, got ${JSON.stringify(value)}`);
  }
  return n;
}

/** Turns the parsed arguments (and the environment) into emulator options. Pure. */
export function emulatorOptionsFromArgs(args: EmulatorArgs, env: NodeJS.ProcessEnv = process.env): EmulatorOptions {
  const opts: EmulatorOptions = { host: args.host };
  const port = numberOption(args.port, 'port', { min: 0, max: 65535, integer: true });
  if (port !== undefined) opts.port = port;
  const token = args.token ?? env.DSSYNC_EMULATOR_TOKEN;
  if (token !== undefined) {
    if (token === '' || /\s/.test(token)) throw usageError('--token (or DSSYNC_EMULATOR_TOKEN) must be a non-empty string without spaces');
    opts.token = token;
  }
  if (args.org !== undefined) {
    const orgs = (Array.isArray(args.org) ? args.org : [args.org]).flatMap((o) => String(o).split(',')).map((o) => o.trim());
    if (orgs.length === 0 || orgs.some((o) => o === '')) throw usageError('--org must name a non-empty organization id');
    opts.orgs = orgs;
  }
  if (args.dataDir !== undefined) {
    if (args.dataDir.trim() === '') throw usageError('--data-dir must name a folder');
    opts.dataDir = args.dataDir;
  }
  const pageSize = numberOption(args.pageSize, 'page-size', { min: 1, max: 1000, integer: true });
  if (pageSize !== undefined) opts.pageSize = pageSize;
  const maxFileBytes = numberOption(args.maxFileSize, 'max-file-size', { min: 1, integer: true });
  if (maxFileBytes !== undefined) opts.maxFileBytes = maxFileBytes;
  const maxFiles = numberOption(args.maxFiles, 'max-files', { min: 1, max: 10_000, integer: true });
  if (maxFiles !== undefined) opts.maxFilesPerUpload = maxFiles;

  const tokenTtl = numberOption(args.tokenTtl, 'token-ttl', { min: 1, max: 86_400 });
  if (tokenTtl !== undefined) opts.oidc = { tokenTtlSeconds: tokenTtl };
  if (args.orgHeader !== undefined) {
    if (!/^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/.test(args.orgHeader)) throw usageError(`--org-header "${args.orgHeader}" is not a valid HTTP header name (e.g. X-Wikit-Organization-Id)`);
    opts.orgHeader = args.orgHeader;
  }
  if (args.permissiveFormats) opts.permissiveFormats = true;

  const faults: FaultOptions = {};
  const latencyMs = numberOption(args.latencyMs, 'latency-ms', { min: 0, max: 600_000 });
  if (latencyMs !== undefined) faults.latencyMs = latencyMs;
  const rps = numberOption(args.rateLimitRps, 'rate-limit-rps', { min: Number.MIN_VALUE });
  if (rps !== undefined) faults.rateLimitRps = rps;
  const errorRate = numberOption(args.errorRate, 'error-rate', { min: 0, max: 1 });
  if (errorRate !== undefined) faults.errorRate = errorRate;
  const dropRate = numberOption(args.dropRate, 'drop-rate', { min: 0, max: 1 });
  if (dropRate !== undefined) faults.dropRate = dropRate;
  const ambiguousRate = numberOption(args.ambiguousRate, 'ambiguous-rate', { min: 0, max: 1 });
  if (ambiguousRate !== undefined) faults.ambiguousRate = ambiguousRate;
  const seed = numberOption(args.seed, 'seed', { min: 0, max: 2 ** 32 - 1, integer: true });
  if (seed !== undefined) faults.seed = seed;
  if (args.rewriteNames !== undefined) {
    if (!(NAME_REWRITES as readonly string[]).includes(args.rewriteNames)) throw usageError(`--rewrite-names must be one of ${NAME_REWRITES.join(', ')}, got ${JSON.stringify(args.rewriteNames)}`);
    faults.rewriteNames = args.rewriteNames as NameRewrite;
  }
  if (args.ignoreRename) faults.ignoreRename = true;
  if (args.ignoreUrl) faults.ignoreUrl = true;
  if (args.nameRules !== undefined) {
    const rules = args.nameRules.split(',').map((r) => r.trim());
    const bad = rules.find((r) => !(NAME_RULES as readonly string[]).includes(r));
    if (bad !== undefined) throw usageError(`--name-rules must be a comma-separated list of ${NAME_RULES.join(', ')}, got ${JSON.stringify(bad)}`);
    faults.nameRules = rules as NameRule[];
  }
  const nameMaxBytes = numberOption(args.nameMaxBytes, 'name-max-bytes', { min: 1, max: 1024, integer: true });
  if (nameMaxBytes !== undefined) faults.nameMaxBytes = nameMaxBytes;
  if (Object.keys(faults).length > 0) opts.faults = faults;
  return opts;
}

export const emulatorCommand: CommandModule<GlobalArgs, EmulatorArgs> = {
  command: 'emulator',
  describe: 'Run the emulator of the document service (for tests, benchmarks and a first try)',
  builder: (y: Argv<GlobalArgs>) =>
    hideOptions(y, ['config', 'base-url', 'token-file', 'json'])
      .option('host', { type: 'string', default: '127.0.0.1', describe: 'Address to listen on' })
      .option('port', { requiresArg: true, describe: 'Port (0: a free port) [default: 0] (a number)' })
      .option('token', { type: 'string', describe: 'Accepted bearer token. Default: $DSSYNC_EMULATOR_TOKEN, then dev-token' })
      .option('org', { type: 'string', array: true, describe: 'Accepted organization id (repeatable) [default: dev-org]' })
      .option('data-dir', { type: 'string', describe: 'Keep the data in this folder across restarts' })
      .option('page-size', { requiresArg: true, describe: 'Default list page size (clients may ask ?limit= up to 1000) [default: 20] (a number)' })
      .option('max-file-size', { requiresArg: true, describe: 'Largest accepted file, in bytes (413 above) [default: 20 MiB] (a number)' })
      .option('max-files', { requiresArg: true, describe: 'Most files in one upload (413 above) [default: 100] (a number)' })
      .option('token-ttl', { requiresArg: true, describe: 'Lifetime in seconds of the access tokens its OpenID Connect token endpoint (/realms/dssync/protocol/openid-connect/token) issues; 401 after [default: 300] (a number)' })
      .option('org-header', { type: 'string', requiresArg: true, describe: 'Header that carries the organization id [default: X-Service-Organization-Id]' })
      .option('permissive-formats', { type: 'boolean', describe: 'Also accept .doc, .odt, .rtf and .csv, which the real service does not read (415 without)' })
      .option('latency-ms', { requiresArg: true, group: 'Faults:', describe: 'Delay added to every request (a number)' })
      .option('rate-limit-rps', { requiresArg: true, group: 'Faults:', describe: 'Requests per second per organization; excess gets 429 + Retry-After (a number)' })
      .option('error-rate', { requiresArg: true, group: 'Faults:', describe: 'Share (0..1) of requests answered 500/502/503 (a number)' })
      .option('drop-rate', { requiresArg: true, group: 'Faults:', describe: 'Share (0..1) of requests whose connection is dropped unanswered (a number)' })
      .option('ambiguous-rate', { requiresArg: true, group: 'Faults:', describe: 'Share (0..1) of writes committed, then dropped unanswered (a number)' })
      .option('rewrite-names', { type: 'string', requiresArg: true, group: 'Faults:', describe: `How uploaded names are rewritten: ${NAME_REWRITES.join(', ')} (quoted: a backslash escapes the next character and is dropped)` })
      .option('ignore-rename', { type: 'boolean', group: 'Faults:', describe: 'A metadata update keeps the document\'s name' })
      .option('ignore-url', { type: 'boolean', group: 'Faults:', describe: 'A metadata update keeps the document\'s url' })
      .option('name-rules', { type: 'string', requiresArg: true, group: 'Faults:', describe: `How every stored name is rewritten, at an upload and an update, comma-separated: ${NAME_RULES.join(', ')} (lower-cased, extension dropped, " (1)" appended)` })
      .option('name-max-bytes', { requiresArg: true, group: 'Faults:', describe: 'Every stored name is cut to this many UTF-8 bytes (a number)' })
      .option('seed', { requiresArg: true, group: 'Faults:', describe: 'Seed for reproducible faults (a number)' })
      .example('$0 emulator --port 8080', 'Serve on http://127.0.0.1:8080 (token dev-token, organization dev-org)')
      .example('$0 emulator --rate-limit-rps 20 --error-rate 0.05 --seed 1', 'A rate-limited, slightly flaky service')
      // Written here so that --help needs no loading of the emulator; a test ties it to the
      // emulator's OIDC_DEFAULTS (test/integration/cli/emulator-cli.test.ts).
      .epilog(OIDC_HELP) as unknown as Argv<EmulatorArgs>,
  handler: async (args) => {
    const options = emulatorOptionsFromArgs(args);
    // Loaded here, not at the top: the emulator is its own package (absent from an installed
    // release, which says how to get it), and fastify and the PDF/DOCX extractors are heavy.
    const [{ startEmulator }, { createLogger }, { pino }] = await Promise.all([loadEmulator('emulator'), import('../../log.js'), import('pino')]);
    // Logs (internal errors only) go to stderr: stdout carries the one "listening on" line.
    options.logger = createLogger({ level: 'warn', name: 'dssync-emulator', destination: pino.destination({ fd: 2, sync: true }) });
    const stopped = untilStopSignal();
    let emulator: RunningEmulator;
    try {
      emulator = await startEmulator(options);
    } catch (err) {
      throw new CliError(`the emulator could not start on ${options.host}:${options.port ?? 0}: ${(err as Error).message}`);
    }
    process.stdout.write(`listening on ${emulator.url}\n`);
    // The banner goes to stderr: stdout carries the one line scripts wait for.
    process.stderr.write(`${oidcBanner(emulator)}\n`);
    await stopped;
    await emulator.close();
  },
};

const OIDC_HELP = `OpenID Connect test accounts (token endpoint: URL/realms/dssync/protocol/openid-connect/token):
  password grant:      username dev-user, password dev-password, client dssync (public, no secret)
                       username otp-user, password dev-password, one-time code (totp) 123456
  client_credentials:  client dssync-service, secret dev-client-secret
The static --token keeps working beside them. Details: docs/emulator.md.`;

/** The token endpoint and its accounts, as the running emulator has them. */
function oidcBanner(emulator: RunningEmulator): string {
  const o = emulator.oidc.options;
  const users = Object.entries(o.users).map(([name, a]) => `${name} / ${a.password}${a.otp ? ` (totp ${a.otp})` : ''}`);
  const clients = Object.entries(o.clients).map(([id, secret]) => (secret === null ? `${id} (public)` : `${id} / ${secret}`));
  return [
    `OpenID Connect token endpoint: ${emulator.url}/realms/dssync/protocol/openid-connect/token (access tokens live ${o.tokenTtlSeconds} s)`,
    `  accounts (password grant): ${users.join(', ')}`,
    `  clients: ${clients.join(', ')}`,
  ].join('\n');
}

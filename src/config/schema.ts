/**
 * The config file's schema (zod 4) and the defaults. The schema describes the file as
 * written: every key optional except a mapping's `path`, unknown keys rejected (a typo must
 * not silently fall back to a default). Defaults are applied afterwards in load.ts, so the
 * file schema and the resolved Config stay two honest types.
 */
import { isAbsolute } from 'node:path';
import { z } from 'zod';
import { GRANT_TYPES } from '../auth/settings.js';
import { DEFAULT_ORGANIZATION_HEADER, organizationHeaderProblem } from './connection.js';
import { parseListenAddress } from './listen.js';
import { objectKeys } from './schema-keys.js';
import { checkUrlTemplate, DEFAULT_URL_TEMPLATE } from './url-template.js';

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

const MiB = 1024 * 1024;

/** The default file types: what the service cuts into chunks. Matched case-insensitively. */
export const DEFAULT_INCLUDE = ['**/*.{txt,md,pdf,docx,html,htm,doc,odt,rtf,csv,tsv,pptx,xlsx,xlsm,ods,odp,epub,eml,msg}'] as const;

/**
 * The one default of every option (p-queue's options file is the model: each key says what
 * it does and its `@default`). The layers below (api/, local/, daemon/) take these values
 * as required options and keep no default of their own; docs/config.md documents each once.
 */
export const DEFAULTS = {
  /** Log level of the daemon and commands (DSSYNC_LOG_LEVEL wins). @default 'info' */
  logLevel: 'info',
  /** The header that carries organizationId (DSSYNC_ORG_HEADER wins). @default 'X-Service-Organization-Id' */
  organizationHeader: DEFAULT_ORGANIZATION_HEADER,
  queue: {
    /**
     * Requests to the service in flight at once. 32 hide the service's latency (32 / 20 ms =
     * 1,600 requests/s at best); docs/performance.md has the figures.
     * @default 32
     */
    concurrency: 32,
    /**
     * Requests started per second, at most; 0: no fixed cap, the pacer learns the service's
     * limit from its 429s and goes at that rate.
     * @default 0
     */
    requestsPerSecond: 0,
    /** Attempts per request, the first included, before a transient failure is given up. @default 6 */
    maxAttempts: 6,
    /** Files per upload request. @default 20 */
    uploadBatchFiles: 20,
    /** Bytes per upload request, at most (a single larger file goes alone). @default 32 MiB */
    uploadBatchBytes: 32 * MiB,
    timeouts: {
      /** Opening a connection (TCP and TLS). @default 10_000 ms */
      connectMs: 10_000,
      /** From sending a request until the answer's headers arrive (the service parses uploads first). @default 60_000 ms */
      headersMs: 60_000,
      /** Between two pieces of an answer's body, and the whole body at most. @default 300_000 ms */
      bodyMs: 300_000,
    },
  },
  auth: {
    /** How long a token command (auth type "command") may run before it is killed. @default 30 s */
    timeoutSeconds: 30,
  },
  /** Address of the status page and /metrics; false turns it off. @default '127.0.0.1:8787' */
  statusListen: '127.0.0.1:8787',
  status: {
    /** Extra Host names the endpoint answers to (loopback names and the listen address always). @default [] */
    allowedHosts: [] as readonly string[],
    // status.actions has no fixed default: true when the endpoint listens on loopback (load.ts).
  },
  /**
   * Periodic full rescan; 0: no periodic rescan (a full pass still runs at start, after a
   * SIGHUP, when the watcher lost events and when retrying after a failed pass).
   * @default 3600
   */
  rescanIntervalSeconds: 3600,
  /**
   * Quiet time after a path's last event before it is looked at. Saves are complete in
   * milliseconds; files still growing wait on their own (the aggregator's settle window).
   * @default 300 ms
   */
  debounceMs: 300,
  ingestionCheck: {
    /** Check, after an upload, that the service indexed the document. @default true */
    enabled: true,
    /** How long after the upload. @default 120 s */
    delaySeconds: 120,
  },
  /** How changes are learned of (docs/watch.md): events on local disks, polling on network and FUSE mounts. */
  watch: {
    /** @default 'auto' */
    mode: 'auto',
    /** @default 10 s */
    pollIntervalSeconds: 10,
    /** CPU the poller may use, percent of one core. @default 5 */
    pollBudgetPercent: 5,
  },
  mapping: {
    /** @default DEFAULT_INCLUDE (the types the service cuts into chunks) */
    include: DEFAULT_INCLUDE,
    /** @default [] */
    exclude: [] as readonly string[],
    /** @default '.dssyncignore' */
    ignoreFile: '.dssyncignore',
    /** Larger files are skipped (and reported). @default 20 MiB */
    maxFileBytes: 20 * MiB,
    /** @default DEFAULT_URL_TEMPLATE */
    urlTemplate: DEFAULT_URL_TEMPLATE,
    /** Which documents a removed file's removal may delete. @default 'ours' */
    prune: 'ours',
    /** A pass that would delete more than this share of the documents stops. @default 50 */
    maxDeletePercent: 50,
    /** @default false */
    followSymlinks: false,
  },
} as const;

function isHttpUrl(s: string): boolean {
  try {
    const u = new URL(s.trim());
    return (u.protocol === 'http:' || u.protocol === 'https:') && !u.username && !u.password;
  } catch {
    return false;
  }
}

// --- field builders with messages that say what to write ---------------------------------

const text = (what = 'a non-empty string') =>
  z.string({ error: `must be ${what}` }).refine((s) => s.trim() !== '', { error: `must be ${what}` });

const intAtLeast = (min: number, example: number) =>
  z
    .number({ error: `must be a whole number >= ${min} (e.g. ${example})` })
    .int({ error: `must be a whole number >= ${min} (e.g. ${example})` })
    .min(min, { error: `must be a whole number >= ${min} (e.g. ${example})` });

/** A rate: 0 means no cap. */
const rateCap = (example: number) =>
  z
    .number({ error: `must be a number >= 0 (0: no cap; e.g. ${example})` })
    .min(0, { error: `must be a number >= 0 (0: no cap; e.g. ${example})` });

const absolutePath = (example: string) =>
  z
    .string({ error: `must be an absolute path (e.g. "${example}")` })
    .refine((s) => s.trim() !== '', { error: `must be an absolute path (e.g. "${example}")` })
    .refine((s) => isAbsolute(s), {
      error: (iss) => `must be an absolute path, got "${String(iss.input)}" (e.g. "${example}")`,
    });

/** A path in the config file: absolute, or relative to the config file's folder. */
const filePath = (example: string) => text(`a file path (e.g. "${example}")`);

const globList = (what: string) =>
  z.array(text('a glob pattern (e.g. "**/*.pdf")'), {
    error: `must be a list of glob patterns, e.g. ["${what}"]`,
  });

const metadataValue = z.union([z.string(), z.number(), z.boolean()], {
  error: 'metadata values must be strings, numbers or booleans',
});

export const WATCH_MODES = ['auto', 'events', 'poll'] as const;

/** `watch`, at the top level (every mapping) and per mapping (wins, key by key). */
export const WatchSchema = z.strictObject(
  {
    mode: z.enum(WATCH_MODES, { error: 'must be "auto" (events on local disks, polling on network and FUSE mounts), "events" or "poll"' }).optional(),
    pollIntervalSeconds: z
      .number({ error: 'must be a number of seconds >= 1 (e.g. 10)' })
      .min(1, { error: 'must be a number of seconds >= 1 (e.g. 10)' })
      .optional(),
    pollBudgetPercent: z
      .number({ error: 'must be a percentage of one CPU core, above 0 and at most 100 (e.g. 5)' })
      .gt(0, { error: 'must be a percentage of one CPU core, above 0 and at most 100 (e.g. 5)' })
      .max(100, { error: 'must be a percentage of one CPU core, above 0 and at most 100 (e.g. 5)' })
      .optional(),
  },
  { error: 'must be an object like { "mode": "auto", "pollIntervalSeconds": 10, "pollBudgetPercent": 5 }' },
);

export const DataSourceSpecSchema = z.strictObject(
  {
    name: text('the data source name, a non-empty string'),
    llmConnectorIds: z
      .array(text('a connector id'), { error: 'must be a list of connector ids, e.g. ["conn-1"]' })
      .min(1, { error: 'must name at least one connector id, e.g. ["conn-1"]' }),
  },
  { error: 'must be an object like { "name": "Policies", "llmConnectorIds": ["conn-1"] }' },
);

export const MappingSchema = z.strictObject(
  {
    id: text('a non-empty mapping id (e.g. "handbook")')
      .refine((s) => !/[\p{Cc}]/u.test(s), { error: 'must not contain control characters' })
      .optional(),
    path: absolutePath('/srv/share/handbook'),
    dataSourceId: text('a data source id (e.g. "ds-123")').optional(),
    dataSource: DataSourceSpecSchema.optional(),
    include: globList('**/*.pdf').optional(),
    exclude: globList('**/drafts/**').optional(),
    ignoreFile: text('a file name (e.g. ".dssyncignore")').optional(),
    maxFileBytes: intAtLeast(1, DEFAULTS.mapping.maxFileBytes).optional(),
    formats: z
      .record(
        z.string().regex(/^\.[a-z0-9]+$/, { error: 'must be an extension in lower case with its dot (e.g. ".pptx")' }),
        z.enum(['as-is', 'convert', 'skip'], { error: 'must be "as-is", "convert" (to Markdown) or "skip"' }),
        { error: 'must be an object of extension → "as-is" | "convert" | "skip" (e.g. {".csv": "as-is"})' },
      )
      .optional(),
    urlTemplate: z
      .string({ error: `must be a string (e.g. "${DEFAULT_URL_TEMPLATE}")` })
      .check((ctx) => {
        const problem = checkUrlTemplate(ctx.value);
        if (problem) ctx.issues.push({ code: 'custom', message: problem, input: ctx.value });
      })
      .optional(),
    metadata: z
      .record(z.string(), metadataValue, { error: 'must be an object of string, number or boolean values' })
      .optional(),
    prune: z.enum(['ours', 'all'], { error: 'must be "ours" (only what dssync created) or "all"' }).optional(),
    maxDeletePercent: z
      .number({ error: 'must be a number from 0 to 100' })
      .min(0, { error: 'must be a number from 0 to 100' })
      .max(100, { error: 'must be a number from 0 to 100' })
      .optional(),
    followSymlinks: z.boolean({ error: 'must be true or false' }).optional(),
    watch: WatchSchema.optional(),
  },
  { error: 'each mapping must be an object like { "path": "/srv/share/handbook", "dataSourceId": "ds-123" }' },
);

const AUTH_EXAMPLE = '{ "type": "oauth2", "tokenUrl": "https://auth.example.com/realms/r/protocol/openid-connect/token", "grantType": "password", "clientId": "semantics-console", "username": "api@example.com" }';

export const AuthSchema = z.discriminatedUnion(
  'type',
  [
    z.strictObject({ type: z.literal('static') }, { error: 'must be { "type": "static" } (the token from DSSYNC_TOKEN, tokenFile or a systemd credential)' }),
    z.strictObject(
      {
        type: z.literal('oauth2'),
        tokenUrl: text('the token endpoint URL (e.g. "https://auth.example.com/realms/r/protocol/openid-connect/token")').refine(isHttpUrl, {
          error: 'must be an http:// or https:// URL without credentials (the token endpoint, e.g. "https://auth.example.com/realms/r/protocol/openid-connect/token")',
        }),
        grantType: z.enum(GRANT_TYPES, {
          error: 'must be "password", "client_credentials" or "refresh_token" (after dssync auth login)',
        }),
        clientId: text('the OAuth2 client id (e.g. "semantics-console")'),
        username: text('the account name (e.g. "api@example.com")').optional(),
        scope: text('a space-separated list of scopes (e.g. "openid")').optional(),
        passwordFile: filePath('/etc/dssync/password').optional(),
        clientSecretFile: filePath('/etc/dssync/client-secret').optional(),
      },
      { error: `must be an object like ${AUTH_EXAMPLE}` },
    ),
    z.strictObject(
      {
        type: z.literal('command'),
        command: z
          .array(text('a program or argument'), { error: 'must be a list: the program and its arguments, e.g. ["/usr/local/bin/get-token", "--json"]' })
          .min(1, { error: 'must name the program, e.g. ["/usr/local/bin/get-token", "--json"]' }),
        timeoutSeconds: z.number({ error: 'must be a number of seconds from 1 to 600' }).min(1).max(600).optional(),
      },
      { error: 'must be an object like { "type": "command", "command": ["/usr/local/bin/get-token", "--json"] }' },
    ),
  ],
  { error: 'must be an object with "type": "static", "oauth2" or "command"' },
);

export const ConfigFileSchema = z.strictObject(
  {
    /** Lets editors find a JSON schema; ignored by dssync. */
    $schema: z.string({ error: 'must be a string' }).optional(),
    baseUrl: text('a URL (e.g. "https://service.example.com")')
      .refine(isHttpUrl, { error: 'must be an http:// or https:// URL without credentials (e.g. "https://service.example.com")' })
      .optional(),
    /**
     * Lets baseUrl and auth.tokenUrl use plain http:// to a host other than this machine
     * (the token then crosses the network in clear text). DSSYNC_ALLOW_INSECURE_HTTP=1 too.
     * @default false
     */
    allowInsecureHttp: z.boolean({ error: 'must be true or false' }).optional(),
    organizationId: text('the organization id, a non-empty string').optional(),
    organizationHeader: z
      .string({ error: 'must be an HTTP header name (e.g. "X-Wikit-Organization-Id")' })
      .check((ctx) => {
        const problem = organizationHeaderProblem(ctx.value);
        if (problem) ctx.issues.push({ code: 'custom', message: problem, input: ctx.value });
      })
      .optional(),
    tokenFile: filePath('/etc/dssync/token').optional(),
    auth: AuthSchema.optional(),
    statePath: filePath('/var/lib/dssync/state.json').optional(),
    appId: text('an llm app id').optional(),
    /**
     * Pins the installation's identity (docs/reliability.md, "Identity"): every document
     * this installation writes carries it. Where machines are cattle (containers, pods,
     * restores) the same id makes the same owner wherever it runs. 4-64 letters, digits,
     * '.', '_' or '-'. DSSYNC_INSTALLATION_ID wins over it.
     * @default a random id drawn with the state file and kept in it
     */
    installationId: z.string({ error: 'must be a string of 4-64 letters, digits, ".", "_" or "-"' }).optional(),
    logLevel: z.enum(LOG_LEVELS, { error: `must be one of ${LOG_LEVELS.map((l) => `"${l}"`).join(', ')}` }).optional(),
    queue: z
      .strictObject(
        {
          concurrency: intAtLeast(1, DEFAULTS.queue.concurrency).optional(),
          requestsPerSecond: rateCap(50).optional(),
          maxAttempts: intAtLeast(1, DEFAULTS.queue.maxAttempts).optional(),
          uploadBatchFiles: intAtLeast(1, DEFAULTS.queue.uploadBatchFiles).optional(),
          uploadBatchBytes: intAtLeast(1, DEFAULTS.queue.uploadBatchBytes).optional(),
          timeouts: z
            .strictObject(
              {
                connectMs: intAtLeast(1, DEFAULTS.queue.timeouts.connectMs).optional(),
                headersMs: intAtLeast(1, DEFAULTS.queue.timeouts.headersMs).optional(),
                bodyMs: intAtLeast(1, DEFAULTS.queue.timeouts.bodyMs).optional(),
              },
              { error: 'must be an object like { "connectMs": 10000 }' },
            )
            .optional(),
        },
        { error: 'must be an object like { "concurrency": 4 }' },
      )
      .optional(),
    status: z
      .strictObject(
        {
          listen: z
            .union([z.string(), z.literal(false)], {
              error: 'must be "host:port" (e.g. "127.0.0.1:8787") or false to turn the endpoint off',
            })
            .check((ctx) => {
              if (typeof ctx.value !== 'string') return;
              const parsed = parseListenAddress(ctx.value);
              if ('error' in parsed) ctx.issues.push({ code: 'custom', message: parsed.error, input: ctx.value });
            })
            .optional(),
          actions: z.boolean({ error: 'must be true or false' }).optional(),
          tokenFile: filePath('/etc/dssync/status-token').optional(),
          allowedHosts: z
            .array(z.string().trim().min(1, { error: 'must not be empty' }).regex(/^[^\s/:@]+$|^\[[0-9a-fA-F:.]+\]$/, { error: 'must be a host name or address, without port or scheme' }), {
              error: 'must be a list of host names, e.g. ["dssync.example.lan"]',
            })
            .optional(),
        },
        { error: 'must be an object like { "listen": "127.0.0.1:8787" }' },
      )
      .optional(),
    tls: z
      .strictObject(
        { caFile: filePath('/etc/ssl/certs/internal-ca.pem').optional() },
        { error: 'must be an object like { "caFile": "/etc/ssl/certs/internal-ca.pem" }' },
      )
      .optional(),
    rescanIntervalSeconds: intAtLeast(0, DEFAULTS.rescanIntervalSeconds).optional(),
    debounceMs: intAtLeast(0, DEFAULTS.debounceMs).optional(),
    watch: WatchSchema.optional(),
    ingestionCheck: z
      .strictObject(
        {
          enabled: z.boolean({ error: 'must be true or false' }).optional(),
          delaySeconds: intAtLeast(0, DEFAULTS.ingestionCheck.delaySeconds).optional(),
        },
        { error: 'must be an object like { "enabled": true, "delaySeconds": 120 }' },
      )
      .optional(),
    mappings: z.array(MappingSchema, { error: 'must be a list of mappings' }).optional(),
  },
  { error: 'the config file must hold a JSON object, e.g. { "baseUrl": "...", "mappings": [] }' },
);

export type ConfigFile = z.infer<typeof ConfigFileSchema>;
export type MappingFile = z.infer<typeof MappingSchema>;

/** Known keys of each object of the file, for "did you mean" hints; keyed by path pattern (read from the schema). */
export const KNOWN_KEYS: Record<string, readonly string[]> = objectKeys(ConfigFileSchema);

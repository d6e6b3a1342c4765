/**
 * Options of the emulator and of its fault injection, with their defaults and the checks
 * that turn a bad value into an error naming the option.
 */
import type { Logger } from 'pino';
import type { OidcOptions } from './routes/oidc.js';

export interface FaultOptions {
  /** Milliseconds added to every request (before anything else happens). */
  latencyMs?: number;
  /** Accepted requests per second, per organization, over a sliding 1 s window; excess -> 429. */
  rateLimitRps?: number;
  /** How Retry-After is expressed on 429 and on `down` 503 (default seconds). */
  retryAfter?: 'seconds' | 'date' | 'none';
  /** 0..1 share of requests answered 500/502/503 before anything is done. */
  errorRate?: number;
  /** 0..1 share of requests whose connection is destroyed without an answer, before anything is done. */
  dropRate?: number;
  /** 0..1 share of write requests (POST/PUT/DELETE) committed, then answered by a destroyed connection. */
  ambiguousRate?: number;
  /** Every request answered 503 (service down). */
  down?: boolean;
  /**
   * How the service rewrites an uploaded file's name, as some real services do: 'quoted'
   * reads `filename="…"` as an RFC quoted-string (a backslash escapes the next character
   * and is dropped), 'basename' keeps what follows the last `/`, 'trim' trims white space
   * at both ends, 'nfd' normalises Unicode to NFD.
   */
  rewriteNames?: NameRewrite;
  /**
   * Every upload request is received whole, then answered by a destroyed connection, and
   * its documents are held instead of stored: stored only when the test says so
   * (RunningEmulator.commitHeld, POST /_emulator/commit-held): a commit after the client
   * gave up on the answer, as late as the test likes.
   */
  holdUploads?: boolean;
  /** A metadata update keeps the document's name (a service that ignores the new name). */
  ignoreRename?: boolean;
  /** A metadata update keeps the document's url (a service that ignores a new url). */
  ignoreUrl?: boolean;
  /**
   * How the service rewrites every name it stores, at an upload as at an update, in this
   * order: 'lower' lower-cases it, 'no-extension' drops the extension, 'suffix' appends " (1)".
   */
  nameRules?: NameRule[];
  /** Every name stored (upload and update) is cut to at most this many UTF-8 bytes. */
  nameMaxBytes?: number;
  /** Seed of the generator behind the rates (reproducible faults). */
  seed?: number;
}

export type NameRule = 'lower' | 'no-extension' | 'suffix';
export const NAME_RULES: readonly NameRule[] = ['lower', 'no-extension', 'suffix'];

export type NameRewrite = 'quoted' | 'basename' | 'trim' | 'nfd';
export const NAME_REWRITES: readonly NameRewrite[] = ['quoted', 'basename', 'trim', 'nfd'];

export interface EmulatorOptions {
  host?: string;
  port?: number;
  token?: string;
  orgs?: string[];
  dataDir?: string;
  pageSize?: number;
  maxFileBytes?: number;
  maxFilesPerUpload?: number;
  faults?: FaultOptions;
  logger?: boolean | Logger;
  /** The OpenID Connect token endpoint's accounts and token lifetimes (routes/oidc.ts). */
  oidc?: OidcOptions;
  /** The header that carries the organization id. Default X-Service-Organization-Id. */
  orgHeader?: string;
  /**
   * Also accept .doc, .odt, .rtf and .csv, which the real service does not read. Default
   * false: exactly the service's formats, anything else is a 415.
   */
  permissiveFormats?: boolean;
}

export const DEFAULTS = {
  host: '127.0.0.1',
  port: 0,
  token: 'dev-token',
  orgs: ['dev-org'],
  pageSize: 20,
  maxFileBytes: 20 * 1024 * 1024,
  maxFilesPerUpload: 100,
} as const;

export interface ResolvedOptions {
  host: string;
  port: number;
  token: string;
  orgs: string[];
  dataDir: string | undefined;
  pageSize: number;
  maxFileBytes: number;
  maxFilesPerUpload: number;
  faults: FaultOptions;
  logger: boolean | Logger;
  oidc: OidcOptions;
  /** As given (for messages); requests are read by its lower-case form. */
  orgHeader: string;
  permissiveFormats: boolean;
}

const FAULT_KEYS = new Set(['latencyMs', 'rateLimitRps', 'retryAfter', 'errorRate', 'dropRate', 'ambiguousRate', 'down', 'seed', 'rewriteNames', 'holdUploads', 'ignoreRename', 'ignoreUrl', 'nameRules', 'nameMaxBytes']);

/**
 * Checks fault options coming from code or from JSON (the admin route). Throws a
 * RangeError naming the first bad field; returns a clean copy.
 */
export function checkFaultOptions(input: unknown): FaultOptions {
  if (input === null || typeof input !== 'object' || Array.isArray(input)) {
    throw new RangeError('faults must be an object');
  }
  const raw = input as Record<string, unknown>;
  for (const key of Object.keys(raw)) {
    if (!FAULT_KEYS.has(key)) throw new RangeError(`faults.${key} is not a fault option (known: ${[...FAULT_KEYS].join(', ')})`);
  }
  const out: FaultOptions = {};
  const num = (key: keyof FaultOptions, ok: (n: number) => boolean, what: string): number | undefined => {
    const v = raw[key];
    if (v === undefined) return undefined;
    if (typeof v !== 'number' || !Number.isFinite(v) || !ok(v)) {
      throw new RangeError(`faults.${key} must be ${what}, got ${JSON.stringify(v)}`);
    }
    return v;
  };
  const rate = (n: number) => n >= 0 && n <= 1;
  const latencyMs = num('latencyMs', (n) => n >= 0 && n <= 600_000, 'a number of milliseconds from 0 to 600000');
  const rateLimitRps = num('rateLimitRps', (n) => n > 0, 'a positive number');
  const errorRate = num('errorRate', rate, 'a number from 0 to 1');
  const dropRate = num('dropRate', rate, 'a number from 0 to 1');
  const ambiguousRate = num('ambiguousRate', rate, 'a number from 0 to 1');
  const seed = num('seed', (n) => Number.isInteger(n), 'an integer');
  const nameMaxBytes = num('nameMaxBytes', (n) => Number.isInteger(n) && n >= 1 && n <= 1024, 'an integer from 1 to 1024');
  if (nameMaxBytes !== undefined) out.nameMaxBytes = nameMaxBytes;
  if (raw.nameRules !== undefined) {
    const rules = raw.nameRules;
    if (!Array.isArray(rules) || !rules.every((r) => NAME_RULES.includes(r as NameRule))) {
      throw new RangeError(`faults.nameRules must be a list of ${NAME_RULES.map((r) => `"${r}"`).join(', ')}, got ${JSON.stringify(rules)}`);
    }
    out.nameRules = [...(rules as NameRule[])];
  }
  if (latencyMs !== undefined) out.latencyMs = latencyMs;
  if (rateLimitRps !== undefined) out.rateLimitRps = rateLimitRps;
  if (errorRate !== undefined) out.errorRate = errorRate;
  if (dropRate !== undefined) out.dropRate = dropRate;
  if (ambiguousRate !== undefined) out.ambiguousRate = ambiguousRate;
  if (seed !== undefined) out.seed = seed;
  if (raw.retryAfter !== undefined) {
    if (raw.retryAfter !== 'seconds' && raw.retryAfter !== 'date' && raw.retryAfter !== 'none') {
      throw new RangeError(`faults.retryAfter must be "seconds", "date" or "none", got ${JSON.stringify(raw.retryAfter)}`);
    }
    out.retryAfter = raw.retryAfter;
  }
  for (const key of ['down', 'holdUploads', 'ignoreRename', 'ignoreUrl'] as const) {
    const v = raw[key];
    if (v === undefined) continue;
    if (typeof v !== 'boolean') throw new RangeError(`faults.${key} must be true or false, got ${JSON.stringify(v)}`);
    out[key] = v;
  }
  if (raw.rewriteNames !== undefined) {
    if (!NAME_REWRITES.includes(raw.rewriteNames as NameRewrite)) {
      throw new RangeError(`faults.rewriteNames must be one of ${NAME_REWRITES.map((r) => `"${r}"`).join(', ')}, got ${JSON.stringify(raw.rewriteNames)}`);
    }
    out.rewriteNames = raw.rewriteNames as NameRewrite;
  }
  return out;
}

export function resolveOptions(opts: EmulatorOptions = {}): ResolvedOptions {
  const positiveInt = (name: string, value: number | undefined, fallback: number, max = Number.MAX_SAFE_INTEGER): number => {
    if (value === undefined) return fallback;
    if (!Number.isInteger(value) || value < 1 || value > max) throw new RangeError(`${name} must be an integer from 1 to ${max}, got ${value}`);
    return value;
  };
  const port = opts.port ?? DEFAULTS.port;
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new RangeError(`port must be an integer from 0 to 65535, got ${port}`);
  const token = opts.token ?? DEFAULTS.token;
  if (typeof token !== 'string' || token.length === 0 || /[\s]/.test(token)) throw new RangeError('token must be a non-empty string without spaces');
  const orgs = opts.orgs ?? [...DEFAULTS.orgs];
  if (orgs.length === 0 || orgs.some((o) => typeof o !== 'string' || o.trim() === '')) {
    throw new RangeError('orgs must be a non-empty list of non-empty organization ids');
  }
  return {
    host: opts.host ?? DEFAULTS.host,
    port,
    token,
    orgs: [...new Set(orgs)],
    dataDir: opts.dataDir,
    pageSize: positiveInt('pageSize', opts.pageSize, DEFAULTS.pageSize, 1000),
    maxFileBytes: positiveInt('maxFileBytes', opts.maxFileBytes, DEFAULTS.maxFileBytes),
    maxFilesPerUpload: positiveInt('maxFilesPerUpload', opts.maxFilesPerUpload, DEFAULTS.maxFilesPerUpload, 10_000),
    faults: checkFaultOptions(opts.faults ?? {}),
    logger: opts.logger ?? false,
    oidc: checkOidc(opts.oidc ?? {}),
    orgHeader: checkOrgHeader(opts.orgHeader ?? 'X-Service-Organization-Id'),
    permissiveFormats: checkBoolean('permissiveFormats', opts.permissiveFormats ?? false),
  };
}

function checkOidc(o: OidcOptions): OidcOptions {
  for (const key of ['tokenTtlSeconds', 'refreshTtlSeconds'] as const) {
    const v = o[key];
    if (v !== undefined && (typeof v !== 'number' || !Number.isFinite(v) || v <= 0 || v > 86_400 * 365)) {
      throw new RangeError(`oidc.${key} must be a number of seconds above 0, got ${JSON.stringify(v)}`);
    }
  }
  return o;
}

function checkBoolean(name: string, value: unknown): boolean {
  if (typeof value !== 'boolean') throw new RangeError(`${name} must be true or false, got ${JSON.stringify(value)}`);
  return value;
}

function checkOrgHeader(name: string): string {
  if (!/^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/.test(name)) throw new RangeError(`orgHeader "${name}" is not a valid HTTP header name`);
  return name;
}

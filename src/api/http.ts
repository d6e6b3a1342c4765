/**
 * One HTTP exchange with the service over undici's `Dispatcher.request()` (streams bodies; fetch()
 * buffers multipart uploads, LIBRARIES.md): headers, size-capped body reading, same-origin
 * redirects for reads, and the translation of every failure into an ApiError. No retries
 * here: those are the pacer's.
 */
import { http } from '../node-http.js';
import type { Readable } from 'node:stream';
import { rootCertificates } from 'node:tls';
import type { Dispatcher, FormData } from 'undici';
import { Agent } from './undici-agent.js';
import { ApiError, classifyStatus, CONNECT_PROBLEMS } from './errors.js';
import { badResponse, errorMessageFromBody, preview } from './decode.js';
import { parseRetryAfter } from './retry-after.js';
import { ResponseBody } from './response-body.js';

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'DELETE';

/** `queue.timeouts` of the config (its defaults are in src/config/schema.ts). */
export interface TimeoutOptions {
  /** TCP + TLS connect (ms). */
  connectMs: number;
  /** From sending the request until the response headers arrive (ms). */
  headersMs: number;
  /** Between two chunks of the response body (ms). */
  bodyMs: number;
}

export interface AgentOptions {
  timeouts: Readonly<TimeoutOptions>;
  /** Connections per origin. Default 16 (the pacer's concurrency is the real cap). */
  connections?: number | undefined;
  /** Extra CA certificate(s), added to Node's bundled roots. Verification stays on. */
  ca?: string | Buffer | undefined;
}

export function createAgent(opts: AgentOptions): Agent {
  const t = opts.timeouts;
  return new Agent({
    connections: opts.connections ?? 16,
    keepAliveTimeout: 4_000,
    headersTimeout: t.headersMs,
    bodyTimeout: t.bodyMs,
    connect: {
      timeout: t.connectMs,
      // Explicit: otherwise NODE_TLS_REJECT_UNAUTHORIZED=0 in the environment would turn
      // certificate verification off without anyone noticing.
      rejectUnauthorized: true,
      // `ca` replaces the default roots in Node: keep them, add the operator's.
      ...(opts.ca === undefined ? {} : { ca: [...rootCertificates, opts.ca.toString()] }),
    },
  });
}

export const DEFAULT_MAX_RESPONSE_BYTES = 64 * 1024 * 1024;
/** Error bodies are only read for a message. */
const MAX_ERROR_BODY_BYTES = 256 * 1024;
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);

export interface HttpTransportOptions {
  dispatcher: Dispatcher;
  organizationId: string;
  /** The connection's (config/connection.ts has the default); Wikit Semantics reads X-Wikit-Organization-Id. */
  organizationHeader: string;
  userAgent: string;
  maxResponseBytes?: number | undefined;
  /** Same-origin redirects followed for GET. Default 3. */
  maxRedirects?: number | undefined;
  /**
   * The whole body of an answer must arrive within this (undici's bodyTimeout only bounds
   * the gap between two chunks: a "slow-loris" answer trickling a byte at a time would hold
   * the request forever). Default: no deadline.
   */
  bodyDeadlineMs?: number | undefined;
}

export interface HttpRequest {
  method: HttpMethod;
  url: URL;
  token: string;
  json?: unknown;
  form?: FormData;
  /** A body streamed as it is produced (uploads: api/upload.ts), with its exact length. */
  stream?: { body: Readable | Buffer; contentType: string; contentLength: number } | undefined;
  signal?: AbortSignal | undefined;
}

export interface HttpResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  contentType: string | undefined;
  body: ResponseBody;
  /** The URL that answered (after redirects). */
  url: URL;
}

export class HttpTransport {
  constructor(private readonly opts: HttpTransportOptions) {}

  /** Resolves with any 2xx answer; every other outcome rejects with an ApiError. */
  async send(req: HttpRequest): Promise<HttpResponse> {
    let url = req.url;
    const maxRedirects = req.method === 'GET' ? (this.opts.maxRedirects ?? 3) : 0;
    for (let hop = 0; ; hop++) {
      const res = await this.exchange(req, url);
      if (REDIRECT_STATUSES.has(res.statusCode)) {
        const target = redirectTarget(res.headers.location, url);
        await discard(res.body);
        if (target && target.origin === url.origin && hop < maxRedirects) {
          url = target;
          continue;
        }
        // A write is never followed: say so, rather than "too many redirects" after none.
        throw redirectError(req.method, url, res.statusCode, target, req.method === 'GET' && hop >= maxRedirects && target?.origin === url.origin);
      }
      if (res.statusCode >= 200 && res.statusCode < 300) {
        const body = await this.readBody(res, req, url, this.opts.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES);
        return { status: res.statusCode, headers: res.headers, contentType: header(res.headers, 'content-type'), body, url };
      }
      throw await this.statusError(res, req, url);
    }
  }

  private async exchange(req: HttpRequest, url: URL): Promise<Dispatcher.ResponseData> {
    const headers: Record<string, string> = {
      authorization: `Bearer ${req.token}`,
      [this.opts.organizationHeader.toLowerCase()]: this.opts.organizationId,
      accept: 'application/json',
      'user-agent': this.opts.userAgent,
    };
    let body: string | FormData | Readable | Buffer | undefined;
    if (req.json !== undefined) {
      headers['content-type'] = 'application/json';
      body = JSON.stringify(req.json);
    } else if (req.form !== undefined) {
      body = req.form; // undici sets the multipart content-type with its boundary
    } else if (req.stream !== undefined) {
      headers['content-type'] = req.stream.contentType;
      headers['content-length'] = String(req.stream.contentLength);
      body = req.stream.body;
    }
    try {
      // The dispatcher's own request(): undici's top-level request() only parses the URL again and copies these options.
      return await this.opts.dispatcher.request({
        origin: url.origin,
        path: url.search ? `${url.pathname}${url.search}` : url.pathname,
        method: req.method,
        headers,
        ...(body === undefined ? {} : { body }),
        ...(req.signal ? { signal: req.signal } : {}),
      });
    } catch (e) {
      throw transportError(e, req.method, url.pathname, req.signal, url.origin);
    }
  }

  private async readBody(res: Dispatcher.ResponseData, req: HttpRequest, url: URL, cap: number): Promise<ResponseBody> {
    const ctx = { method: req.method, path: url.pathname, status: res.statusCode, mayHaveActed: req.method === 'POST' };
    const declared = Number(header(res.headers, 'content-length'));
    if (Number.isFinite(declared) && declared > cap) {
      abandon(res.body);
      throw badResponse(ctx, `the response body is ${declared} bytes, more than the ${cap} bytes accepted`);
    }
    const deadlineMs = this.opts.bodyDeadlineMs;
    let late = false;
    const timer =
      deadlineMs === undefined
        ? undefined
        : setTimeout(() => {
            late = true;
            abandon(res.body);
          }, deadlineMs);
    try {
      return await collect(res.body, cap, () => badResponse(ctx, `the response body exceeds the ${cap} bytes accepted`));
    } catch (e) {
      if (e instanceof ApiError) throw e;
      if (late) {
        throw new ApiError({
          code: 'E_TIMEOUT',
          retryable: true,
          method: req.method,
          path: url.pathname,
          message: `${req.method} ${url.pathname}: timed out reading the answer (its body took longer than ${deadlineMs} ms in all)`,
        });
      }
      throw transportError(e, req.method, url.pathname, req.signal);
    } finally {
      if (timer !== undefined) clearTimeout(timer);
    }
  }

  private async statusError(res: Dispatcher.ResponseData, req: HttpRequest, url: URL): Promise<ApiError> {
    let text = '';
    try {
      const body = await this.readBody(res, req, url, MAX_ERROR_BODY_BYTES);
      text = body.text();
    } catch {
      // The status says enough; a body we cannot read adds nothing.
    }
    const status = res.statusCode;
    const { code, retryable } = classifyStatus(status);
    const detail = errorMessageFromBody(text, header(res.headers, 'content-type'));
    const reason = http.STATUS_CODES[status] ?? 'HTTP error';
    // An error page titled "502 Bad Gateway" adds nothing to the status line.
    const redundant = detail === undefined || [reason, `${status} ${reason}`].includes(detail.replace(/\s+/g, ' ').trim());
    const dateHeader = header(res.headers, 'date');
    const serverNow = dateHeader === undefined ? NaN : Date.parse(dateHeader);
    // Bare wall read on purpose: an HTTP-date Retry-After is a wall value of the service; without its Date header, ours.
    const retryAfterMs = parseRetryAfter(header(res.headers, 'retry-after'), Number.isNaN(serverNow) ? Date.now() : serverNow);
    return new ApiError({
      code,
      message: `${req.method} ${url.pathname}: ${status} ${reason}${redundant ? '' : `: ${detail}`}`,
      status,
      method: req.method,
      path: url.pathname,
      retryable,
      ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
    });
  }
}

export function header(headers: Record<string, string | string[] | undefined>, name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/**
 * A body's bytes, up to `cap` (beyond it the body is abandoned and `tooLarge()` thrown), read
 * by its events rather than an async iterator: an answer is read per request, and the
 * iterator's promises and stream bookkeeping were a visible part of a request's CPU. Kept as
 * the chunks came (response-body.ts). A body that closes before its end (abandoned by the
 * deadline, a reset connection) rejects.
 */
function collect(body: Dispatcher.ResponseData['body'], cap: number, tooLarge: () => Error): Promise<ResponseBody> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    body.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > cap) {
        abandon(body);
        reject(tooLarge());
        return;
      }
      chunks.push(chunk);
    });
    let ended = false;
    body.once('end', () => {
      ended = true;
      resolve(new ResponseBody(chunks));
    });
    body.once('error', reject);
    // A close before the end: the body was cut. After the end, no error is made (one per answer, with its stack, was a visible part of a request's CPU).
    body.once('close', () => {
      if (!ended) reject(new Error('aborted'));
    });
  });
}

/** Stops reading a body; the abort error undici then emits has no one else to hear it. */
function abandon(body: Dispatcher.ResponseData['body']): void {
  body.on('error', () => undefined);
  body.destroy();
}

async function discard(body: Dispatcher.ResponseData['body']): Promise<void> {
  try {
    await body.dump({ limit: 64 * 1024 });
  } catch {
    // Nothing to keep from a redirect's body.
  }
}

function redirectTarget(location: string | string[] | undefined, base: URL): URL | undefined {
  const loc = Array.isArray(location) ? location[0] : location;
  if (!loc) return undefined;
  try {
    return new URL(loc, base);
  } catch {
    return undefined;
  }
}

function redirectError(method: HttpMethod, url: URL, status: number, target: URL | undefined, tooMany: boolean): ApiError {
  // Only origin and path: a query string may carry a signed secret.
  const where = target ? `${target.origin}${target.pathname}` : 'nowhere (no usable Location header)';
  const why = tooMany
    ? 'too many redirects'
    : method !== 'GET'
      ? 'writes are never redirected; check baseUrl'
      : target && target.origin !== url.origin
        ? 'another origin: not followed, so the access token is not sent there; check baseUrl'
        : 'not followed';
  return new ApiError({
    code: 'E_HTTP',
    message: `${method} ${url.pathname}: ${status} redirect to ${where} (${why})`,
    status,
    method,
    path: url.pathname,
    retryable: false,
  });
}

const TIMEOUT_CODES = new Set(['UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'ETIMEDOUT']);
const TLS_CODE = /^(CERT_|UNABLE_TO_|DEPTH_ZERO_SELF_SIGNED_CERT|SELF_SIGNED_CERT_IN_CHAIN|ERR_TLS_|ERR_SSL_)/;
/** What OpenSSL says when the other end answered a TLS hello with something that is not TLS (plain HTTP). */
const NOT_TLS_CODE = /^ERR_SSL_(WRONG_VERSION_NUMBER|PACKET_LENGTH_TOO_LONG|HTTP_REQUEST|UNKNOWN_PROTOCOL|RECORD_LAYER_FAILURE)$/;
const PROGRAMMING_CODES = new Set(['UND_ERR_INVALID_ARG', 'UND_ERR_NOT_SUPPORTED', 'ERR_INVALID_URL', 'UND_ERR_INVALID_RETURN_VALUE']);
/** Turns an error thrown by undici (or by a body stream) into an ApiError. */
export function transportError(e: unknown, method: string, path: string, signal?: AbortSignal, origin?: string): ApiError {
  if (e instanceof ApiError) return e;
  const err = e as { name?: unknown; code?: unknown; message?: unknown };
  const code = typeof err.code === 'string' ? err.code : undefined;
  const text = typeof err.message === 'string' ? preview(err.message, 160) : String(e);
  const base = { method, path, cause: e };
  if (signal?.aborted) {
    return new ApiError({ ...base, code: 'E_ABORTED', message: `${method} ${path}: aborted` });
  }
  if (err.name === 'NotReadableError') {
    return new ApiError({ ...base, code: 'E_FILE_CHANGED', message: `${method} ${path}: a file changed or vanished while it was being sent` });
  }
  if (code === 'UND_ERR_CONNECT_TIMEOUT' && origin !== undefined) {
    return new ApiError({ ...base, code: 'E_TIMEOUT', retryable: true, message: `${method} ${path}: cannot connect to ${origin} (timed out connecting)` });
  }
  if (code !== undefined && TIMEOUT_CODES.has(code)) {
    const what = code === 'UND_ERR_CONNECT_TIMEOUT' ? 'connecting' : code === 'UND_ERR_HEADERS_TIMEOUT' ? 'waiting for the answer' : 'reading the answer';
    return new ApiError({ ...base, code: 'E_TIMEOUT', retryable: true, message: `${method} ${path}: timed out ${what} (${code})` });
  }
  if (code !== undefined && NOT_TLS_CODE.test(code)) {
    // https:// to a port that speaks plain HTTP: the certificate is not the problem.
    const plain = origin?.replace(/^https:/, 'http:');
    return new ApiError({
      ...base,
      code: 'E_WRONG_ADDRESS',
      retryable: false,
      message:
        `${method} ${path}: the server at ${origin ?? 'baseUrl'} does not speak TLS (it answered the https:// handshake with something else, ` +
        `likely plain HTTP): check baseUrl${plain ? `: if the service is served without TLS there, use ${plain}` : ''}`,
    });
  }
  if (code !== undefined && TLS_CODE.test(code)) {
    return new ApiError({
      ...base,
      code: 'E_CONNECTION',
      retryable: false,
      message: `${method} ${path}: TLS certificate not accepted (${code}): ${text}; give the service's CA certificate if it uses a private one`,
    });
  }
  if (code !== undefined && PROGRAMMING_CODES.has(code)) {
    return new ApiError({ ...base, code: 'E_HTTP', retryable: false, message: `${method} ${path}: invalid request (${code}): ${text}` });
  }
  const problem = code === undefined ? undefined : CONNECT_PROBLEMS[code];
  if (problem !== undefined && origin !== undefined) {
    return new ApiError({ ...base, code: 'E_CONNECTION', retryable: true, message: `${method} ${path}: cannot connect to ${origin} (${problem})` });
  }
  return new ApiError({
    ...base,
    code: 'E_CONNECTION',
    retryable: true,
    message: `${method} ${path}: connection failed${code ? ` (${code})` : ''}: ${text}`,
  });
}

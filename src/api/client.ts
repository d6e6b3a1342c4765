/**
 * DatastoreClient: every operation of datastore-api.md over HTTP (DESIGN §2, §3). Requests
 * go through one Pacer (rate cap, concurrency cap, shared back-off, retries); responses are
 * decoded by decode.ts; lists are followed to their end.
 */
import type { Agent, Dispatcher } from 'undici';
import type { DatastoreApi, ListDocumentsOptions, RequestOptions } from './api.js';
import { SyncForm } from './listing-form.js';
import { ApiError, apiErrorWith, connectProblem, headerRefusedError, isApiError, unexpectedError } from './errors.js';
import { DATA_SOURCES_PATH, wrongAddressError } from './address.js';
import { disposition } from '../errors/disposition.js';
import type { ChunkRecord, DataSourceRecord, DocumentRecord, DocumentUpdate, JsonObject, UploadFile } from './records.js';
import {
  badResponse,
  decodeChunk,
  decodeDataSource,
  decodeDocument,
  decodeUploadResponse,
  errorMessageFromBody,
  preview,
  type DecodeContext,
} from './decode.js';
import { listPages, PageChain } from './list-pages.js';
import { Pacer, type PacerEvent } from './pacer.js';
import type { Clock } from '../time/clock.js';
import { createAgent, header, HttpTransport, type HttpMethod, type HttpResponse, type TimeoutOptions } from './http.js';
import { matchUploadResults, openUpload } from './upload.js';
import { DEFAULT_USER_AGENT } from './version.js';
import { pathSegment } from './ids.js';
import { silentLogger, type Logger } from '../log.js';
import type { TokenProvider } from './token-provider.js';

export interface DatastoreClientOptions {
  baseUrl: string;
  organizationId: string;
  /** The header carrying the organization id (the connection's, config/connection.ts). */
  organizationHeader: string;
  /**
   * Asked for a token before each attempt, and for a renewed one once after a 401 (the
   * request is then retried once). The client knows nothing else about credentials.
   */
  tokens: TokenProvider;
  /** Close the provider with the client (it was made for this client alone). */
  ownsTokens?: boolean | undefined;
  /** Shared by every client of the same service; default: a new one from the options below. */
  pacer?: Pacer | undefined;
  /** `queue.requestsPerSecond` (0: no cap); used only when no pacer is given. */
  requestsPerSecond: number;
  /** `queue.concurrency`: requests in flight at once (and the connections opened for them). */
  concurrency: number;
  onEvent?: ((event: PacerEvent) => void) | undefined;
  /** The pacer's time (waits, pauses, rate windows); the real clock unless given. */
  clock?: Clock | undefined;
  /** Shutdown of the default pacer: queued and waiting work rejects with E_ABORTED. */
  signal?: AbortSignal | undefined;
  /** `queue.timeouts`. */
  timeouts: Readonly<TimeoutOptions>;
  /** `queue.maxAttempts`: attempts per request, the first included. */
  maxAttempts: number;
  userAgent?: string | undefined;
  /** Debug line per request: method, path, status, ms, attempt. Never headers. */
  logger?: Logger | undefined;
  /** For tests; default: an undici Agent owned (and closed) by this client. */
  dispatcher?: Dispatcher | undefined;
  /** Extra CA certificate(s) for TLS; verification is never disabled. */
  ca?: string | Buffer | undefined;
  /** Page size asked for with `?limit=` (the service may ignore it). Default 1000. 0: send none. */
  pageSize?: number | undefined;
  /** A list longer than this many pages is an error (guards against endless paging). Default 10,000. */
  maxPages?: number | undefined;
  /** Largest response body read. Default 64 MiB. */
  maxResponseBytes?: number | undefined;
  /**
   * Told once per outage, at the first request that cannot reach the service and will be
   * retried (one-shot commands print it at once: the retries take seconds). Default: a
   * warning in the log, so the daemon says it once rather than per attempt.
   */
  onUnreachable?: ((notice: UnreachableNotice) => void) | undefined;
  /**
   * Told at each retry of a request that could not reach the service, with the attempt and
   * the wait before the next (no silent stretch). Default: a warning in the log.
   */
  onUnreachableRetry?: ((retry: UnreachableRetry) => void) | undefined;
  /**
   * false: no circuit breaker. One-shot commands turn it off, so that each request retries
   * for at most the time their notice states (an open breaker would hold it longer, silently).
   */
  breaker?: false | undefined;
}

/** A request that could not reach the service is retried. */
export interface UnreachableRetry {
  origin: string;
  problem: string;
  /** The attempt that failed (1 = the first). */
  attempt: number;
  maxAttempts: number;
  /** The wait before the next attempt. */
  delayMs: number;
}

/** The service cannot be reached and requests are being retried. */
export interface UnreachableNotice {
  /** The service's origin, e.g. http://127.0.0.1:9. */
  origin: string;
  /** Why, in the system's words: "connection refused", "host name not found"... */
  problem: string;
  /**
   * The longest one request goes on retrying: the back-off's ceilings plus, when the
   * connection timed out, the connect timeout of each attempt.
   */
  retryForMs: number;
}

export class DatastoreClient implements DatastoreApi {
  readonly pacer: Pacer;
  private readonly http: HttpTransport;
  private readonly ownAgent: Agent | undefined;
  private readonly origin: string;
  private readonly basePath: string;
  private readonly tokens: TokenProvider;
  /** The header that carries the organization id (for a 400's advice). */
  private readonly organizationHeader: string;
  private readonly ownsTokens: boolean;
  private readonly logger: Logger;
  private readonly maxAttempts: number;
  private readonly pageSize: number;
  private readonly maxPages: number;
  /** The service answered 400 to `?limit=`: lists are requested without it from then on. */
  private limitRejected = false;
  private readonly baseUrl: string;
  /** An answer proved that baseUrl leads to the service's interface: a 404 is then a missing record. */
  private addressConfirmed = false;
  /** Requests cannot reach the service: told once, until one gets an answer. */
  private unreachable = false;
  private readonly onUnreachable: (notice: UnreachableNotice) => void;
  private readonly onUnreachableRetry: (retry: UnreachableRetry) => void;
  /** Opening a connection may take this long before it fails (queue.timeouts.connectMs). */
  private readonly connectMs: number;

  constructor(opts: DatastoreClientOptions) {
    let base: URL;
    try {
      base = new URL(opts.baseUrl);
    } catch {
      throw new TypeError(`baseUrl "${opts.baseUrl}" is not a URL`);
    }
    this.origin = base.origin;
    this.basePath = base.pathname.replace(/\/+$/, '');
    this.baseUrl = opts.baseUrl.replace(/\/+$/, '');
    this.tokens = opts.tokens;
    this.organizationHeader = opts.organizationHeader;
    this.ownsTokens = opts.ownsTokens ?? false;
    this.logger = opts.logger ?? silentLogger;
    this.maxAttempts = opts.maxAttempts;
    this.pageSize = opts.pageSize ?? 1000;
    this.maxPages = opts.maxPages ?? 10_000;
    this.onUnreachable =
      opts.onUnreachable ??
      ((n) => this.logger.warn({ service: n.origin, problem: n.problem }, 'cannot reach the service; retrying until it answers (said once, until it does)'));
    this.onUnreachableRetry =
      opts.onUnreachableRetry ??
      ((r) =>
        this.logger.warn(
          { service: r.origin, problem: r.problem, attempt: r.attempt, maxAttempts: r.maxAttempts, nextDelayMs: Math.round(r.delayMs) },
          `request retried, the service cannot be reached: attempt ${r.attempt} of ${r.maxAttempts} failed; next in ${seconds(r.delayMs)}`,
        ));
    this.connectMs = opts.timeouts.connectMs;
    const { requestsPerSecond, concurrency, maxAttempts, onEvent, clock, signal, breaker } = opts;
    this.pacer = opts.pacer ?? new Pacer({ requestsPerSecond, concurrency, maxAttempts, onEvent, clock, signal, breaker });
    let dispatcher = opts.dispatcher;
    if (dispatcher === undefined) {
      // As many connections as requests may be in flight: fewer would queue them in undici, out of the pacer's sight.
      this.ownAgent = createAgent({ timeouts: opts.timeouts, ca: opts.ca, connections: Math.max(16, opts.concurrency) });
      dispatcher = this.ownAgent;
    }
    this.http = new HttpTransport({
      dispatcher,
      organizationId: opts.organizationId,
      organizationHeader: opts.organizationHeader,
      userAgent: opts.userAgent ?? DEFAULT_USER_AGENT,
      maxResponseBytes: opts.maxResponseBytes,
      // The body timeout also bounds a whole answer (a slow-loris answer never idles).
      bodyDeadlineMs: opts.timeouts.bodyMs,
    });
  }

  /** Closes the connections this client opened (not a dispatcher it was given). */
  async close(): Promise<void> {
    if (this.ownsTokens) await this.tokens.close();
    await this.ownAgent?.close();
  }

  /** Which provider, whether it holds a token and until when (never the token). */
  tokenStatus(): ReturnType<TokenProvider['status']> {
    return this.tokens.status();
  }

  // ---- data sources ----

  async createDataSource(input: { name: string; llmConnectorIds: string[] }, opts?: RequestOptions): Promise<DataSourceRecord> {
    const res = await this.send('POST', DATA_SOURCES_PATH, { json: { name: input.name, llm_connector_ids: input.llmConnectorIds }, idempotent: false, signal: opts?.signal });
    const ctx = this.ctx('POST', res, true);
    const body = this.json(res, ctx);
    const rec = body === undefined ? recordFromLocation(res, ctx) : decodeDataSource(body, ctx);
    rec.name ??= input.name;
    rec.llmConnectorIds ??= [...input.llmConnectorIds];
    return rec;
  }

  async getDataSource(dataSourceId: string, opts?: RequestOptions): Promise<DataSourceRecord> {
    const res = await this.send('GET', dsPath(dataSourceId), { signal: opts?.signal });
    const ctx = this.ctx('GET', res);
    return decodeDataSource(this.requiredJson(res, ctx), ctx, dataSourceId);
  }

  listDataSources(opts?: RequestOptions): Promise<DataSourceRecord[]> {
    return this.listAll(DATA_SOURCES_PATH, decodeDataSource, opts?.signal);
  }

  async updateDataSource(dataSourceId: string, input: { name: string }, opts?: RequestOptions): Promise<DataSourceRecord> {
    const res = await this.send('PUT', dsPath(dataSourceId), { json: { name: input.name }, signal: opts?.signal });
    const ctx = this.ctx('PUT', res);
    const body = this.updateAnswer(res, ctx);
    const rec: DataSourceRecord = isRecordLike(body) ? decodeDataSource(body, ctx, dataSourceId) : { id: dataSourceId, raw: {} };
    rec.name ??= input.name;
    return rec;
  }

  async deleteDataSource(dataSourceId: string, opts?: RequestOptions): Promise<void> {
    await this.deleteIgnoringNotFound(dsPath(dataSourceId), opts?.signal);
  }

  listAppDataSources(llmAppId: string, opts?: RequestOptions): Promise<DataSourceRecord[]> {
    return this.listAll(`/semantics/apps/${pathSegment(llmAppId, 'app')}/data-sources`, decodeDataSource, opts?.signal);
  }

  // ---- documents ----

  listDocuments(dataSourceId: string, opts?: ListDocumentsOptions): Promise<DocumentRecord[]> {
    const path = `${dsPath(dataSourceId)}/documents`;
    const bound = opts?.maxRecords === undefined ? undefined : { max: opts.maxRecords, reason: opts.boundReason };
    if (opts?.form !== 'sync') return this.listAll(path, decodeDocument, opts?.signal, opts?.keep, undefined, bound, opts?.pages);
    // Each page's records turned into their compact form as they arrive: the whole records
    // of a million documents are never all held at once. Only the records `keep` keeps are
    // compacted: those it drops (a restart's confirmed documents) are garbage at once.
    const form = new SyncForm();
    return this.listAll(path, decodeDocument, opts?.signal, opts?.keep, (rec) => form.compact(rec), bound, opts?.pages);
  }

  /**
   * Begins fetching the pages of a data source's document list now, for a listDocuments
   * begun later (ListDocumentsOptions.pages): a restart's, while its state loads. At most
   * `maxBytes` of answers are kept.
   */
  documentPages(dataSourceId: string, maxBytes: number, signal?: AbortSignal): PageChain {
    const path = `${dsPath(dataSourceId)}/documents`;
    return new PageChain((url, s) => this.send('GET', path, { url, signal: s }), this.firstListUrl(path), { maxPages: this.maxPages, maxBytes }, signal);
  }

  /** A list's first page: with our page size unless the service refused it. */
  private firstListUrl(path: string): URL {
    const u = this.url(path);
    if (!this.limitRejected && this.pageSize > 0) u.searchParams.set('limit', String(this.pageSize));
    return u;
  }

  async getDocument(dataSourceId: string, documentId: string, opts?: RequestOptions): Promise<DocumentRecord> {
    const res = await this.send('GET', docPath(dataSourceId, documentId), { signal: opts?.signal });
    const ctx = this.ctx('GET', res);
    return decodeDocument(this.requiredJson(res, ctx), ctx, documentId);
  }

  async uploadDocuments(dataSourceId: string, files: UploadFile[], opts?: RequestOptions): Promise<DocumentRecord[]> {
    if (files.length === 0) return [];
    const url = this.url(`${dsPath(dataSourceId)}/documents/upload`);
    const reqCtx: DecodeContext = { method: 'POST', path: url.pathname };
    const res = await this.exchange('POST', url.pathname, false, opts?.signal, async (token, signal) => {
      // Opened and checked right before each attempt, and streamed from those descriptors
      // only (api/upload.ts): what is sent is the file that was checked.
      const upload = await openUpload(files, reqCtx);
      try {
        return await this.http.send({ method: 'POST', url, token, stream: upload.body, signal });
      } catch (e) {
        const only = files.length === 1 ? files[0] : undefined;
        // The service refused something of this one file (400/413/415/422: src/errors.ts): name it.
        if (only && isApiError(e) && disposition(e, 'file').kind === 'refusedForFile') throw withFile(e, only.path);
        throw e;
      } finally {
        await upload.close();
      }
    });
    const ctx = this.ctx('POST', res, true);
    const body = this.json(res, ctx);
    if (body === undefined) throw badResponse(ctx, 'the upload was answered with an empty body: which documents were created is unknown');
    return matchUploadResults(files, decodeUploadResponse(body, ctx), ctx);
  }

  async updateDocument(dataSourceId: string, documentId: string, update: DocumentUpdate, opts?: RequestOptions): Promise<DocumentRecord> {
    // All three fields, always, so the result does not depend on whether the service keeps
    // or clears absent ones; a null is left out (DESIGN §3).
    const json: JsonObject = {};
    if (update.name != null) json.name = update.name;
    if (update.url != null) json.url = update.url;
    if (update.metadata != null) json.metadata = update.metadata;
    const res = await this.send('PUT', docPath(dataSourceId, documentId), { json, signal: opts?.signal });
    const ctx = this.ctx('PUT', res);
    const body = this.updateAnswer(res, ctx);
    const rec: DocumentRecord = isRecordLike(body) ? decodeDocument(body, ctx, documentId) : { id: documentId, raw: {} };
    if (rec.name === undefined && update.name != null) rec.name = update.name;
    if (rec.url === undefined && update.url != null) rec.url = update.url;
    if (rec.metadata === undefined && update.metadata != null) rec.metadata = update.metadata;
    return rec;
  }

  async deleteDocument(dataSourceId: string, documentId: string, opts?: RequestOptions): Promise<void> {
    await this.deleteIgnoringNotFound(docPath(dataSourceId, documentId), opts?.signal);
  }

  // ---- chunks ----

  async listChunks(dataSourceId: string, documentId: string, opts?: RequestOptions): Promise<ChunkRecord[]> {
    const chunks = await this.listAll(`${docPath(dataSourceId, documentId)}/chunks`, decodeChunk, opts?.signal);
    for (const c of chunks) c.documentId ??= documentId;
    return chunks;
  }

  async getChunk(documentId: string, chunkId: string, opts?: RequestOptions): Promise<ChunkRecord> {
    const res = await this.send('GET', `/datastore/v1/documents/${pathSegment(documentId, 'document')}/chunks/${pathSegment(chunkId, 'chunk')}`, { signal: opts?.signal });
    const ctx = this.ctx('GET', res);
    const rec = decodeChunk(this.requiredJson(res, ctx), ctx, chunkId);
    rec.documentId ??= documentId;
    return rec;
  }

  // ---- plumbing ----

  private url(path: string): URL {
    return new URL(this.basePath + path, this.origin);
  }

  private ctx(method: HttpMethod, res: HttpResponse, mayHaveActed = false): DecodeContext {
    return { method, path: res.url.pathname, status: res.status, mayHaveActed };
  }

  private async send(
    method: HttpMethod,
    path: string,
    opts: { json?: unknown; idempotent?: boolean; signal?: AbortSignal | undefined; url?: URL },
  ): Promise<HttpResponse> {
    const url = opts.url ?? this.url(path);
    return this.exchange(method, url.pathname, opts.idempotent ?? true, opts.signal, (token, signal) =>
      this.http.send({ method, url, token, signal, ...(opts.json === undefined ? {} : { json: opts.json }) }),
    );
  }

  /**
   * One request through the pacer, with the one forced token renewal a 401 allows. An
   * upload is retried too: a 401 is the service refusing before acting, and the form is
   * rebuilt from the files for the new attempt (no half-sent body is ever replayed).
   * Every error leaving here is an ApiError whose message holds no token.
   */
  private async exchange(
    method: HttpMethod,
    path: string,
    idempotent: boolean,
    signal: AbortSignal | undefined,
    sendOnce: (token: string, signal: AbortSignal) => Promise<HttpResponse>,
  ): Promise<HttpResponse> {
    let renewed = false;
    for (;;) {
      let usedToken = '';
      try {
        const onRetry = (r: { attempt: number; maxAttempts: number; delayMs: number; error: ApiError }): void => {
          const problem = r.error.status === undefined ? connectProblem(r.error) : undefined;
          if (problem !== undefined) this.onUnreachableRetry({ origin: this.origin, problem, attempt: r.attempt, maxAttempts: r.maxAttempts, delayMs: r.delayMs });
        };
        return await this.pacer.run({ method, path, idempotent, signal, maxAttempts: this.maxAttempts, onRetry }, async ({ attempt, signal: s }) => {
          usedToken = await this.accessToken(s, method, path);
          const started = performance.now();
          try {
            const res = await sendOnce(usedToken, s);
            this.logger.debug({ method, path, status: res.status, ms: Math.round(performance.now() - started), attempt }, 'service request');
            this.addressConfirmed = true;
            this.answered();
            return res;
          } catch (e) {
            const err = isApiError(e) ? e : unexpectedError(e, method, path);
            this.logger.debug(
              { method, path, status: err.status, code: err.code, ms: Math.round(performance.now() - started), attempt },
              'service request failed',
            );
            if (err.status !== undefined) this.answered();
            else this.unreachableAt(err, attempt);
            throw err;
          }
        });
      } catch (e) {
        if (isApiError(e) && e.status === 401 && !renewed && usedToken !== '') {
          renewed = true;
          const fresh = await this.renewAfter401(usedToken, signal, method, path);
          if (fresh !== undefined) {
            this.logger.info({ method, path, provider: this.tokens.kind }, 'the service refused the token; retrying once with a renewed one');
            continue;
          }
        }
        throw this.scrub(await this.explain(e, signal), usedToken);
      }
    }
  }

  /** The service answered (any status): it is reachable, and its next outage is told again. */
  private answered(): void {
    if (this.unreachable) {
      this.unreachable = false;
      this.logger.info({ service: this.origin }, 'the service answers again');
    }
  }

  /** A request could not reach the service: told once, and only when it will be retried. */
  private unreachableAt(err: ApiError, attempt: number): void {
    const problem = connectProblem(err);
    const maxAttempts = this.maxAttempts;
    if (problem === undefined || this.unreachable || !err.retryable || attempt >= maxAttempts) return;
    this.unreachable = true;
    // A refused connection fails at once; one that times out takes connectMs per attempt.
    const attemptMs = err.code === 'E_TIMEOUT' || (err.cause as { code?: unknown } | undefined)?.code === 'UND_ERR_CONNECT_TIMEOUT' ? this.connectMs : 0;
    this.onUnreachable({ origin: this.origin, problem, retryForMs: this.pacer.retryWindowMs(maxAttempts) + maxAttempts * attemptMs });
  }

  /**
   * What a failure means for the operator: a refused token names where it came from; a 404
   * for a route the service does not have (not a missing record) names baseUrl and the fix.
   */
  private async explain(e: unknown, signal: AbortSignal | undefined): Promise<unknown> {
    if (!isApiError(e)) return e;
    if (e.status === 401 || e.status === 403) return withTokenSource(e, this.tokens.description);
    // Our GETs carry nothing but the headers and the paging we build: a 400 is about a header.
    if (e.status === 400 && e.method === 'GET') return headerRefusedError(e, this.organizationHeader);
    if (e.code === 'E_NOT_FOUND' && (await this.routeMissing(e.path, signal))) return wrongAddressError(this.baseUrl, e);
    return e;
  }

  /**
   * Whether a 404 for `path` is the service not having the route: the list of data sources
   * exists for every organization, so a 404 for it (asked here when not already the path
   * that failed) means baseUrl leads elsewhere. One question per client, until an answer
   * confirms the address.
   */
  private async routeMissing(path: string | undefined, signal: AbortSignal | undefined): Promise<boolean> {
    if (this.addressConfirmed) return false;
    if (path === this.url(DATA_SOURCES_PATH).pathname) return true;
    const probe = this.url(DATA_SOURCES_PATH);
    probe.searchParams.set('limit', '1');
    try {
      await this.send('GET', DATA_SOURCES_PATH, { signal, url: probe });
      return false;
    } catch (e) {
      return isApiError(e) && e.code === 'E_WRONG_ADDRESS';
    }
  }

  /**
   * The provider's token. Its failures are final for this request (the provider has retried
   * and backs off on its own) and certain: nothing was sent, so never ambiguous.
   */
  private async accessToken(signal: AbortSignal, method: string, path: string): Promise<string> {
    try {
      return await this.tokens.token(signal);
    } catch (e) {
      if (isApiError(e) && e.code === 'E_AUTH_REFUSED') throw e;
      const inner = isApiError(e) ? e : undefined;
      throw new ApiError({
        code: inner?.code ?? 'E_CONNECTION',
        message: `${method} ${path}: no access token: ${e instanceof Error ? e.message : String(e)}`,
        method,
        path,
        retryable: false,
        cause: e,
      });
    }
  }

  private async renewAfter401(rejected: string, signal: AbortSignal | undefined, method: string, path: string): Promise<string | undefined> {
    try {
      return await this.tokens.renewAfterRejection(rejected, signal);
    } catch (e) {
      // Refused credentials say more than the 401 did.
      if (isApiError(e) && e.code === 'E_AUTH_REFUSED') throw e;
      this.logger.warn({ method, path, err: e instanceof Error ? e.message : String(e) }, 'could not renew the token after a 401');
      return undefined;
    }
  }

  /** The token never appears in a message, even if the service echoed it in an error body. */
  private scrub(e: unknown, usedToken: string): unknown {
    if (!(e instanceof Error)) return e;
    if (usedToken.length >= 4 && e.message.includes(usedToken)) e.message = e.message.split(usedToken).join('[redacted]');
    return e;
  }

  private async deleteIgnoringNotFound(path: string, signal: AbortSignal | undefined): Promise<void> {
    try {
      await this.send('DELETE', path, { signal });
    } catch (e) {
      if (isApiError(e) && e.status === 404) return; // already gone
      throw e;
    }
  }

  /** The parsed JSON body; undefined for an empty one (204, or 200 with nothing). */
  private json(res: HttpResponse, ctx: DecodeContext): unknown {
    let text = res.body.text();
    if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    if (text.trim() === '') return undefined;
    const ct = (res.contentType ?? '').toLowerCase();
    const looksJson = /^\s*[[{"]/.test(text) || /^\s*(true|false|null|-?\d)/.test(text);
    if (ct.includes('json') || (looksJson && !ct.includes('html'))) {
      try {
        return JSON.parse(text) as unknown;
      } catch {
        throw badResponse(ctx, `the answer is not valid JSON (content-type ${res.contentType ?? 'none'}): ${preview(text, 120)}`);
      }
    }
    const summary = errorMessageFromBody(text, res.contentType);
    throw badResponse(ctx, `expected JSON, received ${res.contentType ?? 'a body without content-type'}${summary ? `: ${summary}` : ''}`);
  }

  /**
   * The answer to an update: success is any 2xx (DESIGN §3), so a plain-text "OK" is a
   * success without a record (the request's fields describe the result). An HTML page is
   * still refused: a 200 page from a login portal is not the service having done anything.
   */
  private updateAnswer(res: HttpResponse, ctx: DecodeContext): unknown {
    try {
      return this.json(res, ctx);
    } catch (e) {
      if (isApiError(e) && e.code === 'E_BAD_RESPONSE' && !/html/i.test(res.contentType ?? '') && !/^\s*</.test(res.body.text().slice(0, 64))) {
        this.logger.debug({ method: ctx.method, path: ctx.path, contentType: res.contentType }, 'update answered without JSON; taken as done');
        return undefined;
      }
      throw e;
    }
  }

  private requiredJson(res: HttpResponse, ctx: DecodeContext): unknown {
    const body = this.json(res, ctx);
    if (body === undefined) throw badResponse(ctx, 'expected a record, received an empty body');
    return body;
  }

  /** Fetches every page of a list (list-pages.ts: one page ahead, loop and length guards). */
  private listAll<R extends { id: string }>(
    path: string,
    decode: (value: unknown, ctx: DecodeContext) => R,
    signal: AbortSignal | undefined,
    /** A record it answers false for is not collected (ListDocumentsOptions.keep). */
    keep?: (rec: R) => boolean,
    /** Applied to each record collected, after `keep` (the sync form). */
    finish?: (rec: R) => R,
    /** The most distinct records the listing may hold (ListDocumentsOptions.maxRecords). */
    bound?: { max: number; reason?: string | undefined },
    /** The first pages, fetched before (ListDocumentsOptions.pages). */
    pages?: PageChain,
  ): Promise<R[]> {
    return listPages({
      firstUrl: () => this.firstListUrl(path),
      pages,
      get: (url, s) => this.send('GET', path, { url, signal: s }),
      read: (res) => {
        const ctx = this.ctx('GET', res);
        return { body: this.json(res, ctx), ctx };
      },
      decode,
      keep,
      finish,
      signal,
      maxPages: this.maxPages,
      maxRecords: bound,
      onLimitRefused: () => {
        this.limitRejected = true;
        this.logger.debug({ path }, 'the service refused ?limit=; listing without it');
      },
    });
  }
}

/**
 * An update answered with something that is not a record (nothing, `true`, "updated"):
 * the request's own fields describe the result.
 */
function isRecordLike(body: unknown): boolean {
  return typeof body === 'object' && body !== null;
}

/** A create answered with an empty body: the id may still be in a Location header. */
function recordFromLocation(res: HttpResponse, ctx: DecodeContext): DataSourceRecord {
  const loc = header(res.headers, 'location');
  const id = loc ? decodeURIComponent(loc.replace(/[?#].*$/, '').replace(/\/+$/, '').split('/').pop() ?? '') : '';
  if (id === '') throw badResponse(ctx, 'the data source was created but the answer has neither a body nor a Location header: its id is unknown');
  return { id, raw: {} };
}

const dsPath = (dataSourceId: string): string => `${DATA_SOURCES_PATH}/${pathSegment(dataSourceId, 'data source')}`;
const docPath = (dataSourceId: string, documentId: string): string => `${dsPath(dataSourceId)}/documents/${pathSegment(documentId, 'document')}`;

function withFile(e: ApiError, file: string): ApiError {
  return apiErrorWith(e, { message: `${e.message} (file ${file})`, file });
}

/** A 401/403, naming where the refused token came from (never the token). */
function withTokenSource(e: ApiError, tokenSource: string): ApiError {
  if (e.tokenSource !== undefined) return e;
  return apiErrorWith(e, { tokenSource });
}

/** A wait as the operator reads it: "1.2 s". */
function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}

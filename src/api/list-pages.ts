/**
 * Following a list to its end (DESIGN §3 paging), one page ahead (issue 16). The pages of
 * a list come one after the other: the next page's cursor or link is in this page's
 * answer. But once this page is parsed and the next one's URL known, the next request can
 * go out while this page's records are decoded and kept: the client's CPU per page (the
 * records' decoding, `keep`, the sync form's compaction) then runs during the next
 * request's round trip instead of before it. At most
 * one request ahead, and everything else as when the pages were fetched in turn:
 *
 * - the errors come in the same order: a bad record of this page (or `keep` throwing)
 *   before a failure of the next page; a loop, the page bound or a bad next link only once
 *   this page's records are decoded (no request is sent ahead then);
 * - a prefetched page that failed (after the pacer's retries, the 401 renewal: the same
 *   `get` as any page) surfaces when its turn comes, as it would have then;
 * - when the listing ends early (an error while decoding, the caller's abort), the request
 *   ahead is aborted and waited for: nothing outlives the listing, no rejection is left
 *   unhandled;
 * - the caller's signal aborts the request ahead too (E_ABORTED, as a request in turn);
 * - the `?limit=` fallback concerns page 1, which is never fetched ahead;
 * - the next page can go out earlier still, before this page's answer is parsed, when the
 *   answer's last bytes name it (paging.ts peekNextPage: the cursor most services put last).
 *   That is a guess: the parsed answer decides, and a guess it does not confirm is aborted
 *   and waited for before this page's records are decoded. The parse of a page of 1,000
 *   documents (~2.5 ms) then runs during the next request's round trip, not before it.
 */
import { ApiError, isApiError } from './errors.js';
import { badResponse, listItems, preview, type DecodeContext } from './decode.js';
import type { HttpResponse } from './http.js';
import { nextPage, nextPageUrl, PEEK_BYTES, peekNextPage } from './paging.js';
import { SeenIds } from './seen-ids.js';
import { yieldNow } from '../time/yield-now.js';

export interface ListPagesOptions<R extends { id: string }> {
  /** The first page's URL (asked again after the service refused `?limit=`). */
  firstUrl: () => URL;
  /** One GET through the client's pacer (rate, retries, token renewal); rejects with an ApiError. */
  get: (url: URL, signal: AbortSignal | undefined) => Promise<HttpResponse>;
  /** The answer's JSON (undefined for an empty body) and where it came from, for errors. */
  read: (res: HttpResponse) => { body: unknown; ctx: DecodeContext };
  decode: (value: unknown, ctx: DecodeContext) => R;
  /** A record it answers false for is not collected (ListDocumentsOptions.keep). */
  keep?: ((rec: R) => boolean) | undefined;
  /** Applied to each record collected, after `keep` (the sync form's compaction). */
  finish?: ((rec: R) => R) | undefined;
  signal?: AbortSignal | undefined;
  /** A list longer than this many pages is an error (endless paging). */
  maxPages: number;
  /** A list of more distinct records than `max` is an error (E_LIST_TOO_LONG), checked page by page. */
  maxRecords?: { max: number; reason?: string | undefined } | undefined;
  /** Page 1 with `?limit=` was answered E_BAD_REQUEST: the caller stops sending it (firstUrl then has none). */
  onLimitRefused?: (() => void) | undefined;
  /** Pages fetched before the listing began (PageChain): taken in their order while they are the pages it asks for. */
  pages?: PageChain | undefined;
}

interface Ahead {
  response: Promise<HttpResponse>;
  cancel: () => void;
}

/** Every record of the list, in order, each distinct document once (seen-ids.ts). */
export async function listPages<R extends { id: string }>(opts: ListPagesOptions<R>): Promise<R[]> {
  const { signal, keep, finish, pages: chain } = opts;
  let url = opts.firstUrl();
  const seen = new Set<string>([url.toString()]);
  const out: R[] = [];
  const ids = new SeenIds();
  let ahead: Ahead | undefined;
  // The caller's abort reaches the chain's request on its way as it reaches a request ahead.
  const dropChain = (): void => void chain?.drop();
  if (chain !== undefined) signal?.addEventListener('abort', dropChain, { once: true });
  try {
    for (let page = 1; ; page++) {
      let res: HttpResponse;
      try {
        if (ahead !== undefined) {
          const a = ahead;
          ahead = undefined;
          res = await a.response;
        } else {
          res = await (chain?.take(url) ?? opts.get(url, signal));
        }
      } catch (e) {
        // A service that refuses our page size: ask again without one (the caller remembers).
        if (page === 1 && url.searchParams.has('limit') && isApiError(e) && (e.code === 'E_BAD_REQUEST' || e.code === 'E_HEADER_REFUSED') && opts.onLimitRefused) {
          opts.onLimitRefused();
          url = opts.firstUrl();
          seen.add(url.toString());
          page = 0;
          continue;
        }
        throw e;
      }
      // A guess at the next page from the answer's last bytes (paging.ts peekNextPage) goes
      // out before the answer is parsed; it is kept only if the parsed answer names it.
      const guess = page < opts.maxPages ? guessNext(res, seen) : undefined;
      if (guess !== undefined && !chain?.has(guess)) {
        // The chain has not this page: it has ended, or it waits for room it never gets now.
        if (chain?.active) await chain.drop();
        ahead = fetchAhead(opts.get, guess, signal);
        await letRequestLeave();
      }
      const { body, ctx } = opts.read(res);
      if (body === undefined) break; // an empty answer is an empty list
      const items = listItems(body, ctx);
      if (items.length === 0) break;

      // The next page first, so that its request is on its way while this page is decoded.
      // What would stop the listing is raised after this page's records, as before.
      let nextUrl: URL | undefined;
      let stop: Error | undefined;
      /** The page to have on its way while this one is decoded. */
      let want: URL | undefined;
      const next = nextPage(body, items.length, res.url);
      if (next !== undefined) {
        try {
          nextUrl = nextPageUrl(next, res.url, ctx);
          const key = nextUrl.toString();
          if (seen.has(key)) {
            stop = badResponse(ctx, `paging loops: the next page (${preview(nextUrl.pathname + nextUrl.search, 160)}) was already fetched`);
          } else if (page >= opts.maxPages) {
            stop = badResponse(ctx, `the list has more than ${opts.maxPages} pages; stopped`);
          } else {
            seen.add(key);
            want = nextUrl;
          }
        } catch (e) {
          stop = e as Error; // nextPageUrl's ApiError (a bad or foreign link)
        }
      }
      // The guess stands when it is that page; otherwise it is aborted (before this page's
      // records), and the page asked for now.
      const guessed = guess !== undefined && want?.toString() === guess.toString();
      if (guess !== undefined && !guessed) {
        await dropAhead(ahead);
        ahead = undefined;
        await chain?.drop();
      }
      if (want !== undefined && !guessed) {
        ahead = fetchAhead(opts.get, want, signal);
        await letRequestLeave();
      }

      for (let i = 0; i < items.length; i++) {
        if ((ahead !== undefined || chain?.active === true) && i > 0 && i % SLICE === 0) await yieldNow();
        const rec = opts.decode(items[i], ctx);
        if (!ids.add(rec.id)) continue; // a document the paging repeated (seen-ids.ts)
        if (opts.maxRecords !== undefined && ids.size > opts.maxRecords.max) throw listTooLong(opts.maxRecords, ctx, page);
        if (keep === undefined || keep(rec)) out.push(finish === undefined ? rec : finish(rec));
      }
      if (stop !== undefined) throw stop;
      if (nextUrl === undefined) break;
      url = nextUrl;
    }
  } finally {
    // The listing ends early (an error while decoding): the request ahead is not needed.
    signal?.removeEventListener('abort', dropChain);
    await dropAhead(ahead);
    await chain?.drop();
  }
  return out;
}

/** A page of a PageChain: asked for, its answer once come, and whether the listing took it. */
interface Kept {
  url: string;
  response: Promise<HttpResponse>;
  body: HttpResponse['body'] | undefined;
  taken: boolean;
}

/**
 * A list's pages fetched before its listing begins: a restart's, while the state it is
 * checked against loads (docs/reliability.md, "The listing begun while the state loads").
 * Each next page is the one the last answer's final bytes name (peekNextPage), as the
 * listing's own guesses are, one request at a time, until the list ends or the chain is
 * dropped; at most `maxBytes` of answers are held that the listing has not taken, and the
 * chain goes on as it takes them. The listing takes them in order while each is the page it
 * asks for: the parsed answer still decides, and a page the chain does not have, or a guess
 * the answer did not confirm, drops the rest. So a listing that begins behind the chain
 * (the pages of the state's load) catches up without the service waiting for it, and then
 * the chain is its request ahead. A page that failed (after the client's retries) fails the
 * listing when its turn comes, as its own request would have. Nothing of it outlives drop().
 */
export class PageChain {
  private readonly kept: Kept[] = [];
  private readonly ctrl = new AbortController();
  private readonly running: Promise<void>;
  /** Bytes of the answers come that the listing has not taken. */
  private held = 0;
  private ended = false;
  private finished = false;
  /** Wakes the chain waiting for room under maxBytes. */
  private wake: (() => void) | undefined;
  /** Pages fetched, for the log. */
  fetched = 0;

  constructor(get: ListPagesOptions<{ id: string }>['get'], first: URL, limits: { maxPages: number; maxBytes: number }, signal?: AbortSignal) {
    this.running = this.run(get, first, limits, signal === undefined ? this.ctrl.signal : AbortSignal.any([signal, this.ctrl.signal]));
  }

  /** Still fetching (or waiting for room to): the listing lets its requests go out while it decodes. */
  get active(): boolean {
    return !this.ended && !this.finished;
  }

  private async run(get: ListPagesOptions<{ id: string }>['get'], first: URL, limits: { maxPages: number; maxBytes: number }, signal: AbortSignal): Promise<void> {
    const seen = new Set<string>();
    let url: URL | undefined = first;
    /** The last page come, made one buffer once the next request is on its way when still not taken (ResponseBody.compact: a restart's state loads meanwhile). */
    let last: Kept | undefined;
    /**
     * Hands the last answer to whoever takes it, once the chain has asked for the page after
     * it (or stopped): a listing that has caught up then finds that page on its way (has()),
     * and does not ask for it a second time.
     */
    let handOver: (() => void) | undefined;
    try {
      while (url !== undefined && !this.ended && seen.size < limits.maxPages) {
        if (this.held >= limits.maxBytes) {
          handOver?.();
          handOver = undefined;
          await new Promise<void>((resolve) => (this.wake = resolve));
          continue;
        }
        seen.add(url.toString());
        const raw = get(url, signal);
        raw.catch(() => undefined); // its rejection reaches whoever takes it
        let hand!: (answer: Promise<HttpResponse>) => void;
        const response = new Promise<HttpResponse>((resolve) => (hand = resolve));
        response.catch(() => undefined);
        const entry: Kept = { url: url.toString(), response, body: undefined, taken: false };
        this.kept.push(entry);
        this.fetched++;
        // The request leaves (undici writes it in a later turn) before the answer before it
        // is parsed and decoded, as the listing's own request ahead does.
        await letRequestLeave();
        handOver?.();
        handOver = undefined;
        if (last?.taken === false) last.body?.compact();
        const res = await raw.catch(() => undefined);
        handOver = () => hand(raw);
        if (res === undefined) return;
        entry.body = res.body;
        last = entry;
        if (!entry.taken) this.held += res.body.length;
        url = guessNext(res, seen);
      }
    } finally {
      this.finished = true;
      handOver?.();
      if (last?.taken === false && !this.ended) last.body?.compact();
    }
  }

  /** The kept answer for `url` when it is the next page kept; else undefined, and the rest is dropped. */
  take(url: URL): Promise<HttpResponse> | undefined {
    const next = this.kept.shift();
    if (next !== undefined && next.url === url.toString()) {
      next.taken = true;
      this.held -= next.body?.length ?? 0;
      this.wake?.();
      this.wake = undefined;
      return next.response;
    }
    void this.drop();
    return undefined;
  }

  /** The next page kept (or on its way) is `url`. */
  has(url: URL): boolean {
    return this.kept[0]?.url === url.toString();
  }

  /** Stops fetching, aborts what is in flight and forgets what was kept; resolves once nothing of it is left. */
  async drop(): Promise<void> {
    this.ended = true;
    this.ctrl.abort();
    this.wake?.();
    this.wake = undefined;
    const left = this.kept.splice(0).map((k) => k.response.catch(() => undefined));
    await Promise.all([this.running, ...left]);
  }
}

/** The next page as the answer's last bytes name it, unless already fetched (a loop: not guessed). */
function guessNext(res: HttpResponse, seen: ReadonlySet<string>): URL | undefined {
  const peeked = peekNextPage(res.body.tail(PEEK_BYTES));
  if (peeked === undefined) return undefined;
  try {
    const url = nextPageUrl(peeked, res.url, { method: 'GET', path: res.url.pathname, status: res.status });
    return seen.has(url.toString()) ? undefined : url;
  } catch {
    return undefined; // a foreign link: the parsed answer says so
  }
}

/** A request ahead that is not needed: aborted, and waited for (nothing of it outlives the listing). */
async function dropAhead(ahead: Ahead | undefined): Promise<void> {
  if (ahead === undefined) return;
  ahead.cancel();
  await ahead.response.then(
    () => undefined,
    () => undefined,
  );
}

/**
 * The request ahead goes out only once this code lets go: its way through the pacer and the
 * token to undici is promises, and undici writes a request on a keep-alive connection in the
 * event loop's next check phase (after it looked for a close of the idle socket), measured:
 * without these two turns the request left after this page's records, not while they were
 * decoded. The records are then decoded in slices with a turn between them: whatever undici
 * still needs (and the rest of the program) runs.
 */
async function letRequestLeave(): Promise<void> {
  await yieldNow();
  await yieldNow();
}

/** The listing holds more documents than its caller's bound: it stops before holding more. */
function listTooLong(bound: { max: number; reason?: string | undefined }, ctx: DecodeContext, page: number): ApiError {
  return new ApiError({
    code: 'E_LIST_TOO_LONG',
    message: `${ctx.method} ${ctx.path}: the list holds more than ${bound.max} documents${bound.reason ? ` (the bound: ${bound.reason})` : ''}, reached on page ${page}; stopped before holding more. Nothing was decided from it (no deletion); if the data source really holds that many, say so to the service's owner or map it afresh`,
    method: ctx.method,
    path: ctx.path,
    retryable: false,
  });
}

/** Records decoded between two turns of the event loop while a request is ahead (~2–3 ms). */
const SLICE = 250;

/** The next page's request, started now; its rejection is handled when it is awaited (or dropped). */
function fetchAhead(get: ListPagesOptions<{ id: string }>['get'], url: URL, signal: AbortSignal | undefined): Ahead {
  const ctrl = new AbortController();
  const response = get(url, signal === undefined ? ctrl.signal : AbortSignal.any([signal, ctrl.signal]));
  // Not unhandled while this page is decoded: whoever awaits it later still gets the rejection.
  response.catch(() => undefined);
  return { response, cancel: () => ctrl.abort() };
}

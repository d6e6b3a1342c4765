/**
 * The list's pages one ahead (src/api/list-pages.ts): the next page's request leaves
 * before this page's records are decoded, and everything else behaves as when the pages
 * were fetched in turn. The requests are a fake `get` whose answers the test hands out,
 * so what is in flight at each moment is decided here, not by timing.
 */
import { describe, expect, it } from 'vitest';
import { ApiError } from '../../../src/api/errors.js';
import { decodeDocument, type DecodeContext } from '../../../src/api/decode.js';
import type { HttpResponse } from '../../../src/api/http.js';
import { ResponseBody } from '../../../src/api/response-body.js';
import { listPages, PageChain, type ListPagesOptions } from '../../../src/api/list-pages.js';
import { peekNextPage } from '../../../src/api/paging.js';
import type { DocumentRecord } from '../../../src/api/records.js';
import { rejectionOf } from '../../helpers/rejection.js';

const BASE = 'https://svc.test/datastore/v1/data-sources/ds/documents';

interface Request {
  url: string;
  signal: AbortSignal | undefined;
  settled: boolean;
}

/**
 * A service answering from `pages` by the request's URL (path and query after the base):
 * a body, an ApiError to reject with, or 'hold' (pending until aborted). Records what was
 * asked, and what the listing did (events), in order.
 */
function service(pages: Record<string, unknown>) {
  const requests: Request[] = [];
  const events: string[] = [];
  /** The most requests not yet answered when another one was asked. */
  let inFlightAtCall = 0;
  const get = (url: URL, signal: AbortSignal | undefined): Promise<HttpResponse> => {
    const key = url.toString().slice(BASE.length);
    inFlightAtCall = Math.max(inFlightAtCall, requests.filter((q) => !q.settled).length);
    const r: Request = { url: key, signal, settled: false };
    requests.push(r);
    events.push(`get ${key}`);
    const answer = pages[key];
    const p = new Promise<HttpResponse>((resolve, reject) => {
      const onAbort = (): void => reject(new ApiError({ code: 'E_ABORTED', message: `GET ${key}: aborted` }));
      if (signal?.aborted) return onAbort();
      signal?.addEventListener('abort', onAbort, { once: true });
      // As through the pacer, the token and undici: the request reaches undici a few promise
      // steps after the call, and undici writes it on a keep-alive connection in the next
      // check phase (setImmediate, after a look for the idle socket's close); answered after.
      void Promise.resolve()
        .then(() => undefined)
        .then(() => {
          setImmediate(() => {
            events.push(`sent ${key}`);
            if (answer === 'hold') return;
            if (answer instanceof ApiError) return reject(answer);
            if (answer === undefined) return reject(new Error(`unexpected request ${key}`));
            resolve({ status: 200, headers: {}, contentType: 'application/json', body: ResponseBody.of(JSON.stringify(answer)), url });
          });
        });
    });
    p.then(
      () => (r.settled = true),
      () => (r.settled = true),
    );
    return p;
  };
  const read = (res: HttpResponse): { body: unknown; ctx: DecodeContext } => ({
    body: res.body.length === 0 ? undefined : (JSON.parse(res.body.text()) as unknown),
    ctx: { method: 'GET', path: res.url.pathname, status: res.status },
  });
  return { requests, events, get, read, inFlightAtCall: () => inFlightAtCall };
}

function options(svc: ReturnType<typeof service>, extra: Partial<ListPagesOptions<DocumentRecord>> = {}): ListPagesOptions<DocumentRecord> {
  return {
    firstUrl: () => new URL(`${BASE}?limit=2`),
    get: svc.get,
    read: svc.read,
    decode: (v, ctx) => {
      const rec = decodeDocument(v, ctx);
      svc.events.push(`decode ${rec.id}`);
      return rec;
    },
    maxPages: 100,
    ...extra,
  };
}

const docs = (...ids: string[]): Array<{ id: string }> => ids.map((id) => ({ id }));

describe('listPages: one page ahead', () => {
  it('asks for the next page before decoding this one, and returns every record in order', async () => {
    const svc = service({
      '?limit=2': { items: docs('a', 'b'), next_cursor: 'c2' },
      '?limit=2&cursor=c2': { items: docs('c', 'd'), next_cursor: 'c3' },
      '?limit=2&cursor=c3': { items: docs('e'), next_cursor: null },
    });
    const out = await listPages(options(svc));
    expect(out.map((d) => d.id)).toEqual(['a', 'b', 'c', 'd', 'e']);
    // Each request ahead is on the wire before the records of the page before are decoded.
    expect(svc.events).toEqual([
      'get ?limit=2',
      'sent ?limit=2',
      'get ?limit=2&cursor=c2',
      'sent ?limit=2&cursor=c2',
      'decode a',
      'decode b',
      'get ?limit=2&cursor=c3',
      'sent ?limit=2&cursor=c3',
      'decode c',
      'decode d',
      'decode e',
    ]);
  });

  it('keeps at most one request ahead, and each page is asked once', async () => {
    const svc = service({
      '?limit=2': { items: docs('a', 'b'), next: `${BASE}?page=2` },
      '?page=2': { items: docs('c', 'd'), next: `${BASE}?page=3` },
      '?page=3': { items: docs('e', 'f'), next: null },
    });
    const out = await listPages(options(svc));
    expect(out).toHaveLength(6);
    expect(svc.requests.map((r) => r.url)).toEqual(['?limit=2', '?page=2', '?page=3']);
    // A page is asked for only once the one before was answered.
    expect(svc.inFlightAtCall()).toBe(0);
  });

  it('drops a document the paging repeats, before `keep` sees it; `finish` only for what is kept', async () => {
    const svc = service({
      '?limit=2': { items: docs('a', 'b'), offset: 0, total: 5 },
      '?limit=2&offset=2': { items: docs('b', 'c'), offset: 2, total: 5 },
      '?limit=2&offset=4': { items: docs('a', 'd'), offset: 4, total: 5 },
    });
    const kept: string[] = [];
    const finished: string[] = [];
    const out = await listPages(
      options(svc, {
        keep: (d) => {
          kept.push(d.id);
          return d.id !== 'c';
        },
        finish: (d) => {
          finished.push(d.id);
          return { ...d, name: `n-${d.id}` };
        },
      }),
    );
    expect(kept).toEqual(['a', 'b', 'c', 'd']);
    expect(finished).toEqual(['a', 'b', 'd']);
    expect(out.map((d) => d.name)).toEqual(['n-a', 'n-b', 'n-d']);
  });

  it('a prefetched page that failed fails the listing once this page is decoded and kept, as in turn', async () => {
    const failure = new ApiError({ code: 'E_SERVER', message: 'GET page 2: 500', status: 500 });
    const svc = service({
      '?limit=2': { items: docs('a', 'b'), next_cursor: 'c2' },
      '?limit=2&cursor=c2': failure,
    });
    const kept: string[] = [];
    const err = await rejectionOf(
      listPages(
        options(svc, {
          keep: (d) => {
            kept.push(d.id);
            return true;
          },
        }),
      ),
      ApiError,
    );
    expect(err).toBe(failure);
    expect(kept).toEqual(['a', 'b']);
  });

  it('a prefetched page refused with 400 is that error, not the ?limit= fallback (page 1 only)', async () => {
    const refused = new ApiError({ code: 'E_BAD_REQUEST', message: 'GET: 400', status: 400 });
    const svc = service({ '?limit=2': { items: docs('a'), next_cursor: 'c2' }, '?limit=2&cursor=c2': refused });
    let fallbacks = 0;
    const err = await rejectionOf(listPages(options(svc, { onLimitRefused: () => fallbacks++ })), ApiError);
    expect(err).toBe(refused);
    expect(fallbacks).toBe(0);
  });

  it('a bad record of this page wins over the page ahead, which is aborted and waited for', async () => {
    const svc = service({
      '?limit=2': { items: [{ id: 'a' }, { name: 'no id' }], next_cursor: 'c2' },
      '?limit=2&cursor=c2': 'hold',
    });
    const err = await rejectionOf(listPages(options(svc)), ApiError);
    expect(err.code).toBe('E_BAD_RESPONSE');
    expect(err.message).toMatch(/has no id/);
    const ahead = svc.requests[1]!;
    expect(ahead.url).toBe('?limit=2&cursor=c2');
    expect(ahead.signal?.aborted).toBe(true);
    // Settled before the listing was: nothing of it outlives the listing.
    expect(ahead.settled).toBe(true);
  });

  it('`keep` throwing ends the listing with its error; the page ahead is aborted', async () => {
    const svc = service({ '?limit=2': { items: docs('a', 'b'), next_cursor: 'c2' }, '?limit=2&cursor=c2': 'hold' });
    const boom = new Error('keep failed');
    const err = await rejectionOf(
      listPages(
        options(svc, {
          keep: () => {
            throw boom;
          },
        }),
      ),
      Error,
    );
    expect(err).toBe(boom);
    expect(svc.requests[1]!.signal?.aborted).toBe(true);
    expect(svc.requests[1]!.settled).toBe(true);
  });

  it("the caller's abort while a page is ahead: E_ABORTED once this page is done", async () => {
    const ctrl = new AbortController();
    const svc = service({ '?limit=2': { items: docs('a', 'b'), next_cursor: 'c2' }, '?limit=2&cursor=c2': 'hold' });
    const kept: string[] = [];
    const err = await rejectionOf(
      listPages(
        options(svc, {
          signal: ctrl.signal,
          keep: (d) => {
            kept.push(d.id);
            if (d.id === 'a') ctrl.abort(); // the request for page 2 is on its way
            return true;
          },
        }),
      ),
      ApiError,
    );
    expect(err.code).toBe('E_ABORTED');
    expect(kept).toEqual(['a', 'b']);
    expect(svc.requests).toHaveLength(2);
    expect(svc.requests[1]!.signal?.aborted).toBe(true);
  });

  it('a loop is still caught: no request ahead, the error after the page that loops', async () => {
    const svc = service({
      '?limit=2': { items: docs('a'), next_cursor: 'same' },
      '?limit=2&cursor=same': { items: docs('b'), next_cursor: 'same' },
    });
    const kept: string[] = [];
    const err = await rejectionOf(
      listPages(
        options(svc, {
          keep: (d) => {
            kept.push(d.id);
            return true;
          },
        }),
      ),
      ApiError,
    );
    expect(err.code).toBe('E_BAD_RESPONSE');
    expect(err.message).toMatch(/paging loops/);
    expect(kept).toEqual(['a', 'b']);
    expect(svc.requests).toHaveLength(2);
  });

  it('the page bound: no request past it', async () => {
    const pages: Record<string, unknown> = { '?limit=2': { items: docs('p1'), next_cursor: 'c2' } };
    for (let n = 2; n <= 5; n++) pages[`?limit=2&cursor=c${n}`] = { items: docs(`p${n}`), next_cursor: `c${n + 1}` };
    const svc = service(pages);
    const err = await rejectionOf(listPages(options(svc, { maxPages: 3 })), ApiError);
    expect(err.message).toMatch(/more than 3 pages/);
    expect(svc.requests.map((r) => r.url)).toEqual(['?limit=2', '?limit=2&cursor=c2', '?limit=2&cursor=c3']);
  });

  it('a next link to another origin fails after this page is decoded, and nothing is sent there', async () => {
    const svc = service({ '?limit=2': { items: docs('a'), next: 'https://elsewhere.test/steal' } });
    const err = await rejectionOf(listPages(options(svc)), ApiError);
    expect(err.message).toMatch(/another origin/);
    expect(svc.events).toEqual(['get ?limit=2', 'sent ?limit=2', 'decode a']);
  });

  it('page 1 refused with ?limit=: asked again without it, then paged ahead as usual', async () => {
    let limit = true;
    const svc = service({
      '?limit=2': new ApiError({ code: 'E_BAD_REQUEST', message: 'unknown parameter limit', status: 400 }),
      '': { items: docs('a'), next_cursor: 'c2' },
      '?cursor=c2': { items: docs('b'), next_cursor: null },
    });
    const out = await listPages(
      options(svc, {
        firstUrl: () => new URL(limit ? `${BASE}?limit=2` : BASE),
        onLimitRefused: () => (limit = false),
      }),
    );
    expect(out.map((d) => d.id)).toEqual(['a', 'b']);
    expect(svc.events.filter((e) => !e.startsWith('sent'))).toEqual(['get ?limit=2', 'get ', 'get ?cursor=c2', 'decode a', 'decode b']);
  });

  it('an empty page or an empty answer ends the list; a page guessed from its last bytes is aborted', async () => {
    const svc = service({ '?limit=2': { items: [], next_cursor: 'more' }, '?limit=2&cursor=more': 'hold' });
    expect(await listPages(options(svc))).toEqual([]);
    expect(svc.requests.map((r) => [r.url, r.signal?.aborted, r.settled])).toEqual([
      ['?limit=2', undefined, true],
      ['?limit=2&cursor=more', true, true],
    ]);
    const empty = service({ '?limit=2': { items: [], next: `${BASE}?page=2` } });
    expect(await listPages(options(empty))).toEqual([]);
    expect(empty.requests).toHaveLength(1);
  });
});

describe('listPages: the next page guessed from the answer\'s last bytes', () => {
  /** `read` records when each answer is parsed. */
  function parsing(svc: ReturnType<typeof service>): Partial<ListPagesOptions<DocumentRecord>> {
    return {
      read: (res) => {
        svc.events.push(`parse ${res.url.toString().slice(BASE.length)}`);
        return svc.read(res);
      },
    };
  }

  it('a cursor that ends the answer: the next request leaves before the answer is parsed', async () => {
    const svc = service({
      '?limit=2': { items: docs('a', 'b'), next_cursor: 'c2' },
      '?limit=2&cursor=c2': { items: docs('c'), next_cursor: null },
    });
    const out = await listPages(options(svc, parsing(svc)));
    expect(out.map((d) => d.id)).toEqual(['a', 'b', 'c']);
    expect(svc.events).toEqual(['get ?limit=2', 'sent ?limit=2', 'get ?limit=2&cursor=c2', 'sent ?limit=2&cursor=c2', 'parse ?limit=2', 'decode a', 'decode b', 'parse ?limit=2&cursor=c2', 'decode c']);
    expect(svc.requests).toHaveLength(2);
  });

  it('a cursor elsewhere in the answer: asked for once parsed, as before', async () => {
    const svc = service({
      '?limit=2': { next_cursor: 'c2', items: docs('a', 'b') },
      '?limit=2&cursor=c2': { items: docs('c') },
    });
    await listPages(options(svc, parsing(svc)));
    expect(svc.events.slice(0, 4)).toEqual(['get ?limit=2', 'sent ?limit=2', 'parse ?limit=2', 'get ?limit=2&cursor=c2']);
  });

  it('a guess the parsed answer does not confirm is aborted, and the page it names is asked instead', async () => {
    const svc = service({
      // "has_more": false wins over a cursor: the list ends here.
      '?limit=2': { items: docs('a', 'b'), has_more: false, next_cursor: 'c2' },
      '?limit=2&cursor=c2': 'hold',
    });
    const out = await listPages(options(svc, parsing(svc)));
    expect(out.map((d) => d.id)).toEqual(['a', 'b']);
    expect(svc.requests[1]).toMatchObject({ url: '?limit=2&cursor=c2', settled: true });
    expect(svc.requests[1]!.signal?.aborted).toBe(true);

    const other = service({
      // `next_cursor` names the next page (the most explicit field wins); the last member does not.
      '?limit=2': { items: docs('a'), next_cursor: 'real', nextCursor: 'decoy' },
      '?limit=2&cursor=decoy': 'hold',
      '?limit=2&cursor=real': { items: docs('b') },
    });
    const got = await listPages(options(other, parsing(other)));
    expect(got.map((d) => d.id)).toEqual(['a', 'b']);
    expect(other.requests.map((r) => [r.url, r.signal?.aborted ?? false])).toEqual([
      ['?limit=2', false],
      ['?limit=2&cursor=decoy', true],
      ['?limit=2&cursor=real', false],
    ]);
    // The wrong guess was settled before the right page was asked.
    expect(other.inFlightAtCall()).toBe(0);
  });

  it('no guess past the page bound or back to a page already fetched', async () => {
    const svc = service({ '?limit=2': { items: docs('a'), next_cursor: 'c2' } });
    const err = await rejectionOf(listPages(options(svc, { ...parsing(svc), maxPages: 1 })), ApiError);
    expect(err.message).toMatch(/more than 1 pages/);
    expect(svc.requests).toHaveLength(1);

    const loop = service({ '?limit=2': { items: docs('a'), next_cursor: 'same' }, '?limit=2&cursor=same': { items: docs('b'), next_cursor: 'same' } });
    await rejectionOf(listPages(options(loop, parsing(loop))), ApiError);
    expect(loop.requests.map((r) => r.url)).toEqual(['?limit=2', '?limit=2&cursor=same']);
  });
});

describe('PageChain: pages fetched before the listing begins (a restart, while its state loads)', () => {
  /** Lets the chain's requests and answers run until `n` requests were answered (or failed), turn by turn: no clock. */
  async function until(svc: ReturnType<typeof service>, n: number): Promise<void> {
    for (let i = 0; i < 1_000 && svc.requests.filter((r) => r.settled).length < n; i++) await new Promise((r) => setImmediate(r));
    expect(svc.requests.filter((r) => r.settled).length).toBeGreaterThanOrEqual(n);
  }
  const first = (): URL => new URL(`${BASE}?limit=2`);
  const pages3 = {
    '?limit=2': { items: docs('a', 'b'), next_cursor: 'c2' },
    '?limit=2&cursor=c2': { items: docs('c', 'd'), next_cursor: 'c3' },
    '?limit=2&cursor=c3': { items: docs('e'), next_cursor: null },
  };

  it('follows the pages by their last bytes before anything is decoded; the listing takes them in order and asks none twice', async () => {
    const svc = service(pages3);
    const chain = new PageChain(svc.get, first(), { maxPages: 100, maxBytes: 1 << 20 });
    await until(svc, 3);
    expect(chain.fetched).toBe(3);
    expect(svc.events.filter((e) => e.startsWith('decode'))).toEqual([]);
    const out = await listPages(options(svc, { pages: chain }));
    expect(out.map((d) => d.id)).toEqual(['a', 'b', 'c', 'd', 'e']);
    expect(svc.requests.map((r) => r.url)).toEqual(['?limit=2', '?limit=2&cursor=c2', '?limit=2&cursor=c3']);
  });

  it('waits at its byte bound, and goes on as the listing takes its pages: the listing asks for none itself', async () => {
    const svc = service(pages3);
    const chain = new PageChain(svc.get, first(), { maxPages: 100, maxBytes: 1 });
    await until(svc, 1);
    for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
    expect(svc.requests).toHaveLength(1); // one answer held: the bound
    const out = await listPages(options(svc, { pages: chain }));
    expect(out.map((d) => d.id)).toEqual(['a', 'b', 'c', 'd', 'e']);
    expect(svc.requests.map((r) => r.url)).toEqual(['?limit=2', '?limit=2&cursor=c2', '?limit=2&cursor=c3']);
    expect(chain.fetched).toBe(3); // every page was the chain's
    expect(chain.active).toBe(false);
    // One request at a time: none was in flight when another was asked.
    expect(svc.inFlightAtCall()).toBe(0);
  });

  it('a listing that catches up with a chain still fetching takes the page on its way, and asks for it no second time', async () => {
    const svc = service(pages3);
    const chain = new PageChain(svc.get, first(), { maxPages: 100, maxBytes: 1 << 20 });
    // The listing begins before the chain's first answer is back.
    const out = await listPages(options(svc, { pages: chain }));
    expect(out.map((d) => d.id)).toEqual(['a', 'b', 'c', 'd', 'e']);
    expect(svc.requests.map((r) => r.url)).toEqual(['?limit=2', '?limit=2&cursor=c2', '?limit=2&cursor=c3']);
    expect(chain.fetched).toBe(3);
    // Each next request has left before the page before it is decoded.
    const at = (e: string): number => svc.events.indexOf(e);
    expect(at('sent ?limit=2&cursor=c2')).toBeLessThan(at('decode a'));
    expect(at('sent ?limit=2&cursor=c3')).toBeLessThan(at('decode c'));
  });

  it("the caller's abort reaches the page the chain has on its way: the listing ends at once, nothing left in flight", async () => {
    const svc = service({ '?limit=2': { items: docs('a', 'b'), next_cursor: 'c2' }, '?limit=2&cursor=c2': 'hold' });
    const chain = new PageChain(svc.get, first(), { maxPages: 100, maxBytes: 1 << 20 });
    const ctrl = new AbortController();
    const kept: string[] = [];
    const listing = listPages(options(svc, { pages: chain, signal: ctrl.signal, keep: (d) => kept.push(d.id) > 0 }));
    await until(svc, 1);
    for (let i = 0; i < 20 && kept.length < 2; i++) await new Promise((r) => setImmediate(r));
    expect(kept).toEqual(['a', 'b']); // page 2 is the chain's, held by the service
    ctrl.abort();
    const err = await rejectionOf(listing, ApiError);
    expect(err.code).toBe('E_ABORTED');
    const held = svc.requests.find((r) => r.url === '?limit=2&cursor=c2')!;
    expect(held.signal?.aborted).toBe(true);
    expect(held.settled).toBe(true);
    expect(svc.requests).toHaveLength(2);
  });

  it('a page its guess fetched that the parsed answer does not name is aborted, and the page the answer names is asked', async () => {
    const svc = service({
      '?limit=2': { items: docs('a'), next_cursor: 'real', nextCursor: 'decoy' },
      '?limit=2&cursor=decoy': 'hold',
      '?limit=2&cursor=real': { items: docs('b') },
    });
    const chain = new PageChain(svc.get, first(), { maxPages: 100, maxBytes: 1 << 20 });
    await until(svc, 1);
    const out = await listPages(options(svc, { pages: chain }));
    expect(out.map((d) => d.id)).toEqual(['a', 'b']);
    expect(svc.requests.map((r) => r.url)).toEqual(['?limit=2', '?limit=2&cursor=decoy', '?limit=2&cursor=real']);
    // The guess was aborted (the page it fetched was still held); the page the answer named was not.
    expect(svc.requests[1]!.signal?.aborted).toBe(true);
    expect(svc.requests[2]!.signal?.aborted ?? false).toBe(false);
    expect(svc.requests.every((r) => r.settled)).toBe(true);
  });

  it('a page it got as a failure fails the listing when its turn comes, after the pages before it', async () => {
    const failure = new ApiError({ code: 'E_SERVER', message: 'GET page 2: 500', status: 500 });
    const svc = service({ '?limit=2': { items: docs('a', 'b'), next_cursor: 'c2' }, '?limit=2&cursor=c2': failure });
    const chain = new PageChain(svc.get, first(), { maxPages: 100, maxBytes: 1 << 20 });
    await until(svc, 2);
    const kept: string[] = [];
    const err = await rejectionOf(listPages(options(svc, { pages: chain, keep: (d) => kept.push(d.id) > 0 })), ApiError);
    expect(err).toBe(failure);
    expect(kept).toEqual(['a', 'b']);
    expect(svc.requests).toHaveLength(2);
  });

  it('a listing that begins elsewhere (page 1 asked without ?limit=) drops it; drop() aborts what is in flight and leaves nothing', async () => {
    const svc = service({ '?limit=2': { items: docs('a'), next_cursor: 'c2' }, '?limit=2&cursor=c2': 'hold', '?other': { items: docs('x') } });
    const chain = new PageChain(svc.get, first(), { maxPages: 100, maxBytes: 1 << 20 });
    await until(svc, 1);
    const out = await listPages(options(svc, { pages: chain, firstUrl: () => new URL(`${BASE}?other`) }));
    expect(out.map((d) => d.id)).toEqual(['x']);
    const held = svc.requests.find((r) => r.url === '?limit=2&cursor=c2')!;
    expect(held.signal?.aborted).toBe(true);
    expect(held.settled).toBe(true);

    const idle = service({ '?limit=2': 'hold' });
    const unused = new PageChain(idle.get, first(), { maxPages: 100, maxBytes: 1 << 20 });
    await unused.drop();
    expect(idle.requests[0]).toMatchObject({ settled: true });
    expect(idle.requests[0]!.signal?.aborted).toBe(true);
  });
});

describe('peekNextPage', () => {
  const peek = (text: string) => peekNextPage(Buffer.from(text));
  it('reads a cursor that is the last member of the outermost object', () => {
    expect(peek('{"items":[{"id":"a"}],"next_cursor":"YWZ0ZXI6Mg"}')).toEqual({ kind: 'params', params: { cursor: 'YWZ0ZXI6Mg' } });
    expect(peek('{"items":[], "nextPageToken" : "t-1" }\n')).toEqual({ kind: 'params', params: { pageToken: 't-1' } });
    expect(peek('{"items":[],"next_cursor":"/v1/docs?after=9"}')).toEqual({ kind: 'link', href: '/v1/docs?after=9' });
  });
  it('guesses nothing from any other end', () => {
    expect(peek('{"items":[],"next_cursor":null}')).toBeUndefined();
    expect(peek('{"items":[],"next_cursor":""}')).toBeUndefined();
    expect(peek('{"items":[{"metadata":{"next_cursor":"x"}}]}')).toBeUndefined();
    expect(peek('{"meta":{"next_cursor":"x"}}')).toBeUndefined();
    expect(peek('{"items":[],"title":"x"}')).toBeUndefined();
    expect(peek('{"items":[],"next_cursor":"a\\"b"}')).toBeUndefined();
    expect(peek('[{"id":"a"}]')).toBeUndefined();
  });
});

/**
 * Paging of list answers (DESIGN §3): the service's paging is "not shown", so every common
 * style is recognised — cursors (`next_cursor`, `cursor`, `next_page_token`, ...), next
 * links (`next`, `links.next`), and `has_more`/`total` with `page` or `offset`. Pure.
 */
import { asId, badResponse, isObject, type DecodeContext } from './decode.js';
import type { JsonObject } from './records.js';

export type NextPage =
  /** Follow this URL or path (resolved against the current request). */
  | { kind: 'link'; href: string }
  /** Repeat the current request with these query parameters set. */
  | { kind: 'params'; params: Record<string, string> };

/** Where paging fields may sit, besides the top level. */
const CONTAINERS = ['pagination', 'paging', 'page_info', 'pageInfo', 'meta', 'data'];

/** Cursor fields, most explicit first, and the query parameter that sends them back. */
const CURSOR_FIELDS: [field: string, param: string][] = [
  ['next_cursor', 'cursor'],
  ['nextCursor', 'cursor'],
  ['next_page_token', 'page_token'],
  ['nextPageToken', 'pageToken'],
  ['next_token', 'next_token'],
  ['nextToken', 'nextToken'],
];

function containers(body: JsonObject): JsonObject[] {
  const out = [body];
  for (const k of CONTAINERS) {
    const v = body[k];
    if (isObject(v)) out.push(v);
  }
  return out;
}

function looksLikeLink(s: string): boolean {
  return /^https?:\/\//i.test(s) || s.startsWith('/') || s.startsWith('?');
}

function linkValue(v: unknown): string | undefined {
  if (typeof v === 'string' && v.trim() !== '') return v.trim();
  if (isObject(v) && typeof v.href === 'string' && v.href.trim() !== '') return v.href.trim();
  return undefined;
}

function num(v: unknown): number | undefined {
  if (typeof v === 'number' && Number.isFinite(v)) return v;
  if (typeof v === 'string' && /^\d+$/.test(v.trim())) return Number(v);
  return undefined;
}

/**
 * What to request after this page, or undefined when this was the last one.
 * `itemCount` is the number of items on this page; `currentUrl` the URL that fetched it.
 */
export function nextPage(body: unknown, itemCount: number, currentUrl: URL): NextPage | undefined {
  if (!isObject(body)) return undefined; // a bare array carries no paging
  const places = containers(body);

  const MORE = ['has_more', 'hasMore', 'has_next', 'hasNext', 'more'];
  const hasMore = places.flatMap((p) => MORE.map((k) => p[k])).find((v): v is boolean => typeof v === 'boolean');
  // An explicit "no more" wins over any cursor left in the answer.
  if (hasMore === false) return undefined;

  // 1. Explicit next cursors. A present-but-empty one (null, '') means: last page.
  for (const p of places) {
    for (const [field, param] of CURSOR_FIELDS) {
      if (!Object.hasOwn(p, field)) continue;
      const v = asId(p[field]);
      if (v === undefined) return undefined;
      return looksLikeLink(v) ? { kind: 'link', href: v } : { kind: 'params', params: { [param]: v } };
    }
  }

  // 2. Next links.
  for (const p of places) {
    for (const holder of [p.links, p._links]) {
      if (isObject(holder) && Object.hasOwn(holder, 'next')) {
        const href = linkValue(holder.next);
        return href === undefined ? undefined : { kind: 'link', href };
      }
    }
    for (const field of ['next', 'next_page', 'nextPage', 'next_url', 'nextUrl']) {
      if (!Object.hasOwn(p, field)) continue;
      const v = p[field];
      if (v === null || v === false || v === '') return undefined;
      const href = linkValue(v);
      if (href !== undefined && looksLikeLink(href)) return { kind: 'link', href };
      if (field === 'next_page' || field === 'nextPage') {
        const n = num(v);
        if (n !== undefined) return { kind: 'params', params: { page: String(n) } };
      }
      const c = asId(v);
      if (c !== undefined) return { kind: 'params', params: { cursor: c } };
    }
  }

  // 3. A bare `cursor` field: only when nothing more explicit was there.
  for (const p of places) {
    if (Object.hasOwn(p, 'cursor')) {
      const c = asId(p.cursor);
      if (c === undefined) return undefined;
      // Some services echo the cursor that was sent: that is not a next page.
      if (c === currentUrl.searchParams.get('cursor')) return undefined;
      return { kind: 'params', params: { cursor: c } };
    }
  }

  // 4. Page numbers and offsets, with has_more or a total.
  for (const p of places) {
    const page = num(p.page ?? p.page_number ?? p.pageNumber ?? p.current_page ?? p.currentPage);
    const offset = num(p.offset ?? p.skip);
    const offsetParam = p.offset !== undefined ? 'offset' : 'skip';
    const total = num(p.total ?? p.total_count ?? p.totalCount ?? p.count_total);
    const totalPages = num(p.total_pages ?? p.totalPages ?? p.pages ?? p.page_count);
    const perPage = num(p.per_page ?? p.perPage ?? p.page_size ?? p.pageSize ?? p.limit);
    if (offset !== undefined) {
      const next = offset + itemCount;
      if (hasMore === true || (total !== undefined && next < total)) return { kind: 'params', params: { [offsetParam]: String(next) } };
      if (total !== undefined || hasMore !== undefined) return undefined;
    }
    if (page !== undefined) {
      const more =
        hasMore === true ||
        (totalPages !== undefined && page < totalPages) ||
        (total !== undefined && perPage !== undefined && page * perPage < total);
      if (more) return { kind: 'params', params: { page: String(page + 1) } };
      if (hasMore !== undefined || totalPages !== undefined || total !== undefined) return undefined;
    }
  }

  // 5. has_more alone: continue from the offset we are at.
  if (hasMore === true) {
    const current = num(currentUrl.searchParams.get('offset') ?? '0') ?? 0;
    return { kind: 'params', params: { offset: String(current + itemCount) } };
  }
  return undefined;
}

/**
 * The URL of the next page. A link is resolved against the current URL and must stay on
 * the service's origin: the token is never sent anywhere else.
 */
export function nextPageUrl(next: NextPage, currentUrl: URL, ctx: DecodeContext): URL {
  if (next.kind === 'params') {
    const url = new URL(currentUrl);
    for (const [k, v] of Object.entries(next.params)) url.searchParams.set(k, v);
    return url;
  }
  let url: URL;
  try {
    url = new URL(next.href, currentUrl);
  } catch {
    throw badResponse(ctx, `the next-page link "${next.href.slice(0, 200)}" is not a URL`);
  }
  if (url.origin !== currentUrl.origin) {
    throw badResponse(ctx, `the next-page link points to another origin (${url.origin}); not followed, so the access token is not sent there`);
  }
  return url;
}

/** How far from its end an answer is looked at for its cursor before it is parsed. */
export const PEEK_BYTES = 1024;
/** The answer's last member, a string, and the object's end: `"field": "value" }`. */
const LAST_STRING_MEMBER = /"([A-Za-z_]{1,32})"\s*:\s*"([^"\\]{1,512})"\s*\}\s*$/;

/**
 * A guess at the next page from an answer's last bytes, before it is parsed: a cursor field
 * (CURSOR_FIELDS) that is the last member of the answer's outermost object. The listing
 * sends it ahead and keeps it only when nextPage, over the parsed answer, names the same
 * page (an explicit `has_more: false` elsewhere wins, as there); undefined when the end of
 * the answer is anything else.
 */
export function peekNextPage(raw: Uint8Array): NextPage | undefined {
  const from = Math.max(0, raw.length - PEEK_BYTES);
  const m = LAST_STRING_MEMBER.exec(Buffer.from(raw.buffer, raw.byteOffset + from, raw.length - from).toString('utf8'));
  if (m === null) return undefined;
  const param = CURSOR_FIELDS.find(([field]) => field === m[1])?.[1];
  if (param === undefined || m[2]!.trim() === '') return undefined;
  return looksLikeLink(m[2]!) ? { kind: 'link', href: m[2]! } : { kind: 'params', params: { [param]: m[2]! } };
}

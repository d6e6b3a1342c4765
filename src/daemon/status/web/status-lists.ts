/**
 * /status, sent every second to every open page, stays small however many files a mapping
 * skips: each mapping's lists carry their first STATUS_LIST_LIMIT entries and their full
 * length; the rest is read a page at a time from /status/problems?mapping=ID&list=skipped&offset=N.
 */
import type { DaemonStatus, MappingStatus } from '../schema.js';

export const STATUS_LIST_LIMIT = 100;
export const PAGE_LIMIT_MAX = 1000;

const LISTS = ['skipped', 'notIngested', 'recentErrors', 'problems', 'excluded'] as const;
export type ProblemList = (typeof LISTS)[number];

/** The status with each mapping's lists cut to `limit`, and their lengths in `<list>Total`. */
export function boundStatus(s: DaemonStatus, limit = STATUS_LIST_LIMIT): DaemonStatus {
  return { ...s, mappings: s.mappings.map((m) => boundMapping(m, limit)) };
}

function boundMapping(m: MappingStatus, limit: number): MappingStatus {
  const out: MappingStatus = { ...m, skippedTotal: m.skipped.length, notIngestedTotal: m.notIngested.length, recentErrorsTotal: m.recentErrors.length };
  // recentErrors is newest last: keep the newest.
  out.recentErrors = m.recentErrors.slice(-limit);
  out.skipped = m.skipped.slice(0, limit);
  out.notIngested = m.notIngested.slice(0, limit);
  // problemsTotal/excludedTotal are the runner's (they count past the list's own bound too).
  if (m.problems) out.problems = m.problems.slice(0, limit);
  if (m.excluded) out.excluded = m.excluded.slice(0, limit);
  return out;
}

export type PageAnswer = { ok: true; body: { mapping: string; list: ProblemList; offset: number; total: number; items: unknown[] } } | { ok: false; status: 400 | 404; error: string };

/** One page of one mapping's list, from the query string of /status/problems. */
export function problemsPage(s: DaemonStatus, query: URLSearchParams): PageAnswer {
  const mapping = query.get('mapping') ?? '';
  const list = (query.get('list') ?? 'skipped') as ProblemList;
  if (!LISTS.includes(list)) return { ok: false, status: 400, error: `list must be one of ${LISTS.join(', ')}` };
  const offset = wholeNumber(query.get('offset'), 0);
  const limit = wholeNumber(query.get('limit'), STATUS_LIST_LIMIT);
  if (offset === undefined) return { ok: false, status: 400, error: 'offset must be a whole number' };
  if (limit === undefined || limit < 1 || limit > PAGE_LIMIT_MAX) return { ok: false, status: 400, error: `limit must be a whole number from 1 to ${PAGE_LIMIT_MAX}` };
  const m = s.mappings.find((x) => x.id === mapping);
  if (!m) return { ok: false, status: 404, error: `no mapping "${mapping}" (give ?mapping=ID)` };
  const items: unknown[] = m[list] ?? [];
  return { ok: true, body: { mapping, list, offset, total: items.length, items: items.slice(offset, offset + limit) } };
}

function wholeNumber(text: string | null, fallback: number): number | undefined {
  if (text === null || text === '') return fallback;
  return /^\d{1,9}$/.test(text) ? Number(text) : undefined;
}

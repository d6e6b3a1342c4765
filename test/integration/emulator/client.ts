/**
 * A raw HTTP client for the emulator tests: undici `request` with the two headers, so the
 * tests check the wire, not dssync's own client.
 */
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { FormData, request } from 'undici';

export const TOKEN = 'dev-token';
export const ORG = 'dev-org';
export const FIXTURES = fileURLToPath(new URL('../../fixtures/', import.meta.url));

export interface Answer<T = unknown> {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: T;
  text: string;
}

export interface CallOptions {
  json?: unknown;
  form?: FormData;
  body?: string | Buffer;
  headers?: Record<string, string>;
  /** Leave out the Authorization / organization header. */
  noAuth?: boolean;
  noOrg?: boolean;
  org?: string;
  token?: string;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function call<T = any>(baseUrl: string, method: string, path: string, opts: CallOptions = {}): Promise<Answer<T>> {
  const headers: Record<string, string> = {};
  if (!opts.noAuth) headers.authorization = `Bearer ${opts.token ?? TOKEN}`;
  if (!opts.noOrg) headers['x-service-organization-id'] = opts.org ?? ORG;
  let body: string | Buffer | FormData | undefined = opts.body;
  if (opts.json !== undefined) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(opts.json);
  }
  if (opts.form) body = opts.form;
  Object.assign(headers, opts.headers);
  const res = await request(`${baseUrl}${path}`, { method: method as 'GET', headers, body });
  const text = await res.body.text();
  let parsed: unknown = undefined;
  if (text !== '') {
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = text;
    }
  }
  return { status: res.statusCode, headers: res.headers, body: parsed as T, text };
}

export async function fixtureBlob(name: string, type = ''): Promise<Blob> {
  return new Blob([await readFile(`${FIXTURES}${name}`)], { type });
}

/** A form with one `documents` part per [content, filename]. */
export function form(files: Array<[Blob | string, string]>): FormData {
  const fd = new FormData();
  for (const [content, name] of files) fd.append('documents', typeof content === 'string' ? new Blob([content]) : content, name);
  return fd;
}

/** Creates a data source and returns its id. */
export async function createDataSource(baseUrl: string, name = 'Handbook', connectors = ['conn-1'], org?: string): Promise<string> {
  const res = await call(baseUrl, 'POST', '/datastore/v1/data-sources', { json: { name, llm_connector_ids: connectors }, ...(org ? { org } : {}) });
  if (res.status !== 201) throw new Error(`create data source: HTTP ${res.status} ${res.text}`);
  return (res.body as { data_source_id: string }).data_source_id;
}

/** Follows next_cursor until the end; returns every item and the number of pages. */
export async function walk<T>(baseUrl: string, path: string, limit?: number): Promise<{ items: T[]; pages: number }> {
  const items: T[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const params = new URLSearchParams();
    if (limit !== undefined) params.set('limit', String(limit));
    if (cursor) params.set('cursor', cursor);
    const qs = params.toString();
    const res = await call<{ items: T[]; next_cursor: string | null }>(baseUrl, 'GET', qs ? `${path}?${qs}` : path);
    if (res.status !== 200) throw new Error(`list ${path}: HTTP ${res.status} ${res.text}`);
    items.push(...res.body.items);
    cursor = res.body.next_cursor;
    pages++;
  } while (cursor);
  return { items, pages };
}

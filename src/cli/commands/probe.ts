/**
 * `dssync probe [--write] [--save DIR]`: what the real service does for each "not shown"
 * of the interface (DESIGN §3): success codes, record fields, list shape and paging, error
 * body shape, token lifetime, rate-limit headers, and with --write whether an update
 * clears the fields it was not given. Read-only by default; --write works in a scratch data
 * source it deletes at the end. Raw exchanges (not the client's decoding) are observed, so
 * the report says what was received, not what dssync made of it; --save writes them,
 * redacted, as fixtures the decoding tests can replay.
 */
import type { Argv, CommandModule } from 'yargs';
import { configFromArgs } from '../context.js';
import { usageError } from '../exit.js';
import { preparePrivateDir, writePrivateFile } from '../private-dir.js';
import type { GlobalArgs } from '../options.js';
import type { NameRule } from '../../engine/service-names.js';

interface ProbeArgs extends GlobalArgs {
  write?: boolean;
  save?: string;
  connector?: string[];
}

interface Exchange {
  step: string;
  method: string;
  path: string;
  status: number;
  headers: Record<string, string>;
  body: unknown;
}

export interface ProbeReport {
  organizationHeader: string;
  provider: string;
  tokenLifetimeSeconds: number | null;
  steps: { step: string; request: string; status: number; shape: string; fields?: string[]; paging?: string[] }[];
  rateLimitHeaders: string[];
  errorBodyShape: string | null;
  updateClearsAbsentFields: boolean | null;
  /** Whether a metadata update's new name shows when the document is read back (null: not tested). */
  updateRenames: boolean | null;
  /** Whether a metadata update's new url shows when the document is read back (null: not tested). */
  updateSetsUrl: boolean | null;
  /** Whether a data source can be renamed (a data source dssync creates takes its name so; null: not tested). */
  renamesDataSource: boolean | null;
  /**
   * What the service does to a name it stores, from the names an update gave and the names
   * read back (engine/service-names.ts: lower-cased, extension dropped, a suffix, cut at a
   * length); null: not tested (or renames ignored: nothing to tell it from).
   */
  nameRule: NameRule | null;
  /** nameRule in words (engine/service-names.ts describeServiceNames); empty: names kept as sent. */
  nameRuleText: string[];
  /** Each name uploaded (--write) and the name the service then shows for it (null: not read back). */
  uploadNames: { sent: string; shown: string | null }[];
  notes: string[];
}

/**
 * Names the write round trip uploads to learn how the service rewrites a file part's name
 * (docs/probe.md): a backslash (an RFC quoted-string reading drops it), quotes, spaces at
 * both ends, a decomposed accent (NFD), a folder. dssync recognises its marked uploads by
 * the mark and nonce wherever they are left in the name (engine/document-fields.ts).
 */
export const PROBE_NAMES = ['probe-back\\slash.txt', 'probe-"quoted".txt', ' probe spaced .txt', 'probe-cafe\u0301.txt', 'probe-dir/probe-in-folder.txt'];

const RATE_HEADER = /ratelimit|rate-limit|retry-after|x-ratelimit/i;
const PAGING_KEYS = ['next', 'next_cursor', 'nextCursor', 'cursor', 'next_page_token', 'has_more', 'hasMore', 'page', 'total', 'offset', 'limit', 'links', 'total_pages'];

export async function runProbe(args: ProbeArgs, out: (s: string) => void = (s) => void process.stdout.write(s)): Promise<ProbeReport> {
  const warn = (m: string): void => void process.stderr.write(`dssync: warning: ${m}\n`);
  const config = configFromArgs(args, process.env, warn);
  if (args.write && (args.connector ?? []).length === 0) {
    throw usageError('--write creates a scratch data source, which needs connector ids: give --connector <id> (ask your contact at the service for them)');
  }
  // Refused before anything is asked of the service.
  if (args.save) preparePrivateDir(args.save, '--save');
  const [{ createAgent }, { createTokenProvider }, { request, FormData }] = await Promise.all([
    import('../../api/http.js'),
    import('../../auth/index.js'),
    import('undici'),
  ]);
  const { readFileSync } = await import('node:fs');
  const agent = createAgent({ connections: 2, timeouts: config.queue.timeouts, ...(config.tls.caFile ? { ca: readFileSync(config.tls.caFile) } : {}) });
  const tokens = createTokenProvider(config.connection.auth, { dispatcher: agent });
  const base = new URL(config.connection.baseUrl);
  const exchanges: Exchange[] = [];
  const secrets = new Set<string>();

  const call = async (step: string, method: string, path: string, body?: { json?: unknown; form?: InstanceType<typeof FormData> }): Promise<Exchange> => {
    const token = await tokens.token();
    secrets.add(token);
    const url = new URL(base.pathname.replace(/\/+$/, '') + path, base.origin);
    const headers: Record<string, string> = { authorization: `Bearer ${token}`, [config.connection.organizationHeader.toLowerCase()]: config.connection.organizationId, accept: 'application/json' };
    if (body?.json !== undefined) headers['content-type'] = 'application/json';
    const res = await request(url, {
      method: method as 'GET',
      headers,
      dispatcher: agent,
      ...(body?.json !== undefined ? { body: JSON.stringify(body.json) } : body?.form ? { body: body.form } : {}),
    });
    const text = await res.body.text();
    let parsed: unknown = text;
    try {
      parsed = text === '' ? null : JSON.parse(text);
    } catch {
      // kept as text
    }
    const h: Record<string, string> = {};
    for (const [k, v] of Object.entries(res.headers)) if (v !== undefined && k !== 'set-cookie') h[k] = Array.isArray(v) ? v.join(', ') : v;
    const ex = { step, method, path, status: res.statusCode, headers: h, body: parsed };
    exchanges.push(ex);
    return ex;
  };

  const report: ProbeReport = {
    organizationHeader: config.connection.organizationHeader,
    provider: tokens.description,
    tokenLifetimeSeconds: null,
    steps: [],
    rateLimitHeaders: [],
    errorBodyShape: null,
    updateClearsAbsentFields: null,
    updateRenames: null,
    updateSetsUrl: null,
    renamesDataSource: null,
    nameRule: null,
    nameRuleText: [],
    uploadNames: [],
    notes: [],
  };
  try {
    const ds = await call('list-data-sources', 'GET', '/datastore/v1/data-sources');
    const st = tokens.status();
    if (st.expiresAt !== undefined && st.obtainedAt !== undefined) report.tokenLifetimeSeconds = Math.round((st.expiresAt - st.obtainedAt) / 1000);
    if (ds.status === 401 || ds.status === 403) throw new Error(`the service refused the credentials or the organization (HTTP ${ds.status}); check ${config.connection.organizationHeader} and the token`);
    const firstDs = firstId(ds.body);
    if (firstDs) {
      const docs = await call('list-documents', 'GET', `/datastore/v1/data-sources/${encodeURIComponent(firstDs)}/documents`);
      const firstDoc = firstId(docs.body);
      if (firstDoc) await call('list-chunks', 'GET', `/datastore/v1/data-sources/${encodeURIComponent(firstDs)}/documents/${encodeURIComponent(firstDoc)}/chunks`);
    } else {
      report.notes.push('no data source in this organization: documents and chunks were not listed (--write makes a scratch one)');
    }
    const missing = await call('error-not-found', 'GET', '/datastore/v1/data-sources/000000000000000000000000');
    report.errorBodyShape = shapeOf(missing.body);
    if (args.write) await writeRoundTrip(call, args.connector ?? [], report, FormData);
  } finally {
    await tokens.close();
    await agent.close();
  }
  for (const ex of exchanges) {
    const items = listOf(ex.body);
    report.steps.push({
      step: ex.step,
      request: `${ex.method} ${ex.path}`,
      status: ex.status,
      shape: shapeOf(ex.body),
      ...(items && items[0] && typeof items[0] === 'object' ? { fields: Object.keys(items[0] as object).sort() } : isObj(ex.body) && !items ? { fields: Object.keys(ex.body).sort() } : {}),
      ...(isObj(ex.body) ? { paging: PAGING_KEYS.filter((k) => k in (ex.body as object)) } : {}),
    });
    for (const k of Object.keys(ex.headers)) if (RATE_HEADER.test(k) && !report.rateLimitHeaders.includes(k)) report.rateLimitHeaders.push(k);
  }
  if (args.save) save(args.save, exchanges, report, config.connection.organizationId, secrets);
  out(args.json ? `${JSON.stringify(report, null, 2)}\n` : formatReport(report));
  return report;
}

type Call = (step: string, method: string, path: string, body?: { json?: unknown; form?: InstanceType<typeof import('undici').FormData> }) => Promise<Exchange>;

async function writeRoundTrip(call: Call, connectors: string[], report: ProbeReport, FormDataCtor: typeof import('undici').FormData): Promise<void> {
  // Bare wall read on purpose: only a unique, readable name for the throw-away data source.
  const created = await call('create-data-source', 'POST', '/datastore/v1/data-sources', { json: { name: `dssync-probe-${Date.now()}`, llm_connector_ids: connectors } });
  const dsId = firstId(created.body) ?? idFromLocation(created.headers.location);
  if (!dsId) {
    report.notes.push(`the data source was created (HTTP ${created.status}) but its id could not be read: delete it by hand`);
    return;
  }
  const dsPath = `/datastore/v1/data-sources/${encodeURIComponent(dsId)}`;
  try {
    // A data source dssync creates is born under a provisional name and renamed once its lease holds (engine/data-source.ts).
    const renamed = await call('rename-data-source', 'PUT', dsPath, { json: { name: `dssync-probe-renamed-${Date.now()}` } });
    report.renamesDataSource = renamed.status < 300;
    const form = new FormDataCtor();
    form.append('documents', new Blob(['dssync probe: first file\n'], { type: 'text/plain' }), 'probe-a.txt');
    form.append('documents', new Blob(['dssync probe: second file\n'], { type: 'text/plain' }), 'probe-b.txt');
    const up = await call('upload-two-files', 'POST', `${dsPath}/documents/upload`, { form });
    const docIds = (listOf(up.body) ?? (isObj(up.body) ? [up.body] : [])).map((d) => firstId(d)).filter((x): x is string => x !== undefined);
    const docId = docIds[0];
    if (docId) {
      const docPath = `${dsPath}/documents/${encodeURIComponent(docId)}`;
      await call('update-all-fields', 'PUT', docPath, { json: { name: 'probe-a.txt', url: 'https://probe.invalid/a', metadata: { probe: 'yes' } } });
      const full = await call('get-after-full-update', 'GET', docPath);
      // A document read back (it has its name) without the url sent: the update did not set it.
      const doc = innerRecord(full.body);
      if (full.status < 300 && typeof doc.name === 'string') report.updateSetsUrl = doc.url === 'https://probe.invalid/a';
      await call('update-name-only', 'PUT', docPath, { json: { name: 'probe-a-renamed.txt' } });
      const back = await call('get-after-partial-update', 'GET', docPath);
      const inner = innerRecord(back.body);
      if (back.status < 300) report.updateClearsAbsentFields = inner.url !== 'https://probe.invalid/a';
      // dssync uploads under a marked name and renames with the metadata update: a service
      // that ignores or refuses the new name would show every document under its marked name.
      // (A service that rewrites the names it stores still shows the new one, rewritten.)
      if (back.status < 300) report.updateRenames = typeof inner.name === 'string' && inner.name.toLowerCase().includes('probe-a-renamed');
      if (report.updateRenames === true) await probeNameRule(call, docPath, report);
      await call('list-chunks-of-upload', 'GET', `${docPath}/chunks`);
    }
    docIds.push(...(await probeNames(call, dsPath, report, FormDataCtor)));
    for (const id of docIds) await call('delete-document', 'DELETE', `${dsPath}/documents/${encodeURIComponent(id)}`);
  } finally {
    const del = await call('delete-data-source', 'DELETE', dsPath);
    if (del.status >= 300 && del.status !== 404) report.notes.push(`could not delete the scratch data source ${dsId} (HTTP ${del.status}): delete it by hand`);
  }
}

/**
 * Names an update gives to learn what the service does to the names it stores: case and
 * extension (and a suffix) from a short one, a length limit from one longer than any
 * service keeps (600 bytes; the emulator refuses past 1024).
 */
export const PROBE_RULE_NAMES = ['Probe-Case.TXT', `probe-long-${'n'.repeat(580)}.txt`];

/** The rule the names read back after PROBE_RULE_NAMES show ({}: each kept as sent), into `report`. */
async function probeNameRule(call: Call, docPath: string, report: ProbeReport): Promise<void> {
  const { describeServiceNames, learnNameRule } = await import('../../engine/service-names.js');
  let rule: NameRule = {};
  for (const sent of PROBE_RULE_NAMES) {
    const put = await call('update-name-rule', 'PUT', docPath, { json: { name: sent } });
    if (put.status >= 300) continue;
    const back = await call('get-name-rule', 'GET', docPath);
    const rec = isObj(back.body) ? (isObj(back.body.data) ? back.body.data : back.body) : {};
    if (back.status >= 300 || typeof rec.name !== 'string' || rec.name === sent) continue;
    rule = learnNameRule(sent, rec.name, rule) ?? rule;
  }
  report.nameRule = rule;
  report.nameRuleText = describeServiceNames({ rule });
}

/** Uploads PROBE_NAMES in one request and reads each document back: what became of each name. */
async function probeNames(call: Call, dsPath: string, report: ProbeReport, FormDataCtor: typeof import('undici').FormData): Promise<string[]> {
  const form = new FormDataCtor();
  for (const name of PROBE_NAMES) form.append('documents', new Blob([`dssync probe: ${name}\n`], { type: 'text/plain' }), name);
  const up = await call('upload-names', 'POST', `${dsPath}/documents/upload`, { form });
  const ids = (listOf(up.body) ?? []).map((d) => firstId(d));
  for (const [i, sent] of PROBE_NAMES.entries()) {
    const id = ids[i];
    let shown: string | null = null;
    if (id !== undefined) {
      const back = await call('get-uploaded-name', 'GET', `${dsPath}/documents/${encodeURIComponent(id)}`);
      const rec = isObj(back.body) ? (isObj(back.body.data) ? back.body.data : back.body) : {};
      if (back.status < 300 && typeof rec.name === 'string') shown = rec.name;
    }
    report.uploadNames.push({ sent, shown });
  }
  if (up.status >= 300) report.notes.push(`the upload of names with a backslash, quotes, spaces, NFD and a folder was refused (HTTP ${up.status})`);
  return ids.filter((x): x is string => x !== undefined);
}

function isObj(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function listOf(body: unknown): unknown[] | undefined {
  if (Array.isArray(body)) return body;
  if (!isObj(body)) return undefined;
  for (const k of ['items', 'data', 'results', 'documents', 'data_sources', 'chunks']) if (Array.isArray(body[k])) return body[k] as unknown[];
  return undefined;
}

function firstId(body: unknown): string | undefined {
  const item = listOf(body)?.[0] ?? body;
  if (!isObj(item)) return undefined;
  const inner = !('id' in item) && isObj(item.data) ? item.data : item;
  for (const k of ['id', 'document_id', 'data_source_id', 'uuid', '_id']) {
    const v = inner[k];
    if (typeof v === 'string' && v !== '') return v;
  }
  return undefined;
}

function idFromLocation(loc: string | undefined): string | undefined {
  return loc?.replace(/[?#].*$/, '').replace(/\/+$/, '').split('/').pop() || undefined;
}

function shapeOf(body: unknown): string {
  if (body === null) return 'empty';
  if (Array.isArray(body)) return `a bare array of ${body.length}`;
  if (typeof body === 'string') return 'not JSON';
  if (isObj(body)) {
    const list = Object.entries(body).find(([, v]) => Array.isArray(v));
    return list ? `an object with the list under "${list[0]}" (${(list[1] as unknown[]).length}), keys: ${Object.keys(body).join(', ')}` : `an object with keys: ${Object.keys(body).join(', ')}`;
  }
  return typeof body;
}

function save(dir: string, exchanges: Exchange[], report: ProbeReport, org: string, secrets: Set<string>): void {
  const redact = (text: string): string => {
    let t = text.split(org).join('org-redacted');
    for (const s of secrets) if (s.length >= 4) t = t.split(s).join('[redacted]');
    return t;
  };
  exchanges.forEach((ex, i) => {
    const { authorization: _a, ...headers } = ex.headers;
    writePrivateFile(dir, `${String(i + 1).padStart(2, '0')}-${ex.step}.json`, `${redact(JSON.stringify({ request: `${ex.method} ${ex.path}`, status: ex.status, headers, body: ex.body }, null, 2))}\n`);
  });
  writePrivateFile(dir, 'report.json', `${redact(JSON.stringify(report, null, 2))}\n`);
}

function formatReport(r: ProbeReport): string {
  const lines = [
    `organization header: ${r.organizationHeader}`,
    `credentials: ${r.provider}`,
    `token lifetime: ${r.tokenLifetimeSeconds === null ? 'not said' : `${r.tokenLifetimeSeconds} s`}`,
    '',
    ...r.steps.map((s) => `${s.step}: ${s.request} -> ${s.status}; ${s.shape}${s.fields ? `; fields: ${s.fields.join(', ')}` : ''}${s.paging && s.paging.length > 0 ? `; paging keys: ${s.paging.join(', ')}` : ''}`),
    '',
    `error body shape: ${r.errorBodyShape ?? 'not seen'}`,
    `rate-limit headers: ${r.rateLimitHeaders.length > 0 ? r.rateLimitHeaders.join(', ') : 'none seen'}`,
    `an update without url/metadata clears them: ${r.updateClearsAbsentFields === null ? 'not tested (use --write)' : r.updateClearsAbsentFields ? 'yes' : 'no (kept)'}`,
    `an update sets the url: ${r.updateSetsUrl === null ? 'not tested (use --write)' : r.updateSetsUrl ? 'yes' : 'NO: documents keep the url they were first given; dssync stops comparing urls once it sees this'}`,
    `an update renames the document: ${r.updateRenames === null ? 'not tested (use --write)' : r.updateRenames ? 'yes' : 'NO: dssync uploads under a marked name and renames it with the update; on this service documents would keep their marked names'}`,
    `a data source can be renamed: ${r.renamesDataSource === null ? 'not tested (use --write)' : r.renamesDataSource ? 'yes' : 'NO: a data source dssync creates keeps its provisional name "NAME (dssync: being set up)"; create it by hand under its name, or allow the update'}`,
    `names stored: ${r.nameRule === null ? 'not tested (use --write; not with renames ignored)' : r.nameRuleText.length === 0 ? 'as sent' : `the service ${r.nameRuleText.join(', ')} (dssync learns it at its first upload and compares names as stored)`}`,
    ...r.uploadNames.map((n) => `uploaded name ${JSON.stringify(n.sent)} shown as ${n.shown === null ? 'not read back' : n.shown === n.sent ? 'sent' : JSON.stringify(n.shown)}`),
    ...r.notes.map((n) => `note: ${n}`),
  ];
  return `${lines.join('\n')}\n`;
}

export const probeCommand: CommandModule<GlobalArgs, ProbeArgs> = {
  command: 'probe',
  describe: 'Report what the service does for each unknown of the interface (read-only unless --write)',
  builder: (y: Argv<GlobalArgs>) =>
    y
      .option('write', { type: 'boolean', describe: 'Also a round trip in a scratch data source, deleted at the end (needs --connector)' })
      .option('connector', { type: 'string', array: true, describe: 'Connector id for the scratch data source (repeatable)' })
      .option('save', { type: 'string', describe: 'Write the answers, redacted, to this folder (fixtures and a support bundle)' })
      .example('$0 probe --config /etc/dssync/config.json', 'Read-only: lists, one document, its chunks, an error')
      .example('$0 probe --write --connector conn-1 --save ./probe-out', 'The full round trip, saved') as unknown as Argv<ProbeArgs>,
  handler: async (args) => {
    await runProbe(args);
  },
};

/** A document's fields, whether or not the answer wraps them in `data`. */
function innerRecord(body: unknown): Record<string, unknown> {
  const rec = isObj(body) ? (body as Record<string, unknown>) : {};
  return isObj(rec.data) ? (rec.data as Record<string, unknown>) : rec;
}

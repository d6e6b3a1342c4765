/**
 * The simulation's service: an in-process model of the document interface
 * (../shared/datastore-api.md) with its unknowns set both ways — an update that clears the
 * fields it does not name or keeps them; listings in one answer, or paged by offset or by
 * cursor (with writes landing between two pages) — the content's SHA-256 per document, and
 * faults drawn by the history, one consumed per call: 503, 429 with and without Retry-After,
 * an answer lost after the write committed, an upload committed only later (after the
 * client gave up: it appears in a later listing), and a crash of the process at that call.
 *
 * What the engine sees of a fault is what the real client hands it once its own retries
 * are spent (the pacer's handling of 429/503 is unit-tested in test/unit/api/).
 */
import { ApiError } from '../../src/api/errors.js';
import { keptRecords, type DatastoreApi, type ListDocumentsOptions } from '../../src/api/api.js';
import type { DataSourceRecord, DocumentRecord, DocumentUpdate, JsonObject, UploadFile } from '../../src/api/records.js';
import { provisionalName } from '../../src/engine/data-source.js';
import { storedName, type NameRule } from '../../src/engine/service-names.js';
import { FakeApi } from '../helpers/fake-api.js';
import { openUpload } from '../../src/api/upload.js';
import { sha256 } from '../helpers/fake-local.js';

export type Fault =
  | 'none'
  | 'server-error'
  | 'rate-limited'
  | 'rate-limited-retry-after'
  | 'ambiguous'
  /** A write whose connection drops before the service sees it: lost answer, nothing done. */
  | 'dropped'
  | 'late-commit'
  /**
   * Issue 23, defect 4: the upload's request takes the client's whole deadline (60 s of
   * simulated time pass while it waits), the client gives up and the process ends (a kill, a
   * one-shot sync exiting); the service commits it 15 s after that, once the next process
   * has started and listed.
   */
  | 'late-commit-after-deadline'
  | 'crash-before'
  | 'crash-after'
  | 'write-between-pages';

export interface Doc {
  id: string;
  name: string;
  url: string | undefined;
  metadata: JsonObject;
  size: number;
  /** SHA-256 of the content the service holds. */
  content: string;
  /** Uploaded by dssync (the process's uploads), as opposed to a person or another installation. */
  byUs: boolean;
}

export interface ServiceVariant {
  /** An update clears the fields it does not name (url), and replaces metadata whole; else keeps / merges. */
  updateClears: boolean;
  paging: 'none' | 'offset' | 'cursor';
  pageSize: number;
  /**
   * What the service does to the names it is given (issue 34 cases 6 to 8; the emulator's
   * --name-rules, --name-max-bytes and ignored renames), by the one model of them
   * (engine/service-names.ts): every name stored is rewritten by `nameRule`; an update's
   * name is ignored with `renamesIgnored`.
   */
  nameRule?: NameRule | undefined;
  renamesIgnored?: boolean | undefined;
  /**
   * The data source was just created by the daemon's first process, under its provisional
   * name (engine/data-source.ts): that process's lease holds from its first claim and names
   * it; every later one (a restart, the second process with a copy of the state) finds it so.
   * 'raced': a replica reaching it by id starts beside the creator (world.ts start).
   */
  born?: 'alone' | 'raced' | undefined;
}

export interface ServiceCounters {
  calls: number;
  faults: number;
  lateCommits: number;
}

interface LateUpload {
  dueAt: number;
  files: { name: string; content: string; size: number }[];
}

const DS = 'ds1';
/** The name the mapping's config gives its data source. */
export const SHARE = 'Share';

/** How long the client waits for an upload's answer before it gives up (the headers timeout). */
const CLIENT_DEADLINE_MS = 60_000;

/**
 * How long after the call a late upload lands: within 50 s, or — every other one — 61 to
 * 120 s later, past the client's 60 s deadline and past the settle window of an intent
 * whose request ended at once (issue 23, defect 4: the service committed 15 s after the
 * client had waited out its timeout, and after the next process had closed the intent).
 * Deterministic in the call count, as the history's faults are.
 */
function lateCommitDelay(calls: number): number {
  return calls % 2 === 0 ? 1_000 + (calls % 50) * 1_000 : 61_000 + (calls % 60) * 1_000;
}

export class FakeService extends FakeApi {
  readonly store = new Map<string, Doc>();
  private nextDocId = 1;
  faults: Fault[] = [];
  readonly counters: ServiceCounters = { calls: 0, faults: 0, lateCommits: 0 };
  private late: LateUpload[] = [];
  /** Contents every document ever created held (for the "never a partial file" check). */
  readonly created: { content: string; name: string; during: string }[] = [];
  /** What the process is doing, for `created` (set by the world: 'full' / 'changes' pass). */
  activity = 'idle';
  /**
   * The folder changing while a request of a pass is in flight (issue 23, defect 11): called
   * before each call acts and after it acted; returns true once done (then dropped).
   */
  duringCall: ((when: 'before' | 'after', write: boolean) => boolean) | undefined;
  private callHook(when: 'before' | 'after', write: boolean): void {
    if (!this.hooksOff && this.duringCall?.(when, write)) this.duringCall = undefined;
  }
  /** The call being made is not a pass's (a lease's request): neither duringCall nor the faults see it. */
  hooksOff = false;
  /** Files a process writes outside the folder for an upload (the lease's marker body), by path. */
  readonly sideFiles = new Map<string, string>();
  /** Something done by someone else between two pages of a listing. */
  betweenPages: (() => void) | undefined;
  /** The process crashes at this call (the world's crash). */
  onCrash: () => void = () => undefined;
  /** Simulated time passes while a request is in flight (the world moves its clock; no timer fires meanwhile). */
  elapse: (ms: number) => void = () => undefined;
  private generation = 0;

  constructor(
    private readonly now: () => number,
    readonly variant: ServiceVariant,
  ) {
    super();
    this.dataSourceName = variant.born !== undefined ? provisionalName(SHARE) : SHARE;
  }

  // ---- the world's view ---------------------------------------------------------------

  docs_(): Doc[] {
    return [...this.store.values()];
  }

  create(d: Omit<Doc, 'id'>): Doc {
    const doc = { ...d, id: `d${String(this.nextDocId++).padStart(4, '0')}` };
    this.store.set(doc.id, doc);
    this.created.push({ content: doc.content, name: doc.name, during: d.byUs ? this.activity : 'other' });
    return doc;
  }

  /** Late uploads land when their time comes (before any call and as the clock moves). */
  landLate(upTo = this.now()): void {
    const due = this.late.filter((l) => l.dueAt <= upTo);
    if (due.length === 0) return;
    this.late = this.late.filter((l) => l.dueAt > upTo);
    for (const l of due) {
      for (const f of l.files) this.create({ name: storedName(f.name, this.variant.nameRule), url: undefined, metadata: {}, size: f.size, content: f.content, byUs: true });
      this.counters.lateCommits++;
    }
  }

  /** When the last late upload lands, if any is pending. */
  lateDue(): number | undefined {
    return this.late.length === 0 ? undefined : Math.max(...this.late.map((l) => l.dueAt));
  }

  /** The API as one process sees it: after its crash, nothing it sends arrives. */
  forProcess(): DatastoreApi {
    const gen = ++this.generation;
    return new Proxy(this as DatastoreApi, {
      get: (target, key, receiver) => {
        const v: unknown = Reflect.get(target, key, receiver);
        if (typeof v !== 'function') return v;
        return (...args: unknown[]) => {
          if (gen !== this.generation) return Promise.reject(new ApiError({ code: 'E_ABORTED', message: 'the process crashed' }));
          return (v as (...a: unknown[]) => unknown).apply(target, args);
        };
      },
    });
  }

  /** The process is gone (crash or stop): its calls in flight and later ones do nothing. */
  endProcess(): void {
    this.generation++;
  }

  // ---- faults -------------------------------------------------------------------------

  private takeFault(): Fault {
    // The history's faults are for the passes' calls (a lease's request takes none).
    if (this.hooksOff) return 'none';
    const f = this.faults.shift() ?? 'none';
    if (f !== 'none') this.counters.faults++;
    return f;
  }

  /** Runs a call: a fault before it acts, the action, a fault after it. */
  private async act<T>(write: boolean, fn: () => T, late?: (delayMs?: number) => void): Promise<T> {
    this.counters.calls++;
    this.landLate();
    this.callHook('before', write);
    const gen = this.generation;
    const f = this.takeFault();
    switch (f) {
      case 'server-error':
        throw new ApiError({ code: 'E_SERVER', status: 503, message: '503 Service Unavailable (sim)', retryable: true });
      case 'rate-limited':
        throw new ApiError({ code: 'E_RATE_LIMITED', status: 429, message: '429 Too Many Requests (sim)', retryable: true });
      case 'rate-limited-retry-after':
        throw new ApiError({ code: 'E_RATE_LIMITED', status: 429, message: '429 Too Many Requests (sim)', retryable: true, retryAfterMs: 30_000 });
      case 'crash-before':
        this.onCrash();
        throw new ApiError({ code: 'E_ABORTED', message: 'the process crashed' });
      case 'dropped':
        if (write) throw new ApiError({ code: 'E_CONNECTION', message: 'the connection was reset (sim)', retryable: true, ambiguous: true });
        break;
      case 'late-commit-after-deadline':
        if (late) {
          late(CLIENT_DEADLINE_MS + 15_000);
          this.elapse(CLIENT_DEADLINE_MS);
          this.onCrash();
          throw new ApiError({ code: 'E_ABORTED', message: 'gave up after the deadline, and the process ended (sim)' });
        }
        break;
      case 'late-commit':
        if (late) {
          late();
          throw new ApiError({ code: 'E_TIMEOUT', message: 'timed out waiting for the answer (sim)', retryable: true, ambiguous: true });
        }
        break;
      default:
        break;
    }
    const out = fn();
    if (gen !== this.generation) throw new ApiError({ code: 'E_ABORTED', message: 'the process crashed' });
    if (f === 'crash-after') {
      this.onCrash();
      throw new ApiError({ code: 'E_ABORTED', message: 'the process crashed' });
    }
    this.callHook('after', write);
    if (f === 'ambiguous' && write) throw new ApiError({ code: 'E_TIMEOUT', message: 'the answer was lost (sim)', retryable: true, ambiguous: true });
    return out;
  }

  private recordOf(d: Doc): DocumentRecord {
    return { id: d.id, name: d.name, url: d.url, metadata: structuredClone(d.metadata), raw: { id: d.id, name: d.name, size: d.size } };
  }

  private must(id: string): Doc {
    const d = this.store.get(id);
    if (!d) throw new ApiError({ code: 'E_NOT_FOUND', status: 404, message: `document ${id} not found` });
    return d;
  }

  // ---- the interface the engine uses ---------------------------------------------------

  override async listDocuments(_ds: string, opts?: ListDocumentsOptions): Promise<DocumentRecord[]> {
    if (this.variant.paging === 'none') return this.act(false, () => keptRecords(this.docs_().map((d) => this.recordOf(d)), opts));
    // Paged: each page is its own request; writes may land between two of them.
    const seen = new Map<string, DocumentRecord | undefined>();
    let offset = 0;
    let cursor = '';
    for (let page = 0; page < 10_000; page++) {
      const items = await this.act(false, () => {
        const all = this.docs_().sort((a, b) => (a.id < b.id ? -1 : 1));
        const slice = this.variant.paging === 'offset' ? all.slice(offset, offset + this.variant.pageSize) : all.filter((d) => d.id > cursor).slice(0, this.variant.pageSize);
        return slice.map((d) => this.recordOf(d));
      });
      // The client keeps the first sight of each id (test/bad-input S19).
      // keep is asked once per distinct document, as the page arrives (as the real client does).
      for (const r of items) if (!seen.has(r.id)) seen.set(r.id, keptRecords([r], opts).length === 1 ? r : undefined);
      if (items.length < this.variant.pageSize) break;
      offset += items.length;
      cursor = items[items.length - 1]!.id;
      if (this.faults[0] === 'write-between-pages') {
        this.takeFault();
        this.betweenPages?.();
      }
    }
    return [...seen.values()].filter((r) => r !== undefined);
  }

  override getDocument(_ds: string, id: string): Promise<DocumentRecord> {
    return this.act(false, () => this.recordOf(this.must(id)));
  }

  override async uploadDocuments(_ds: string, files: UploadFile[]): Promise<DocumentRecord[]> {
    // What the real client reads and checks before it sends (api/upload.ts over the engine's
    // opened files): a file not the one walked and hashed is E_FILE_CHANGED, and no request
    // is made.
    const sent = await this.bodyOf(files);
    return this.act(
      true,
      () => sent.map((f) => this.recordOf(this.create({ name: storedName(f.name, this.variant.nameRule), url: undefined, metadata: {}, size: f.size, content: f.content, byUs: true }))),
      (delayMs) => this.late.push({ dueAt: this.now() + (delayMs ?? lateCommitDelay(this.counters.calls)), files: sent }),
    );
  }

  /** The upload's parts as the client builds them; the lease's marker body (written beside the state, not folder content) as written. */
  private async bodyOf(files: UploadFile[]): Promise<{ name: string; content: string; size: number }[]> {
    const side = files.map((f) => this.sideFiles.get(f.path));
    if (side.every((t) => t !== undefined)) return files.map((f, i) => ({ name: f.name, content: sha256(side[i]!), size: Buffer.byteLength(side[i]!) }));
    return bodyParts(files);
  }

  override updateDocument(_ds: string, id: string, update: DocumentUpdate): Promise<DocumentRecord> {
    return this.act(true, () => {
      const d = this.must(id);
      if (!this.variant.renamesIgnored) d.name = storedName(update.name, this.variant.nameRule);
      if (this.variant.updateClears) {
        d.url = update.url;
        d.metadata = structuredClone(update.metadata ?? {});
      } else {
        if (update.url !== undefined) d.url = update.url;
        d.metadata = { ...d.metadata, ...structuredClone(update.metadata ?? {}) };
      }
      return this.recordOf(d);
    });
  }

  override deleteDocument(_ds: string, id: string): Promise<void> {
    return this.act(true, () => {
      this.must(id);
      this.store.delete(id);
    });
  }

  override getDataSource(id: string): Promise<{ id: string; raw: JsonObject }> {
    return this.act(false, () => ({ id, raw: {} }));
  }

  /** The data source's name (the provisional one while a born data source is not named yet). */
  dataSourceName: string;

  override listDataSources(): Promise<DataSourceRecord[]> {
    return this.act(false, () => [{ id: DS, name: this.dataSourceName, raw: {} }]);
  }

  override updateDataSource(id: string, input: { name: string }): Promise<DataSourceRecord> {
    return this.act(true, () => {
      if (id !== DS) throw new ApiError({ code: 'E_NOT_FOUND', status: 404, message: `data source ${id} not found (sim)` });
      this.dataSourceName = input.name;
      return { id, name: input.name, raw: {} };
    });
  }

  get dataSourceId(): string {
    return DS;
  }
}

/** Each file's part of the body the real client builds for an upload (openUpload), in order. */
async function bodyParts(files: UploadFile[]): Promise<{ name: string; content: string; size: number }[]> {
  const upload = await openUpload(files, { method: 'POST', path: '/upload (sim)' });
  try {
    const { body, contentType } = upload.body;
    const whole = Buffer.isBuffer(body) ? body : Buffer.concat(await body.toArray());
    const delimiter = Buffer.from(`\r\n--${contentType.slice(contentType.indexOf('boundary=') + 'boundary='.length)}`);
    let at = 0;
    return files.map((f) => {
      const start = whole.indexOf('\r\n\r\n', at) + 4;
      at = whole.indexOf(delimiter, start);
      const content = whole.subarray(start, at);
      return { name: f.name, content: sha256(content), size: content.length };
    });
  } finally {
    await upload.close();
  }
}

/**
 * The state's journal (DESIGN §4): an append-only file next to the snapshot,
 * `<state file>.journal`, mode 0600. A durable state write appends one record holding the
 * ops (ops.ts) made since the last write, and fsyncs: its cost depends on what changed, not
 * on how many files the state holds. The snapshot (snapshot-file.ts) is rewritten only when
 * the journal is folded into it (store.ts).
 *
 * Record (text, so that it is readable with `less`):
 *
 *   <payload bytes: 8 hex digits><CRC-32 of the payload: 8 hex digits><payload>\n
 *   payload = {"f":<state format>,"s":<seq of the first op>,"o":[<op>,…]}   (JSON, UTF-8, one line)
 *
 * Every record names its state format first ("f", absent before dssync 0.4.0), so that a
 * reader sees a newer journal's format from its first bytes and refuses it
 * (StateVersionError) instead of taking records it cannot read for a torn tail. Releases
 * before 0.4.0 ignore "f": they refuse a newer state by its snapshot, which is on disk
 * from the first write (store.ts).
 *
 * Every op has a sequence number (the first op of the state's life is 1); the snapshot says
 * which was the last op it holds (`journalSeq`), and a load replays only the ops after it,
 * so a record that is both in the snapshot and in the journal is never applied twice.
 *
 * Crashes: a record cut short by a crash (the last one, incomplete) is a torn tail: it was
 * never acknowledged (the fsync had not returned), and it is cut off. Anything else that is
 * not a record (a bad byte anywhere, a cut that leaves no valid record) is damage: the
 * reading goes on at the next valid record, and the store keeps a copy of the file
 * (parseJournal, store.ts). After a failed append the file is cut back to its last complete
 * record before the next one, so a partial record can never hide later ones.
 */
import { dirname } from 'node:path';
import { crc32 } from 'node:zlib';
import { FILE_MODE, ensureDir, syncDir, unlessMissing, writeAll, writeFileAtomic, type StateFileHandle, type StateFs } from './atomic-file.js';
import { errnoOf } from '../errors/errno.js';
import { parseOp, type StateOp } from './ops.js';
import { STATE_VERSION } from './schema.js';
import { yieldNow } from '../time/yield-now.js';

const HEADER = 16;
/** Ops per record: encoding 2,000 file changes takes a few ms. */
const RECORD_OPS = 2000;

const NEWLINE = 0x0a;

export function journalPathOf(statePath: string): string {
  return `${statePath}.journal`;
}

/** One framed record. Every record names the state format it was written in ("f"), first. */
export function frameRecord(firstSeq: number, ops: readonly StateOp[]): Buffer {
  const payload = Buffer.from(JSON.stringify({ f: STATE_VERSION, s: firstSeq, o: ops }));
  const header = `${payload.length.toString(16).padStart(8, '0')}${(crc32(payload) >>> 0).toString(16).padStart(8, '0')}`;
  const out = Buffer.allocUnsafe(HEADER + payload.length + 1);
  out.write(header, 0, 'latin1');
  payload.copy(out, HEADER);
  out[out.length - 1] = NEWLINE;
  return out;
}

export interface JournalRecord {
  first: number;
  ops: StateOp[];
  /** Byte offset of the record in the file. */
  at: number;
}

/** Bytes of the journal that are no record: `[from, to)` and why. */
export interface DamagedRange {
  from: number;
  to: number;
  problem: string;
}

export interface ParsedJournal {
  /** Every valid record, in file order: those after a damaged range too. */
  records: JournalRecord[];
  /** Bytes of complete, valid records from the start (up to the first problem). */
  validBytes: number;
  /**
   * An incomplete last record after valid ones (or after a snapshot: `withSnapshot`): a
   * write cut short by a crash, never acknowledged. Only that is a torn tail.
   */
  torn?: string;
  /** Ranges that are no record, each followed by valid records or ending the file (damage). */
  damaged: DamagedRange[];
  /** The newest state format a record names, when it is newer than this dssync reads. */
  newerFormat?: number;
}

/** A record (none when it is of a newer format, whose ops this dssync cannot read), or why there is none. */
type RecordRead = { ok: true; record?: JournalRecord; end: number; format: number | undefined } | { ok: false; problem: string; incomplete: boolean };

/** The record starting at `at`, or why there is none. */
function readRecord(buf: Buffer, at: number): RecordRead {
  const fail = (problem: string, incomplete = false): RecordRead => ({ ok: false, problem, incomplete });
  if (buf.length - at < HEADER + 1) return fail('an incomplete record', true);
  const header = buf.toString('latin1', at, at + HEADER);
  if (!/^[0-9a-f]{16}$/.test(header)) return fail('a damaged record header');
  const len = parseInt(header.slice(0, 8), 16);
  const crc = parseInt(header.slice(8), 16);
  const end = at + HEADER + len;
  if (end + 1 > buf.length) return fail('an incomplete record', true);
  const payload = buf.subarray(at + HEADER, end);
  if (buf[end] !== NEWLINE || (crc32(payload) >>> 0) !== crc) return fail('a record whose checksum does not match');
  let raw: unknown;
  try {
    raw = JSON.parse(payload.toString('utf8'));
  } catch {
    return fail('a record that is not JSON');
  }
  const r = raw as { f?: unknown; s?: unknown; o?: unknown };
  const format = typeof r.f === 'number' && Number.isSafeInteger(r.f) ? r.f : undefined;
  if (r.f !== undefined && format === undefined) return fail('a record whose format is not a number');
  if (format !== undefined && format > STATE_VERSION) return { ok: true, end: end + 1, format };
  if (typeof r.s !== 'number' || !Number.isSafeInteger(r.s) || r.s < 1 || !Array.isArray(r.o)) return fail('a record of an unknown shape');
  const ops: StateOp[] = [];
  for (const v of r.o) {
    const op = parseOp(v);
    if (!op) return fail('a record holding an unknown op');
    ops.push(op);
  }
  return { ok: true, record: { first: r.s, ops, at }, end: end + 1, format };
}

/**
 * Where the next valid record after a bad one at `at` starts, or undefined. A record holds
 * no newline but its last byte, so one starts after a newline, or where the bad record's
 * own length says (a flipped newline).
 */
function nextRecord(buf: Buffer, at: number, skip: number | undefined): number | undefined {
  const candidates = new Set<number>();
  if (skip !== undefined && skip > at && skip < buf.length) candidates.add(skip);
  for (let nl = buf.indexOf(NEWLINE, at); nl !== -1 && nl + 1 < buf.length; nl = buf.indexOf(NEWLINE, nl + 1)) candidates.add(nl + 1);
  for (const c of [...candidates].sort((a, b) => a - b)) if (readRecord(buf, c).ok) return c;
  return undefined;
}

/**
 * Splits a journal into its records. A bad record followed by valid ones is damage: the
 * reading goes on after it (`damaged`). Only an incomplete last record after valid ones
 * (`withSnapshot`: or after a snapshot) is a torn tail; anything else wrong at the end is
 * damage too, as is a journal whose only record is cut: what it held exists nowhere else.
 */
export function parseJournal(buf: Buffer, withSnapshot = false): ParsedJournal {
  const out: ParsedJournal = { records: [], validBytes: 0, damaged: [] };
  let at = 0;
  while (at < buf.length) {
    const r = readRecord(buf, at);
    if (r.ok) {
      if (r.record) out.records.push(r.record);
      else out.newerFormat = Math.max(out.newerFormat ?? 0, r.format ?? 0);
      at = r.end;
      if (out.damaged.length === 0) out.validBytes = at;
      continue;
    }
    const header = buf.toString('latin1', at, Math.min(at + HEADER, buf.length));
    const skip = /^[0-9a-f]{16}$/.test(header) ? at + HEADER + parseInt(header.slice(0, 8), 16) + 1 : undefined;
    const next = nextRecord(buf, at, skip);
    const lastAndCut = next === undefined && r.incomplete && buf.indexOf(NEWLINE, at) === -1;
    if (lastAndCut && out.damaged.length === 0 && (at > 0 || withSnapshot)) {
      out.torn = `${r.problem} at byte ${at}`;
      return out;
    }
    out.damaged.push({ from: at, to: next ?? buf.length, problem: `${r.problem} at byte ${at}` });
    if (next === undefined) return out;
    at = next;
  }
  return out;
}

export interface AppendResult {
  /** Bytes appended (0 when nothing was pending). */
  bytes: number;
  /** Longest time to encode one record (ms): the longest stretch on the event loop. */
  encodeMs: number;
}

/**
 * The writer of the journal. Ops are added as they are applied (add), and written by
 * append() — one call at a time, which the store's WriteScheduler guarantees. Appends and
 * the rewrite that follows a fold (keepTail/trim) are serialised on one chain.
 */
export class Journal {
  /** Sequence number of the last op added. */
  lastSeq: number;
  /** Size of the file's valid part. */
  bytes: number;
  private pending: StateOp[] = [];
  private pendingFirst = 0;
  private chain: Promise<unknown> = Promise.resolve();
  /** A failed append may have left part of a record: cut the file back before the next one. */
  private damaged = false;
  /** The file's directory entry is known to be durable. */
  private created: boolean;
  /** Records appended since keepTail(), for the rewrite after a fold. */
  private tail: Buffer[] | undefined;
  /** Set when the state directory had vanished: the store must write a full snapshot. */
  lostFiles = false;

  constructor(
    readonly path: string,
    private readonly fs: StateFs,
    opts: { lastSeq: number; bytes: number; exists: boolean },
  ) {
    this.lastSeq = opts.lastSeq;
    this.bytes = opts.bytes;
    this.created = opts.exists;
  }

  add(op: StateOp): void {
    if (this.pending.length === 0) this.pendingFirst = this.lastSeq + 1;
    this.pending.push(op);
    this.lastSeq++;
  }

  get hasPending(): boolean {
    return this.pending.length > 0;
  }

  /**
   * Writes the pending ops and fsyncs. The ops are taken synchronously; they are encoded as
   * records of at most RECORD_OPS ops, yielding to the event loop between records (a burst
   * of 100,000 changes must not block it), then written with one writev and one fsync. If
   * the write fails they are pending again (in front of newer ones), for the retry.
   */
  append(now: () => number): Promise<AppendResult> {
    if (this.pending.length === 0) return Promise.resolve({ bytes: 0, encodeMs: 0 });
    const ops = this.pending;
    const first = this.pendingFirst;
    this.pending = [];
    const run = (async () => {
      const recs: Buffer[] = [];
      let encodeMs = 0;
      for (let i = 0; i < ops.length; i += RECORD_OPS) {
        if (i > 0) await yieldNow();
        const t0 = now();
        recs.push(frameRecord(first + i, ops.slice(i, i + RECORD_OPS)));
        encodeMs = Math.max(encodeMs, now() - t0);
      }
      const write = this.chain.then(() => this.appendNow(recs));
      this.chain = write.catch(() => undefined);
      await write;
      return { bytes: recs.reduce((n, r) => n + r.length, 0), encodeMs };
    })();
    return run.catch((err: unknown) => {
      this.pending = ops.concat(this.pending);
      this.pendingFirst = first;
      throw err;
    });
  }

  /** Resolves once the appends (and rewrite) started so far are done, whether or not they failed. */
  settled(): Promise<void> {
    return this.chain.then(() => undefined);
  }

  /** Forgets the pending ops up to `seq`: a durable snapshot holds them. */
  dropPendingThrough(seq: number): void {
    const n = Math.min(this.pending.length, seq - this.pendingFirst + 1);
    if (n <= 0) return;
    this.pending = this.pending.slice(n);
    this.pendingFirst += n;
  }

  /** From now on, keep the records appended: they are what a trim() keeps. */
  keepTail(): void {
    this.tail = [];
  }

  /** Stops keeping records (a fold failed). */
  dropTail(): void {
    this.tail = undefined;
  }

  /**
   * Replaces the journal with the records appended since keepTail() (atomically: the old
   * journal stays whole until the new one is in place). Only once the snapshot that holds
   * everything before them is durable.
   */
  trim(): Promise<void> {
    const run = this.chain.then(async () => {
      const keep = this.tail ?? [];
      this.tail = undefined;
      await writeFileAtomic(this.fs, this.path, keep);
      this.bytes = keep.reduce((n, b) => n + b.length, 0);
      this.damaged = false;
      this.created = true;
      this.lostFiles = false;
    });
    this.chain = run.catch(() => undefined);
    return run;
  }

  private async appendNow(recs: Buffer[]): Promise<void> {
    if (this.damaged) await this.cutBack();
    let fh: StateFileHandle;
    try {
      fh = await this.fs.open(this.path, 'a', FILE_MODE);
    } catch (err) {
      if (errnoOf(err) !== 'ENOENT') throw err;
      // The directory vanished (cleaned by hand?): what the journal held is gone with it.
      await ensureDir(this.fs, dirname(this.path));
      fh = await this.fs.open(this.path, 'a', FILE_MODE);
      this.bytes = 0;
      this.created = false;
      this.lostFiles = true;
    }
    try {
      await writeAll(fh, recs);
      await fh.sync();
    } catch (err) {
      this.damaged = true;
      throw err;
    } finally {
      await fh.close().catch(() => undefined);
    }
    if (!this.created) {
      await syncDir(this.fs, dirname(this.path));
      this.created = true;
    }
    for (const rec of recs) {
      this.bytes += rec.length;
      this.tail?.push(rec);
    }
  }

  private async cutBack(): Promise<void> {
    const fh = await unlessMissing(this.fs.open(this.path, 'r+'));
    if (fh === undefined) {
      this.damaged = false; // nothing left to cut: the next append recreates the file
      return;
    }
    try {
      await fh.truncate(this.bytes);
      await fh.sync();
    } finally {
      await fh.close().catch(() => undefined);
    }
    this.damaged = false;
  }
}

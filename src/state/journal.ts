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
 *   payload = {"s":<seq of the first op>,"o":[<op>,…]}   (JSON, UTF-8, one line)
 *
 * Every op has a sequence number (the first op of the state's life is 1); the snapshot says
 * which was the last op it holds (`journalSeq`), and a load replays only the ops after it,
 * so a record that is both in the snapshot and in the journal is never applied twice.
 *
 * Crashes: a record cut short by a crash (the last one) fails its length or checksum and is
 * ignored, with what follows it; it was never acknowledged (the fsync had not returned).
 * After a failed append the file is cut back to its last complete record before the next
 * one, so a partial record can never hide later ones.
 */
import { dirname } from 'node:path';
import { crc32 } from 'node:zlib';
import { FILE_MODE, ensureDir, syncDir, writeAll, writeFileAtomic, type StateFileHandle, type StateFs } from './atomic-file.js';
import { errnoOf } from '../errors/errno.js';
import { parseOp, type StateOp } from './ops.js';

const HEADER = 16;
/** Ops per record: encoding 2,000 file changes takes a few ms. */
const RECORD_OPS = 2000;

const yieldNow = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
const NEWLINE = 0x0a;

export function journalPathOf(statePath: string): string {
  return `${statePath}.journal`;
}

/** One framed record. */
export function frameRecord(firstSeq: number, ops: readonly StateOp[]): Buffer {
  const payload = Buffer.from(JSON.stringify({ s: firstSeq, o: ops }));
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
}

export interface ParsedJournal {
  records: JournalRecord[];
  /** Bytes of complete, valid records from the start. */
  validBytes: number;
  /** Why reading stopped before the end (a torn or damaged record), if it did. */
  problem?: string;
}

/** Splits a journal into its records, stopping at the first one that is incomplete or damaged. */
export function parseJournal(buf: Buffer): ParsedJournal {
  const records: JournalRecord[] = [];
  let at = 0;
  while (at < buf.length) {
    const stop = (problem: string): ParsedJournal => ({ records, validBytes: at, problem: `${problem} at byte ${at}` });
    if (buf.length - at < HEADER + 1) return stop('an incomplete record');
    const header = buf.toString('latin1', at, at + HEADER);
    if (!/^[0-9a-f]{16}$/.test(header)) return stop('a damaged record header');
    const len = parseInt(header.slice(0, 8), 16);
    const crc = parseInt(header.slice(8), 16);
    const end = at + HEADER + len;
    if (end + 1 > buf.length) return stop('an incomplete record');
    const payload = buf.subarray(at + HEADER, end);
    if (buf[end] !== NEWLINE || (crc32(payload) >>> 0) !== crc) return stop('a record whose checksum does not match');
    let raw: unknown;
    try {
      raw = JSON.parse(payload.toString('utf8'));
    } catch {
      return stop('a record that is not JSON');
    }
    const r = raw as { s?: unknown; o?: unknown };
    if (typeof r.s !== 'number' || !Number.isSafeInteger(r.s) || r.s < 1 || !Array.isArray(r.o)) return stop('a record of an unknown shape');
    const ops: StateOp[] = [];
    for (const v of r.o) {
      const op = parseOp(v);
      if (!op) return stop('a record holding an unknown op');
      ops.push(op);
    }
    records.push({ first: r.s, ops });
    at = end + 1;
  }
  return { records, validBytes: at };
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
      const prev = this.chain;
      const write = prev.then(() => this.appendNow(recs));
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
    let fh: StateFileHandle;
    try {
      fh = await this.fs.open(this.path, 'r+');
    } catch (err) {
      if (errnoOf(err) !== 'ENOENT') throw err;
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

/**
 * Decoding of the snapshot file (its format: encoder.ts), with validation and migration.
 *
 * A snapshot is read as a stream: chunks of CHUNK_BYTES, split on newlines, one JSON.parse
 * per line, yielding to the event loop every few milliseconds. Its cost grows with the
 * number of files and nothing else, and no more than a chunk of it is in memory at once.
 * The trailer (line count and CRC-32) is checked at the end: a snapshot cut short or
 * damaged is a StateCorruptError, as is any line that is not what its place says.
 * A file of version 1 or 2 (one JSON object, first byte `{`) is no longer read: it is
 * refused with StateFormatRetiredError, whole or not, and left as it is (errors.ts says why
 * it is not treated as corrupt).
 */
import { crc32 } from 'node:zlib';
import { StateCorruptError, StateFormatRetiredError, StateVersionError } from './errors.js';
import { openIfExists, type StateFs } from './atomic-file.js';
import { SNAPSHOT_MAGIC, type SliceOptions } from './encoder.js';
import { FIRST_LINE_VERSION, STATE_VERSION, type MappingState, type StateIdentity } from './schema.js';
import { isFileLine, mappingFromHead, newState, type DecodedState } from './validate.js';

const NEWLINE = 0x0a;
const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;
/** Bytes read at a time. */
const CHUNK_BYTES = 1 << 20;
/** Bytes of lines decoded to text at a time; the clock is looked at after each such window (~260 lines). */
export const WINDOW_BYTES = 1 << 16;

/**
 * The line parser, fed chunks in order (parse), then told the file ended (finish). A file
 * line's fields go straight into its mapping's table (file-table.ts): no entry is made.
 */
export class SnapshotParser {
  private readonly state = newState();
  private lines = 0;
  private crc = 0;
  private mapping: MappingState | undefined;
  private ended = false;
  private headerSeen = false;
  /** The older format the file was in, when it was (migrated as it is read). */
  private migratedFrom: number | undefined;

  constructor(private readonly file: string) {}

  /** Lines parsed so far. */
  get lineCount(): number {
    return this.lines;
  }

  /**
   * Parses the complete lines of `buf` from `from`, and returns the offset after the last
   * one it parsed: the end of the last complete line, or earlier when `pause()` (asked
   * after each window of lines) said to stop there for now.
   */
  parse(buf: Buffer, from: number, pause?: () => boolean): number {
    let at = from;
    while (at < buf.length) {
      // A window of whole lines: to the last newline within WINDOW_BYTES, or to the first
      // one after (a longer line). UTF-8 never has 0x0a inside a character, so a window
      // decodes to whole characters.
      let end = buf.lastIndexOf(NEWLINE, Math.min(at + WINDOW_BYTES, buf.length) - 1);
      if (end < at) end = at + WINDOW_BYTES < buf.length ? buf.indexOf(NEWLINE, at + WINDOW_BYTES) : -1;
      if (end < at) break;
      this.window(buf, at, end + 1);
      at = end + 1;
      if (pause?.()) break;
    }
    return at;
  }

  /**
   * The lines of `buf[start, end)`, which ends with a newline: decoded once, each line
   * parsed from a slice of that text (a slice is not a copy).
   */
  private window(buf: Buffer, start: number, end: number): void {
    const text = buf.toString('utf8', start, end);
    // The checksum covers every byte above the end line.
    let crcEnd = end;
    for (let at = 0; at < text.length; ) {
      const nl = text.indexOf('\n', at);
      if (this.ended) this.bad('bytes after the end line', 'the end');
      if (this.headerSeen && text.charCodeAt(at) === 0x65 /* e */ && text.startsWith('end ', at)) {
        crcEnd = start + Buffer.byteLength(text.slice(0, at));
        this.crc = crc32(buf.subarray(start, crcEnd), this.crc);
        this.checkTrailer(text.slice(at, nl));
      } else {
        this.line(text, at, nl);
      }
      at = nl + 1;
    }
    if (crcEnd === end) this.crc = crc32(buf.subarray(start, end), this.crc);
  }

  /** The file ended with `rest` after its last newline. */
  finish(rest: number): DecodedState {
    if (!this.headerSeen && rest === 0) this.bad('the file is empty', 'the file');
    if (rest > 0 || !this.ended) this.bad(`no end line after line ${this.lines}: the file is cut short`, 'the file');
    return this.migratedFrom === undefined ? { state: this.state } : { state: this.state, migratedFrom: this.migratedFrom };
  }

  private line(text: string, start: number, end: number): void {
    this.lines++;
    const first = text.charCodeAt(start);
    const mapping = this.mapping;
    if (first === OPEN_BRACKET && mapping) {
      const t = this.json(text, start, end);
      if (!isFileLine(t)) this.bad('not a [path, documentId, size, mtimeMs, sha256, syncedAt, hashedAt, ctimeMs, dev, ino] file line');
      // Straight into the table's columns: no entry object is made.
      mapping.files.setTuple(t[0] as string, t, 1);
    } else if (!this.headerSeen) {
      this.header(text.slice(start, end));
    } else if (first === OPEN_BRACE) {
      const v = this.json(text, start, end);
      if (typeof v !== 'object' || v === null || Array.isArray(v)) this.bad('not a mapping line');
      const id = (v as Record<string, unknown>)['mapping'];
      if (typeof id !== 'string') this.bad('a mapping line without "mapping" (its id)');
      if (id in this.state.mappings) this.bad(`mapping ${JSON.stringify(id)} twice`);
      const m = mappingFromHead(this.file, `line ${this.lines}: mappings.${id}`, v as Record<string, unknown>);
      this.state.mappings[id] = m;
      this.mapping = m;
    } else {
      this.bad(first === OPEN_BRACKET ? 'a file line before any mapping line' : 'not a header, mapping, file or end line');
    }
  }

  /** `dssync-state <version> {"needs":"0.3.0","journalSeq":N,"identity":{…}}` */
  private header(text: string): void {
    const m = /^(\S+) (\d+) (.*)$/.exec(text);
    if (!m || m[1] !== SNAPSHOT_MAGIC) this.bad(`the first line is not "${SNAPSHOT_MAGIC} <version> {…}"`);
    const version = Number(m[2]);
    let head: unknown;
    try {
      head = JSON.parse(m[3] ?? '');
    } catch {
      // A newer format is refused whatever its header holds: it is not this one's to judge.
      if (version > STATE_VERSION) throw new StateVersionError(this.file, version, STATE_VERSION);
      this.bad('the header is not JSON after its version');
    }
    if (version > STATE_VERSION) {
      const needs = (head as { needs?: unknown } | null)?.needs;
      throw new StateVersionError(this.file, version, STATE_VERSION, typeof needs === 'string' && /^\d+\.\d+\.\d+\S{0,40}$/.test(needs) ? needs : undefined);
    }
    if (version < FIRST_LINE_VERSION) this.bad(`version ${version} is not one this dssync can read`);
    // Format 3 (dssync 0.1.0) is read without an identity (the first open stores one), format 4
    // (0.2.0) without writer sessions; both are rewritten in the current format at once
    // (migratedFrom).
    if (version !== STATE_VERSION) this.migratedFrom = version;
    const journalSeq = (head as { journalSeq?: unknown } | null)?.journalSeq;
    if (typeof journalSeq !== 'number' || !Number.isSafeInteger(journalSeq) || journalSeq < 0) {
      this.bad(`"journalSeq" is missing or invalid (${JSON.stringify(journalSeq) ?? 'undefined'})`);
    }
    this.state.journalSeq = journalSeq;
    const identity = (head as { identity?: unknown }).identity;
    if (identity !== undefined) {
      const parsed = parseIdentity(identity);
      if (parsed === undefined) this.bad('"identity" in the header is not {installationId, origin, formerIds}');
      this.state.identity = parsed;
    }
    this.headerSeen = true;
  }

  /** `end <lines> <crc32>` */
  private checkTrailer(text: string): void {
    const where = `the end line (after line ${this.lines})`;
    const m = /^end (\d+) ([0-9a-f]{8})$/.exec(text);
    if (!m) this.bad('damaged', where);
    if (Number(m[1]) !== this.lines) this.bad(`it counts ${m[1]} lines above it, the file has ${this.lines}: lines are missing`, where);
    if (parseInt(m[2] ?? '', 16) !== this.crc >>> 0) this.bad('its checksum does not match the lines above it: the file is damaged', where);
    this.ended = true;
  }

  private json(text: string, start: number, end: number): unknown {
    try {
      return JSON.parse(text.slice(start, end));
    } catch {
      return this.bad('not JSON');
    }
  }

  private bad(detail: string, where = `line ${this.lines}`): never {
    throw new StateCorruptError(this.file, `${where}: ${detail}`);
  }
}

/**
 * Refuses what the first bytes of a file say it cannot be: one JSON object (format 1 or 2:
 * StateFormatRetiredError), or nothing but blanks (`whole`: the bytes are the whole file).
 */
function checkStart(file: string, buf: Buffer, whole: boolean): void {
  for (const b of buf) {
    if (b === 0x20 || b === 0x09 || b === 0x0a || b === 0x0d) continue;
    if (b === OPEN_BRACE) throw new StateFormatRetiredError(file);
    return;
  }
  if (whole) throw new StateCorruptError(file, 'the file is empty');
}

/** Decodes a whole snapshot held in memory (tests, tools). Throws StateCorruptError / StateVersionError / StateFormatRetiredError. */
export function decodeState(file: string, content: string | Buffer): DecodedState {
  const buf = typeof content === 'string' ? Buffer.from(content) : content;
  checkStart(file, buf, true);
  const parser = new SnapshotParser(file);
  const at = parser.parse(buf, 0);
  return parser.finish(buf.length - at);
}

export interface ReadSnapshot extends DecodedState {
  bytes: number;
}

/**
 * Reads the snapshot at `path` as a stream, or undefined when there is none. Yields every
 * `slice.sliceMs` or so. `parser`: one of the caller's (tests look at its progress).
 */
export async function readSnapshot(fs: StateFs, path: string, slice: SliceOptions, parser = new SnapshotParser(path)): Promise<ReadSnapshot | undefined> {
  const fh = await openIfExists(fs, path);
  if (fh === undefined) return undefined;
  let bytes = 0;
  try {
    // One buffer for the whole read: the incomplete last line of a read is moved to its
    // start and the next read lands after it. (A buffer joined anew for each read was, under
    // dssync's malloc settings, a fresh mapping whose pages faulted in one by one: ~0.7 s of
    // a million-line state's load.) A line longer than the buffer doubles it.
    let buf = Buffer.allocUnsafe(CHUNK_BYTES);
    /** Bytes of an incomplete line kept at buf's start. */
    let kept = 0;
    let sliceStart = slice.now();
    const pause = (): boolean => slice.now() - sliceStart >= slice.sliceMs;
    for (;;) {
      if (kept === buf.length) {
        const bigger = Buffer.allocUnsafe(buf.length * 2);
        buf.copy(bigger, 0, 0, kept);
        buf = bigger;
      }
      const { bytesRead } = await fh.read(buf, kept, buf.length - kept, bytes);
      if (bytes === 0) checkStart(path, buf.subarray(0, bytesRead), bytesRead < buf.length);
      if (bytesRead === 0) return { ...parser.finish(kept), bytes };
      bytes += bytesRead;
      sliceStart = slice.now(); // the read was a turn of the event loop
      const view = buf.subarray(0, kept + bytesRead);
      let at = 0;
      for (;;) {
        at = parser.parse(view, at, pause);
        if (view.indexOf(NEWLINE, at) < 0) break;
        await slice.yieldNow();
        sliceStart = slice.now();
      }
      kept = view.length - at;
      buf.copyWithin(0, at, view.length);
    }
  } finally {
    await fh.close();
  }
}

/** The header's identity (schema.ts StateIdentity), or undefined when it is not one. */
function parseIdentity(v: unknown): StateIdentity | undefined {
  if (typeof v !== 'object' || v === null) return undefined;
  const o = v as Record<string, unknown>;
  const id = o['installationId'];
  const origin = o['origin'];
  const former = o['formerIds'];
  if (typeof id !== 'string' || id === '') return undefined;
  if (origin !== 'drawn' && origin !== 'derived' && origin !== 'pinned') return undefined;
  if (!Array.isArray(former) || !former.every((f): f is string => typeof f === 'string')) return undefined;
  return { installationId: id, origin, formerIds: former };
}

/**
 * The local side of an upload: opening the files right before sending, streaming the
 * multipart body from those very descriptors, and matching the service's answer back to
 * the files.
 *
 * Each file is opened once, by its owner (`UploadFile.open`, records.ts: non-blocking, a
 * regular file only, lying beneath the mapped folder, the very file the walk and the hash
 * saw) and its part is read from that descriptor only — never by path again, so a file or folder swapped for a symbolic link
 * after the check cannot redirect what is sent. While streaming, the bytes are hashed; the
 * last chunk of a file is held back until the hash matches the one recorded at planning and
 * the descriptor's size, mtime and ctime are unchanged. Otherwise the body is abandoned
 * before the part ends (E_FILE_CHANGED): the service never receives a complete part.
 *
 * A batch of small files (each one read, that is one chunk, and the body within
 * SMALL_BODY_BYTES) is read and verified whole, with the same checks, before the request
 * starts, and sent as one buffer: for such a file the streaming would hold back its only
 * chunk anyway, and a file found changed is then refused before a byte of the batch is sent
 * (not ambiguous), and the descriptors are closed before the request.
 */
import { createHash, randomBytes } from 'node:crypto';
import { basename } from 'node:path';
import { Readable } from 'node:stream';
import { errnoOf } from '../errors/errno.js';
import { testPause } from '../test-hooks.js';
import { ApiError } from './errors.js';
import { contentTypeFor, DEFAULT_CONTENT_TYPE } from './content-type.js';
import { escapeFormName, formNameForms } from './form-name.js';
import { badResponse, type DecodeContext } from './decode.js';
import type { DocumentRecord, OpenedFile, OpenedStat, UploadFile } from './records.js';
import { nfc } from '../unicode.js';
import { convertIsolated } from '../convert/isolated.js';

function fileChanged(file: UploadFile, what: string, ctx: DecodeContext, extra: { ambiguous?: boolean; cause?: unknown } = {}): ApiError {
  return new ApiError({
    code: 'E_FILE_CHANGED',
    message: `${file.path}: ${what}; not uploaded, plan it again`,
    method: ctx.method,
    path: ctx.path,
    retryable: extra.ambiguous === true,
    ambiguous: extra.ambiguous === true,
    file: file.path,
    ...(extra.cause === undefined ? {} : { cause: extra.cause }),
  });
}

/** A multipart body, streamed or whole, ready for HttpTransport (its length is exact). */
export interface UploadBody {
  body: Readable | Buffer;
  contentType: string;
  contentLength: number;
}

/** The files of one upload attempt, opened and checked; close() when the request is over. */
export interface PreparedUpload {
  body: UploadBody;
  close(): Promise<void>;
}

interface OpenPart {
  file: UploadFile;
  opened: OpenedFile;
  header: Buffer;
  /** The part's bytes when they are not the file's own (a conversion's Markdown). */
  content?: Buffer;
}

const sizeOf = (p: OpenPart): number => p.content?.length ?? p.opened.stat.size;

const CRLF = Buffer.from('\r\n');
/** Read size while streaming: two of these per file in flight at most (one held back). */
const CHUNK_BYTES = 256 * 1024;
/** A body up to this size, of files of one chunk each, is read and checked whole before it is sent. */
export const SMALL_BODY_BYTES = 8 * 1024 * 1024;

/**
 * Opens every file and checks it (a missing one, anything but a regular file, one that now
 * leads outside its folder, another file than the one hashed, or a size/mtime that differs
 * from what the caller saw is E_FILE_CHANGED naming the path, and nothing is sent); then
 * builds the body that streams them.
 */
export async function openUpload(files: UploadFile[], ctx: DecodeContext): Promise<PreparedUpload> {
  await testPause('upload-open', files.map((f) => f.path));
  const parts: OpenPart[] = [];
  let closed = false;
  const close = async (): Promise<void> => {
    if (closed) return;
    closed = true;
    await Promise.all(parts.map((p) => p.opened.handle.close().catch(() => undefined)));
  };
  try {
    const boundary = `----dssync-${randomBytes(16).toString('hex')}`;
    // Opened all at once (a batch of small files is one message to the folder lister's
    // worker, local/folder-lister.ts), every open awaited so that none is left unclosed; the
    // first file in order that cannot be sent is the error, as when they were opened in turn.
    const opens = await Promise.allSettled(files.map((file) => openChecked(file, ctx)));
    opens.forEach((o, i) => {
      if (o.status === 'fulfilled') parts.push({ file: files[i]!, opened: o.value, header: partHeader(boundary, files[i]!) });
    });
    const refused = opens.find((o) => o.status === 'rejected');
    if (refused !== undefined) throw refused.reason;
    for (const part of parts) if (part.file.convert) part.content = await converted(part, part.file.convert, ctx);
    await testPause('upload-send', files.map((f) => f.path));
    const closing = Buffer.from(`--${boundary}--\r\n`);
    const contentLength = parts.reduce((n, p) => n + p.header.length + sizeOf(p) + CRLF.length, 0) + closing.length;
    if (contentLength <= SMALL_BODY_BYTES && parts.every((p) => sizeOf(p) <= CHUNK_BYTES)) {
      const body = await wholeBody(parts, closing, contentLength, ctx);
      await close();
      return { body: { body, contentType: `multipart/form-data; boundary=${boundary}`, contentLength }, close };
    }
    return {
      body: { body: Readable.from(streamParts(parts, closing, ctx), { objectMode: false }), contentType: `multipart/form-data; boundary=${boundary}`, contentLength },
      close,
    };
  } catch (e) {
    await close();
    throw e;
  }
}

async function openChecked(file: UploadFile, ctx: DecodeContext): Promise<OpenedFile> {
  let opened: OpenedFile;
  try {
    opened = await file.open();
  } catch (e) {
    const code = errnoOf(e) ?? 'EUNKNOWN';
    const what =
      code === 'ENOENT'
        ? 'the file is gone (ENOENT)'
        : code === 'ELOOP'
          ? 'it was replaced by a symbolic link; not sent'
          : code === 'E_LOCAL_OUTSIDE'
            ? 'now leads outside its folder (replaced by a symbolic link?); not sent'
            : code === 'E_LOCAL_NOT_REGULAR'
              ? `not a regular file (${(e as Error).message}); not sent`
              : code === 'E_LOCAL_FILE_CHANGED'
                ? 'it was replaced by another file since it was hashed; not sent'
                : `the file cannot be opened (${code})`;
    throw fileChanged(file, what, ctx, { cause: e });
  }
  const st = opened.stat;
  const mismatch =
    file.expectedSize !== undefined && st.size !== file.expectedSize
      ? `size is now ${st.size} bytes, expected ${file.expectedSize}`
      : file.expectedMtimeMs !== undefined && Math.trunc(st.mtimeMs) !== Math.trunc(file.expectedMtimeMs)
        ? `modified since it was planned (mtime ${Math.trunc(st.mtimeMs)}, expected ${Math.trunc(file.expectedMtimeMs)})`
        : undefined;
  if (mismatch) {
    await opened.handle.close().catch(() => undefined);
    throw fileChanged(file, mismatch, ctx);
  }
  return opened;
}

/**
 * A file to be sent converted: read whole from its descriptor with readParts's checks (the
 * version hashed at planning, unchanged while read), then converted in a worker
 * (convert/isolated.ts). A file its converter cannot read, or that goes past a limit, is
 * E_CONVERT_FAILED with the reason, refused for this file until it changes; nothing is sent.
 */
async function converted(part: OpenPart, convert: NonNullable<UploadFile['convert']>, ctx: DecodeContext): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of readPart(part, ctx, false)) chunks.push(chunk);
  const bytes = Buffer.concat(chunks);
  await part.opened.handle.close().catch(() => undefined);
  const outcome = await convertIsolated(convert.converter, bytes, convert.limits);
  if (!outcome.ok) {
    throw new ApiError({ code: 'E_CONVERT_FAILED', message: `${part.file.path}: not converted to Markdown: ${outcome.reason}`, method: ctx.method, path: ctx.path, retryable: false, file: part.file.path });
  }
  return Buffer.from(outcome.markdown);
}

/**
 * The part's head as undici's FormData writes it (same escaping of the file name, see
 * form-name.ts, so the service sees the same name whichever sends it).
 */
function partHeader(boundary: string, file: UploadFile): Buffer {
  const name = escapeFormName(wellFormed(file.name));
  const type = blobType(file.contentType ?? (file.convert ? 'text/markdown' : contentTypeFor(file.name))) || DEFAULT_CONTENT_TYPE;
  return Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="documents"; filename="${name}"\r\nContent-Type: ${type}\r\n\r\n`);
}

/** A Blob's type rule: lower-cased when printable ASCII, dropped otherwise. */
function blobType(type: string): string {
  return /^[\x20-\x7e]*$/.test(type) ? type.toLowerCase() : '';
}

/** Lone surrogates become U+FFFD, as FormData's USVString conversion does. */
function wellFormed(s: string): string {
  return s.replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '\ufffd');
}

/**
 * The body of a batch of small files, read and verified whole (readPart) before the
 * request starts: a file that changed is refused here, before anything is sent (not ambiguous).
 */
async function wholeBody(parts: readonly OpenPart[], closing: Buffer, contentLength: number, ctx: DecodeContext): Promise<Buffer> {
  const body = Buffer.allocUnsafe(contentLength);
  let at = 0;
  for (const part of parts) {
    at += part.header.copy(body, at);
    if (part.content) at += part.content.copy(body, at);
    else for await (const chunk of readPart(part, ctx, false)) at += chunk.copy(body, at);
    at += CRLF.copy(body, at);
  }
  at += closing.copy(body, at);
  if (at !== contentLength) throw new Error(`upload body: wrote ${at} of ${contentLength} bytes`);
  return body;
}

async function* streamParts(parts: OpenPart[], closing: Buffer, ctx: DecodeContext): AsyncGenerator<Uint8Array> {
  for (const part of parts) {
    yield part.header;
    if (part.content) yield part.content;
    else yield* readPart(part, ctx, true);
    yield CRLF;
  }
  yield closing;
}

/**
 * One file's bytes, from its descriptor, at explicit offsets. The last chunk is yielded
 * only once the whole file has been read and found to be the version planned: its stats as
 * at open, its hash as recorded at planning. `sending`: the request is under way, so a
 * failure is ambiguous.
 */
async function* readPart(part: OpenPart, ctx: DecodeContext, sending: boolean): AsyncGenerator<Buffer> {
  const { file, opened } = part;
  const before = opened.stat;
  const hash = createHash('sha256');
  const when = sending ? 'while being sent' : 'while being read';
  const changed = (what: string, cause?: unknown): ApiError => fileChanged(file, what, ctx, { ambiguous: sending, cause });
  let held: Buffer | undefined;
  let pos = 0;
  for (;;) {
    // One byte more than the size left: a file that grew is noticed without a further read.
    const buffer = Buffer.allocUnsafe(Math.max(1, Math.min(CHUNK_BYTES, before.size - pos + 1)));
    let n: number;
    try {
      ({ bytesRead: n } = await opened.handle.read(buffer, 0, buffer.length, pos));
    } catch (e) {
      throw changed(`could not be read ${when} (${errnoOf(e) ?? 'EUNKNOWN'})`, e);
    }
    if (n === 0) break;
    pos += n;
    if (pos > before.size) throw changed(`it grew beyond ${before.size} bytes ${when}`);
    const chunk = buffer.subarray(0, n);
    hash.update(chunk);
    if (held) yield held;
    held = chunk;
    // A short read that completes the size seen at open is the end of the file: the read
    // that would return 0 is skipped (growth after it shows in the stats below).
    if (pos === before.size) break;
  }
  let after: OpenedStat;
  try {
    after = await opened.handle.stat();
  } catch (e) {
    throw changed(`could not be checked after it was read (${errnoOf(e) ?? 'EUNKNOWN'})`, e);
  }
  if (pos !== before.size) throw changed(`it shrank ${when} (read ${pos} of ${before.size} bytes)`);
  if (after.size !== before.size || after.mtimeMs !== before.mtimeMs || after.ctimeMs !== before.ctimeMs) throw changed(`it was modified ${when}`);
  if (file.expectedSha256 !== undefined && hash.digest('hex') !== file.expectedSha256) {
    throw changed('its content is not the version that was hashed (modified in place since)');
  }
  if (held) yield held;
}

/**
 * Matches the returned documents to the uploaded files: by name (exact, then base name,
 * then Unicode-normalised), and by order only for records that carry no name. Returns one
 * record per file, in the order of `files`. Anything that cannot be matched one-to-one is
 * E_BAD_RESPONSE, ambiguous (documents may have been created).
 */
export function matchUploadResults(files: UploadFile[], records: DocumentRecord[], ctx: DecodeContext): DocumentRecord[] {
  const actx = { ...ctx, mayHaveActed: true };
  if (records.length !== files.length) {
    throw badResponse(actx, `uploaded ${files.length} file(s) but the service returned ${records.length} document(s)`);
  }
  const result: (DocumentRecord | undefined)[] = new Array<DocumentRecord | undefined>(files.length).fill(undefined);
  const unnamed: DocumentRecord[] = [];
  let pending = records.filter((r) => {
    if (r.name === undefined || r.name === '') {
      unnamed.push(r);
      return false;
    }
    return true;
  });
  /** Gives each pending record the file `pick` finds for it (-1: none), in order; the others stay pending. */
  const match = (pick: (name: string) => number): void => {
    pending = pending.filter((rec) => {
      const i = pick(rec.name as string);
      if (i >= 0) result[i] = rec;
      return i < 0;
    });
  };
  const free = (pred: (f: UploadFile) => boolean): number => files.findIndex((f, idx) => result[idx] === undefined && pred(f));
  // Match in rounds of increasing tolerance, so an exact match is never taken by a looser one.
  for (const form of [(n: string) => n, (n: string) => basename(n), nfc, (n: string) => nfc(basename(n))]) match((name) => free((f) => form(f.name) === form(name)));
  // Names changed by the multipart encoding (escaped, or decoded by the service).
  match((name) => free((f) => formNameForms(nfc(f.name)).includes(nfc(name)) || formNameForms(nfc(basename(f.name))).includes(nfc(name))));
  // Names the service rewrote as it stored them (lower-cased, the extension dropped, a
  // suffix appended, cut at a length): the one file whose name shares the longest start with
  // the record's, ignoring case, when no other file shares as long a one, and that start is
  // the record's whole name or long enough to be no accident (a marked upload name starts
  // with its own nonce, engine/document-fields.ts).
  match((name) => longestStart(name, files, result));
  // One file sent, one document created: it is that file's, whatever the service named it
  // (otherwise the document would be an orphan and the file sent again, pass after pass).
  if (files.length === 1 && records.length === 1 && pending.length === 1) {
    result[0] = pending[0];
    pending = [];
  }
  if (pending.length > 0) {
    throw badResponse(actx, `the service returned document(s) named ${pending.map((r) => JSON.stringify(r.name)).join(', ')} that match none of the uploaded files`);
  }
  // Records without names fill the remaining files in order.
  for (const rec of unnamed) {
    const i = result.findIndex((r) => r === undefined);
    if (i < 0) break;
    result[i] = rec;
  }
  return result.map((r, i) => {
    if (r === undefined) throw badResponse(actx, `no returned document matches ${files[i]?.name ?? 'a file'}`);
    return r;
  });
}

/** Characters two names must share at their start to be matched by it alone (matchUploadResults). */
const MATCHING_START = 16;

/** The unmatched file whose name shares the longest start with `name` (case ignored); -1 when none or a tie. */
function longestStart(name: string, files: readonly UploadFile[], result: readonly (DocumentRecord | undefined)[]): number {
  const have = nfc(name).toLowerCase();
  let best = -1;
  let bestLength = 0;
  let tie = false;
  files.forEach((f, idx) => {
    if (result[idx] !== undefined) return;
    const sent = nfc(f.name).toLowerCase();
    let n = 0;
    while (n < have.length && n < sent.length && have[n] === sent[n]) n++;
    if (n > bestLength) [best, bestLength, tie] = [idx, n, false];
    else if (n === bestLength && n > 0) tie = true;
  });
  if (best < 0 || tie) return -1;
  return bestLength === have.length || bestLength >= MATCHING_START ? best : -1;
}

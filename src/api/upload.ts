/**
 * The local side of an upload: checking the files right before sending, building the
 * streamed multipart body, and matching the service's answer back to the files.
 */
import { openAsBlob } from 'node:fs';
import { realpath, stat } from 'node:fs/promises';
import { basename, sep } from 'node:path';
import { FormData } from 'undici';
import { ApiError } from './errors.js';
import { contentTypeFor } from './content-type.js';
import { formNameForms } from './form-name.js';
import { badResponse, type DecodeContext } from './decode.js';
import type { DocumentRecord, UploadFile } from './records.js';

export interface FileSnapshot {
  path: string;
  size: number;
  mtimeMs: number;
}

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

/**
 * Stats every file; a missing one, a directory, or a size/mtime that differs from what the
 * caller saw when it decided to upload is E_FILE_CHANGED naming the path.
 */
export async function snapshotFiles(files: UploadFile[], ctx: DecodeContext): Promise<FileSnapshot[]> {
  const out: FileSnapshot[] = [];
  const realRoots = new Map<string, Promise<string>>();
  for (const file of files) {
    if (file.within !== undefined) {
      let root = realRoots.get(file.within);
      if (!root) realRoots.set(file.within, (root = realpath(file.within)));
      let real: string;
      try {
        real = await realpath(file.path);
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code ?? 'error';
        throw fileChanged(file, code === 'ENOENT' ? 'the file is gone (ENOENT)' : `the file cannot be resolved (${code})`, ctx, { cause: e });
      }
      const top = await root.catch(() => undefined);
      if (top === undefined || (real !== top && !real.startsWith(top.endsWith(sep) ? top : top + sep))) {
        throw fileChanged(file, `now leads outside ${file.within} (replaced by a symbolic link?); not sent`, ctx);
      }
    }
    let st;
    try {
      st = await stat(file.path);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code ?? 'error';
      throw fileChanged(file, code === 'ENOENT' ? 'the file is gone (ENOENT)' : `the file cannot be read (${code})`, ctx, { cause: e });
    }
    if (!st.isFile()) throw fileChanged(file, 'not a regular file', ctx);
    if (file.expectedSize !== undefined && st.size !== file.expectedSize) {
      throw fileChanged(file, `size is now ${st.size} bytes, expected ${file.expectedSize}`, ctx);
    }
    if (file.expectedMtimeMs !== undefined && Math.trunc(st.mtimeMs) !== Math.trunc(file.expectedMtimeMs)) {
      throw fileChanged(file, `modified since it was planned (mtime ${Math.trunc(st.mtimeMs)}, expected ${Math.trunc(file.expectedMtimeMs)})`, ctx);
    }
    out.push({ path: file.path, size: st.size, mtimeMs: st.mtimeMs });
  }
  return out;
}

/**
 * One `documents` part per file, each a Blob that undici streams from disk. Built right
 * before sending: the blob snapshots the file, and a later change fails the send.
 */
export async function buildUploadForm(files: UploadFile[], ctx: DecodeContext): Promise<FormData> {
  const form = new FormData();
  for (const file of files) {
    let blob: Blob;
    try {
      blob = await openAsBlob(file.path, { type: file.contentType ?? contentTypeFor(file.name) });
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code ?? 'error';
      throw fileChanged(file, code === 'ENOENT' ? 'the file is gone (ENOENT)' : `the file cannot be opened (${code})`, ctx, { cause: e });
    }
    form.append('documents', blob, file.name);
  }
  return form;
}

/**
 * After undici failed reading a file mid-send (NotReadableError): find which file differs
 * from its snapshot, for a message naming it. Part of the body may have reached the
 * service, so the failure is ambiguous: the caller lists before uploading again.
 */
export async function fileChangedDuringSend(files: UploadFile[], before: FileSnapshot[], ctx: DecodeContext, cause: unknown): Promise<ApiError> {
  for (const [i, file] of files.entries()) {
    const snap = before[i];
    try {
      const st = await stat(file.path);
      if (snap && st.size === snap.size && st.mtimeMs === snap.mtimeMs) continue;
      return fileChanged(file, 'changed while it was being sent', ctx, { ambiguous: true, cause });
    } catch {
      return fileChanged(file, 'vanished while it was being sent', ctx, { ambiguous: true, cause });
    }
  }
  const first = files[0];
  if (first === undefined) throw cause;
  const names = files.map((f) => f.path).join(', ');
  return new ApiError({
    code: 'E_FILE_CHANGED',
    message: `one of ${names} changed while being sent; not uploaded, plan again`,
    method: ctx.method,
    path: ctx.path,
    retryable: true,
    ambiguous: true,
    cause,
  });
}

function nfc(s: string): string {
  return s.normalize('NFC');
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
  const keys: ((f: UploadFile) => string)[] = [(f) => f.name, (f) => basename(f.name), (f) => nfc(f.name), (f) => nfc(basename(f.name))];
  const recKeys: ((n: string) => string)[] = [(n) => n, (n) => basename(n), (n) => nfc(n), (n) => nfc(basename(n))];

  const named = records.filter((r) => {
    if (r.name === undefined || r.name === '') {
      unnamed.push(r);
      return false;
    }
    return true;
  });
  // Match in rounds of increasing tolerance, so an exact match is never taken by a looser one.
  let pending = named;
  for (let round = 0; round < keys.length && pending.length > 0; round++) {
    const fileKey = keys[round] as (f: UploadFile) => string;
    const recKey = recKeys[round] as (n: string) => string;
    const left: DocumentRecord[] = [];
    for (const rec of pending) {
      const k = recKey(rec.name as string);
      const i = files.findIndex((f, idx) => result[idx] === undefined && fileKey(f) === k);
      if (i >= 0) result[i] = rec;
      else left.push(rec);
    }
    pending = left;
  }
  // Names changed by the multipart encoding (escaped, or decoded by the service).
  if (pending.length > 0) {
    const left: DocumentRecord[] = [];
    for (const rec of pending) {
      const name = nfc(rec.name as string);
      const i = files.findIndex(
        (f, idx) => result[idx] === undefined && (formNameForms(nfc(f.name)).includes(name) || formNameForms(nfc(basename(f.name))).includes(name)),
      );
      if (i >= 0) result[i] = rec;
      else left.push(rec);
    }
    pending = left;
  }
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

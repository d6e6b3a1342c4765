/**
 * The name, url and metadata a file's document should carry (DESIGN §3). Pure.
 */
import { createHash, randomBytes, randomFillSync } from 'node:crypto';
import { posix } from 'node:path';
import type { DocumentUpdate } from '../api/records.js';
import { conversionOf, type Formats } from '../convert/policy.js';
import { buildMetadata } from './metadata.js';
import { extensionStart } from './service-names.js';
import { DEFAULT_URL_TEMPLATE, renderUrlTemplate } from '../config/url-template.js';

export interface DocumentFieldsSpec {
  mappingId: string;
  /** Written with the mapping id into every document (engine/installation.ts). */
  installationId?: string | undefined;
  /** This process's writer session (metadata.ts META.session), written into every document it writes. */
  session?: string | undefined;
  /** Absolute path of the mapped folder. */
  root: string;
  /** Placeholders: {absPath} {relPath} {name} {mappingId}. Default: file://{absPath}. */
  urlTemplate?: string | undefined;
  metadata?: Readonly<Record<string, string | number | boolean>> | undefined;
  /** The mapping's formats (convert/policy.ts): a converted file's document names its converter's identity. */
  formats?: Formats | undefined;
}

export interface FileFacts {
  path: string;
  size: number;
  mtimeMs: number;
  sha256: string;
}

export function documentFields(spec: DocumentFieldsSpec, file: FileFacts): DocumentUpdate {
  return {
    name: documentName(file.path),
    url: renderUrl(spec, file.path),
    metadata: buildMetadata(spec.metadata, { path: file.path, size: file.size, mtimeMs: file.mtimeMs, sha256: file.sha256, mappingId: spec.mappingId, installationId: spec.installationId, session: spec.session, converter: conversionOf(file.path, spec.formats)?.identity }),
  };
}

export function renderUrl(spec: DocumentFieldsSpec, relPath: string): string {
  const absPath = absPathOf(spec.root, relPath);
  return renderUrlTemplate(spec.urlTemplate ?? DEFAULT_URL_TEMPLATE, { absPath, relPath, mappingId: spec.mappingId });
}

/** The last mapped folder asked for, normalised (one folder per mapping: nearly always the same). */
let lastRoot: { root: string; posix: string } | undefined;

/**
 * The file's absolute POSIX path, `posix.join(root, relPath)`: a relative path as the walk
 * and the state make them (no empty, `.` or `..` segment) is appended to the normalised
 * folder as it is, which is what the join gives, without normalising the whole string once
 * more for each of a million documents a restart confirms.
 */
export function absPathOf(root: string, relPath: string): string {
  if (lastRoot?.root !== root) lastRoot = { root, posix: posix.normalize(root.split('\\').join('/')) };
  const base = lastRoot.posix;
  if (base.endsWith('/') || !isPlainRelative(relPath)) return posix.join(base, relPath);
  return `${base}/${relPath}`;
}

function isPlainRelative(p: string): boolean {
  return p !== '' && !p.startsWith('/') && !p.endsWith('/') && !p.includes('//') && !DOT_SEGMENT.test(p);
}
const DOT_SEGMENT = /(?:^|\/)\.\.?(?:\/|$)/;

/**
 * The document's name for a relative path: the path itself, except that control characters
 * (legal in Linux file names, refused in names by careful services) are percent-escaped,
 * as the multipart encoding already does for CR and LF. The exact path stays in the metadata.
 */
export function documentName(path: string): string {
  // eslint-disable-next-line no-control-regex
  return path.replace(/[\u0000-\u001f\u007f]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`);
}

/** What marks an upload's name as dssync's, with the upload's nonce (see markUploadName). */
const UPLOAD_MARK = '.dssync-upload-';

/**
 * The name a file is uploaded under: its document's name with a nonce the upload's intent
 * records, at the start of the name and again before the extension
 * (`.dssync-upload-3f9a0c1b2d4e.sub/report.dssync-upload-3f9a0c1b2d4e.pdf`), as rsync
 * writes to a temporary name and renames. The service names a document after the file
 * part; the metadata update that follows at once gives it its real name. Should the
 * upload's answer be lost, the listing shows a document only this upload can have made:
 * told from a person's document of the same name and size without doubt, so it is never a
 * duplicate left behind (docs/reliability.md, "What is ours"). The mark at the start
 * survives a service that cuts long names (a deep path past 255 bytes), the one before the
 * extension a service that keeps the base name only; the extension stays last for a
 * service that guesses the type from it.
 */
export function markUploadName(name: string, nonce: string): string {
  const ext = extensionStart(name);
  return `${UPLOAD_MARK}${nonce}.${name.slice(0, ext)}${UPLOAD_MARK}${nonce}${name.slice(ext)}`;
}

/** A marked name without its marks (markUploadName): the document's name it was sent for. */
export function unmarkedName(name: string): string {
  return name.replace(/^\.dssync-upload-[0-9a-z]+\./i, '').replace(/\.dssync-upload-[0-9a-z]+/gi, '');
}

/** Hex digits of the installation's tag that start each nonce (uploadNonce). */
export const UPLOAD_TAG_LENGTH = 8;

/**
 * The tag that starts every upload nonce of one installation and mapping: the first hex
 * digits of a hash of both ids. A marked document whose nonce starts with it was sent by
 * this installation for this mapping, whatever became of the intent that named it (closed
 * before the service committed the upload late): provably ours (plan.ts). Another
 * installation shares it by chance one time in 2^32.
 */
export function uploadTag(mappingId: string, installationId: string): string {
  return createHash('sha256').update(`${installationId}\0${mappingId}`).digest('hex').slice(0, UPLOAD_TAG_LENGTH);
}

/** Hex digits of a writer session (newSession), carried in a nonce after the tag. */
export const SESSION_LENGTH = 8;

/** A fresh writer session: one per process (Mirror), recorded in the state before it writes. */
export function newSession(): string {
  return randomBytes(SESSION_LENGTH / 2).toString('hex');
}

/** Random bytes for the nonces, drawn 4 KiB at a time (a draw per nonce was a visible part of an upload's CPU); each byte is used once. */
const noncePool = Buffer.alloc(4096);
let noncePoolAt = noncePool.length;

function randomHex(bytes: number): string {
  if (noncePoolAt + bytes > noncePool.length) {
    randomFillSync(noncePool);
    noncePoolAt = 0;
  }
  noncePoolAt += bytes;
  return noncePool.toString('hex', noncePoolAt - bytes, noncePoolAt);
}

/**
 * A fresh nonce for one upload: the installation's tag (when it has one), the writer session
 * (when there is one), then 8 random hex digits.
 */
export function uploadNonce(tag: string | undefined, session?: string | undefined): string {
  return `${tag ?? ''}${tag !== undefined && session !== undefined ? session : ''}${randomHex(tag === undefined ? 6 : 4)}`;
}

/**
 * Whose a marked name's nonce is: `undefined` when it does not carry our tag (uploadTag) or
 * is not a whole nonce (a name cut inside it proves nothing: never taken for ours); else the
 * writer session it carries, or `''` for a nonce from before sessions (tag and 8 random
 * digits only).
 */
export function nonceSession(nonce: string, tag: string): string | undefined {
  if (!nonce.startsWith(tag)) return undefined;
  const rest = nonce.length - tag.length;
  if (rest === 8) return '';
  return rest === 8 + SESSION_LENGTH ? nonce.slice(tag.length, tag.length + SESSION_LENGTH) : undefined;
}

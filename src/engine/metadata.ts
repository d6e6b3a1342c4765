/**
 * What dssync writes into each document so that its state can be rebuilt from the service
 * alone (DESIGN §3): the relative path, size, mtime, content hash and the mapping id.
 *
 * Every value is a string: the interface types metadata only as a "free-form key/value
 * object", and string values are what the strictest plausible service accepts. Reading is
 * tolerant (numbers are accepted too).
 */
import type { DocumentRecord, JsonObject } from '../api/records.js';
import { nameAsStored, type ServiceNames } from './service-names.js';
import { nfc } from '../unicode.js';

export const META = {
  path: 'dssync_path',
  sha256: 'dssync_sha256',
  size: 'dssync_size',
  mtime: 'dssync_mtime',
  mapping: 'dssync_mapping',
  /** The installation (one state file's owner, see installation.ts) that wrote it. */
  installation: 'dssync_installation',
  /**
   * The writer session (a process of that installation, recorded in its state) that wrote it
   * last: tells a clone's document from ours (docs/reliability.md, "Identity"). Not compared
   * by fieldsMatch: a later session of ours rewrites nothing for it.
   */
  session: 'dssync_session',
  version: 'dssync_version',
  /**
   * The converter's identity (convert/formats.ts converterIdentity) of a document sent
   * converted to Markdown; absent on a document sent as it is. Part of what decides
   * "unchanged": a document of another conversion is sent again (plan.ts).
   */
  converter: 'dssync_converter',
} as const;

export const META_VERSION = '1';

const OWN_KEYS: ReadonlySet<string> = new Set(Object.values(META));

export interface DssyncMeta {
  path: string;
  sha256: string;
  size: number | undefined;
  mtimeMs: number | undefined;
  mappingId: string;
  /** Absent on documents written before installation ids existed. */
  installationId: string | undefined;
  /** Absent on documents written before writer sessions existed. */
  session: string | undefined;
}

/** Metadata for one file: the mapping's static metadata, then dssync's keys (which win). */
export function buildMetadata(
  user: Readonly<Record<string, string | number | boolean>> | undefined,
  own: { path: string; sha256: string; size: number; mtimeMs: number; mappingId: string; installationId?: string | undefined; session?: string | undefined; converter?: string | undefined },
): JsonObject {
  const out: JsonObject = {};
  for (const [k, v] of Object.entries(user ?? {})) if (!OWN_KEYS.has(k)) out[k] = v;
  out[META.path] = own.path;
  out[META.sha256] = own.sha256;
  out[META.size] = String(own.size);
  out[META.mtime] = String(Math.round(own.mtimeMs));
  out[META.mapping] = own.mappingId;
  if (own.installationId !== undefined) out[META.installation] = own.installationId;
  if (own.session !== undefined) out[META.session] = own.session;
  if (own.converter !== undefined) out[META.converter] = own.converter;
  out[META.version] = META_VERSION;
  return out;
}

/** dssync's keys of a document, or undefined when the document carries none (not ours). */
export function readMeta(doc: DocumentRecord): DssyncMeta | undefined {
  const m = doc.metadata;
  if (!m) return undefined;
  const path = asString(m[META.path]);
  const sha256 = asString(m[META.sha256]);
  const mappingId = asString(m[META.mapping]);
  if (!path || !sha256 || !mappingId) return undefined;
  return {
    path: nfc(path),
    sha256: sha256.toLowerCase(),
    size: asNumber(m[META.size]),
    mtimeMs: asNumber(m[META.mtime]),
    mappingId,
    installationId: asString(m[META.installation]),
    session: asString(m[META.session])?.toLowerCase(),
  };
}

/**
 * True when the document's name, url and metadata already say what `desired` says, the
 * name as the service stores it (`names`: what it was seen to do, service-names.ts).
 * Only the keys dssync sets are compared: a service may add keys of its own.
 * Size and mtime are not compared: a touched file with the same content changes the state
 * only (DESIGN §4), never the service.
 */
export function fieldsMatch(doc: DocumentRecord, desired: { name: string; url: string; metadata: JsonObject }, names?: ServiceNames): boolean {
  if (!nameAsStored(doc.name ?? '', desired.name, names)) return false;
  // A url the service is known to ignore in updates is not fought on every pass.
  if (names?.urlsIgnored !== true && (doc.url ?? '') !== desired.url) return false;
  const have = doc.metadata ?? {};
  for (const [k, v] of Object.entries(desired.metadata)) {
    if (k === META.size || k === META.mtime || k === META.session) continue;
    if (!sameValue(have[k], v)) return false;
  }
  return (sentConversion(doc) ?? '') === (desired.metadata[META.converter] ?? '');
}

/**
 * The conversion a document says it was sent with (META.converter): its converter's
 * identity, '' when it was sent as it is (so is every document written before the key
 * existed: no release before it converted), undefined when it carries no dssync metadata.
 */
export function sentConversion(doc: DocumentRecord): string | undefined {
  if (asString(doc.metadata?.[META.sha256]) === undefined) return undefined;
  return asString(doc.metadata?.[META.converter]) ?? '';
}

function sameValue(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (a == null || b == null) return false;
  if (typeof a === 'object' || typeof b === 'object') return JSON.stringify(a) === JSON.stringify(b);
  return String(a) === String(b);
}

function asString(v: unknown): string | undefined {
  if (typeof v === 'string' && v !== '') return v;
  if (typeof v === 'number' && Number.isFinite(v)) return String(v);
  return undefined;
}

function asNumber(v: unknown): number | undefined {
  if (typeof v === 'number' && Number.isFinite(v)) return v;
  if (typeof v === 'string' && v.trim() !== '') {
    const n = Number(v);
    if (Number.isFinite(n)) return n;
  }
  return undefined;
}

/**
 * The form in which a mirror holds a data source's listing (issue 16). A document as
 * received carries a dozen fields (its data source, content type, status, dates...), every
 * string its own copy: ~750 bytes per document in memory, 750 MB for a listing of a million.
 * A mirror reads only the id, name, url, metadata and size, so the `sync` form keeps those:
 * `raw` holds only the size fields, and a metadata value equal to the previous document's
 * (the mapping, the installation, the format version, the mapping's static metadata) or a
 * name equal to one of its metadata values (the path) is the same string, not a copy.
 */
import type { DocumentRecord, JsonObject } from './records.js';

/** Where a service may report a document's size in bytes (the planner reads these). */
export const DOCUMENT_SIZE_KEYS: readonly string[] = ['size', 'file_size', 'fileSize', 'size_bytes', 'bytes'];

/** Turns each record of one listing into its sync form; one per listing (it remembers the last values). */
export class SyncForm {
  private readonly last = new Map<string, string>();

  compact(rec: DocumentRecord): DocumentRecord {
    const raw: JsonObject = {};
    for (const k of DOCUMENT_SIZE_KEYS) if (rec.raw[k] !== undefined) raw[k] = rec.raw[k];
    const out: DocumentRecord = { id: rec.id, raw };
    const m = rec.metadata;
    if (m !== undefined) {
      for (const k of Object.keys(m)) {
        const v = m[k];
        if (typeof v !== 'string') continue;
        const prev = this.last.get(k);
        if (prev === v) m[k] = prev;
        else this.last.set(k, v);
      }
      out.metadata = m;
    }
    if (rec.name !== undefined) out.name = sameString(rec.name, m);
    if (rec.url !== undefined) out.url = sameString(rec.url, m);
    if (rec.title !== undefined) out.title = rec.title === rec.name ? (out.name as string) : rec.title;
    if (rec.storageName !== undefined) out.storageName = rec.storageName;
    if (rec.publicLink !== undefined) out.publicLink = rec.publicLink;
    return out;
  }
}

/** `s`, or the metadata value equal to it (one string in memory instead of two). */
function sameString(s: string, m: JsonObject | undefined): string {
  if (m !== undefined) for (const k in m) if (m[k] === s) return m[k] as string;
  return s;
}

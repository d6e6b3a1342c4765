/**
 * Reading the zip container of OOXML, ODF and EPUB files (fflate), bounded: the entries are
 * counted and their declared sizes added up before anything is inflated (an entry inflates
 * into a buffer of its declared size, never more), so a zip bomb is refused by its directory
 * and a lying one cannot expand past what it declared.
 */
import { strFromU8, unzipSync } from 'fflate';
import { limitError, type ConvertLimits } from './limits.js';
import { attr, xmlTokens } from './xml.js';

export interface ZipReader {
  readonly names: readonly string[];
  /** An entry's text (UTF-8), or undefined when absent. */
  text(name: string): string | undefined;
}

export function openZip(bytes: Uint8Array, limits: Pick<ConvertLimits, 'decompressedBytes' | 'zipEntries'>): ZipReader {
  const names: string[] = [];
  let declared = 0;
  try {
    unzipSync(bytes, {
      filter: (f) => {
        names.push(f.name);
        declared += f.originalSize;
        return false;
      },
    });
  } catch (e) {
    throw limitError('format', `not a readable zip container (${(e as Error).message})`);
  }
  if (names.length > limits.zipEntries) throw limitError('zipEntries', `the container holds ${names.length} entries (limit zipEntries, ${limits.zipEntries})`);
  if (declared > limits.decompressedBytes) {
    throw limitError('decompressedBytes', `the container expands to ${declared} bytes (limit decompressedBytes, ${limits.decompressedBytes}): a zip bomb?`);
  }
  return {
    names,
    text(name) {
      if (!names.includes(name)) return undefined;
      let out: Uint8Array | undefined;
      try {
        out = unzipSync(bytes, { filter: (f) => f.name === name })[name];
      } catch (e) {
        throw limitError('format', `the entry ${name} cannot be inflated (${(e as Error).message})`);
      }
      return out === undefined ? undefined : strFromU8(out);
    },
  };
}

/** A path relative to the folder of `from` (zip paths: `/`-separated, `..` resolved). */
export function resolveIn(from: string, target: string): string {
  if (target.startsWith('/')) return target.slice(1);
  const parts = from.split('/').slice(0, -1);
  for (const p of target.split('/')) {
    if (p === '..') parts.pop();
    else if (p !== '.' && p !== '') parts.push(p);
  }
  return parts.join('/');
}

/** The relationships of a part (OOXML's `_rels/X.rels`): id → the target part's path and the type. */
export function relationships(zip: ZipReader, part: string): Map<string, { target: string; type: string }> {
  const i = part.lastIndexOf('/');
  const rels = new Map<string, { target: string; type: string }>();
  const xml = zip.text(`${part.slice(0, i + 1)}_rels/${part.slice(i + 1)}.rels`);
  if (xml === undefined) return rels;
  for (const t of xmlTokens(xml)) {
    if (t.kind !== 'open' || t.name !== 'Relationship') continue;
    const id = attr(t.attrs, 'Id');
    const target = attr(t.attrs, 'Target');
    if (id !== undefined && target !== undefined && attr(t.attrs, 'TargetMode') !== 'External') rels.set(id, { target: resolveIn(part, target), type: attr(t.attrs, 'Type') ?? '' });
  }
  return rels;
}

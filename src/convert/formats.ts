/**
 * What happens to each extension (docs/formats.md): the formats the real service reads go as
 * they are; the others are converted to Markdown by the converter named here; a format with
 * no converter is skipped with its reason. Each converter has an identity (format, library
 * and version, options): a change of identity is a change of what the service receives.
 */
import { createRequire } from 'node:module';

export type FormatPolicy = 'as-is' | 'convert' | 'skip';

export interface Format {
  /** What dssync does with it unless the mapping says otherwise. */
  policy: FormatPolicy;
  /** The converter (when it can be converted). */
  converter?: ConverterId;
  /** Why a skipped format is skipped. */
  reason?: string;
}

export type ConverterId = 'pptx' | 'xlsx' | 'odf' | 'epub' | 'csv' | 'tsv' | 'rtf' | 'doc' | 'eml' | 'msg';

/** Extensions (lower case, with the dot) dssync knows. */
export const FORMATS: Readonly<Record<string, Format>> = {
  '.pdf': { policy: 'as-is' },
  '.docx': { policy: 'as-is' },
  '.txt': { policy: 'as-is' },
  '.html': { policy: 'as-is' },
  '.htm': { policy: 'as-is' },
  '.md': { policy: 'as-is' },
  '.markdown': { policy: 'as-is' },
  '.pptx': { policy: 'convert', converter: 'pptx' },
  '.xlsx': { policy: 'convert', converter: 'xlsx' },
  '.xlsm': { policy: 'convert', converter: 'xlsx' },
  '.odt': { policy: 'convert', converter: 'odf' },
  '.ods': { policy: 'convert', converter: 'odf' },
  '.odp': { policy: 'convert', converter: 'odf' },
  '.epub': { policy: 'convert', converter: 'epub' },
  '.csv': { policy: 'convert', converter: 'csv' },
  '.tsv': { policy: 'convert', converter: 'tsv' },
  '.rtf': { policy: 'convert', converter: 'rtf' },
  '.doc': { policy: 'convert', converter: 'doc' },
  '.eml': { policy: 'convert', converter: 'eml' },
  '.msg': { policy: 'convert', converter: 'msg' },
  '.xls': { policy: 'skip', reason: 'Excel 97–2003 (.xls): no maintained converter on the npm registry (SheetJS is frozen there at 0.18.5); save it as .xlsx' },
  '.ppt': { policy: 'skip', reason: 'PowerPoint 97–2003 (.ppt): no maintained converter; save it as .pptx' },
};

/** The version of dssync's own readers (ooxml, odf, epub, csv, rtf): raise it when their output changes. */
export const READERS_VERSION = 1;

const require = createRequire(import.meta.url);
const versionOf = (pkg: string): string => (require(`${pkg}/package.json`) as { version: string }).version;

const LIBRARY: Record<ConverterId, string> = {
  pptx: `fflate@${versionOf('fflate')}`,
  xlsx: `fflate@${versionOf('fflate')}`,
  odf: `fflate@${versionOf('fflate')}`,
  epub: `fflate@${versionOf('fflate')}`,
  csv: 'dssync',
  tsv: 'dssync',
  rtf: 'dssync',
  doc: `word-extractor@${versionOf('word-extractor')}`,
  eml: `postal-mime@${versionOf('postal-mime')}`,
  msg: `@kenjiuno/msgreader@${versionOf('@kenjiuno/msgreader')}`,
};

/**
 * The converter's identity for a file: format, library and version, and the options that
 * change its output (the limits that cut text). Part of what decides "unchanged".
 */
export function converterIdentity(id: ConverterId, options: { rowsPerSheet: number; outputBytes: number }): string {
  return `${id}/r${READERS_VERSION}/${LIBRARY[id]}/rows=${options.rowsPerSheet},bytes=${options.outputBytes}`;
}

/** The format of a file name (undefined: not one dssync knows). */
export function formatOf(name: string): { extension: string; format: Format } | undefined {
  const dot = name.lastIndexOf('.');
  if (dot <= name.lastIndexOf('/')) return undefined;
  const extension = name.slice(dot).toLowerCase();
  const format = FORMATS[extension];
  return format === undefined ? undefined : { extension, format };
}

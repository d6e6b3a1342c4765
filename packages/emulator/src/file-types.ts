/**
 * The file types the emulator accepts, by the name's extension or, for a name without
 * one, by the part's Content-Type. By default these are exactly the formats the real
 * service reads (PDF, DOCX, TXT, HTML, Markdown and its pre-chunked JSON); the permissive
 * set (EmulatorOptions.permissiveFormats) adds .doc, .odt, .rtf and .csv. Anything else is
 * a 415 naming the file, its type and the formats read.
 */

export type FileKind = 'text' | 'markdown' | 'html' | 'pdf' | 'docx' | 'json' | 'doc' | 'odt' | 'rtf';

export interface FileType {
  kind: FileKind;
  /** The canonical content type recorded on the document. */
  contentType: string;
}

const TXT: FileType = { kind: 'text', contentType: 'text/plain' };
const MARKDOWN: FileType = { kind: 'markdown', contentType: 'text/markdown' };
const HTML: FileType = { kind: 'html', contentType: 'text/html' };
const PDF: FileType = { kind: 'pdf', contentType: 'application/pdf' };
const DOCX: FileType = { kind: 'docx', contentType: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document' };
const JSON_CHUNKS: FileType = { kind: 'json', contentType: 'application/json' };
const CSV: FileType = { kind: 'text', contentType: 'text/csv' };
const DOC: FileType = { kind: 'doc', contentType: 'application/msword' };
const ODT: FileType = { kind: 'odt', contentType: 'application/vnd.oasis.opendocument.text' };
const RTF: FileType = { kind: 'rtf', contentType: 'application/rtf' };

interface FormatSet {
  byExtension: Record<string, FileType>;
  byContentType: Record<string, FileType>;
}

const SERVICE: FormatSet = {
  byExtension: {
    '.pdf': PDF, '.docx': DOCX, '.txt': TXT, '.html': HTML, '.htm': HTML, '.md': MARKDOWN, '.markdown': MARKDOWN, '.json': JSON_CHUNKS,
  },
  byContentType: {
    'application/pdf': PDF, [DOCX.contentType]: DOCX, 'text/plain': TXT, 'text/html': HTML,
    'text/markdown': MARKDOWN, 'text/x-markdown': MARKDOWN, 'application/json': JSON_CHUNKS,
  },
};

const PERMISSIVE: FormatSet = {
  byExtension: { ...SERVICE.byExtension, '.csv': CSV, '.doc': DOC, '.odt': ODT, '.rtf': RTF },
  byContentType: {
    ...SERVICE.byContentType, 'text/csv': CSV, 'application/msword': DOC, [ODT.contentType]: ODT, 'application/rtf': RTF, 'text/rtf': RTF,
  },
};

/** The extensions accepted, for the 415's reason and the docs. */
export function acceptedExtensions(permissive = false): string[] {
  return Object.keys((permissive ? PERMISSIVE : SERVICE).byExtension);
}

export function extensionOf(name: string): string {
  const base = name.slice(Math.max(name.lastIndexOf('/'), name.lastIndexOf('\\')) + 1);
  const dot = base.lastIndexOf('.');
  return dot > 0 ? base.slice(dot).toLowerCase() : '';
}

function mimeOf(partContentType: string | undefined): string {
  return (partContentType ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
}

/**
 * A name's extension decides (a .csv sent as text/plain is still a .csv); only a name
 * without one is typed by the part's Content-Type.
 */
export function detectFileType(name: string, partContentType: string | undefined, permissive = false): FileType | undefined {
  const set = permissive ? PERMISSIVE : SERVICE;
  const ext = extensionOf(name);
  if (ext !== '') return Object.hasOwn(set.byExtension, ext) ? set.byExtension[ext] : undefined;
  const mime = mimeOf(partContentType);
  return Object.hasOwn(set.byContentType, mime) ? set.byContentType[mime] : undefined;
}

/** Why a file is refused: its type (extension, else Content-Type) and the formats read. */
export function refusedTypeReason(name: string, partContentType: string | undefined, permissive = false): string {
  const ext = extensionOf(name);
  const mime = mimeOf(partContentType);
  const type = ext !== '' ? `type ${ext}` : mime !== '' ? `type ${mime}` : 'no known type';
  const read = permissive ? acceptedExtensions(true).join(' ') : 'PDF, Word (.docx), plain text (.txt), HTML, Markdown (.md) and JSON in the pre-chunked format';
  return `file ${JSON.stringify(name)} has ${type}, which the service does not read (it reads ${read})`;
}

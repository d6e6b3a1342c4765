/**
 * The file types the emulator accepts, by extension first and, for a name without a known
 * extension, by the part's Content-Type. Anything else is a 415 naming the file.
 */

export type FileKind = 'text' | 'html' | 'pdf' | 'doc' | 'docx' | 'odt' | 'rtf';

export interface FileType {
  kind: FileKind;
  /** The canonical content type recorded on the document. */
  contentType: string;
}

const BY_EXTENSION: Record<string, FileType> = {
  '.txt': { kind: 'text', contentType: 'text/plain' },
  '.md': { kind: 'text', contentType: 'text/markdown' },
  '.markdown': { kind: 'text', contentType: 'text/markdown' },
  '.csv': { kind: 'text', contentType: 'text/csv' },
  '.html': { kind: 'html', contentType: 'text/html' },
  '.htm': { kind: 'html', contentType: 'text/html' },
  '.pdf': { kind: 'pdf', contentType: 'application/pdf' },
  '.doc': { kind: 'doc', contentType: 'application/msword' },
  '.docx': { kind: 'docx', contentType: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document' },
  '.odt': { kind: 'odt', contentType: 'application/vnd.oasis.opendocument.text' },
  '.rtf': { kind: 'rtf', contentType: 'application/rtf' },
};

const BY_CONTENT_TYPE: Record<string, FileType> = {
  'text/plain': BY_EXTENSION['.txt'] as FileType,
  'text/markdown': BY_EXTENSION['.md'] as FileType,
  'text/x-markdown': BY_EXTENSION['.md'] as FileType,
  'text/csv': BY_EXTENSION['.csv'] as FileType,
  'text/html': BY_EXTENSION['.html'] as FileType,
  'application/pdf': BY_EXTENSION['.pdf'] as FileType,
  'application/msword': BY_EXTENSION['.doc'] as FileType,
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document': BY_EXTENSION['.docx'] as FileType,
  'application/vnd.oasis.opendocument.text': BY_EXTENSION['.odt'] as FileType,
  'application/rtf': BY_EXTENSION['.rtf'] as FileType,
  'text/rtf': BY_EXTENSION['.rtf'] as FileType,
};

export const ACCEPTED_EXTENSIONS = Object.keys(BY_EXTENSION);

export function extensionOf(name: string): string {
  const base = name.slice(Math.max(name.lastIndexOf('/'), name.lastIndexOf('\\')) + 1);
  const dot = base.lastIndexOf('.');
  return dot > 0 ? base.slice(dot).toLowerCase() : '';
}

export function detectFileType(name: string, partContentType: string | undefined): FileType | undefined {
  const byExt = BY_EXTENSION[extensionOf(name)];
  if (byExt) return byExt;
  const mime = (partContentType ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
  return Object.hasOwn(BY_CONTENT_TYPE, mime) ? BY_CONTENT_TYPE[mime] : undefined;
}

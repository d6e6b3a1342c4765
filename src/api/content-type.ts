/** MIME types of uploaded files, by extension (the service must know what it is parsing). */
import { extname } from 'node:path';

const BY_EXTENSION: Record<string, string> = {
  '.txt': 'text/plain',
  '.md': 'text/markdown',
  '.markdown': 'text/markdown',
  '.csv': 'text/csv',
  '.html': 'text/html',
  '.htm': 'text/html',
  '.pdf': 'application/pdf',
  '.doc': 'application/msword',
  '.docx': 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  '.odt': 'application/vnd.oasis.opendocument.text',
  '.rtf': 'application/rtf',
};

export const DEFAULT_CONTENT_TYPE = 'application/octet-stream';

export function contentTypeFor(fileName: string): string {
  return BY_EXTENSION[extname(fileName).toLowerCase()] ?? DEFAULT_CONTENT_TYPE;
}

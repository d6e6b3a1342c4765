/**
 * The name, url and metadata a file's document should carry (DESIGN §3). Pure.
 */
import { posix } from 'node:path';
import type { DocumentUpdate } from '../api/records.js';
import { buildMetadata } from './metadata.js';
import { DEFAULT_URL_TEMPLATE, renderUrlTemplate } from '../config/url-template.js';

export interface DocumentFieldsSpec {
  mappingId: string;
  /** Written with the mapping id into every document (engine/installation.ts). */
  installationId?: string | undefined;
  /** Absolute path of the mapped folder. */
  root: string;
  /** Placeholders: {absPath} {relPath} {name} {mappingId}. Default: file://{absPath}. */
  urlTemplate?: string | undefined;
  metadata?: Readonly<Record<string, string | number | boolean>> | undefined;
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
    metadata: buildMetadata(spec.metadata, { ...file, mappingId: spec.mappingId, installationId: spec.installationId }),
  };
}

export function renderUrl(spec: DocumentFieldsSpec, relPath: string): string {
  const absPath = posix.join(spec.root.split('\\').join('/'), relPath);
  return renderUrlTemplate(spec.urlTemplate ?? DEFAULT_URL_TEMPLATE, { absPath, relPath, mappingId: spec.mappingId });
}

/**
 * The document's name for a relative path: the path itself, except that control characters
 * (legal in Linux file names, refused in names by careful services) are percent-escaped,
 * as the multipart encoding already does for CR and LF. The exact path stays in the metadata.
 */
export function documentName(path: string): string {
  // eslint-disable-next-line no-control-regex
  return path.replace(/[\u0000-\u001f\u007f]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`);
}

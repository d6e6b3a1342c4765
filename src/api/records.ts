/**
 * The normalised records the rest of dssync works with. One place (decode.ts) turns
 * whatever the service answered into these; `raw` keeps the record as received.
 */
import type { ConverterId } from '../convert/formats.js';
import type { ConvertLimits } from '../convert/limits.js';

export type JsonObject = Record<string, unknown>;

export interface DataSourceRecord {
  id: string;
  name?: string;
  llmConnectorIds?: string[];
  raw: JsonObject;
}

export interface DocumentRecord {
  id: string;
  name?: string;
  url?: string;
  /** Free-form metadata; dssync's own keys live under the `dssync` prefix (see engine/metadata.ts). */
  metadata?: JsonObject;
  /** A display title distinct from the name (Wikit Semantics: `title`). */
  title?: string;
  /** Where the service stored the file (`storage_name`). */
  storageName?: string;
  /** A link the service publishes for the document (`public_link`). */
  publicLink?: string;
  raw: JsonObject;
}

export interface ChunkRecord {
  id: string;
  documentId?: string;
  text?: string;
  index?: number;
  /** The chunk's place in its document as the service numbers it (`position`). */
  position?: number;
  /** Pages of the source the chunk comes from (`page_start`, `page_end`), when paged. */
  pageStart?: number;
  pageEnd?: number;
  raw: JsonObject;
}

/** What the update operation sends: all three fields, always (DESIGN §3). */
export interface DocumentUpdate {
  name: string;
  url: string;
  metadata: JsonObject;
}

/** A file's size and times, as `fstat` of its descriptor gives them. */
export interface OpenedStat {
  size: number;
  mtimeMs: number;
  ctimeMs?: number | undefined;
}

/**
 * The port an upload reads through (issue 38.5): a file opened and checked by the side that
 * owns the files (local/fs.ts `openRegularFile` implements it), read from that descriptor only.
 */
export interface OpenedFile {
  path: string;
  handle: {
    read(buffer: Buffer, offset: number, length: number, position: number | null): Promise<{ bytesRead: number }>;
    stat(): Promise<OpenedStat>;
    close(): Promise<void>;
  };
  /** fstat of the descriptor right after it was opened. */
  stat: OpenedStat;
}

/** One file of an upload request, streamed from disk. */
export interface UploadFile {
  /** The file as messages name it: the path given to the CLI's upload; a mirror's path within its folder. */
  path: string;
  /** File name sent in the multipart part (dssync sends the relative path). */
  name: string;
  /** MIME type; guessed from the extension when absent. */
  contentType?: string;
  /**
   * Size and mtime the caller saw when it decided to upload; when given, the client
   * checks them right before sending and fails with E_FILE_CHANGED if they differ.
   */
  expectedSize?: number;
  expectedMtimeMs?: number;
  /**
   * Opens the file, checked by the side that owns it (LocalSide.open: a regular file,
   * beneath the mapped folder, the very file hashed), right before each attempt; a refusal
   * is E_FILE_CHANGED and nothing is sent. The client opens nothing itself.
   */
  open: () => Promise<OpenedFile>;
  /**
   * SHA-256 recorded for the file: the bytes streamed must hash to it, or the part is
   * abandoned before it ends (E_FILE_CHANGED, ambiguous).
   */
  expectedSha256?: string | undefined;
  /**
   * Send the file converted to Markdown (convert/, in a worker): the file is read and checked
   * whole first, and the part is the Markdown, typed text/markdown. A file its converter
   * cannot read is E_CONVERT_FAILED, refused for that file until it changes.
   */
  convert?: { converter: ConverterId; limits: ConvertLimits } | undefined;
}

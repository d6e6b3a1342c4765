/**
 * The state file's shape (DESIGN §1.4, §4). One file holds every mapping of a daemon.
 * Paths are relative to the mapping's folder, POSIX separators, NFC-normalised.
 * The token and other secrets are never part of it.
 * On disk, each file is one line, a [path, documentId, size, mtimeMs, sha256, syncedAt,
 * hashedAt, ctimeMs, dev, ino] tuple, the last four null when unknown and absent in files
 * of older versions (see encoder.ts); use StateStore / readStateFile (store.ts) to read it.
 */

/**
 * 5: each mapping keeps its writer sessions (MappingState.sessions, the journal's `session`
 * op), which an older reader must refuse rather than stop reading the journal there;
 * 4: the header stores the installation identity and the release a reader needs ("needs");
 * 3: the snapshot is lines (encoder.ts); 1 and 2 were one JSON object, no longer read
 * (StateFormatRetiredError). Formats 3 and 4 are read and rewritten as 5. A newer format is
 * refused, never misread (StateVersionError): a format is bumped whenever an older reader
 * would drop what it holds (docs/upgrading.md).
 */
export const STATE_VERSION = 5;

/**
 * The first dssync release that reads each state format (CHANGELOG.md, docs/upgrading.md).
 * The current one is written into the header ("needs"), so that an older dssync, shown a
 * newer format, can name the release to install.
 */
export const FORMAT_RELEASES: Readonly<Record<number, string>> = { 1: '0.1.0', 2: '0.1.0', 3: '0.1.0', 4: '0.2.0', 5: '0.3.0' };

/** The oldest line format (encoder.ts) this dssync reads; older ones are one JSON object. */
export const FIRST_LINE_VERSION = 3;

/**
 * The last release that reads formats 1 and 2 (one JSON object) and rewrites them in its
 * own: what the refusal of such a file tells the operator to run once (errors.ts).
 */
export const RETIRED_FORMATS_LAST_READ_BY = '0.3.0';

import type { FileTable } from './file-table.js';
// A file's entry is the file table's row (file-table.ts); re-exported for the state's readers.
export type { EntryStat, FileEntry } from './file-table.js';

export interface StateFile {
  version: typeof STATE_VERSION;
  /**
   * The last journal op this snapshot holds (journal.ts): at load, the journal's ops after
   * it are replayed.
   */
  journalSeq: number;
  /** Keyed by mapping id (config `mappings[].id`, see config/). */
  mappings: Record<string, MappingState>;
  /**
   * Who owns the documents this state records (engine/installation.ts). Absent in files
   * written before identities were stored: the first open stores one (kept in the header).
   */
  identity?: StateIdentity | undefined;
}

/** The installation's identity, kept with the state (docs/reliability.md, "Identity"). */
export interface StateIdentity {
  /** Written into every document's metadata (dssync_installation). */
  installationId: string;
  /** 'drawn' at random with the state, 'derived' from an older state (host + path), or 'pinned' by config/env. */
  origin: 'drawn' | 'derived' | 'pinned';
  /**
   * Ids this state used before (a pin changed it): documents the state records by id that
   * carry one of them are still ours, and are re-marked with the current id.
   */
  formerIds: string[];
}

export interface MappingState {
  /** The data source this mapping mirrors into (resolved id). */
  dataSourceId: string;
  /** Absolute path of the mapped folder when the state was written (informative). */
  root: string;
  /**
   * The name the config gave when the data source was resolved by name (`dataSource.name`):
   * a data source whose name differs from it was renamed in the App and is followed by id;
   * a config that names another tells a new choice (engine/data-source.ts). Absent for a
   * mapping by id and in older states.
   */
  dataSourceName?: string | undefined;
  /**
   * Writer sessions (session nonce -> wall ms when first recorded): each process that writes
   * for the mapping draws one and records it here before its first upload, and carries it in
   * its uploads' marked names and its documents' metadata. A document of our identity whose
   * session is not here was written by another process with our identity (a clone), never
   * ours to delete (docs/reliability.md, "Identity"). The newest MAX_SESSIONS are kept.
   * Absent in older states.
   */
  sessions?: Record<string, number> | undefined;
  /**
   * relative path -> what was last synced for it, in compact form (file-table.ts). Readers
   * use its ReadonlyFileTable side; only applyOp (ops.ts) changes it.
   */
  files: FileTable;
  /** Remote writes begun and not yet recorded as finished; resolved at the next start. */
  intents: Record<string, Intent>;
  /** Files the service refused (413/415...): retried only when their size or mtime changes. */
  rejected: Record<string, RejectedFile>;
  lastPass?: PassRecord;
}

export interface RejectedFile {
  size: number;
  mtimeMs: number;
  /** HTTP status, when the service answered. */
  status?: number;
  reason: string;
  at: string;
}

export interface PassRecord {
  startedAt: string;
  finishedAt: string;
  ok: boolean;
  summary: Record<string, number>;
  error?: string;
  /**
   * What the service does to names, as learned (engine/service-names.ts), carried from one
   * full pass's record to the next. Absent: nothing seen (and in older states; older readers
   * drop it).
   */
  serviceNames?: ServiceNamesRecord;
}

/** engine/service-names.ts ServiceNames, as the state keeps it. */
export interface ServiceNamesRecord {
  renamesIgnored?: true | undefined;
  urlsIgnored?: true | undefined;
  rule?: { lower?: true | undefined; noExtension?: true | undefined; suffix?: string | undefined; maxBytes?: number | undefined } | undefined;
}

/** One file of an upload, as the intent recorded it. */
export interface IntentFile {
  path: string;
  size: number;
  mtimeMs: number;
  sha256: string;
  /** For a replace: the document the new upload supersedes (deleted once the new one is in). */
  replacesDocumentId?: string;
  /**
   * The name the file was uploaded under, marked with a nonce (engine/document-fields.ts
   * markUploadName): a document of that name is this upload's, whatever its size, even
   * when the answer was lost. Absent in intents written before the mark existed.
   */
  uploadName?: string;
  /**
   * The document the upload created for this file, recorded as soon as the upload's answer
   * named it (before its metadata is written), or when the first listing after a lost
   * answer showed exactly one document it can be. Known: only that document is this
   * file's upload; an unmarked document of the same name and size is someone else's.
   */
  documentId?: string;
}

export type Intent =
  | {
      kind: 'upload';
      id: string;
      startedAt: string;
      /**
       * Files sent in one upload request. Until resolved, remote documents without dssync
       * metadata whose name is one of these paths are known to be ours (DESIGN §3: an upload
       * is not idempotent, so a retry must adopt what the lost answer created).
       */
      files: IntentFile[];
      /**
       * Unmarked documents carrying the name of one of the files that the data source held
       * before the upload was sent (from the last full listing): never the upload's, whatever
       * their size. Absent when no listing was known (older state files, a first incremental pass).
       */
      preexisting?: string[];
      /**
       * True when `preexisting` comes from a listing taken in the pass that sent the upload,
       * before it (a full pass). Only then may an unmarked document of a file's full name and
       * size that is not in `preexisting` be this upload's after a lost answer: otherwise a
       * person may have uploaded it since the last listing, and it is doubtful (never claimed).
       */
      preexistingFresh?: boolean;
    };

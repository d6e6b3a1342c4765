/**
 * Typed failures of reading a local file. Each names the file; the engine decides what
 * each means (vanished: gone; changed: look again later; access: report and skip).
 */
export class LocalFileError extends Error {
  override name = 'LocalFileError';
  constructor(
    /** The file as on disk. */
    readonly path: string,
    /** errno code, or 'ECHANGED' for a file that changed while read. */
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** The file changed (size, mtime or identity) while it was read: the hash is of no version. */
export class FileChangedError extends LocalFileError {
  override name = 'FileChangedError';
  constructor(path: string, detail: string) {
    super(path, 'ECHANGED', `${path} changed while it was being read (${detail}); it will be read again once it is stable`);
  }
}

/** The file no longer exists. */
export class FileVanishedError extends LocalFileError {
  override name = 'FileVanishedError';
  constructor(path: string, code = 'ENOENT') {
    super(path, code, `${path} no longer exists`);
  }
}

/** The file exists but dssync may not read it. */
export class FileAccessError extends LocalFileError {
  override name = 'FileAccessError';
  constructor(path: string, code: string) {
    super(path, code, `${path} cannot be read: permission denied (${code}); give the user dssync runs as read access`);
  }
}

/** Any other read failure (I/O error, stale network handle...). */
export class FileReadError extends LocalFileError {
  override name = 'FileReadError';
}

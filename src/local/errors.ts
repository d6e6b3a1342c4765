import { registryCode } from '../errors/codes.js';

/**
 * Typed failures of reading a local file. Each names the file; the engine decides what
 * each means (vanished: gone; changed: look again later; access: report and skip).
 */
export class LocalFileError extends Error {
  override name = 'LocalFileError';
  /** The registry's code (errors/codes.ts: E_LOCAL_*). */
  readonly code: string;
  /** The system's errno behind it (EACCES, EIO...), when the system gave one. */
  readonly errno: string | undefined;
  constructor(
    /** The file as on disk. */
    readonly path: string,
    /** The system's errno, or a registry code for what errno cannot say. */
    code: string,
    message: string,
  ) {
    super(message);
    this.code = registryCode(code);
    this.errno = code.startsWith('E_') ? undefined : code;
  }
}

/** The file changed (size, mtime or identity) while it was read: the hash is of no version. */
export class FileChangedError extends LocalFileError {
  override name = 'FileChangedError';
  constructor(path: string, detail: string) {
    super(path, 'E_LOCAL_FILE_CHANGED', `${path} changed while it was being read (${detail}); it will be read again once it is stable`);
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

/** What a path holds when it is not a regular file, in words for a message. */
export type SpecialFileKind = 'a folder' | 'a FIFO (named pipe)' | 'a socket' | 'a character device' | 'a block device' | 'not a regular file';

/**
 * The path holds a FIFO, socket, device or folder where a regular file was expected. It was
 * opened without blocking and not read: reading a FIFO waits for a writer forever, a device
 * never ends.
 */
export class NotRegularFileError extends LocalFileError {
  override name = 'NotRegularFileError';
  constructor(path: string, readonly kind: SpecialFileKind) {
    super(path, 'E_LOCAL_NOT_REGULAR', `${path} is ${kind}, not a regular file; it is not read`);
  }
}

/**
 * The opened file does not lie beneath the mapped folder (a folder or the file itself was
 * swapped for a symbolic link after the walk), or is not the file the walk saw. Not read.
 */
export class OutsideFolderError extends LocalFileError {
  override name = 'OutsideFolderError';
  constructor(path: string, root: string, detail: string) {
    super(path, 'E_LOCAL_OUTSIDE', `${path} now leads outside the mapped folder ${root} (${detail}); it is not read`);
  }
}

/** A small file (ignore file, token) larger than what is accepted for it. */
export class FileTooLargeError extends LocalFileError {
  override name = 'FileTooLargeError';
  constructor(path: string, size: number, maxBytes: number, what: string) {
    super(path, 'EFBIG', `${what} ${path} is ${size} bytes, more than the ${maxBytes} bytes accepted; shorten it`);
  }
}

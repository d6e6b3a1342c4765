/**
 * Reads one small secret file (token, password, client secret, refresh token) without ever
 * blocking: opened with O_NONBLOCK (a FIFO named as a token file would otherwise hang
 * open() in a libuv thread until someone writes to it), checked with fstat on the opened
 * descriptor to be a regular file (systemd credentials are regular files too), and read
 * with a size bound. Synchronous on purpose: it runs at start and on a rotation, on a file
 * of a few bytes.
 */
import { registerSecret } from '../secrets.js';
import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';
import { ConfigError } from '../errors/config.js';
import { errnoOf } from '../errors/errno.js';

/** A secret file that cannot be opened; `errno` (ENOENT...) lets a caller tell "not there yet". */
export class SecretFileError extends ConfigError {
  override readonly name = 'SecretFileError';
  override readonly code = 'E_SECRET_FILE';
  constructor(
    message: string,
    field: string,
    readonly errno: string | undefined,
  ) {
    super(message, field);
  }
}

/** Far above any token or password; a bigger file is a wrong path, not a secret. */
export const MAX_SECRET_BYTES = 64 * 1024;

export interface SecretFileRead {
  /** The trimmed content. */
  value: string;
  /** Readable by every user (mode o+r): the caller warns. */
  worldReadable: boolean;
  /** The file held `absentMarker`: no secret (value is empty, nothing was registered). */
  absent?: boolean;
}

export interface ReadSecretOptions {
  /** A content that means "no secret here" (a systemd unit's default: auth/settings.ts). */
  absentMarker?: string | undefined;
}

/**
 * `what` names the secret for messages ("the password file"), `setting` where its path came
 * from ("auth.passwordFile"). Every failure is a ConfigError (exit 2) naming the file.
 */
export function readSecretFile(path: string, what: string, setting: string, opts: ReadSecretOptions = {}): SecretFileRead {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY);
  } catch (e) {
    throw new SecretFileError(openFailure(e, what, path, setting), setting, (e as NodeJS.ErrnoException).code);
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) {
      throw new ConfigError(`${what} ${path} (from ${setting}) is ${kindOf(st)}, not a regular file; name the file that holds the secret`, setting);
    }
    if (st.size > MAX_SECRET_BYTES) {
      throw new ConfigError(`${what} ${path} (from ${setting}) is ${st.size} bytes, more than the ${MAX_SECRET_BYTES} a secret may take; check the path`, setting);
    }
    const buf = Buffer.alloc(MAX_SECRET_BYTES + 1);
    let size = 0;
    for (;;) {
      const n = readSync(fd, buf, size, buf.length - size, null);
      if (n === 0) break;
      size += n;
      if (size > MAX_SECRET_BYTES) {
        throw new ConfigError(`${what} ${path} (from ${setting}) grew beyond ${MAX_SECRET_BYTES} bytes while being read; check the path`, setting);
      }
    }
    const value = buf.toString('utf8', 0, size).trim();
    buf.fill(0);
    if (opts.absentMarker !== undefined && value === opts.absentMarker) return { value: '', worldReadable: false, absent: true };
    if (value === '') throw new ConfigError(`${what} ${path} is empty (from ${setting})`, setting);
    // From now on no output of this process may show it (src/secrets.ts).
    registerSecret(value);
    return { value, worldReadable: (st.mode & 0o004) !== 0 };
  } finally {
    closeSync(fd);
  }
}

/**
 * Why the file cannot be opened, and the fix, in words (issue 14.9): the system's code
 * (ENOENT...) says nothing to an operator.
 */
function openFailure(e: unknown, what: string, path: string, setting: string): string {
  const code = errnoOf(e) ?? 'error';
  const named = `${what} ${path} (from ${setting})`;
  switch (code) {
    case 'ENOENT':
      return `${named} does not exist: create it holding the secret alone (chmod 600), or correct ${setting}`;
    case 'ENOTDIR':
      return `${named} does not exist (a part of its path is a file, not a folder): correct ${setting}`;
    case 'EACCES':
    case 'EPERM':
      return `${named} cannot be read by the user dssync runs as (permission denied): give that user read access (e.g. chown it to that user, chmod 600), or correct ${setting}`;
    case 'EISDIR':
      return `${named} is a folder: name the file that holds the secret in ${setting}`;
    case 'ENXIO':
      return `${named} is a socket or a device without a reader, not a regular file: name the file that holds the secret in ${setting}`;
    default:
      return `cannot read ${named} (${code}): check ${setting}`;
  }
}

function kindOf(st: { isDirectory(): boolean; isFIFO(): boolean; isSocket(): boolean; isCharacterDevice(): boolean; isBlockDevice(): boolean }): string {
  if (st.isDirectory()) return 'a folder';
  if (st.isFIFO()) return 'a FIFO (named pipe)';
  if (st.isSocket()) return 'a socket';
  if (st.isCharacterDevice() || st.isBlockDevice()) return 'a device';
  return 'not a regular file';
}

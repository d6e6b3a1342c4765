/**
 * The status endpoint's token (docs/status.md, "Who may read it"): everything but /healthz
 * and /metrics needs it, on loopback too, because loopback is shared by every local user.
 *
 * - `status.tokenFile` names it when the operator manages it (several machines, a proxy).
 * - Otherwise the daemon writes a fresh random one at each start to `<statePath>.status-token`
 *   (0600, the daemon's user: the state folder is that user's alone), and `dssync status`,
 *   run as the same user or root, reads it from there. Nobody has to create or copy it.
 */
import { randomBytes } from 'node:crypto';
import { closeSync, constants, fstatSync, openSync, readSync, renameSync, rmSync, writeSync } from 'node:fs';

const MAX_TOKEN_BYTES = 4096;

/** Where the daemon keeps the token it generated, when status.tokenFile is not set. */
export function generatedTokenPath(statePath: string): string {
  return `${statePath}.status-token`;
}

/** The token file the daemon uses and `dssync status` reads: the configured one, or the generated one. */
export function statusTokenPath(status: { tokenFile?: string | undefined }, statePath: string): string {
  return status.tokenFile ?? generatedTokenPath(statePath);
}

/** A new status token: 32 random bytes, hex. */
export function newStatusToken(): string {
  return randomBytes(32).toString('hex');
}

/**
 * Writes a new random token to `path` (0600, created exclusively without following links,
 * then renamed over the old one: a reader never sees half a token). Returns the token.
 */
export function writeGeneratedToken(path: string, token: string = newStatusToken()): string {
  const tmp = `${path}.${process.pid}.tmp`;
  rmSync(tmp, { force: true });
  const fd = openSync(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
  try {
    writeSync(fd, `${token}\n`);
  } catch (e) {
    closeSync(fd);
    rmSync(tmp, { force: true }); // a full disk leaves no half-written token behind
    throw e;
  }
  closeSync(fd);
  renameSync(tmp, path);
  return token;
}

export interface StatusTokenRead {
  token: string;
  /** Who besides its owner may read it (mode o+r, g+r): anyone of them could sign in. */
  readableBy: 'every local user' | 'its group' | undefined;
}

/**
 * Reads a token file: a regular file (or systemd credential) of at most 4 KiB, opened
 * without blocking (a FIFO would hang the daemon), trimmed. Throws with the file's name.
 */
export function readStatusToken(path: string, setting = 'status.tokenFile'): StatusTokenRead {
  let fd: number | undefined;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
    const st = fstatSync(fd);
    if (!st.isFile()) throw new Error(`${setting} ${path} is not a regular file`);
    if (st.size > MAX_TOKEN_BYTES) throw new Error(`${setting} ${path} is larger than ${MAX_TOKEN_BYTES} bytes; it should hold the token only`);
    const buf = Buffer.alloc(MAX_TOKEN_BYTES + 1);
    const n = readSync(fd, buf, 0, buf.length, 0);
    const token = buf.subarray(0, n).toString('utf8').trim();
    buf.fill(0);
    if (!token) throw new Error(`${setting} ${path} is empty`);
    return { token, readableBy: st.mode & 0o004 ? 'every local user' : st.mode & 0o040 ? 'its group' : undefined };
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    if (err.code === 'ENOENT') throw new Error(`${setting} ${path} does not exist; create it with the token (e.g. openssl rand -hex 32 > ${path}; chmod 600 ${path})`, { cause: e });
    if (err.code === 'EACCES') throw new Error(`${setting} ${path} cannot be read by this user; make it readable by the user dssync runs as`, { cause: e });
    throw e;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** The warning for a token file others than its owner can read (the service token's rule: warn). */
export function readableWarning(path: string, by: 'every local user' | 'its group'): string {
  const mode = by === 'its group' ? 'g+r' : 'o+r';
  return `status.tokenFile ${path} is readable by ${by} (mode ${mode}): ${by === 'its group' ? 'every member' : 'any of them'} can read the status and act on it; chmod 600 ${path} (the daemon's user must own it)`;
}

/**
 * The status endpoint's Unix socket, the CLI's way to the daemon on the same machine
 * (docs/security.md, "The CLI and the daemon"): `<statePath>.sock`, mode 0600, in the
 * daemon's 0700 state folder. Only the daemon's user and root can connect, so the file's
 * permissions are the authentication (as Docker's and containerd's sockets): no token
 * crosses it, and a local user squatting the TCP port never sees one.
 */
import { chmodSync, lstatSync, unlinkSync } from 'node:fs';
import type { Server } from 'node:net';

/** The longest path a Unix socket address holds on Linux (sun_path, 108 bytes with its NUL). */
const MAX_SOCKET_PATH_BYTES = 107;

/** Where the daemon of the state `statePath` answers its CLI. */
export function statusSocketPath(statePath: string): string {
  return `${statePath}.sock`;
}

/**
 * Listens on `path`. A socket left there by a daemon that was killed is removed first (the
 * state's lock says no other daemon of this state runs); anything else at the path is left
 * alone and named in the error.
 */
export async function listenOnSocket(server: Server, path: string): Promise<void> {
  if (Buffer.byteLength(path) > MAX_SOCKET_PATH_BYTES) {
    throw new Error(`the socket path ${path} is longer than the ${MAX_SOCKET_PATH_BYTES} bytes a Unix socket address holds: put the state (statePath) in a shorter folder`);
  }
  try {
    if (lstatSync(path).isSocket()) unlinkSync(path);
    else throw new Error(`${path} exists and is not a socket: remove it`);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
  }
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ path, readableAll: false, writableAll: false }, () => {
      server.off('error', reject);
      resolve();
    });
  });
  // The folder (0700) already keeps others out; the file's own mode says so as well.
  chmodSync(path, 0o600);
}

/**
 * Which local user answers a TCP connection (Linux): the kernel lists each socket with the
 * user that owns it in /proc/net/tcp and /proc/net/tcp6, and the server's side of an
 * accepted connection carries the user of the process that listens. Looked up on the
 * connection already made, so no other process can take the port between the check and
 * the request.
 */
import { readFileSync } from 'node:fs';
import { isIPv4, type Socket } from 'node:net';

/** The uid of the process at the other end of `socket` (connected on this machine), or undefined when unknown. */
export function peerUid(socket: Socket, read: (file: string) => string = (f) => readFileSync(f, 'utf8')): number | undefined {
  const { remoteAddress, remotePort, localAddress, localPort } = socket;
  if (remoteAddress === undefined || remotePort === undefined || localAddress === undefined || localPort === undefined) return undefined;
  return uidOf(read, { address: canonical(remoteAddress), port: remotePort }, { address: canonical(localAddress), port: localPort });
}

interface Endpoint {
  address: string;
  port: number;
}

/** The uid of the socket whose local end is `local` and remote end `remote`, from the kernel's tables. */
export function uidOf(read: (file: string) => string, local: Endpoint, remote: Endpoint): number | undefined {
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try {
      text = read(file);
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      const [l, r, uid] = [f[1], f[2], f[7]];
      if (l === undefined || r === undefined || uid === undefined) continue;
      if (same(parseEndpoint(l), local) && same(parseEndpoint(r), remote)) return Number(uid);
    }
  }
  return undefined;
}

function same(a: Endpoint | undefined, b: Endpoint): boolean {
  return a !== undefined && a.port === b.port && a.address === b.address;
}

/** `0100007F:1F90` (IPv4) or 32 hex digits and a port (IPv6): each 32-bit word in host order (little-endian). */
function parseEndpoint(hex: string): Endpoint | undefined {
  const [addr, port] = hex.split(':');
  if (addr === undefined || port === undefined || (addr.length !== 8 && addr.length !== 32)) return undefined;
  const bytes: number[] = [];
  for (let w = 0; w < addr.length; w += 8) {
    const word = addr.slice(w, w + 8);
    for (let i = 6; i >= 0; i -= 2) bytes.push(parseInt(word.slice(i, i + 2), 16));
  }
  const text = bytes.length === 4 ? bytes.join('.') : Array.from({ length: 8 }, (_, i) => ((bytes[2 * i]! << 8) | bytes[2 * i + 1]!).toString(16)).join(':');
  return { address: canonical(text), port: parseInt(port, 16) };
}

/** One spelling per address: IPv6 compressed and lower case, an IPv4-mapped one as IPv4. */
function canonical(address: string): string {
  if (isIPv4(address)) return address;
  const v6 = new URL(`http://[${address}]/`).hostname.slice(1, -1);
  const mapped = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(v6);
  if (mapped) {
    const n = (parseInt(mapped[1]!, 16) << 16) | parseInt(mapped[2]!, 16);
    return [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.');
  }
  return v6;
}

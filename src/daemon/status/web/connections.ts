/**
 * How many connections the status endpoint holds, and for how long (issue 24.2). Every
 * connection costs the daemon a file descriptor, and the sync needs its own (state writes,
 * uploads, watches): a local user who opens sockets and sends nothing must not use them up.
 *
 * - At most `max` connections at once (a small number, well below the open-file limit: see
 *   statusConnectionCap). When one more arrives, the oldest connection that never showed
 *   the token makes room; connections that did (the operator's page, `dssync status`) are
 *   kept. With only such connections open, the new one is closed.
 * - A connection idle for `idleMs` is closed; event streams are exempt (the server writes
 *   to them; a reader that stops reading is dropped by the SSE hub instead).
 */
import type { Server } from 'node:http';
import type { Socket } from 'node:net';

export interface ConnectionLimits {
  max: number;
  idleMs: number;
}

/** The cap for an open-file limit: a sixteenth of it, from 8 to 64 (unknown limit: 64). */
export function statusConnectionCap(fdLimit: number | undefined): number {
  if (fdLimit === undefined) return 64;
  return Math.max(8, Math.min(64, Math.floor(fdLimit / 16)));
}

export interface ConnectionGuard {
  /** The connection showed the token: it is not evicted for a newcomer. */
  trust(socket: Socket): void;
  /** The connection carries an event stream: no idle deadline. */
  stream(socket: Socket): void;
  readonly size: number;
}

export function guardConnections(server: Server, limits: ConnectionLimits): ConnectionGuard {
  // Insertion order is age: the first untrusted entry is the oldest.
  const open = new Map<Socket, { trusted: boolean }>();
  server.on('connection', (socket: Socket) => {
    if (open.size >= limits.max) {
      const victim = [...open].find(([, s]) => !s.trusted)?.[0];
      if (victim === undefined) {
        socket.destroy();
        return;
      }
      open.delete(victim);
      victim.destroy();
    }
    open.set(socket, { trusted: false });
    socket.once('close', () => open.delete(socket));
    // headersTimeout already closes a connection that sends no complete request (measured:
    // ~12 s, with its 2 s check); this deadline, pushed back by any traffic, also covers a
    // kept-alive connection between requests without relying on that periodic check.
    socket.setTimeout(limits.idleMs);
    socket.on('timeout', () => socket.destroy());
  });
  return {
    trust(socket) {
      const s = open.get(socket);
      if (s) s.trusted = true;
    },
    stream(socket) {
      socket.setTimeout(0);
    },
    get size() {
      return open.size;
    },
  };
}

/**
 * The status endpoint's address, checked before the daemon needs it: whether it stays on
 * this machine, and whether the port can be taken now (another daemon or program may hold
 * it). The message for a port that cannot be taken lives here too, so that `config check`
 * and `dssync run` say the same thing: the setting (status.listen) and the fix.
 */
import { createServer } from 'node:net';
import type { CheckResult } from '../check-result.js';
import { formatListenAddress, isLoopbackHost, type ListenAddress } from '../config/listen.js';
import { readableWarning, readStatusToken } from './status/web/status-token.js';

export function listenCheck(listen: ListenAddress | false, status: { tokenFile?: string | undefined } = {}): CheckResult {
  const base = { check: 'status-listen' };
  if (listen === false) return { ...base, level: 'ok', message: 'status endpoint off (status.listen is false); "dssync status" reads the state file' };
  const addr = formatListenAddress(listen);
  const local = isLoopbackHost(listen.host);
  const where = local ? 'this machine only' : 'reachable from other machines';
  if (status.tokenFile !== undefined) {
    // The daemon reads it at start and refuses to start without it: say so now.
    let readableBy: ReturnType<typeof readStatusToken>['readableBy'];
    try {
      readableBy = readStatusToken(status.tokenFile).readableBy;
    } catch (e) {
      return { ...base, level: 'fail', message: e instanceof Error ? e.message : String(e), fix: 'the daemon needs this file to start its status endpoint' };
    }
    if (readableBy) return { ...base, level: 'warn', message: readableWarning(status.tokenFile, readableBy), fix: `chmod 600 ${status.tokenFile}` };
    return { ...base, level: 'ok', message: `status endpoint ${addr} (${where}); the page and /status need the token of status.tokenFile` };
  }
  if (local) return { ...base, level: 'ok', message: `status endpoint ${addr} (this machine only); the page and /status need the token the daemon writes beside its state ("dssync status --open" signs the page in)` };
  return {
    ...base,
    level: 'warn',
    message: `status endpoint ${addr} is reachable from other machines and no status.tokenFile is set: the daemon makes a new token beside its state at each start, which other machines would have to be given again after every restart`,
    fix: `set "status": { "listen": "127.0.0.1:${listen.port}" }, or add "tokenFile" to "status" to read the page from other machines`,
  };
}

/** An error from listen(): which address, why, and what to set. Undefined for other errors. */
export function listenFailureMessage(err: unknown, listen: ListenAddress): string | undefined {
  const e = err as NodeJS.ErrnoException | undefined;
  if (e?.syscall !== 'listen' && e?.code !== 'EADDRINUSE') return undefined;
  const addr = formatListenAddress(listen);
  const next = `${listen.host.includes(':') ? `[${listen.host}]` : listen.host}:${listen.port + 1}`;
  const fix = `set another port in "status": { "listen": "${next}" }, or "listen": false to turn the endpoint off`;
  switch (e.code) {
    case 'EADDRINUSE':
      return `status.listen ${addr} is already in use (another dssync daemon, or another program: ss -ltnp 'sport = :${listen.port}' shows which); ${fix}`;
    case 'EACCES':
      return `status.listen ${addr} may not be used by this user (ports below 1024 need privileges); ${fix}`;
    case 'EADDRNOTAVAIL':
      return `status.listen ${addr}: this machine has no such address; ${fix}`;
    default:
      return `status.listen ${addr} cannot be listened on (${e.code ?? e.message}); ${fix}`;
  }
}

/** Takes the port for a moment and gives it back: undefined when free, the error otherwise. */
export function tryListen(listen: ListenAddress): Promise<NodeJS.ErrnoException | undefined> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', (e: NodeJS.ErrnoException) => resolve(e));
    server.listen({ host: listen.host, port: listen.port, exclusive: true }, () => server.close(() => resolve(undefined)));
  });
}

/** The address check and, for a fixed port, whether it can be taken now. */
export async function checkListen(listen: ListenAddress | false, status: { tokenFile?: string | undefined } = {}): Promise<CheckResult> {
  const where = listenCheck(listen, status);
  if (listen === false || listen.port === 0 || where.level === 'fail') return where;
  const err = await tryListen(listen);
  if (!err) return where;
  return { check: 'status-listen', level: 'fail', message: listenFailureMessage(err, listen) ?? `status.listen ${formatListenAddress(listen)}: ${err.message}` };
}

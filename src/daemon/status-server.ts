/**
 * The daemon's local HTTP endpoint: /healthz (ok or degraded with reasons), /metrics
 * (Prometheus text) and /status (JSON). Bound to 127.0.0.1 by default; read-only; it
 * carries no secret (the token is never part of the status).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { DaemonStatus } from './status.js';

export interface StatusServerOptions {
  host: string;
  port: number;
  status: () => DaemonStatus;
  metrics: () => Promise<string>;
}

export interface RunningStatusServer {
  url: string;
  close(): Promise<void>;
}

export async function startStatusServer(o: StatusServerOptions): Promise<RunningStatusServer> {
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'application/json' }).end('{"error":"method not allowed"}\n');
      return;
    }
    const send = (status: number, type: string, body: string): void => {
      res.writeHead(status, { 'content-type': type, 'cache-control': 'no-store' }).end(req.method === 'HEAD' ? undefined : body);
    };
    if (path === '/healthz') {
      const s = o.status();
      const reasons = s.mappings.flatMap((m) => m.degraded.map((r) => `${m.id}: ${r}`));
      const body = JSON.stringify({ status: reasons.length ? 'degraded' : 'ok', reasons });
      // Degraded still answers 200: the process is alive and serving the other mappings;
      // monitors read `status`. 503 only while shutting down.
      send(s.stopping ? 503 : 200, 'application/json', `${body}\n`);
    } else if (path === '/status') {
      send(200, 'application/json', `${JSON.stringify(o.status(), null, 2)}\n`);
    } else if (path === '/metrics') {
      o.metrics().then(
        (text) => send(200, 'text/plain; version=0.0.4; charset=utf-8', text),
        (e: unknown) => send(500, 'text/plain', `metrics failed: ${e instanceof Error ? e.message : String(e)}\n`),
      );
    } else {
      send(404, 'application/json', '{"error":"not found; try /healthz, /status or /metrics"}\n');
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port, o.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const addr = server.address() as AddressInfo;
  const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  return {
    url: `http://${host}:${addr.port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

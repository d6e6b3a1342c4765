/**
 * A service that answers badly: a node:http server in front of the emulator which passes
 * every request through, except those a rule takes over (non-JSON bodies, HTML pages, huge
 * or slow answers, redirects, wrong shapes...). It records what it saw and what reached the
 * emulator, so a case can prove that a bad answer led to no write.
 */
import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export type Rule = (req: IncomingMessage, body: Buffer, forward: () => Promise<Forwarded>) => Promise<boolean> | boolean;

export interface Forwarded {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

export interface Meddler {
  url: string;
  /** The rule of the current case: return true when it answered `res` itself. */
  setRule(rule: ((req: IncomingMessage, res: ServerResponse, body: Buffer, forward: () => Promise<Forwarded>) => Promise<boolean> | boolean) | undefined): void;
  /** "METHOD /path" of every request received / passed to the emulator since reset(). */
  seen: string[];
  forwarded: string[];
  reset(): void;
  close(): Promise<void>;
}

export async function startMeddler(target: string): Promise<Meddler> {
  const t = new URL(target);
  let rule: Parameters<Meddler['setRule']>[0];
  const m: Meddler = {
    url: '',
    seen: [],
    forwarded: [],
    setRule: (r) => (rule = r),
    reset: () => {
      m.seen.length = 0;
      m.forwarded.length = 0;
    },
    close: () => new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    }),
  };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const key = `${req.method} ${(req.url ?? '').split('?')[0]}`;
      m.seen.push(key);
      const forward = (): Promise<Forwarded> =>
        new Promise((resolve, reject) => {
          m.forwarded.push(key);
          const up = request(
            { host: t.hostname, port: t.port, method: req.method, path: req.url, headers: { ...req.headers, host: t.host } },
            (r) => {
              const out: Buffer[] = [];
              r.on('data', (c: Buffer) => out.push(c));
              r.on('end', () => resolve({ status: r.statusCode ?? 502, headers: r.headers, body: Buffer.concat(out) }));
              r.on('error', reject);
            },
          );
          up.on('error', reject);
          up.end(body);
        });
      const passThrough = async (): Promise<void> => {
        const f = await forward();
        const headers = { ...f.headers };
        delete headers['transfer-encoding'];
        delete headers['content-length'];
        res.writeHead(f.status, headers).end(f.body);
      };
      void (async () => {
        try {
          if (rule && (await rule(req, res, body, forward))) return;
          await passThrough();
        } catch {
          res.destroy();
        }
      })();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  m.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return m;
}

/** Requests that changed something on the emulator (a bad answer must lead to none). */
export function writes(keys: readonly string[]): string[] {
  return keys.filter((k) => /^(POST|PUT|DELETE) /.test(k));
}

/** True for the list-documents request. */
export function isListDocuments(req: IncomingMessage): boolean {
  return req.method === 'GET' && /\/documents$/.test((req.url ?? '').split('?')[0] ?? '');
}

export function isUpload(req: IncomingMessage): boolean {
  return req.method === 'POST' && /\/documents\/upload$/.test((req.url ?? '').split('?')[0] ?? '');
}

/**
 * A tiny node:http server for the client's tolerance tests: each test answers in shapes
 * other than our emulator's, and inspects the requests it received.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedRequest {
  method: string;
  /** Path and query, as received. */
  url: string;
  headers: IncomingMessage['headers'];
  body: Buffer;
}

export type Handler = (req: ReceivedRequest, res: ServerResponse, raw: IncomingMessage) => void | Promise<void>;

export interface VariantServer {
  url: string;
  requests: ReceivedRequest[];
  /** Replaces the answering function. */
  handle(h: Handler): void;
  close(): Promise<void>;
}

export async function startVariantServer(initial?: Handler): Promise<VariantServer> {
  let handler: Handler = initial ?? ((_req, res) => json(res, 404, { message: 'no handler' }));
  const requests: ReceivedRequest[] = [];
  const server: Server = createServer((raw, res) => {
    const chunks: Buffer[] = [];
    raw.on('data', (c: Buffer) => chunks.push(c));
    raw.on('end', () => {
      const req: ReceivedRequest = { method: raw.method ?? '', url: raw.url ?? '', headers: raw.headers, body: Buffer.concat(chunks) };
      requests.push(req);
      Promise.resolve(handler(req, res, raw)).catch((e: unknown) => {
        if (!res.headersSent) json(res, 500, { message: String(e) });
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    handle: (h) => {
      handler = h;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

export function text(res: ServerResponse, status: number, body: string, contentType: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': contentType, 'content-length': Buffer.byteLength(body), ...headers });
  res.end(body);
}

/** The filenames and content types of the multipart parts named `documents`, in order. */
export function multipartParts(body: Buffer): { filename: string; contentType: string; size: number }[] {
  const s = body.toString('latin1');
  const boundary = /^--([^\r\n]+)\r\n/.exec(s)?.[1];
  if (!boundary) return [];
  const parts = s.split(`--${boundary}`).slice(1, -1);
  return parts
    .map((p) => {
      const headerEnd = p.indexOf('\r\n\r\n');
      const head = Buffer.from(p.slice(0, headerEnd), 'latin1').toString('utf8');
      const content = p.slice(headerEnd + 4, p.length - 2);
      return {
        name: /name="([^"]*)"/.exec(head)?.[1] ?? '',
        filename: /filename="([^"]*)"/.exec(head)?.[1] ?? '',
        contentType: /content-type:\s*([^\r\n]+)/i.exec(head)?.[1] ?? '',
        size: content.length,
      };
    })
    .filter((p) => p.name === 'documents')
    .map(({ filename, contentType, size }) => ({ filename, contentType, size }));
}

/**
 * Server-Sent Events for the status page (GET /events): the framing (pure) and the set of
 * open streams. A browser's EventSource reconnects by itself and sends the last id it saw
 * (Last-Event-ID); activity entries carry their ring-buffer sequence as id, so a short
 * disconnection replays what was missed instead of reloading.
 */
import { scrub } from '../../../secrets.js';
import type { ServerResponse } from 'node:http';

export interface SseMessage {
  /** Event name (`activity`, `status`...); absent: the default `message`. */
  event?: string | undefined;
  /** Sequence number the client echoes back in Last-Event-ID after a reconnection. */
  id?: number | string | undefined;
  /** Text; each line becomes one `data:` field (EventSource joins them with "\n"). */
  data: string;
  /** Reconnection delay (ms) the browser should use. */
  retryMs?: number | undefined;
}

/** One event in the text/event-stream format. CR, LF and CRLF all end a line there. */
export function formatSse(m: SseMessage): string {
  let out = '';
  if (m.retryMs !== undefined) out += `retry: ${Math.max(0, Math.floor(m.retryMs))}\n`;
  if (m.id !== undefined) out += `id: ${oneLine(String(m.id))}\n`;
  if (m.event !== undefined) out += `event: ${oneLine(m.event)}\n`;
  // The live feed carries the status's error text: no known secret leaves in it (issue 24.5).
  for (const line of scrub(m.data).split(/\r\n|\r|\n/)) out += `data: ${line}\n`;
  return `${out}\n`;
}

/** A comment line: ignored by EventSource, keeps proxies and idle timers from closing the stream. */
export function formatSseComment(text: string): string {
  return `: ${oneLine(text)}\n\n`;
}

/** Last-Event-ID as a sequence number (undefined when absent or not one of ours). */
export function parseLastEventId(header: string | string[] | undefined): number | undefined {
  const v = Array.isArray(header) ? header[0] : header;
  if (v === undefined || !/^\d{1,15}$/.test(v.trim())) return undefined;
  return Number(v.trim());
}

function oneLine(s: string): string {
  // A field value cannot hold a line break: it would end the field and start another.
  return s.replace(/[\r\n]+/g, ' ');
}

export interface SseLimits {
  /** Streams open at once, in all. */
  max: number;
  /** Streams one credential (a page session, the bearer token) holds; a new one ends its oldest. */
  perClient: number;
  /**
   * Bytes a stream may have waiting in the daemon's memory (written, not yet taken by the
   * reader). A reader that falls this far behind is dropped: its browser reconnects and
   * starts again from the status as it is then, instead of the daemon holding its backlog.
   */
  maxBufferedBytes: number;
  heartbeatMs: number;
  retryMs: number;
}

/** The open event streams: bounded in number, per credential, and in what each may hold back. */
export class SseHub {
  /** Each open stream and the credential it was opened with, oldest first. */
  private readonly clients = new Map<ServerResponse, string>();
  private heartbeat: NodeJS.Timeout | undefined;
  private dropped = 0;

  constructor(private readonly o: SseLimits) {}

  get size(): number {
    return this.clients.size;
  }

  /** Streams dropped so far because their reader fell behind. */
  get droppedSlow(): number {
    return this.dropped;
  }

  /** Opens a stream on `res` for `who`; false (and a 503 sent) when the limit is reached. */
  open(res: ServerResponse, first: string[], who = ''): boolean {
    const mine = [...this.clients].filter(([, w]) => w === who).map(([r]) => r);
    // The same credential opening one more (a reloaded page, a new tab): its oldest goes.
    if (mine.length >= this.o.perClient) this.end(mine[0]!);
    if (this.clients.size >= this.o.max) {
      res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '10' }).end(`{"error":"too many open event streams (limit ${this.o.max})"}\n`);
      return false;
    }
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      'x-accel-buffering': 'no',
      connection: 'keep-alive',
    });
    this.clients.set(res, who);
    res.on('close', () => {
      this.clients.delete(res);
      if (this.clients.size === 0) this.stopHeartbeat();
    });
    this.send(res, formatSse({ retryMs: this.o.retryMs, event: 'hello', data: '{}' }));
    for (const chunk of first) this.send(res, chunk);
    if (!this.heartbeat && this.clients.size > 0) {
      this.heartbeat = setInterval(() => this.broadcast(formatSseComment('ping')), this.o.heartbeatMs);
      this.heartbeat.unref();
    }
    return true;
  }

  broadcast(chunk: string): void {
    for (const res of [...this.clients.keys()]) this.send(res, chunk);
  }

  /** Ends every stream (the daemon stops: the page then shows it is gone). */
  close(): void {
    this.stopHeartbeat();
    for (const res of this.clients.keys()) res.end();
    this.clients.clear();
  }

  /** Writes unless the reader is too far behind; then the stream is dropped. */
  private send(res: ServerResponse, chunk: string): void {
    if (!this.clients.has(res)) return;
    if (res.writableLength + Buffer.byteLength(chunk) > this.o.maxBufferedBytes) {
      this.dropped++;
      this.clients.delete(res);
      res.destroy();
      return;
    }
    res.write(chunk);
  }

  private end(res: ServerResponse): void {
    this.clients.delete(res);
    res.end();
  }

  private stopHeartbeat(): void {
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.heartbeat = undefined;
  }
}

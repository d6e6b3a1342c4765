/**
 * The status endpoint's listen address, `"host:port"` (IPv6 in brackets: `"[::1]:8787"`).
 */
import { isIP } from 'node:net';

export interface ListenAddress {
  host: string;
  port: number;
}

/** Parses `host:port`; returns a message saying what is wrong when it is not one. */
export function parseListenAddress(text: string): ListenAddress | { error: string } {
  const m = /^(?:\[([^\]]+)\]|([^:[\]]+)):(\d{1,5})$/.exec(text.trim());
  if (!m) return { error: `"${text}" is not host:port (e.g. "127.0.0.1:8787", "[::1]:8787"); use false to turn the endpoint off` };
  const host = (m[1] ?? m[2] ?? '').trim();
  const port = Number(m[3]);
  if (m[1] !== undefined && isIP(host) !== 6) return { error: `"${host}" in brackets must be an IPv6 address` };
  if (!host) return { error: `"${text}" has no host; use "127.0.0.1:${port}" to listen on this machine only` };
  if (!Number.isInteger(port) || port > 65535) return { error: `port ${m[3]} is out of range (0-65535)` };
  return { host, port };
}

/** True when the host is reachable from this machine only. */
export function isLoopbackHost(host: string): boolean {
  const h = host.toLowerCase();
  if (h === 'localhost' || h === '::1' || h === '0:0:0:0:0:0:0:1') return true;
  return isIP(h) === 4 && h.startsWith('127.');
}

export function formatListenAddress(a: ListenAddress): string {
  return isIP(a.host) === 6 ? `[${a.host}]:${a.port}` : `${a.host}:${a.port}`;
}

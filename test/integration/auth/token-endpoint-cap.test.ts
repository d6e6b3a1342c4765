/**
 * Issue 24.6, with the built binary: a token endpoint answering a gzip bomb (64 KB that
 * inflate to 64 MB). What is read from it is capped after decompression: the command fails
 * with a clear error naming the endpoint and the cap instead of inflating it all in memory.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requireBuiltBinary, runCli } from '../cli/run-cli.js';

const dir = mkdtempSync(join(tmpdir(), 'dssync-token-cap-'));
const bomb = gzipSync(Buffer.alloc(64 * 1024 * 1024, ' '), { level: 9 });
let server: Server;
let url = '';
const seen: string[] = [];

beforeAll(async () => {
  requireBuiltBinary();
  server = createServer((req, res) => {
    seen.push(`${req.method} ${req.url}`);
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip', 'content-length': bomb.length }).end(bomb));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server?.close(() => resolve())));

describe('a token endpoint answering a gzip bomb', () => {
  it('the command fails naming the endpoint and the cap', { timeout: 60_000 }, async () => {
    const config = join(dir, 'config.json');
    const tokenUrl = `${url}/realms/r/protocol/openid-connect/token`;
    writeFileSync(config, JSON.stringify({ baseUrl: url, organizationId: 'org', auth: { type: 'oauth2', tokenUrl, grantType: 'client_credentials', clientId: 'dssync' } }), { mode: 0o600 });
    const r = await runCli(['datasources', 'list', '--config', config], { DSSYNC_CLIENT_SECRET: 'client-secret-1' });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain(`${tokenUrl} answered with more than the 1048576 bytes accepted from a token endpoint (after decompression)`);
    expect(r.stderr).not.toContain('client-secret-1');
    // Discovery was asked too, and capped the same way (its failure is no error: it is optional).
    expect(seen.some((s) => s.includes('/.well-known/openid-configuration'))).toBe(true);
  });
});

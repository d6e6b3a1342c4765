/**
 * Security: TLS certificates are verified. A private CA can be configured (tls.caFile);
 * without it, an unknown certificate is refused; a certificate for another host name is
 * refused even when its CA is trusted; and verification cannot be turned off, neither
 * silently by NODE_TLS_REJECT_UNAUTHORIZED=0 in the environment nor by a config key.
 */
import { execFileSync } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClientFromConfig } from '../../../src/compose/client.js';
import { loadConfig } from '../../../src/config/load.js';

const TLS = new URL('../../fixtures/api-variants/tls/', import.meta.url);
let dir: string;
let good: { server: Server; url: string };
let wrongName: { server: Server; url: string; ca: string };

async function serve(cert: Buffer, key: Buffer): Promise<{ server: Server; url: string }> {
  const server = createServer({ cert, key }, (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' }).end('[{"id":"ds-tls","name":"over TLS"}]');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `https://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'dssync-sec-tls-'));
  good = await serve(await readFile(new URL('cert.pem', TLS)), await readFile(new URL('key.pem', TLS)));
  // A self-signed certificate for another name: trusted as a CA, still not 127.0.0.1.
  execFileSync('openssl', [
    'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '2', '-subj', '/CN=other.example',
    '-addext', 'subjectAltName=DNS:other.example', '-addext', 'basicConstraints=critical,CA:TRUE',
    '-keyout', join(dir, 'other.key'), '-out', join(dir, 'other.pem'),
  ], { stdio: 'ignore' });
  const w = await serve(await readFile(join(dir, 'other.pem')), await readFile(join(dir, 'other.key')));
  wrongName = { ...w, ca: join(dir, 'other.pem') };
});
afterAll(async () => {
  for (const s of [good?.server, wrongName?.server]) {
    s?.closeAllConnections();
    await new Promise<void>((resolve) => (s ? s.close(() => resolve()) : resolve()));
  }
  await rm(dir, { recursive: true, force: true });
});

async function listWith(baseUrl: string, tls?: Record<string, unknown>): Promise<string> {
  const file = join(dir, `config-${Math.random().toString(36).slice(2)}.json`);
  await writeFile(file, JSON.stringify({ baseUrl, organizationId: 'o', ...(tls ? { tls } : {}) }), { mode: 0o600 });
  let client;
  try {
    client = createClientFromConfig(loadConfig({ file, env: { DSSYNC_TOKEN: 'tls-test-token' } }));
  } catch (e) {
    return `error: ${(e as Error).message}`;
  }
  try {
    return (await client.listDataSources()).map((d) => d.id).join(',');
  } catch (e) {
    return `error: ${(e as Error).message}`;
  } finally {
    await client.close();
  }
}

describe('security: TLS', () => {
  it('a private CA configured with tls.caFile is trusted', async () => {
    expect(await listWith(good.url, { caFile: new URL('cert.pem', TLS).pathname })).toBe('ds-tls');
  });

  it('without it, the unknown certificate is refused with a message saying what to do', async () => {
    expect(await listWith(good.url)).toMatch(/^error: .*TLS certificate not accepted \((SELF_SIGNED_CERT_IN_CHAIN|DEPTH_ZERO_SELF_SIGNED_CERT|UNABLE_TO_VERIFY_LEAF_SIGNATURE)\).*give the service's CA certificate/);
  });

  it("a certificate for another host name is refused even though its CA is trusted", async () => {
    expect(await listWith(wrongName.url, { caFile: wrongName.ca })).toMatch(/^error: .*TLS certificate not accepted \(ERR_TLS_CERT_ALTNAME_INVALID\)/);
  });

  it('NODE_TLS_REJECT_UNAUTHORIZED=0 in the environment does not turn verification off', async () => {
    const before = process.env.NODE_TLS_REJECT_UNAUTHORIZED;
    const warn = process.emitWarning;
    process.emitWarning = () => undefined; // Node's own warning about the variable
    process.env.NODE_TLS_REJECT_UNAUTHORIZED = '0';
    try {
      expect(await listWith(good.url)).toMatch(/^error: .*TLS certificate not accepted/);
      expect(await listWith(wrongName.url, { caFile: wrongName.ca })).toMatch(/^error: .*TLS certificate not accepted/);
    } finally {
      if (before === undefined) delete process.env.NODE_TLS_REJECT_UNAUTHORIZED;
      else process.env.NODE_TLS_REJECT_UNAUTHORIZED = before;
      process.emitWarning = warn;
    }
  });

  it('no configuration key turns verification off', async () => {
    for (const tls of [{ rejectUnauthorized: false }, { insecure: true }, { verify: false }]) {
      expect(await listWith(good.url, tls)).toMatch(/^error: invalid config file .*tls\.\w+.*unknown key/s);
    }
  });
});

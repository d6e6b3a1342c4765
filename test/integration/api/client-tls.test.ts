/**
 * TLS: a service with a private CA works once its certificate is given (`ca`), and is
 * refused without it; verification is never turned off.
 */
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DatastoreClient } from '../../../src/api/client.js';
import { ApiError } from '../../../src/api/errors.js';
import { fixedToken } from '../../../src/api/token-provider.js';
import { QUEUE } from '../../helpers/queue-defaults.js';
import { DEFAULT_ORGANIZATION_HEADER } from '../../../src/config/connection.js';

const TLS = new URL('../../fixtures/api-variants/tls/', import.meta.url);
const cert = readFileSync(new URL('cert.pem', TLS));
const key = readFileSync(new URL('key.pem', TLS));
let server: Server;
let url: string;

beforeAll(async () => {
  server = createServer({ cert, key }, (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('[{"id":"ds-tls"}]');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

describe('TLS', () => {
  it('trusts a private CA given as `ca`', async () => {
    const c = new DatastoreClient({ ...QUEUE, baseUrl: url, organizationId: 'o', organizationHeader: DEFAULT_ORGANIZATION_HEADER, tokens: fixedToken('t'), ca: cert });
    try {
      expect((await c.listDataSources()).map((d) => d.id)).toEqual(['ds-tls']);
    } finally {
      await c.close();
    }
  });

  it('refuses an unknown certificate with a clear, non-retryable error', async () => {
    const c = new DatastoreClient({ ...QUEUE, baseUrl: url, organizationId: 'o', organizationHeader: DEFAULT_ORGANIZATION_HEADER, tokens: fixedToken('t') });
    try {
      await c.listDataSources();
      expect.unreachable('the certificate must not be accepted');
    } catch (e) {
      expect(e).toBeInstanceOf(ApiError);
      expect(e).toMatchObject({ code: 'E_CONNECTION', retryable: false, attempts: 1 });
      expect((e as Error).message).toMatch(/certificate/);
    } finally {
      await c.close();
    }
  });
});

/**
 * The client keeps as many connections as the pacer lets requests be in flight: with fewer,
 * requests would wait in the HTTP pool, out of the pacer's sight, and a higher concurrency
 * would not make a mirror any faster (measured in the benchmark).
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { DatastoreClient } from '../../../src/api/client.js';
import { fixedToken } from '../../../src/api/token-provider.js';
import { QUEUE } from '../../helpers/queue-defaults.js';
import { DEFAULT_ORGANIZATION_HEADER } from '../../../src/config/connection.js';

const servers: { close: () => Promise<void> }[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

/** Holds every request until `expected` are open at once (or 3 s have passed), then answers all. */
async function gatheringServer(expected: number): Promise<{ url: string; peak: () => number }> {
  const held: ServerResponse[] = [];
  let peak = 0;
  let timer: NodeJS.Timeout | undefined;
  const release = (): void => {
    clearTimeout(timer);
    timer = undefined;
    for (const res of held.splice(0)) res.writeHead(200, { 'content-type': 'application/json' }).end('{"data_source_id":"ds-1","name":"x"}');
  };
  const server = createServer((_req: IncomingMessage, res: ServerResponse) => {
    held.push(res);
    peak = Math.max(peak, held.length);
    timer ??= setTimeout(release, 3000);
    if (held.length >= expected) release();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  servers.push({
    close: () =>
      new Promise<void>((r) => {
        clearTimeout(timer);
        server.closeAllConnections();
        server.close(() => r());
      }),
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, peak: () => peak };
}

describe('DatastoreClient connections', () => {
  it('has all 32 requests of a concurrency of 32 at the service at once', { timeout: 20_000 }, async () => {
    const srv = await gatheringServer(32);
    const client = new DatastoreClient({ ...QUEUE, baseUrl: srv.url, organizationId: 'org', organizationHeader: DEFAULT_ORGANIZATION_HEADER, tokens: fixedToken('t'), concurrency: 32, requestsPerSecond: 0 });
    try {
      const all = await Promise.all(Array.from({ length: 32 }, () => client.getDataSource('ds-1')));
      expect(all).toHaveLength(32);
      expect(srv.peak()).toBe(32);
    } finally {
      await client.close();
    }
  });
});

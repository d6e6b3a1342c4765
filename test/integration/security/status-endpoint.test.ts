/**
 * Security: the status endpoint (no authentication) binds to loopback by default, is
 * unreachable from the machine's other addresses, is read-only, and a non-loopback
 * address in the config draws a warning.
 */
import { connect } from 'node:net';
import { networkInterfaces } from 'node:os';
import { describe, expect, it } from 'vitest';
import { loadSettings } from '../../../src/config/load.js';
import { startStatusServer } from '../../../src/daemon/status/server.js';
import type { DaemonStatus } from '../../../src/daemon/status/schema.js';
import { realClock } from '../../../src/time/clock.js';

const status = (): DaemonStatus =>
  ({ version: 't', pid: 1, startedAt: '', statePath: '/s', baseUrl: 'http://x', organizationId: 'o', stopping: false, requests: { total: 0, retries: 0, throttled: 0, inFlight: 0, queued: 0 }, mappings: [] }) as DaemonStatus;

function reachable(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect({ host, port });
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}

describe('security: the status endpoint', () => {
  it('defaults to 127.0.0.1 (port 8787) when the config says nothing', () => {
    const warnings: string[] = [];
    const s = loadSettings({ env: {}, warn: (m) => warnings.push(m) });
    expect(s.status.listen).toEqual({ host: '127.0.0.1', port: 8787 });
    expect(warnings).toEqual([]);
  });

  it('bound as configured by default, it answers on loopback only', async () => {
    const listen = loadSettings({ env: {} }).status.listen;
    if (listen === false) throw new Error('the status endpoint is on by default');
    const server = await startStatusServer({ host: listen.host, port: 0, clock: realClock, status, metrics: async () => '' });
    try {
      const port = Number(new URL(server.url).port);
      expect(new URL(server.url).hostname).toBe('127.0.0.1');
      expect(await reachable('127.0.0.1', port)).toBe(true);
      const others = Object.values(networkInterfaces())
        .flat()
        .filter((a) => a && a.family === 'IPv4' && !a.internal)
        .map((a) => a!.address);
      for (const address of others) expect(await reachable(address, port), address).toBe(false);
      // Read-only: anything but GET/HEAD is refused.
      expect((await fetch(`${server.url}/status`, { method: 'POST' })).status).toBe(405);
    } finally {
      await server.close();
    }
  });

  it('a non-loopback address is allowed but warned about', () => {
    for (const listen of ['0.0.0.0:8787', '[::]:8787', '192.168.1.10:9000']) {
      const warnings: string[] = [];
      loadSettings({ env: {}, readFile: () => JSON.stringify({ status: { listen } }), file: '/etc/dssync/config.json', warn: (m) => warnings.push(m) });
      expect(warnings.join('\n'), listen).toMatch(/reachable from other machines and no status\.tokenFile is set .*; use "127\.0\.0\.1:\d+" unless that is intended/);
    }
  });
});

import { describe, expect, it } from 'vitest';
import { startEmulator } from '@dssync/emulator';
import { call, createDataSource, form } from './client.js';

const DS = '/datastore/v1/data-sources';

describe('emulator: fault injection', () => {
  it('answers 429 with an integer Retry-After >= 1 and an error body once the rate is spent, per organization', async () => {
    // 0.05 requests/s: one request per 20 s window, so the test does not race the clock.
    const emu = await startEmulator({ orgs: ['org-a', 'org-b'], faults: { rateLimitRps: 0.05 } });
    try {
      expect((await call(emu.url, 'GET', DS, { org: 'org-a' })).status).toBe(200);
      const limited = await call(emu.url, 'GET', DS, { org: 'org-a' });
      expect(limited.status).toBe(429);
      const retryAfter = Number(limited.headers['retry-after']);
      expect(Number.isInteger(retryAfter)).toBe(true);
      expect(retryAfter).toBeGreaterThanOrEqual(1);
      expect(retryAfter).toBeLessThanOrEqual(20);
      expect(limited.body.error.code).toBe('rate_limited');
      expect((await call(emu.url, 'GET', DS, { org: 'org-b' })).status).toBe(200);
      expect(emu.stats().rateLimited).toBe(1);
    } finally {
      await emu.close();
    }
  });

  it('expresses Retry-After as an HTTP date or leaves it out, as configured', async () => {
    const emu = await startEmulator({ faults: { rateLimitRps: 0.05, retryAfter: 'date' } });
    try {
      await call(emu.url, 'GET', DS);
      const limited = await call(emu.url, 'GET', DS);
      const when = Date.parse(String(limited.headers['retry-after']));
      expect(when).toBeGreaterThan(Date.now());
      emu.setFaults({ rateLimitRps: 0.05, retryAfter: 'none' });
      const bare = await call(emu.url, 'GET', DS);
      expect(bare.status).toBe(429);
      expect(bare.headers['retry-after']).toBeUndefined();
    } finally {
      await emu.close();
    }
  });

  it('answers 429 to an upload before reading its body: nothing is stored', async () => {
    const emu = await startEmulator({ faults: { rateLimitRps: 0.05 } });
    try {
      emu.setFaults({});
      const ds = await createDataSource(emu.url);
      emu.setFaults({ rateLimitRps: 0.05 });
      await call(emu.url, 'GET', DS);
      const res = await call(emu.url, 'POST', `${DS}/${ds}/documents/upload`, { form: form([['x'.repeat(200_000), 'a.txt']]) });
      expect(res.status).toBe(429);
      expect(emu.store.listDocuments(ds)).toEqual([]);
      expect(emu.stats().uploads).toBe(0);
    } finally {
      await emu.close();
    }
  });

  it('answers a seeded share of requests with 500/502/503 and an error body, reproducibly', async () => {
    const statuses = async (): Promise<number[]> => {
      const emu = await startEmulator({ faults: { errorRate: 0.3, seed: 42 } });
      try {
        const out: number[] = [];
        for (let i = 0; i < 60; i++) {
          const res = await call(emu.url, 'GET', DS);
          if (res.status >= 500) expect(['internal_error', 'bad_gateway', 'service_unavailable']).toContain(res.body.error.code);
          out.push(res.status);
        }
        expect(emu.stats().injectedErrors).toBe(out.filter((s) => s >= 500).length);
        return out;
      } finally {
        await emu.close();
      }
    };
    const first = await statuses();
    const failures = first.filter((s) => s >= 500);
    expect(failures.length).toBeGreaterThan(6);
    expect(failures.length).toBeLessThan(30);
    expect(new Set(failures).size).toBeGreaterThan(1);
    expect(first.filter((s) => s !== 200 && s < 500)).toEqual([]);
    expect(await statuses()).toEqual(first);
  });

  it('drops the connection without an answer (the client sees a socket error) and does nothing', async () => {
    const emu = await startEmulator({ faults: { dropRate: 1 } });
    try {
      await expect(call(emu.url, 'POST', DS, { json: { name: 'x', llm_connector_ids: ['c'] } })).rejects.toMatchObject({
        code: expect.stringMatching(/UND_ERR_SOCKET|ECONNRESET/),
      });
      expect(emu.stats().dropped).toBe(1);
      expect(emu.store.listDataSources()).toEqual([]);
      emu.setFaults({});
      expect((await call(emu.url, 'GET', DS)).status).toBe(200);
    } finally {
      await emu.close();
    }
  });

  it('commits a write, then drops the connection (ambiguous success): the document exists afterwards', async () => {
    const emu = await startEmulator();
    try {
      const ds = await createDataSource(emu.url);
      emu.setFaults({ ambiguousRate: 1 });
      expect((await call(emu.url, 'GET', `${DS}/${ds}`)).status).toBe(200); // reads are answered
      await expect(call(emu.url, 'POST', `${DS}/${ds}/documents/upload`, { form: form([['hello', 'kept.txt']]) })).rejects.toMatchObject({
        code: expect.stringMatching(/UND_ERR_SOCKET|ECONNRESET/),
      });
      expect(emu.stats()).toMatchObject({ ambiguous: 1, uploads: 1, filesUploaded: 1 });
      emu.setFaults({});
      const listed = await call(emu.url, 'GET', `${DS}/${ds}/documents`);
      expect(listed.body.items.map((d: { name: string }) => d.name)).toEqual(['kept.txt']);
    } finally {
      await emu.close();
    }
  });

  it('answers 503 with Retry-After to everything while down, except the admin routes', async () => {
    const emu = await startEmulator({ faults: { down: true } });
    try {
      const res = await call(emu.url, 'GET', DS);
      expect(res.status).toBe(503);
      expect(res.headers['retry-after']).toBe('1');
      expect(res.body.error.code).toBe('service_unavailable');
      const stats = await call(emu.url, 'GET', '/_emulator/stats', { noOrg: true });
      expect(stats.status).toBe(200);
      const up = await call(emu.url, 'PUT', '/_emulator/faults', { noOrg: true, json: {} });
      expect(up.status).toBe(200);
      expect((await call(emu.url, 'GET', DS)).status).toBe(200);
    } finally {
      await emu.close();
    }
  });

  it('refuses bad fault options, naming the field', async () => {
    const emu = await startEmulator();
    try {
      expect(() => emu.setFaults({ errorRate: 2 })).toThrow(/errorRate/);
      expect(() => emu.setFaults({ retryAfter: 'soon' as 'date' })).toThrow(/retryAfter/);
      await expect(startEmulator({ faults: { dropRate: -1 } })).rejects.toThrow(/dropRate/);
    } finally {
      await emu.close();
    }
  });

  it('rewrites and cuts every stored name, at an upload and an update (nameRules, nameMaxBytes); a bad value names the option', async () => {
    const emu = await startEmulator({ faults: { nameRules: ['lower', 'no-extension', 'suffix'], nameMaxBytes: 12 } });
    try {
      const ds = await createDataSource(emu.url);
      const up = await call(emu.url, 'POST', `${DS}/${ds}/documents/upload`, { form: form([['some text', 'Sub/Report.txt']]) });
      expect(up.status).toBe(201);
      // "sub/report (1)" cut at 12 bytes.
      expect(up.body.documents[0].name).toBe('sub/report (');
      const id = up.body.documents[0].document_id as string;
      emu.setFaults({ nameRules: ['suffix'] });
      const put = await call(emu.url, 'PUT', `${DS}/${ds}/documents/${id}`, { json: { name: 'Other.md' } });
      expect(put.body.name).toBe('Other.md (1)');
      expect(() => emu.setFaults({ nameRules: ['upper' as never] })).toThrow(/faults\.nameRules/);
      expect(() => emu.setFaults({ nameMaxBytes: 0 })).toThrow(/faults\.nameMaxBytes/);
    } finally {
      await emu.close();
    }
  });
});

/**
 * Bad-input catalogue, service answers (S-cases): what a misbehaving service or a proxy in
 * front of it may answer. Each case runs a real full pass (as `dssync sync` does) through a
 * meddling server in front of the emulator, expects a clear error (or a clean recovery),
 * and proves that nothing was lost: no write reached the service when the answer could not
 * be trusted, and every document, file and state entry of the baseline is intact.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { ApiError } from '../../src/api/errors.js';
import { createClientFromConfig } from '../../src/compose/client.js';
import { loadConfig } from '../../src/config/load.js';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { PassReport } from '../../src/engine/pass-report.js';
import { isListDocuments, isUpload, startMeddler, writes, type Forwarded, type Meddler } from './meddler.js';
import { createWorld, TOKEN, type PassOptions, type World } from './world.js';
import { onDisk } from '../helpers/upload-file.js';

let world: World;
let meddler: Meddler;

beforeAll(async () => {
  world = await createWorld();
  meddler = await startMeddler(world.ws.emu.url);
});
afterAll(async () => {
  await meddler?.close();
  await world?.close();
});
beforeEach(() => {
  meddler.reset();
  meddler.setRule(undefined);
});

type Handler = (req: IncomingMessage, res: ServerResponse, body: Buffer, forward: () => Promise<Forwarded>) => Promise<boolean> | boolean;

/** Runs a pass through the meddler; returns the error message, or the report. */
async function passThrough(rule: Handler, over: Omit<PassOptions, 'baseUrl'> = {}): Promise<{ error?: string; report?: PassReport; ms: number }> {
  meddler.setRule(rule);
  const t0 = Date.now();
  try {
    const report = await world.pass({ ...over, baseUrl: meddler.url });
    // Every message a bad answer produced is an artefact: none may carry the token.
    expect(JSON.stringify(report)).not.toContain(TOKEN);
    return { report, ms: Date.now() - t0 };
  } catch (e) {
    const error = e instanceof Error ? e.message : String(e);
    expect(error).not.toContain(TOKEN);
    return { error, ms: Date.now() - t0 };
  } finally {
    meddler.setRule(undefined);
  }
}

const onList = (answer: (res: ServerResponse, forward: () => Promise<Forwarded>) => void | Promise<void>): Handler => async (req, res, _b, forward) => {
  if (!isListDocuments(req)) return false;
  await answer(res, forward);
  return true;
};

/** A listing that cannot be trusted: a clear error, no write at all, nothing lost. */
async function expectRefusedListing(rule: Handler, message: RegExp, over: Omit<PassOptions, 'baseUrl'> = {}): Promise<string> {
  const r = await passThrough(rule, over);
  expect(r.error, `the pass fails (report: ${JSON.stringify(r.report?.counts)})`).toMatch(message);
  expect(writes(meddler.forwarded)).toEqual([]);
  await world.expectNothingLost();
  return r.error!;
}

describe('bad-input catalogue: service answers', () => {
  it('S01 a listing answered 200 with a plain-text body', async () => {
    await expectRefusedListing(onList((res) => void res.writeHead(200, { 'content-type': 'text/plain' }).end('OK')), /expected JSON, received text\/plain: OK/);
  });

  it('S02 a listing answered 200 with an HTML page (a login portal)', async () => {
    const html = '<!doctype html><html><head><title>Sign in - Corporate Proxy</title></head><body><form>...</form></body></html>';
    await expectRefusedListing(onList((res) => void res.writeHead(200, { 'content-type': 'text/html' }).end(html)), /expected JSON, received text\/html: Sign in - Corporate Proxy/);
  });

  it('S03 a listing answered 502 with an HTML error page (retried, then reported)', async () => {
    const html = '<html><head><title>502 Bad Gateway</title></head><body><center><h1>502 Bad Gateway</h1></center><hr><center>nginx</center></body></html>';
    const msg = await expectRefusedListing(onList((res) => void res.writeHead(502, { 'content-type': 'text/html' }).end(html)), /502 Bad Gateway/);
    expect(msg).not.toMatch(/<html|<center/);
    expect(meddler.seen.filter((k) => k.endsWith('/documents')).length).toBe(2); // maxAttempts 2
  });

  it('S04 a listing with a huge body (65 MiB, no content-length)', { timeout: 20_000 }, async () => {
    await expectRefusedListing(
      onList(async (res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write('{"items":[{"id":"x","name":"');
        const mb = Buffer.alloc(1 << 20, 0x61);
        for (let i = 0; i < 65 && !res.destroyed; i++) {
          if (!res.write(mb)) await new Promise((r) => res.once('drain', r));
        }
        res.end('"}]}');
      }),
      /exceeds the 67108864 bytes accepted/,
      // The size cap is the point, not the 1 s body deadline: 65 MiB through the meddler
      // can take longer than that on a loaded machine.
      { bodyMs: 15_000 },
    );
  });

  it('S05 a listing whose records have fields of the wrong type (object id, numeric name)', async () => {
    await expectRefusedListing(
      onList((res) => void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ items: [{ id: { value: 1 }, name: 42 }] }))),
      /record has no id/,
    );
  });

  it('S06 a listing of an unexpected shape (an object where the list should be)', async () => {
    await expectRefusedListing(
      onList((res) => void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ documents: { count: 8 } }))),
      /expected a list .* received an object with keys documents/,
    );
  });

  it('S07 a listing whose next page is itself (paging loop)', async () => {
    await expectRefusedListing(
      onList(async (res, forward) => {
        // The first page is real; every page names the same next page.
        const first = !(res.req.url ?? '').includes('cursor=');
        const items = first ? (JSON.parse((await forward()).body.toString()) as { items: unknown[] }).items : [];
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ items: first ? items : [{ id: 'x-1', name: 'x' }], next_cursor: 'again' }));
      }),
      /paging loops/,
    );
  });

  it('S08 a listing redirected to another origin: not followed, the token is not sent there', async () => {
    const seenElsewhere: (string | undefined)[] = [];
    const other = createServer((req, res) => {
      seenElsewhere.push(req.headers.authorization);
      res.end('[]');
    });
    await new Promise<void>((r) => other.listen(0, '127.0.0.1', () => r()));
    try {
      const target = `http://127.0.0.1:${(other.address() as AddressInfo).port}/steal`;
      await expectRefusedListing(onList((res) => void res.writeHead(302, { location: target }).end()), /302 redirect to http:\/\/127\.0\.0\.1:\d+\/steal \(another origin: not followed/);
      expect(seenElsewhere).toEqual([]);
    } finally {
      await new Promise<void>((r) => other.close(() => r()));
    }
  });

  it('S09 a listing redirected to itself again and again', async () => {
    await expectRefusedListing(
      onList((res) => void res.writeHead(307, { location: `/datastore/v1/data-sources/${world.dataSourceId}/documents?again=${Math.random()}` }).end()),
      /too many redirects/,
    );
  });

  it('S10 a slow-loris listing: headers, then one byte at a time (whole-answer deadline)', { timeout: 20_000 }, async () => {
    let stop = false;
    const r = await passThrough(
      onList(async (res, forward) => {
        const body = (await forward()).body.toString();
        res.writeHead(200, { 'content-type': 'application/json' });
        // Never idle longer than the body timeout (1 s), but ~10 s for the whole answer.
        for (let i = 0; i < body.length && !stop && !res.destroyed; i++) {
          res.write(body[i]);
          await new Promise((w) => setTimeout(w, 10_000 / body.length));
        }
        res.end();
      }),
    );
    stop = true;
    expect(r.error).toMatch(/timed out reading the answer/);
    expect(r.ms).toBeLessThan(8_000);
    expect(writes(meddler.forwarded)).toEqual([]);
    await world.expectNothingLost();
  });

  it('S11 a listing whose headers never come', { timeout: 20_000 }, async () => {
    const r = await passThrough(onList(() => new Promise<void>(() => undefined)));
    expect(r.error).toMatch(/timed out waiting for the answer/);
    expect(writes(meddler.forwarded)).toEqual([]);
    await world.expectNothingLost();
  });

  it('S12 a listing silently cut short (no paging information): detected, nothing uploaded again', async () => {
    const msg = await expectRefusedListing(
      onList(async (res, forward) => {
        const real = JSON.parse((await forward()).body.toString()) as { items: unknown[] };
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(real.items.slice(0, 3)));
      }),
      /the listing .* lacks document/,
    );
    expect(msg).toMatch(/nothing was changed/);
  });

  it('S13 a 401 whose body echoes the token: refused, and the token is not repeated', async () => {
    const r = await passThrough((req, res) => {
      res.writeHead(401, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: `token ${String(req.headers.authorization).slice(7)} is not valid` } }));
      return true;
    });
    expect(r.error).toMatch(/401 Unauthorized: token \[redacted\] is not valid/);
    expect(r.error).not.toContain(TOKEN);
    expect(writes(meddler.forwarded)).toEqual([]);
    await world.expectNothingLost();
  });

  it('S14 a listing whose metadata arrives as a JSON string and with a BOM: understood, no write', async () => {
    const r = await passThrough(
      onList(async (res, forward) => {
        const real = JSON.parse((await forward()).body.toString()) as { items: { metadata?: unknown }[] };
        const items = real.items.map((d) => ({ ...d, metadata: JSON.stringify(d.metadata) }));
        res.writeHead(200, { 'content-type': 'application/json' }).end(`\ufeff${JSON.stringify({ data: items })}`);
      }),
    );
    expect(r.error).toBeUndefined();
    expect(r.report?.ok).toBe(true);
    expect(writes(meddler.forwarded)).toEqual([]);
    await world.expectNothingLost();
  });

  it('S15 an upload answered 200 with an HTML page: the upload is settled from the listing, no duplicate', async () => {
    await world.ws.write('new/s15.txt', 'uploaded while the answer is garbage');
    const r = await passThrough(async (req, res, _b, forward) => {
      if (!isUpload(req)) return false;
      await forward();
      res.writeHead(200, { 'content-type': 'text/html' }).end('<html><head><title>Thanks!</title></head></html>');
      return true;
    });
    expect(r.error).toBeUndefined();
    expect(r.report?.ok, JSON.stringify(r.report?.failures)).toBe(true);
    expect(meddler.seen.filter((k) => k.startsWith('POST')).length).toBe(1);
    await world.expectNothingLost();
    const docs = world.ws.emu.store.listDocuments(world.dataSourceId).filter((d) => d.metadata?.dssync_path === 'new/s15.txt');
    expect(docs).toHaveLength(1);
  });

  it('S16 an upload answered with fewer documents than files sent: settled from the listing, no duplicate', async () => {
    await world.ws.write('new/s16-a.txt', 'first of two');
    await world.ws.write('new/s16-b.txt', 'second of two');
    const r = await passThrough(async (req, res, _b, forward) => {
      if (!isUpload(req)) return false;
      const f = await forward();
      const got = JSON.parse(f.body.toString()) as unknown[] | { items: unknown[] };
      const items = Array.isArray(got) ? got : got.items;
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(items.slice(0, 1)));
      return true;
    });
    expect(r.report?.ok, JSON.stringify(r.report?.failures ?? r.error)).toBe(true);
    expect(meddler.seen.filter((k) => k.startsWith('POST')).length).toBe(1);
    await world.expectNothingLost();
  });

  it('S17 an upload answered with a redirect: writes are never redirected; the next pass settles it', async () => {
    await world.ws.write('new/s17.txt', 'redirected upload');
    const r = await passThrough((req, res) => {
      if (!isUpload(req)) return false;
      res.writeHead(307, { location: '/elsewhere/upload' }).end();
      return true;
    });
    expect(r.report?.failures.map((f) => f.message).join('\n')).toMatch(/307 redirect to .*\/elsewhere\/upload \(writes are never redirected; check baseUrl\)/);
    expect(meddler.forwarded.filter((k) => k.startsWith('POST'))).toEqual([]);
    await world.expectNothingLost();
    expect((await world.pass()).ok).toBe(true);
    await world.expectNothingLost();
  });

  it('S18 a metadata update answered 200 with a plain-text "OK": success is any 2xx', async () => {
    await world.ws.write('new/s18.txt', 'update answered in plain text');
    const r = await passThrough(async (req, res, _b, forward) => {
      if (req.method !== 'PUT') return false;
      await forward();
      res.writeHead(200, { 'content-type': 'text/plain' }).end('OK');
      return true;
    });
    expect(r.report?.ok, JSON.stringify(r.report?.failures ?? r.error)).toBe(true);
    await world.expectNothingLost();
    // A second pass finds nothing to do: the update was taken as done.
    meddler.reset();
    expect((await passThrough(() => false)).report?.counts.updated).toBe(0);
    expect(writes(meddler.seen)).toEqual([]);
  });

  it('S20 an upload answered with the id "..": a bad answer naming the id; no request to another URL; the pass settles it', async () => {
    const hostileIds: Handler = async (req, res, _b, forward) => {
      if (!isUpload(req)) return false;
      const f = await forward();
      const got = JSON.parse(f.body.toString()) as Record<string, unknown>[] | Record<string, Record<string, unknown>[]>;
      const items = Array.isArray(got) ? got : (got.documents ?? got.items ?? []);
      expect(items.length).toBeGreaterThan(0);
      for (const item of items) for (const k of ['id', 'document_id', 'documentId', '_id', 'uuid']) if (k in item) item[k] = '..';
      res.writeHead(f.status, { 'content-type': 'application/json' }).end(JSON.stringify(got));
      return true;
    };
    // The client itself, on a scratch data source: the error names the id.
    const config = loadConfig({ file: world.ws.configPath, env: world.ws.env, flags: { baseUrl: meddler.url } });
    const scratchFile = join(world.ws.dir, 's20-scratch.txt');
    await writeFile(scratchFile, 'scratch');
    const api = createClientFromConfig(config);
    const scratch = await api.createDataSource({ name: 's20-scratch', llmConnectorIds: ['conn-1'] });
    meddler.reset();
    meddler.setRule(hostileIds);
    try {
      const e = await api.uploadDocuments(scratch.id, [onDisk(scratchFile, 's20-scratch.txt')]).then(
        () => undefined,
        (err: unknown) => err as ApiError,
      );
      expect(e?.code).toBe('E_BAD_RESPONSE');
      expect(e?.ambiguous).toBe(true);
      expect(e?.message).toMatch(/POST \/datastore\/v1\/data-sources\/\S+\/documents\/upload \(\d+\): the document id "\.\." is not usable in a URL \(it is a relative path segment\)/);
      // An id that is already held (from a state file, an argument) is checked where the URL is built.
      await expect(api.updateDocument(scratch.id, '..', { name: 'x', url: 'u', metadata: {} })).rejects.toThrow(/the document id "\.\." cannot be part of a request's URL: it is a relative path segment/);
      await expect(api.deleteDocument(scratch.id, 'a/../../b')).rejects.toThrow(/the document id "a\/\.\.\/\.\.\/b" cannot be part/);
    } finally {
      meddler.setRule(undefined);
      await api.deleteDataSource(scratch.id);
      await api.close();
      await rm(scratchFile);
    }
    expect(writes(meddler.seen)).toEqual([`POST /datastore/v1/data-sources/${scratch.id}/documents/upload`, `DELETE /datastore/v1/data-sources/${scratch.id}`]);

    // The mirror: the answer is ambiguous, settled from the listing; nothing goes to the data source's own URL.
    meddler.reset();
    await world.ws.write('new/s20.txt', 'uploaded, answered with a hostile id');
    const r = await passThrough(hostileIds);
    expect(r.report?.ok, JSON.stringify(r.report?.failures ?? r.error)).toBe(true);
    const ds = world.dataSourceId;
    expect(writes(meddler.seen).filter((k) => !k.startsWith(`PUT /datastore/v1/data-sources/${ds}/documents/doc_`))).toEqual([`POST /datastore/v1/data-sources/${ds}/documents/upload`]);
    await world.expectNothingLost();
    expect(world.ws.emu.store.listDocuments(ds).filter((d) => d.metadata?.dssync_path === 'new/s20.txt')).toHaveLength(1);
  });

  it('S19 a listing that repeats documents across pages: each counted once, no write', async () => {
    let real: unknown[] = [];
    const r = await passThrough(
      onList(async (res, forward) => {
        if (!(res.req.url ?? '').includes('cursor=')) {
          real = (JSON.parse((await forward()).body.toString()) as { items: unknown[] }).items;
          res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ items: real, next_cursor: 'p2' }));
        } else res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ items: real.slice(0, 4), next_cursor: null }));
      }),
    );
    expect(r.report?.ok, r.error).toBe(true);
    expect(writes(meddler.forwarded)).toEqual([]);
    await world.expectNothingLost();
  });
});

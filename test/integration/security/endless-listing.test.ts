/**
 * Issue 36.3: a service that answers the documents listing with page after page (each small,
 * each with a next cursor) no longer holds the daemon's memory up to the client's 10,000
 * pages: a real `dssync sync` stops at the mapping's bound (4 × the files tracked + 100,000
 * documents), the pass fails naming the bound (E_LIST_TOO_LONG), and nothing is deleted.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createWorkspace, type Workspace } from '../../helpers/mirror-check.js';
import { requireBuiltBinary, runCli } from '../cli/run-cli.js';

let ws: Workspace | undefined;
let proxy: Server | undefined;
beforeAll(() => requireBuiltBinary());
afterEach(async () => {
  await new Promise<void>((r) => (proxy ? proxy.close(() => r()) : r()));
  await ws?.close();
  ws = proxy = undefined;
});

const PAGE = 1000;

/** The emulator behind, but every documents listing is endless: new ids on every page. */
function endlessProxy(target: string): Promise<{ server: Server; url: string; pages: () => number }> {
  let pages = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://x');
      if (req.method === 'GET' && /\/data-sources\/[^/]+\/documents$/.test(url.pathname)) {
        const cursor = Number(url.searchParams.get('cursor') ?? '0');
        pages++;
        const documents = Array.from({ length: PAGE }, (_, i) => ({ id: `doc-${cursor}-${i}`, name: `endless-${cursor}-${i}.txt`, status: 'READY' }));
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ documents, next_cursor: String(cursor + 1) }));
        return;
      }
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string' && !['host', 'connection', 'content-length'].includes(k)) headers[k] = v;
      const body = chunks.length ? Buffer.concat(chunks) : undefined;
      void fetch(`${target}${req.url ?? '/'}`, { method: req.method, headers, body }).then(async (r) => {
        res.writeHead(r.status, { 'content-type': r.headers.get('content-type') ?? 'application/json' }).end(Buffer.from(await r.arrayBuffer()));
      });
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, pages: () => pages })));
}

describe('security: a listing without end (issue 36.3)', () => {
  it('the pass stops at the bound sized from the mapping, says so, and deletes nothing', { timeout: 120_000 }, async () => {
    ws = await createWorkspace();
    const w = ws;
    await w.write('a.txt', 'alpha');
    const first = await w.sync();
    expect(first.code, first.stderr).toBe(0);

    const p = await endlessProxy(w.emu.url);
    proxy = p.server;
    const config = JSON.parse(await readFile(w.configPath, 'utf8')) as Record<string, unknown>;
    await writeFile(w.configPath, JSON.stringify({ ...config, baseUrl: p.url }), { mode: 0o600 });
    await w.write('b.txt', 'bravo');
    const r = await runCli(['sync', '--config', w.configPath], w.env);
    expect(r.code).not.toBe(0);
    expect(r.stdout + r.stderr).toContain('the list holds more than 100004 documents (the bound: 4 × the 1 files tracked + 100000)');
    // One page past the bound at most (the one being decoded), and one fetched ahead.
    expect(p.pages()).toBeLessThanOrEqual(100_004 / PAGE + 2);
    const routes = w.emu.stats().byRoute;
    expect(Object.keys(routes).filter((k) => k.startsWith('DELETE'))).toEqual([]);
  });
});

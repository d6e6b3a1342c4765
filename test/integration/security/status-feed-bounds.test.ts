/**
 * Issue 24.3: what one client can make the daemon hold is bounded. Against the built daemon:
 * a share with 300 FIFOs (each a skipped file) makes /status carry the first 100 and the
 * count, the rest paged from /status/problems; another local user (uid 65534, curl through
 * setpriv) opens no event stream at all, so the operator's own still opens; and one
 * credential opening streams again and again gets them (its oldest end), never a 503.
 */
import { execFile, execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { daemonTests } from '../../helpers/daemon-test.js';
import type { MappingStatus } from '../../../src/daemon/status/schema.js';
import { authHeader, waitFor } from '../daemon/daemon-process.js';

const run = promisify(execFile);
const FIFOS = 300;
const daemons = daemonTests();

/** Opens /events and resolves with the status code once the first bytes arrive (or the answer ends). */
function openStream(url: string, headers: Record<string, string>): Promise<{ status: number; close: () => void; ended: Promise<void> }> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}/events`, { headers, agent: false }, (res) => {
      const ended = new Promise<void>((r) => res.once('close', () => r()));
      res.once('data', () => resolve({ status: res.statusCode ?? 0, close: () => req.destroy(), ended }));
      res.resume();
    });
    req.on('error', reject);
    req.end();
  });
}

describe('security: bounds of /status and of the live feed', () => {
  it(`${FIFOS} skipped files: /status lists the first 100 and the count, /status/problems pages the rest`, { timeout: 120_000 }, async () => {
    const { w, d } = await daemons.start({
      files: { 'a.txt': 'alpha' },
      startupDone: async (x) => {
        for (let i = 0; i < FIFOS; i++) execFileSync('mkfifo', [join(x.share, `pipe-${String(i).padStart(3, '0')}.txt`)]);
      },
    });
    const skippedNow = async (): Promise<MappingStatus> => (await d.status()).mappings[0]!;
    // The operator's rescan (token and CSRF token): the full pass lists every FIFO as skipped.
    const { csrf } = (await (await fetch(`${d.url}/session`, { headers: authHeader(w) })).json()) as { csrf: string };
    const rescan = await fetch(`${d.url}/actions/rescan`, { method: 'POST', headers: { ...authHeader(w), 'x-dssync-csrf': csrf, 'content-type': 'application/json' }, body: JSON.stringify({ mapping: (await skippedNow()).id }) });
    expect(rescan.status).toBe(202);
    await waitFor(async () => ((await skippedNow()).skippedTotal ?? (await skippedNow()).skipped.length) >= FIFOS, { timeout: 60_000, what: 'the FIFOs to be listed as skipped' });
    const m = await skippedNow();
    expect(m.skipped).toHaveLength(100);
    expect(m.skippedTotal).toBe(FIFOS);
    const pages: string[] = m.skipped.map((s) => s.path);
    for (let offset = 100; offset < FIFOS; offset += 100) {
      const r = await fetch(`${d.url}/status/problems?mapping=${m.id}&list=skipped&offset=${offset}`, { headers: authHeader(w) });
      expect(r.status).toBe(200);
      const page = (await r.json()) as { total: number; items: { path: string }[] };
      expect(page.total).toBe(FIFOS);
      pages.push(...page.items.map((i) => i.path));
    }
    expect(new Set(pages).size).toBe(FIFOS);
    const bad = await fetch(`${d.url}/status/problems?mapping=${m.id}&list=nothing`, { headers: authHeader(w) });
    expect(bad.status).toBe(400);
    expect(await bad.text()).toContain('list must be one of');
  });

  it('a stranger opens no stream; the operator always gets one, and one credential holds at most 4 (its oldest end)', { timeout: 90_000 }, async () => {
    const { w, d } = await daemons.start({ files: { 'a.txt': 'alpha' } });
    if (process.getuid?.() === 0 && existsSync('/usr/bin/setpriv') && existsSync('/usr/bin/curl')) {
      const codes = await Promise.all(
        Array.from({ length: 40 }, () =>
          run('/usr/bin/setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', '/usr/bin/curl', '-s', '-m', '5', '-o', '/dev/null', '-w', '%{http_code}', `${d.url}/events`]).then((r) => r.stdout),
        ),
      );
      expect(new Set(codes)).toEqual(new Set(['401']));
    }
    const streams = [];
    for (let i = 0; i < 6; i++) streams.push(await openStream(d.url, authHeader(w)));
    expect(streams.map((s) => s.status)).toEqual([200, 200, 200, 200, 200, 200]);
    // The two oldest were ended to make room; the four newest stay open.
    await Promise.all([streams[0]!.ended, streams[1]!.ended]);
    for (const s of streams) s.close();
  });
});

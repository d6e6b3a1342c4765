/**
 * The ingestion check of a real `dssync run` against the emulator, whose document records
 * carry `status` and `failure_reason`: after a first mirror of N files it costs ⌈N/1000⌉
 * listing requests (the client's page size), not N chunk listings, and a PDF the service
 * could not read is shown in `status` with the service's own reason.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Workspace } from '../../helpers/mirror-check.js';
import { daemonWorkspace, startDaemon, waitFor, type DaemonProcess } from './daemon-process.js';
import { filesUploaded } from '../../helpers/mirror-check.js';

const N = 60;
const DOCS_ROUTE = 'GET /datastore/v1/data-sources/:data_source_id/documents';
const CHUNKS_ROUTE = 'GET /datastore/v1/documents/:document_id/chunks';

describe('dssync run: the ingestion check reads the listing', () => {
  let w: Workspace;
  let d: DaemonProcess | undefined;
  beforeAll(async () => {
    // 3 s: time enough to see every upload land before the check is due.
    w = await daemonWorkspace({ config: { ingestionCheck: { enabled: true, delaySeconds: 3 } } });
  });
  afterAll(async () => {
    await d?.kill();
    await w.close();
  });

  it(`a first mirror of ${N} files: one listing for the check, no chunk listing, the service's reason in status`, { timeout: 120_000 }, async () => {
    for (let i = 0; i < N - 1; i++) await w.write(`notes/n${i}.txt`, `note ${i}`);
    await w.write('broken.pdf', '%PDF-1.4\nthis is not a PDF body\n');
    d = await startDaemon(w);
    // Every upload landed: from here on, what the data source is asked is the check's.
    await waitFor(() => filesUploaded(w.emu) >= N, { timeout: 60_000, interval: 10, what: 'the uploads' });
    w.emu.resetStats();
    const problem = async () => (await d!.status()).mappings[0]?.problems?.find((p) => p.path === 'broken.pdf');
    // The text check names the damaged PDF first (unchecked); the service's verdict takes its place.
    await waitFor(async () => (await problem())?.kind === 'not-ingested', { timeout: 60_000, what: 'the not-ingested PDF in status' });
    expect((await problem())?.reason).toMatch(/^not ingested: failed: text extraction failed: /);
    const byRoute = w.emu.stats().byRoute;
    expect(byRoute[CHUNKS_ROUTE] ?? 0).toBe(0);
    expect(byRoute[DOCS_ROUTE] ?? 0).toBe(Math.ceil(N / 1000));
    const s = await d.status();
    expect(s.mappings[0]?.notIngested.map((n) => [n.path, n.reason])).toEqual([['broken.pdf', expect.stringMatching(/^failed: text extraction failed/)]]);
    expect((await d.stop()).code).toBe(0);
  });
});

/**
 * `dssync run` through outages (DESIGN §4 "never delete on doubt", §1.3 retries): the mapped
 * folder vanishing (an unmounted drive) and the service going down. Nothing is deleted or
 * lost, /healthz says why the mapping is degraded, and the daemon recovers by itself.
 */
import { rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { daemonTests } from '../../helpers/daemon-test.js';
import { waitConverged, waitFor, waitIdle } from './daemon-process.js';
import { fileDocuments } from '../../helpers/mirror-check.js';

const daemons = daemonTests();

describe('dssync run: outages', () => {
  it('treats a vanished mapped folder as an outage: nothing deleted, degraded naming the folder, resumes when it is back', { timeout: 120_000 }, async () => {
    const files = Object.fromEntries(Array.from({ length: 12 }, (_, i) => [`dir${i % 3}/f${i}.txt`, `file ${i}`]));
    const { w, d } = await daemons.start({ files, env: { DSSYNC_RETRY_DELAY_MS: '1000' } });
    const docs = (): number => fileDocuments(w.emu, w.dataSourceId()).length;
    expect(docs()).toBe(12);

    const away = join(w.dir, 'share-unmounted');
    await rename(w.share, away);
    await waitFor(async () => {
      const h = (await d.healthz()).body;
      return h.status === 'degraded' && h.reasons.some((r) => r.includes(w.share));
    }, { timeout: 30_000, what: '/healthz to report the missing folder' });
    // A full pass looked at the missing folder and refused to act on it.
    await waitFor(async () => (await d.status()).mappings[0]!.recentErrors.some((e) => e.message.includes(w.share)), {
      timeout: 30_000,
      what: 'a pass to have been refused',
    });
    expect(docs()).toBe(12);

    // Changes made while it was away are picked up once it is back.
    await rm(join(away, 'dir0'), { recursive: true });
    await rename(join(away, 'dir1/f1.txt'), join(away, 'dir1/f1-renamed.txt'));
    await rename(away, w.share);
    await w.write('back.txt', 'written after the folder came back');
    await waitConverged(w, 'the folder came back', 60_000);
    await waitFor(async () => (await d.healthz()).body.status === 'ok', { timeout: 60_000, what: '/healthz ok again' });
    await waitIdle(d);
    expect((await d.stop()).code).toBe(0);
  });

  it('loses nothing while the service is down and converges by itself when it is back', { timeout: 120_000 }, async () => {
    // Few attempts per request and a short first retry delay keep the outage short.
    const files = Object.fromEntries(Array.from({ length: 6 }, (_, i) => [`f${i}.txt`, `file ${i}`]));
    const { w, d } = await daemons.start({ config: { queue: { requestsPerSecond: 1000, concurrency: 4, maxAttempts: 2 } }, files, env: { DSSYNC_RETRY_DELAY_MS: '1000' } });

    w.emu.setFaults({ down: true });
    await w.write('new-while-down.txt', 'created while the service was down');
    await w.write('f0.txt', 'edited while the service was down');
    await rename(join(w.share, 'f1.txt'), join(w.share, 'f1-renamed.txt'));
    await rm(join(w.share, 'f2.txt'));
    // Degraded, saying why: the operations that failed.
    await waitFor(
      async () => {
        const h = (await d.healthz()).body;
        return h.status === 'degraded' && h.reasons.some((r) => /503|unavailable/i.test(r));
      },
      { timeout: 60_000, what: '/healthz degraded while the service is down' },
    );
    expect(fileDocuments(w.emu, w.dataSourceId()).length).toBe(6);
    // Still down for the retry: a full pass fails too, and the mapping backs off again.
    await waitFor(() => d.logs().some((l) => l.msg === 'mapping degraded; will retry'), { timeout: 60_000, what: 'a retry while the service is down' });
    const t0 = Date.now();
    w.emu.setFaults({});
    await waitConverged(w, 'the service came back', 90_000);
    if (process.env.DSSYNC_TEST_VERBOSE) console.log(`converged ${Date.now() - t0} ms after the service came back (at ${new Date(t0).toISOString()})\n${d.stdout()}`);
    await waitFor(async () => (await d.healthz()).body.status === 'ok', { timeout: 60_000, what: '/healthz ok again' });
    expect((await d.stop()).code).toBe(0);
  });
});

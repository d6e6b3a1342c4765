/**
 * A real `dssync run` with oauth2 credentials against the emulator's token endpoint with
 * 2-second access tokens: it stays in sync through many token lifetimes while files change,
 * renewing on its own, and no secret reaches its logs, state or status.
 */
import { readFile, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkFolderConvergence, type Workspace } from '../../helpers/mirror-check.js';
import { DEV_PASSWORD as PASSWORD, passwordGrantWorkspace, PASSWORD_GRANT_ENV, startDaemon, waitConverged, type DaemonProcess } from '../daemon/daemon-process.js';

describe('dssync run through many token lifetimes', () => {
  let w: Workspace;
  let d: DaemonProcess | undefined;
  beforeAll(async () => {
    w = await passwordGrantWorkspace({ tokenTtlSeconds: 2, refreshTtlSeconds: 30 });
  });
  afterAll(async () => {
    await d?.kill();
    await w.close();
  });

  it('keeps the data source in sync while files change across token renewals', { timeout: 120_000 }, async () => {
    for (let i = 0; i < 5; i++) await w.write(`doc-${i}.txt`, `version 0 of ${i}`);
    d = await startDaemon(w, { env: PASSWORD_GRANT_ENV });
    await waitConverged(w, 'the first mirror', 60_000, () => checkFolderConvergence(w.emu, w.dataSourceId(), w.share));
    const renewalsBefore = w.emu.oidc.counts.refresh_token + w.emu.oidc.counts.password;
    // Changes spread over several 2-second lifetimes.
    for (let round = 1; round <= 4; round++) {
      await w.write(`doc-${round}.txt`, `version ${round} of ${round}`);
      await w.write(`new-${round}.txt`, `added in round ${round}`);
      if (round === 3) await rm(join(w.share, 'doc-0.txt'));
      await sleep(1_500);
    }
    await waitConverged(w, 'the changes', 60_000, () => checkFolderConvergence(w.emu, w.dataSourceId(), w.share));
    expect(w.emu.oidc.counts.refresh_token + w.emu.oidc.counts.password - renewalsBefore).toBeGreaterThanOrEqual(2);
    expect((await d.healthz()).body.status).toBe('ok');
    const artefacts = [d.stdout(), d.stderr(), JSON.stringify(await d.status()), await d.metrics()];
    for (const f of await readdir(join(w.dir, 'state'))) artefacts.push(await readFile(join(w.dir, 'state', f), 'utf8').catch(() => ''));
    for (const a of artefacts) expect(a).not.toContain(PASSWORD);
    const { code } = await d.stop();
    expect(code).toBe(0);
  });
});

/**
 * `dssync run` checks its credentials at start (a refused password exits 3) and then runs
 * the daemon: one token provider serves both, so a start costs the identity provider one
 * password grant, not two (an account's grants are counted, and sometimes capped, there).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkFolderConvergence, type Workspace } from '../../helpers/mirror-check.js';
import { passwordGrantWorkspace, PASSWORD_GRANT_ENV, startDaemon, waitConverged, type DaemonProcess } from '../daemon/daemon-process.js';

describe('dssync run with a password grant', () => {
  let w: Workspace;
  let d: DaemonProcess | undefined;
  beforeAll(async () => {
    // Tokens that outlive the test: any second grant is the start's, not a renewal.
    w = await passwordGrantWorkspace({ tokenTtlSeconds: 3600, refreshTtlSeconds: 7200 });
  });
  afterAll(async () => {
    await d?.kill();
    await w.close();
  });

  it('makes one grant for the check at start and the first mirror', { timeout: 90_000 }, async () => {
    for (let i = 0; i < 3; i++) await w.write(`doc-${i}.txt`, `text ${i}`);
    d = await startDaemon(w, { env: PASSWORD_GRANT_ENV });
    await waitConverged(w, 'the first mirror', 60_000, () => checkFolderConvergence(w.emu, w.dataSourceId(), w.share));
    expect(w.emu.oidc.counts.password).toBe(1);
    expect(w.emu.oidc.counts.refresh_token).toBe(0);
    const { code } = await d.stop();
    expect(code).toBe(0);
  });
});

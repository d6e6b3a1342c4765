/**
 * A data source deleted in the App under a running daemon (issue 23, defect 9), with the
 * built CLI and daemon against the emulator: the 404 of its next upload is recognised as the
 * data source being gone, reported (log, /status), and the next attempt creates it again by
 * name and mirrors every file; a SIGHUP looks the name up again too. Before the fix the
 * daemon retried the 404 forever.
 */
import { describe, expect, it } from 'vitest';
import { CONVERGED, ORG, checkFolderConvergence, type Workspace } from '../../helpers/mirror-check.js';
import { daemonTests } from '../../helpers/daemon-test.js';
import { waitFor, waitIdle, type DaemonProcess } from './daemon-process.js';

const daemons = daemonTests();

/** The one data source named "Share" that is not `old`, once it exists. */
function replacement(w: Workspace, old: string): string | undefined {
  const ids = w.emu.store
    .listDataSources(ORG)
    .filter((d) => d.name === 'Share' && d.data_source_id !== old)
    .map((d) => d.data_source_id);
  return ids.length === 1 ? ids[0] : undefined;
}

async function waitReplacedAndConverged(w: Workspace, old: string, what: string): Promise<string> {
  let id: string | undefined;
  let last = '';
  await waitFor(
    async () => {
      id = replacement(w, old);
      if (!id) return false;
      const c = await checkFolderConvergence(w.emu, id, w.share);
      last = JSON.stringify(c);
      return JSON.stringify(c) === JSON.stringify(CONVERGED);
    },
    { timeout: 60_000, interval: 200, what, describe: () => last },
  );
  return id!;
}

async function deleteDataSource(w: Workspace, id: string): Promise<void> {
  const r = await w.cli(['datasources', 'delete', id, '--yes', '--config', w.configPath]);
  expect(r.code, r.stderr).toBe(0);
}

function logged(d: DaemonProcess, text: string): boolean {
  return d.logs().some((l) => typeof l.msg === 'string' && l.msg.includes(text));
}

describe('a data source deleted under the daemon', () => {
  it('is reported and created again by name at the next attempt, then after a SIGHUP', { timeout: 150_000 }, async () => {
    const { w, d } = await daemons.start({ files: { 'a.txt': 'alpha\n', 'sub/b.txt': 'beta\n' }, env: { DSSYNC_RETRY_DELAY_MS: '300' } });
    const first = w.dataSourceId();

    // Deleted; a change's upload meets the 404.
    await deleteDataSource(w, first);
    await w.write('c.txt', 'gamma\n');
    const second = await waitReplacedAndConverged(w, first, 'the data source created again after the 404');
    expect(logged(d, `data source ${first} of mapping name:Share no longer exists (deleted in the App?)`)).toBe(true);
    expect(logged(d, `data source ${first}, recorded for this mapping, no longer exists (deleted in the App?); created a new one, ${second}, named "Share"`)).toBe(true);
    await waitIdle(d);
    const s = (await d.status()).mappings[0];
    expect(s?.dataSourceId).toBe(second);
    expect(s?.dataSourceNotice).toContain(`created a new one, ${second}`);

    // Deleted while nothing changes: the reload looks the name up again.
    await deleteDataSource(w, second);
    d.child.kill('SIGHUP');
    const third = await waitReplacedAndConverged(w, second, 'the data source created again after SIGHUP');
    expect(third).not.toBe(first);
    await waitIdle(d);
    expect(w.emu.store.listDataSources(ORG).filter((x) => x.name === 'Share')).toHaveLength(1);
  });
});

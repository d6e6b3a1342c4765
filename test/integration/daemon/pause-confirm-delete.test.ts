/**
 * Issue 25.6 and 25.5 with the built daemon against the emulator over loopback:
 * - pause: no request at all while paused (the emulator's request counter), across a
 *   restart (it starts paused and says so); resume sends what changed meanwhile;
 * - a mass delete waits for the operator: no listing while waiting (with a 200 ms retry
 *   delay the old daemon listed again and again), `status --pending-deletes` names the
 *   deletions, `confirm-delete` lets exactly those go.
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Workspace } from '../../helpers/mirror-check.js';
import { jsonOf, requireBuiltBinary, runCli } from '../cli/run-cli.js';
import { daemonWorkspace, docAt, freePort, startDaemon, waitFor, type DaemonProcess } from './daemon-process.js';
import { fileDocuments } from '../../helpers/mirror-check.js';

let ws: Workspace | undefined;
const daemons: DaemonProcess[] = [];
beforeAll(() => requireBuiltBinary());
afterEach(async () => {
  for (const d of daemons.splice(0)) await d.kill();
  await ws?.close();
  ws = undefined;
});

async function start(w: Workspace, env: Record<string, string> = {}): Promise<DaemonProcess> {
  const d = await startDaemon(w, { env });
  daemons.push(d);
  return d;
}

const LISTING = 'GET /datastore/v1/data-sources/:data_source_id/documents';
const listings = (w: Workspace): number => w.emu.stats().byRoute[LISTING] ?? 0;
/** Requests about a data source or its documents: the mapping's (a start-up credentials check is the daemon's). */
const requests = (w: Workspace): Record<string, number> => Object.fromEntries(Object.entries(w.emu.stats().byRoute).filter(([k]) => /:data_source_id|:document_id/.test(k)));

describe('dssync pause / resume', () => {
  it('a paused mapping makes no request, stays paused across a restart, and resume sends what changed', { timeout: 180_000 }, async () => {
    // No ingestion check: a check due a second after the upload would be a request of this
    // mapping in flight when the pause begins, and whether it came first is timing.
    ws = await daemonWorkspace({ config: { status: { listen: `127.0.0.1:${await freePort()}` }, ingestionCheck: { enabled: false } } });
    const w = ws;
    await w.write('a.txt', 'first');
    let d = await start(w);
    await waitFor(() => docAt(w, 'a.txt').length === 1, { timeout: 60_000, what: 'a.txt mirrored' });
    await waitFor(async () => (await d.status()).mappings[0]?.phase === 'watching', { timeout: 30_000, what: 'watching' });
    const id = (await d.status()).mappings[0]!.id;

    const p = await runCli(['pause', '--config', w.configPath, '--mapping', id], w.env);
    expect(p.code, p.stderr).toBe(0);
    expect(p.stdout).toContain('paused');
    await waitFor(async () => (await d.status()).mappings[0]?.phase === 'paused', { timeout: 30_000, what: 'paused' });
    // Its lease is released (a standby may mirror meanwhile); after that, no request at all.
    await waitFor(async () => (await d.status()).mappings[0]?.lease?.state === 'released', { timeout: 30_000, what: 'the lease released' });
    const before = requests(w);

    await w.write('b.txt', 'new while paused');
    await w.write('a.txt', 'changed while paused');
    // The watcher notes the changes (pending), and nothing is sent.
    await waitFor(async () => (await d.status()).mappings[0]!.pending >= 2, { timeout: 30_000, what: 'the changes noted' });
    const st = await runCli(['status', '--config', w.configPath], w.env);
    expect(st.code, st.stdout).toBe(0);
    expect(st.stdout).toMatch(/mapping \S+: paused/);
    expect(st.stdout).toContain('Paused:');
    const hz = await d.healthz();
    expect(hz.httpStatus).toBe(200);
    expect(hz.body).toMatchObject({ status: 'ok', paused: [id] });
    expect(await d.metrics()).toMatch(new RegExp(`dssync_mapping_paused\\{mapping="${id}"\\} 1`));
    expect(requests(w)).toEqual(before);
    expect(docAt(w, 'b.txt')).toHaveLength(0);

    // A restart: it starts paused, says so, and still sends nothing.
    expect((await d.stop()).code).toBe(0);
    d = await start(w);
    await waitFor(async () => (await d.status()).mappings[0]?.phase === 'paused', { timeout: 30_000, what: 'paused after the restart' });
    expect(d.logs().some((l) => l.msg.startsWith('mapping paused (dssync resume starts it)'))).toBe(true);
    expect(requests(w)).toEqual(before);
    expect(docAt(w, 'b.txt')).toHaveLength(0);

    const r = await runCli(['resume', '--config', w.configPath, '--mapping', id], w.env);
    expect(r.code, r.stderr).toBe(0);
    await waitFor(() => docAt(w, 'b.txt').length === 1 && docAt(w, 'a.txt')[0]?.size === 'changed while paused'.length, { timeout: 60_000, what: 'the changes sent on resume' });
    await waitFor(async () => (await d.status()).mappings[0]?.phase === 'watching', { timeout: 30_000, what: 'watching again' });
    expect((await d.status()).mappings[0]?.paused).toBeUndefined();

    // Unknown mapping: a usage error naming the ones there are.
    const bad = await runCli(['pause', '--config', w.configPath, '--mapping', 'nope'], w.env);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('no mapping "nope"');
  });

  it('without a running daemon, pause says that it needs one', { timeout: 60_000 }, async () => {
    ws = await daemonWorkspace({ config: { status: { listen: `127.0.0.1:${await freePort()}` } } });
    const r = await runCli(['pause', '--config', ws.configPath, '--mapping', 'x'], ws.env);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/needs the running daemon|no daemon for this config has started/);
  });
});

describe('dssync confirm-delete', () => {
  it('a mass delete waits without listing again, names the deletions, and deletes exactly those once confirmed', { timeout: 180_000 }, async () => {
    ws = await daemonWorkspace({ config: { status: { listen: `127.0.0.1:${await freePort()}` } } });
    const w = ws;
    const names = Array.from({ length: 20 }, (_, i) => `f${String(i).padStart(2, '0')}.txt`);
    for (const n of names) await w.write(n, `file ${n}`);
    // A short retry delay: a daemon that retried the stopped pass would list many times below.
    const d = await start(w, { DSSYNC_RETRY_DELAY_MS: '200' });
    await waitFor(() => fileDocuments(w.emu, w.dataSourceId()).length === 20, { timeout: 60_000, what: '20 documents' });
    const id = (await d.status()).mappings[0]!.id;

    const gone = names.slice(0, 16);
    for (const n of gone) await rm(join(w.share, n));
    await waitFor(async () => (await d.status()).mappings[0]?.pendingDeletes?.total === 16, { timeout: 60_000, what: 'the deletions waiting' });
    const listed = listings(w);
    const s = (await d.status()).mappings[0]!;
    expect(s.degraded.join(' ')).toContain('waiting for your decision');
    expect(s.degraded.join(' ')).toContain(`dssync confirm-delete --mapping ${id}`);
    // What the page shows as next (issue 37.3): the wait, not a back-off that does not happen.
    expect(s.degradedNext?.join(' ')).toContain('no request goes out until you confirm');
    expect(s.degradedNext?.join(' ')).not.toContain('back-off');

    const pending = await runCli(['status', '--config', w.configPath, '--mapping', id, '--pending-deletes'], w.env);
    expect(pending.code, pending.stderr).toBe(0);
    for (const n of gone) expect(pending.stdout).toContain(`- ${n}`);
    expect(pending.stdout).not.toContain('- f16.txt');
    const js = jsonOf<{ mappings: { pendingDeletes: { total: number; paths: string[] } }[] }>(await runCli(['status', '--config', w.configPath, '--pending-deletes', '--json'], w.env));
    expect(js.mappings[0]!.pendingDeletes.paths.sort()).toEqual(gone);
    // Shown once, not once per back-off step; and no listing while waiting.
    const st = await runCli(['status', '--config', w.configPath], w.env);
    expect(st.code).toBe(1);
    expect((await d.status()).mappings[0]!.recentErrors.filter((e) => e.message.startsWith('waiting for your decision'))).toHaveLength(1);
    expect(listings(w)).toBe(listed);
    expect(fileDocuments(w.emu, w.dataSourceId())).toHaveLength(20);

    const c = await runCli(['confirm-delete', '--config', w.configPath, '--mapping', id], w.env);
    expect(c.code, c.stderr).toBe(0);
    expect(c.stdout).toContain('16 deletion(s) confirmed');
    await waitFor(() => fileDocuments(w.emu, w.dataSourceId()).length === 4, { timeout: 60_000, what: 'the 16 deleted' });
    await waitFor(async () => (await d.status()).mappings[0]?.pendingDeletes === undefined && (await d.status()).mappings[0]?.degraded.length === 0, { timeout: 30_000, what: 'the wait over' });
    for (const n of names.slice(16)) expect(docAt(w, n)).toHaveLength(1);
    const again = await runCli(['confirm-delete', '--config', w.configPath, '--mapping', id], w.env);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('no deletions waiting');
  });

  it('putting the files back ends the wait by itself', { timeout: 180_000 }, async () => {
    ws = await daemonWorkspace({ config: { status: { listen: `127.0.0.1:${await freePort()}` } } });
    const w = ws;
    const names = Array.from({ length: 20 }, (_, i) => `g${String(i).padStart(2, '0')}.txt`);
    for (const n of names) await w.write(n, `file ${n}`);
    const d = await start(w, { DSSYNC_RETRY_DELAY_MS: '200' });
    await waitFor(() => fileDocuments(w.emu, w.dataSourceId()).length === 20, { timeout: 60_000, what: '20 documents' });
    for (const n of names.slice(0, 16)) await rm(join(w.share, n));
    await waitFor(async () => (await d.status()).mappings[0]?.pendingDeletes !== undefined, { timeout: 60_000, what: 'the deletions waiting' });
    for (const n of names.slice(0, 16)) await w.write(n, `file ${n}`);
    await waitFor(async () => (await d.status()).mappings[0]?.pendingDeletes === undefined && (await d.status()).mappings[0]?.degraded.length === 0, { timeout: 60_000, what: 'the wait over' });
    expect(fileDocuments(w.emu, w.dataSourceId())).toHaveLength(20);
  });
});

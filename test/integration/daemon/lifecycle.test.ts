/**
 * The daemon's life as systemd and an operator see it (DESIGN §1.6, §6): graceful SIGTERM
 * even mid-mirror, SIGHUP reload (mappings added and removed, a bad file ignored), the state
 * lock against a second instance, and the status endpoint (which never shows the token).
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { checkFolderConvergence, TOKEN, type Workspace, fileDocuments, filesUploaded } from '../../helpers/mirror-check.js';
import { readStateFile } from '../../../src/state/store.js';
import { MALLOC_ENV } from '../../../src/cli/malloc-env.js';
import { RECLAIM_DONE_MESSAGE } from '../../../src/daemon/reclaim.js';
import { requireBuiltBinary, runCli } from '../cli/run-cli.js';
import { daemonWorkspace, startDaemon, waitConverged, waitFor, waitIdle, type DaemonProcess } from './daemon-process.js';

let ws: Workspace | undefined;
const daemons: DaemonProcess[] = [];
beforeAll(() => requireBuiltBinary());
afterEach(async () => {
  for (const d of daemons.splice(0)) await d.kill();
  await ws?.close();
  ws = undefined;
});

async function start(w: Workspace, env?: Record<string, string>): Promise<DaemonProcess> {
  const d = await startDaemon(w, env ? { env } : {});
  daemons.push(d);
  return d;
}

describe('dssync run: process life', () => {
  it('stops on SIGTERM in the middle of a large first mirror without waiting for it to finish; the state stays valid and a later sync converges', { timeout: 120_000 }, async () => {
    ws = await daemonWorkspace({ emulator: { faults: { latencyMs: 20 } } });
    const w = ws;
    for (let d = 0; d < 20; d++) {
      await mkdir(join(w.share, `d${d}`));
      await Promise.all(Array.from({ length: 100 }, (_, i) => writeFile(join(w.share, `d${d}`, `f${i}.txt`), `file ${d}/${i}\n`)));
    }
    const d = await start(w);
    // Mid-mirror: some documents sent, most not.
    await waitFor(() => filesUploaded(w.emu) >= 40, { timeout: 60_000, interval: 20, what: 'the first uploads' });
    expect(filesUploaded(w.emu)).toBeLessThan(2000);
    const { code, ms } = await d.stop('SIGTERM');
    // The pass in progress was cut after its grace, not waited out (the grace itself is
    // tested on a fake clock in test/unit/daemon/mapping-runner.test.ts).
    expect(filesUploaded(w.emu)).toBeLessThan(2000);
    if (process.env.DSSYNC_TEST_VERBOSE) console.log(`stopped in ${ms} ms; ${filesUploaded(w.emu)} files uploaded\n${d.stdout().split('\n').filter((l) => !l.includes('"uploaded"') && !l.includes('"level":20') && !l.includes('"level":10')).join('\n').slice(-3000)}`);
    expect(code, d.stderr()).toBe(0);
    expect(d.logs().some((l) => l.msg === 'stopped')).toBe(true);

    const state = await readStateFile(w.statePath);
    expect(state).toBeDefined();
    w.emu.setFaults({});
    const sync = await w.sync();
    expect(sync.code, sync.stderr).toBe(0);
    await waitConverged(w, 'the sync after the stop', 10_000);
  });

  it('reloads on SIGHUP: an added mapping is mirrored, a removed one stops (its documents stay), a bad config is ignored', { timeout: 120_000 }, async () => {
    ws = await daemonWorkspace();
    const w = ws;
    await w.write('one.txt', 'first mapping');
    const d = await start(w);
    await waitConverged(w, 'the first mapping');

    const share2 = join(w.dir, 'share2');
    await mkdir(share2);
    await writeFile(join(share2, 'two.txt'), 'second mapping');
    await writeFile(join(share2, 'three.md'), '# second mapping');
    const original = await readFile(w.configPath, 'utf8');
    const config = JSON.parse(original) as { mappings: Record<string, unknown>[] };
    config.mappings.push({ path: share2, dataSource: { name: 'Share2', llmConnectorIds: ['conn-1'] } });
    await writeFile(w.configPath, JSON.stringify(config, null, 2));
    const reloads = (): number => d.logs().filter((l) => l.msg === 'configuration reloaded').length;

    d.child.kill('SIGHUP');
    const ds2 = (): string => {
      const ds = w.emu.store.listDataSources().find((x) => x.name === 'Share2');
      if (!ds) throw new Error('Share2 not created yet');
      return ds.data_source_id;
    };
    await waitConverged(w, 'the added mapping', 60_000, () => checkFolderConvergence(w.emu, ds2(), share2));
    expect((await d.status()).mappings.map((m) => m.path).sort()).toEqual([w.share, share2].sort());
    // Watched too, not just mirrored once.
    await writeFile(join(share2, 'four.txt'), 'added while watched');
    await waitConverged(w, 'a change in the added mapping', 60_000, () => checkFolderConvergence(w.emu, ds2(), share2));
    const docs2 = fileDocuments(w.emu, ds2()).length;
    expect(docs2).toBe(3);

    // Removed again: it stops, and its documents stay.
    await writeFile(w.configPath, original);
    const before = reloads();
    d.child.kill('SIGHUP');
    await waitFor(() => reloads() > before, { timeout: 30_000, what: 'the second reload' });
    expect((await d.status()).mappings.map((m) => m.path)).toEqual([w.share]);
    await writeFile(join(share2, 'ignored.txt'), 'not mirrored any more');
    await w.write('one-more.txt', 'the first mapping still works');
    await waitConverged(w, 'a change in the first mapping after the removal');
    await waitIdle(d);
    expect(fileDocuments(w.emu, ds2()).length).toBe(docs2);

    // A bad file: logged, and the daemon goes on with what it has.
    await writeFile(w.configPath, '{ "mappings": [ this is not JSON');
    d.child.kill('SIGHUP');
    await waitFor(() => d.logs().some((l) => l.level >= 50 && /reload failed/.test(l.msg)), { timeout: 30_000, what: 'the reload error in the log' });
    expect(d.child.exitCode).toBeNull();
    expect((await d.healthz()).body.status).toBe('ok');
    await w.write('after-bad-reload.txt', 'still watching');
    await waitConverged(w, 'a change after the bad reload');
    expect((await d.stop()).code).toBe(0);
  });

  it('SIGHUP with the config unchanged still reloads: a full pass at once restores a document deleted on the service (no watcher event shows it)', { timeout: 120_000 }, async () => {
    ws = await daemonWorkspace();
    const w = ws;
    await w.write('kept.txt', 'kept in the data source');
    const d = await start(w);
    await waitConverged(w, 'the first mirror');
    await waitIdle(d);
    const doc = fileDocuments(w.emu, w.dataSourceId()).find((x) => x.metadata?.dssync_path === 'kept.txt');
    expect(doc).toBeDefined();
    // Someone deletes the document: only a full pass (a listing) can see it.
    const del = await w.cli(['documents', 'delete', w.dataSourceId(), doc!.document_id, '--config', w.configPath]);
    expect(del.code, del.stderr).toBe(0);
    expect((await checkFolderConvergence(w.emu, w.dataSourceId(), w.share)).lost).toEqual(['kept.txt']);

    const fullPasses = (): number => d.logs().filter((l) => l.msg === 'full pass done').length;
    const before = fullPasses();
    d.child.kill('SIGHUP');
    await waitFor(() => d.logs().some((l) => l.msg === 'configuration reloaded'), { timeout: 30_000, what: 'the reload' });
    await waitConverged(w, 'the document restored by the reload\'s full pass', 30_000);
    await waitFor(() => fullPasses() > before, { timeout: 30_000, what: 'the end of the full pass' });
    expect(d.logs().some((l) => /ignore file read again/.test(l.msg))).toBe(true);
    expect((await d.stop()).code).toBe(0);
  });

  it('a restart lists while its state loads: that listing is taken (the lease released by the last stop), and a document deleted meanwhile is sent again, once', { timeout: 120_000 }, async () => {
    ws = await daemonWorkspace();
    const w = ws;
    for (let i = 0; i < 12; i++) await w.write(`f${i}.txt`, `file ${i}\n`);
    const first = await start(w);
    await waitConverged(w, 'the first mirror');
    await waitIdle(first);
    // A graceful stop releases the lease: the next start may list before its claim.
    expect((await first.stop('SIGTERM')).code).toBe(0);
    const doc = fileDocuments(w.emu, w.dataSourceId()).find((x) => x.metadata?.dssync_path === 'f3.txt');
    const del = await w.cli(['documents', 'delete', w.dataSourceId(), doc!.document_id, '--config', w.configPath]);
    expect(del.code, del.stderr).toBe(0);

    const again = await start(w);
    await waitFor(() => again.logs().some((l) => l.msg === 'full pass done'), { timeout: 60_000, what: 'the first full pass after the restart' });
    const kept = again.logs().find((l) => /listing begun while the state loaded is kept/.test(l.msg));
    expect(kept, again.stdout().slice(-3000)).toBeDefined();
    expect(kept!.pages).toBeGreaterThanOrEqual(1);
    expect(again.logs().some((l) => /listing begun while the state loaded is dropped/.test(l.msg))).toBe(false);
    // What the early pages showed is what the service holds: the deleted document is sent again, nothing is duplicated.
    expect(again.logs().find((l) => l.msg === 'full pass done')).toMatchObject({ ok: true, uploaded: 1 });
    await waitConverged(w, 'the deleted document restored');
    expect(fileDocuments(w.emu, w.dataSourceId())).toHaveLength(12);
    expect((await again.stop()).code).toBe(0);
  });

  it('refuses a second daemon on the same state file, naming the first one\'s pid', { timeout: 60_000 }, async () => {
    ws = await daemonWorkspace();
    const d = await start(ws);
    const second = await runCli(['run', '--config', ws.configPath], ws.env);
    expect(second.code).toBe(1);
    expect(second.stderr).toContain(String(d.pid));
    expect((await d.healthz()).body.status).toBe('ok');
    expect((await d.stop()).code).toBe(0);
  });

  it('started without glibc\'s malloc settings, runs under them as the same process; an operator\'s own value wins', { timeout: 60_000 }, async () => {
    ws = await daemonWorkspace();
    const environOf = async (pid: number): Promise<Map<string, string>> =>
      new Map((await readFile(`/proc/${pid}/environ`, 'utf8')).split('\0').filter(Boolean).map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)] as [string, string]));
    const bare = await start(ws);
    expect(Object.keys(ws.env).filter((k) => k.startsWith('MALLOC_'))).toEqual([]);
    const env = await environOf(bare.pid);
    for (const [k, v] of Object.entries(MALLOC_ENV)) expect(env.get(k), k).toBe(v);
    // The same process: the pid its parent knows is the one it logs and locks the state with.
    expect(bare.logs().find((l) => l.msg === 'dssync running')?.pid).toBe(bare.pid);
    expect(env.get('DSSYNC_TOKEN')).toBe(ws.env.DSSYNC_TOKEN);
    expect((await bare.stop()).code).toBe(0);

    const own = await start(ws, { MALLOC_ARENA_MAX: '4' });
    const ownEnv = await environOf(own.pid);
    expect(ownEnv.get('MALLOC_ARENA_MAX')).toBe('4');
    expect(ownEnv.get('MALLOC_MMAP_THRESHOLD_')).toBe(MALLOC_ENV.MALLOC_MMAP_THRESHOLD_);
    expect(own.logs().find((l) => l.msg === 'dssync running')?.pid).toBe(own.pid);
    expect((await own.stop()).code).toBe(0);
  });

  it("gives a full pass's memory back at rest: the collections, then malloc's free pages through the native module", { timeout: 120_000 }, async () => {
    ws = await daemonWorkspace();
    await ws.write('a.txt', 'alpha');
    const d = await start(ws);
    // At most 2 s + 4 × 8 s after the first pass (reclaim.ts), however loaded the machine.
    await waitFor(() => d.logs().some((l) => l.msg === RECLAIM_DONE_MESSAGE), { timeout: 80_000, what: 'the memory of the first full pass to be released' });
    const line = d.logs().find((l) => l.msg === RECLAIM_DONE_MESSAGE)!;
    // true or false: the module was there and was called (undefined: it was not).
    expect(typeof line.trimmed).toBe('boolean');
    expect(line.rssMB).toBeLessThanOrEqual(line.collectedMB as number);
    expect((await d.stop()).code).toBe(0);
  });

  it('refuses a bad DSSYNC_RETRY_DELAY_MS before starting (exit 2, naming the variable)', { timeout: 30_000 }, async () => {
    ws = await daemonWorkspace();
    const r = await runCli(['run', '--config', ws.configPath], { ...ws.env, DSSYNC_RETRY_DELAY_MS: '5s' });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('DSSYNC_RETRY_DELAY_MS');
    expect(r.stderr).toContain('"5s"');
  });

  it('serves /healthz, /status and /metrics, and never shows the token', { timeout: 60_000 }, async () => {
    ws = await daemonWorkspace();
    const w = ws;
    for (let i = 0; i < 4; i++) await w.write(`f${i}.txt`, `file ${i}`);
    // The most talkative level: whatever is logged, the token must not be.
    const d = await start(w, { DSSYNC_LOG_LEVEL: 'trace' });
    await waitConverged(w, 'the startup pass');
    await w.write('while-running.txt', 'a change seen by the watcher');
    await waitConverged(w, 'a change while running');
    await waitIdle(d);

    const health = await d.healthz();
    expect(health).toEqual({ httpStatus: 200, body: { status: 'ok', reasons: [], phases: { 'name:Share': 'watching' } } });
    // Ready: the one mapping holds its lease and mirrors.
    const ready = await fetch(`${d.url}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ ready: true, reasons: [] });
    const status = await d.status();
    expect(status.pid).toBe(d.pid);
    expect(status.mappings).toHaveLength(1);
    expect(status.mappings[0]).toMatchObject({ path: w.share, phase: 'watching', filesTracked: 5, degraded: [], dataSourceId: w.dataSourceId() });
    const metrics = await d.metrics();
    expect(metrics).toMatch(/^dssync_operations_total\{mapping="[^"]+",kind="upload",outcome="done"\} 5$/m);
    expect(metrics).toMatch(/^dssync_sync_lag_seconds_count\{mapping="[^"]+"\} [1-9]/m);
    expect(metrics).toMatch(/^dssync_files_tracked\{mapping="[^"]+"\} 5$/m);
    expect(metrics).not.toMatch(/status="error"/);

    const statusText = JSON.stringify(status);
    const { code } = await d.stop();
    expect(code).toBe(0);
    for (const [what, text] of [
      ['stdout', d.stdout()],
      ['stderr', d.stderr()],
      ['/status', statusText],
      ['/metrics', metrics],
    ] as const) {
      expect(text.includes(TOKEN), `${what} shows the token`).toBe(false);
    }
    expect(d.logs().length).toBeGreaterThan(5);
  });
});

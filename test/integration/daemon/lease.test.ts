/**
 * Two real `dssync run` processes with one pinned installation id, each with its own state
 * file, on one folder and one emulator data source (`kubectl scale --replicas=2`, issue 34
 * case 3): one mirrors, the other is a standby that writes nothing, names the holder and
 * answers /readyz 503; no document is ever duplicated. SIGKILL of the holder: the standby
 * takes over (a dead predecessor on this host is taken at its next read). SIGTERM: released,
 * taken at once. `dssync sync` beside a live daemon writes nothing and exits 1. SIGTERM while
 * the holder's first claim waits out its settle time (held there by a test pause): the claim
 * ends, is released, and the standby takes it as released.
 *
 * The bounds measured here are printed with DSSYNC_TEST_VERBOSE=1 (docs/reliability.md, "The lease").
 */
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { LEASE, leaseRecordOf } from '../../../src/engine/lease.js';
import { isLeaseDocument } from '../../../src/engine/lease-view.js';
import type { DaemonStatus } from '../../../src/daemon/status/schema.js';
import { requireBuiltBinary, runCli } from '../cli/run-cli.js';
import { CONVERGED, checkConvergence, writeRequests, type Workspace } from '../../helpers/mirror-check.js';
import { daemonWorkspace, startDaemon, statusToken, waitConverged, waitFor, type DaemonProcess } from './daemon-process.js';

const PINNED = 'replica-set-1';

let w: Workspace | undefined;
const daemons: DaemonProcess[] = [];
beforeAll(() => requireBuiltBinary());
afterEach(async () => {
  for (const d of daemons.splice(0)) await d.kill();
  await w?.close();
  w = undefined;
});

/** A second config: the same folder, data source and pinned id, its own state file. */
async function replicaConfig(ws: Workspace, name: string): Promise<{ configPath: string; statePath: string }> {
  const config = JSON.parse(await readFile(ws.configPath, 'utf8')) as Record<string, unknown>;
  const statePath = join(ws.dir, name, 'state.json');
  await mkdir(join(ws.dir, name), { recursive: true });
  const configPath = join(ws.dir, `${name}.json`);
  await writeFile(configPath, JSON.stringify({ ...config, statePath }), { mode: 0o600 });
  return { configPath, statePath };
}

async function readyz(d: DaemonProcess): Promise<{ status: number; body: { ready: boolean; reasons: string[] } }> {
  const r = await fetch(`${d.url}/readyz`, { signal: AbortSignal.timeout(10_000) });
  return { status: r.status, body: (await r.json()) as { ready: boolean; reasons: string[] } };
}

async function statusOf(d: DaemonProcess, configPath: string, statePath: string): Promise<DaemonStatus> {
  const r = await fetch(`${d.url}/status`, { headers: { authorization: `Bearer ${statusToken(configPath, statePath)}` }, signal: AbortSignal.timeout(10_000) });
  return (await r.json()) as DaemonStatus;
}

const fileDocuments = (ws: Workspace) => ws.emu.store.listDocuments(ws.dataSourceId()).filter((d) => !isLeaseDocument(d));
const markers = (ws: Workspace) => ws.emu.store.listDocuments(ws.dataSourceId()).filter((d) => isLeaseDocument(d));

describe('the lease: two live daemons with one pinned id', () => {
  it('one mirrors, one stands by; kill, then stop, hand it over; sync beside them writes nothing', { timeout: 240_000 }, async () => {
    const ws = (w = await daemonWorkspace({ config: { installationId: PINNED }, lease: 'real' }));
    for (let i = 0; i < 5; i++) await ws.write(`doc-${i}.txt`, `content ${i}`);
    const a = await startDaemon(ws);
    daemons.push(a);
    await waitConverged(ws, 'the first pass of A');
    await waitFor(async () => (await readyz(a)).status === 200, { timeout: 30_000, what: 'A ready' });

    // B: the same id, its own state. A standby: not ready, names A, writes nothing.
    const b = await replicaConfig(ws, 'replica-b');
    const bStarted = Date.now();
    const db = await startDaemon(ws, { configPath: b.configPath });
    daemons.push(db);
    await waitFor(async () => (await statusOf(db, b.configPath, b.statePath)).mappings[0]?.lease?.state === 'standby', { timeout: 30_000, what: 'B standby' });
    const detectedMs = Date.now() - bStarted;
    const sb = (await statusOf(db, b.configPath, b.statePath)).mappings[0]!;
    const sa = (await a.status()).mappings[0]!;
    expect(sb.phase).toBe('standby');
    expect(sa.lease?.state).toBe('held');
    expect(sb.lease?.holder?.host).toBeTruthy();
    const r = await readyz(db);
    expect(r.status).toBe(503);
    expect(r.body.reasons.join('\n')).toContain('standby');
    expect((await db.healthz()).httpStatus).toBe(200);
    expect(db.logs().filter((l) => l.msg.startsWith('standby:'))).toHaveLength(1);

    // A change is mirrored once, by A: no duplicate document.
    await ws.write('new.txt', 'while two run');
    await waitConverged(ws, 'the change, mirrored by A');
    expect(await checkConvergence(ws)).toEqual(CONVERGED);
    expect(fileDocuments(ws)).toHaveLength(6);
    expect(markers(ws)).toHaveLength(1);

    // dssync sync beside the live daemon (a third state): writes nothing, names the holder, exits 1.
    const c = await replicaConfig(ws, 'replica-c');
    const writes = writeRequests(ws.emu);
    const sync = await runCli(['sync', '--config', c.configPath], ws.env);
    expect(sync.code, sync.stderr + sync.stdout).toBe(1);
    expect(sync.stdout + sync.stderr).toContain('another dssync holds its lease');
    expect(writeRequests(ws.emu)).toBe(writes);

    // SIGKILL A: B takes over (A's pid is gone on this very host) and mirrors.
    const killedAt = Date.now();
    a.child.kill('SIGKILL');
    await a.exited;
    await waitFor(async () => (await readyz(db)).status === 200, { timeout: LEASE.durationMs + 30_000, interval: 100, what: 'B takes over after the kill' });
    const afterKillMs = Date.now() - killedAt;
    await ws.write('after-kill.txt', 'mirrored by B');
    await waitConverged(ws, 'the change, mirrored by B');
    expect(fileDocuments(ws)).toHaveLength(7);

    // A again (a restarted pod): standby. SIGTERM B: released, A takes over without waiting for expiry.
    const a2 = await startDaemon(ws);
    daemons.push(a2);
    await waitFor(async () => (await a2.status()).mappings[0]?.lease?.state === 'standby', { timeout: 30_000, what: 'A2 standby' });
    const stop = await db.stop();
    expect(stop.code).toBe(0);
    const stoppedAt = Date.now();
    await waitFor(async () => (await readyz(a2)).status === 200, { timeout: 30_000, interval: 100, what: 'A2 takes over after the stop' });
    const afterStopMs = Date.now() - stoppedAt;
    expect(afterStopMs).toBeLessThan(LEASE.durationMs);
    await ws.write('after-stop.txt', 'mirrored by A2');
    await waitConverged(ws, 'the change, mirrored by A2');
    expect(fileDocuments(ws)).toHaveLength(8);
    expect(markers(ws)).toHaveLength(1);
    const chunks = ws.emu.store.listChunks(markers(ws)[0]!.document_id).length;
    if (process.env.DSSYNC_TEST_VERBOSE) {
      console.log(`lease bounds: second writer detected ${detectedMs} ms after its start; taken ${afterKillMs} ms after SIGKILL, ${afterStopMs} ms after SIGTERM; marker chunks: ${chunks}`);
    }
  });

  it('SIGTERM while its claim is in flight: the claim ends and is released, the standby takes it as released', { timeout: 180_000 }, async () => {
    const ws = (w = await daemonWorkspace({ config: { installationId: PINNED }, lease: 'real' }));
    // A data source made beforehand (one dssync creates is held from its first claim: no settle wait to stop in).
    expect((await ws.cli(['datasources', 'create', '--name', 'Share', '--connector', 'conn-1', '--config', ws.configPath])).code).toBe(0);
    for (let i = 0; i < 3; i++) await ws.write(`doc-${i}.txt`, `content ${i}`);
    const hooks = join(ws.dir, 'hooks');
    await mkdir(hooks);
    // A writes its claim and stops there, before the settle wait that confirms it.
    const a = await startDaemon(ws, { env: { DSSYNC_TEST_HOOKS: `pause:lease-claimed=${hooks}` } });
    daemons.push(a);
    await waitFor(() => existsSync(join(hooks, 'lease-claimed.0.paused')), { timeout: 30_000, what: "A's claim written" });
    const claim = leaseRecordOf(markers(ws)[0]!);
    expect(claim).toMatchObject({ pid: a.pid, released: false });
    expect((await a.status()).mappings[0]?.lease?.state).toBe('acquiring');

    // B: the same id, its own state: A's claim is a live holder's.
    const b = await replicaConfig(ws, 'replica-b');
    const db = await startDaemon(ws, { configPath: b.configPath });
    daemons.push(db);
    await waitFor(async () => (await statusOf(db, b.configPath, b.statePath)).mappings[0]?.lease?.state === 'standby', { timeout: 30_000, what: 'B standby' });

    // SIGTERM A inside its claim, then let the claim go on.
    const stoppedAt = Date.now();
    a.child.kill('SIGTERM');
    await waitFor(() => a.logs().some((l) => l.msg === 'signal received'), { timeout: 10_000, what: 'A stopping' });
    await writeFile(join(hooks, 'lease-claimed.0.resume'), '');
    expect((await a.exited).code).toBe(0);
    expect(a.logs().some((l) => l.msg === 'lease released')).toBe(true);
    expect(leaseRecordOf(markers(ws)[0]!)).toMatchObject({ session: claim!.session, released: true });

    // B takes the lease because it was released (not because A's pid is gone from this host, nor at expiry), and mirrors.
    await waitFor(async () => (await readyz(db)).status === 200, { timeout: LEASE.durationMs, interval: 100, what: 'B takes over after the stop' });
    const taken = db.logs().find((l) => l.msg.endsWith('taken: this process writes'));
    expect(String(taken?.why)).toMatch(/^released by /);
    if (process.env.DSSYNC_TEST_VERBOSE) console.log(`lease bounds: taken ${Date.now() - stoppedAt} ms after SIGTERM inside the claim`);
    await waitConverged(ws, 'the folder, mirrored by B');
    expect(fileDocuments(ws)).toHaveLength(3);
    expect(markers(ws)).toHaveLength(1);
  });
});

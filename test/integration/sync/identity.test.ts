/**
 * Issue 23, defects 1-3, with the built CLI against the emulator: the identity table of
 * docs/reliability.md ("Identity: who owns a document"), one test per row. Host names are
 * varied with `unshare --uts` (we run as root in CI); without it those rows are skipped,
 * saying why.
 */
import { spawnSync } from 'node:child_process';
import { cp, mkdir, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { CONVERGED, checkConvergence, createWorkspace, type Workspace, fileDocuments, writeRequests } from '../../helpers/mirror-check.js';
import { startDaemon, waitFor } from '../daemon/daemon-process.js';
import { requireBuiltBinary, runCli, type CliResult } from '../cli/run-cli.js';
import { garbageStateText } from '../../helpers/state-fixture.js';

let ws: Workspace | undefined;
beforeAll(() => requireBuiltBinary());
afterEach(async () => {
  await ws?.close();
  ws = undefined;
});

/** `unshare --uts` works here (root, or a user namespace): host names can be varied. */
const canRename = spawnSync('unshare', ['--uts', 'sh', '-c', 'hostname dssync-probe && hostname'], { encoding: 'utf8' }).stdout?.trim() === 'dssync-probe';
const SKIP_RENAME = canRename ? false : 'unshare --uts is not available here (needs root): host names cannot be varied';

/** The CLI run under host name `host`. */
function asHost(host: string, args: string[], env: Record<string, string>): Promise<CliResult> {
  return runCli(args, env, undefined, ['unshare', '--uts', 'sh', '-c', 'hostname "$0" && exec "$@"', host]);
}

/** Document ids by name, and the installation each carries. */
function docs(w: Workspace): { name: string; id: string; installation: unknown }[] {
  return fileDocuments(w.emu, w.dataSourceId())
    .map((d) => ({ name: d.name ?? '', id: d.document_id, installation: d.metadata?.dssync_installation }))
    .sort((a, b) => a.name.localeCompare(b.name));
}

async function configWith(w: Workspace, file: string, change: (c: Record<string, unknown>) => void): Promise<string> {
  const c = JSON.parse(await readFile(w.configPath, 'utf8')) as Record<string, unknown>;
  change(c);
  const path = join(w.dir, file);
  await writeFile(path, JSON.stringify(c), { mode: 0o600 });
  return path;
}

describe('identity: who owns a document (issue 23)', () => {
  it.skipIf(SKIP_RENAME)('host renamed with a stale lock of the dead holder: same owner, nothing re-uploaded, deletions still happen', { timeout: 60_000 }, async () => {
    ws = await createWorkspace();
    await ws.write('a.txt', 'a');
    await ws.write('b.txt', 'b');
    await ws.write('c.txt', 'c');
    const first = await asHost('host-one', ['sync', '--config', ws.configPath], ws.env);
    expect(first.code, first.stdout + first.stderr).toBe(0);
    const before = docs(ws);
    // kill -9 left a lock behind; the container comes back with a new host name, same kernel.
    const bootId = (await readFile('/proc/sys/kernel/random/boot_id', 'utf8').catch(() => '')).trim();
    await writeFile(`${ws.statePath}.lock`, JSON.stringify({ pid: 2 ** 22 + 17, hostname: 'host-one', startedAt: '2026-01-01T00:00:00.000Z', ...(bootId ? { bootId } : {}) }));
    await rm(join(ws.share, 'c.txt'));
    const second = await asHost('host-two-renamed', ['sync', '--config', ws.configPath], ws.env);
    expect(second.code, second.stdout + second.stderr).toBe(0);
    expect(docs(ws)).toEqual(before.filter((d) => d.name !== 'c.txt'));
    expect(await checkConvergence(ws)).toEqual(CONVERGED);
  });

  it('the state path, or the mapped folder, reached through a symlink (DynamicUser= StateDirectory): same owner, no refusal', { timeout: 60_000 }, async () => {
    ws = await createWorkspace();
    await ws.write('a.txt', 'a');
    await ws.write('b.txt', 'b');
    expect((await ws.sync()).code).toBe(0);
    const before = docs(ws);
    // /var/lib/dssync -> /var/lib/private/dssync: the same state file under another spelling.
    await symlink(join(ws.dir, 'state'), join(ws.dir, 'state-link'));
    const cfg = await configWith(ws, 'config-link.json', (c) => (c.statePath = join(ws!.dir, 'state-link', 'state.json')));
    await ws.write('new.txt', 'n');
    const r = await runCli(['sync', '--config', cfg], ws.env);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(docs(ws).filter((d) => d.name !== 'new.txt')).toEqual(before);
    expect(await checkConvergence(ws)).toEqual(CONVERGED);
    // The mapped folder under another spelling (a symlink to it): not a move, no refusal.
    await symlink(ws.share, join(ws.dir, 'share-link'));
    const viaLink = await configWith(ws, 'config-share-link.json', (c) => ((c.mappings as Record<string, unknown>[])[0]!.path = join(ws!.dir, 'share-link')));
    const r2 = await runCli(['sync', '--config', viaLink], ws.env);
    expect(r2.code, r2.stdout + r2.stderr).toBe(0);
  });

  it('a state lost with its folder (no identity file): nothing re-uploaded or deleted, the report names adopt; after adopt the plan applies; lost again with its identity file kept: recovered with no command', { timeout: 60_000 }, async () => {
    ws = await createWorkspace();
    for (const n of ['a', 'b', 'c']) await ws.write(`${n}.txt`, n);
    expect((await ws.sync()).code).toBe(0);
    const before = docs(ws);
    await rm(join(ws.dir, 'state'), { recursive: true, force: true });
    await rm(join(ws.share, 'c.txt'));
    const lost = await ws.sync();
    expect(lost.code).not.toBe(0);
    expect(lost.stdout + lost.stderr).toMatch(/dssync adopt --config F --mapping/);
    expect(docs(ws)).toEqual(before);

    const dry = await ws.cli(['adopt', '--config', ws.configPath, '--mapping', 'name:Share', '--dry-run']);
    expect(dry.code, dry.stdout + dry.stderr).toBe(0);
    expect(dry.stdout).toMatch(/would adopt 3 document\(s\)/);
    const adopt = await ws.cli(['adopt', '--config', ws.configPath, '--mapping', 'name:Share']);
    expect(adopt.code, adopt.stdout + adopt.stderr).toBe(0);
    expect(adopt.stdout).toMatch(/adopted 3 document\(s\)/);
    const after = await ws.sync();
    expect(after.code, after.stdout + after.stderr).toBe(0);
    // The same documents (ids), c.txt's deleted, none uploaded again; all marked with the new id.
    const now = docs(ws);
    expect(now.map((d) => d.id)).toEqual(before.filter((d) => d.name !== 'c.txt').map((d) => d.id));
    expect(new Set(now.map((d) => d.installation)).size).toBe(1);
    expect(now[0]!.installation).not.toBe(before[0]!.installation);
    expect(await checkConvergence(ws)).toEqual(CONVERGED);

    // Adopt wrote its session into what it took (issue 34 case 9): the state lost again, its
    // identity file kept, the rebuild recognises them; no second adopt, nothing uploaded.
    // (The lease's marker document is not a file's: it carries no writer session.)
    expect(new Set(fileDocuments(ws.emu, ws.dataSourceId()).map((d) => typeof d.metadata?.dssync_session))).toEqual(new Set(['string']));
    const stateDir = dirname(ws.statePath);
    for (const f of await readdir(stateDir)) if (!f.endsWith('.identity.json')) await rm(join(stateDir, f), { recursive: true, force: true });
    const again = await ws.sync();
    expect(again.code, again.stdout + again.stderr).toBe(0);
    expect(again.stdout + again.stderr).not.toMatch(/adopt/);
    expect(docs(ws).map((d) => d.id)).toEqual(now.map((d) => d.id));
    expect(await checkConvergence(ws)).toEqual(CONVERGED);
  });

  it('a corrupt state file (garbage over it, as the chaos case does): the identity kept beside it recognises the documents; nothing re-uploaded or skipped, a file deleted meanwhile has its document deleted', { timeout: 60_000 }, async () => {
    ws = await createWorkspace();
    for (const n of ['a', 'b', 'c']) await ws.write(`${n}.txt`, n);
    expect((await ws.sync()).code).toBe(0);
    const before = docs(ws);
    await writeFile(ws.statePath, garbageStateText());
    await rm(`${ws.statePath}.journal`, { force: true });
    await rm(join(ws.share, 'c.txt'));
    const r = await ws.sync();
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.stdout + r.stderr).toMatch(/kept the installation's identity \([0-9a-f]{16}\)/);
    expect(r.stdout).toMatch(/0 uploaded, 0 replaced, 0 renamed, 0 updated, 1 deleted, 2 unchanged, 0 skipped, 0 failed\nIn sync\./);
    expect(r.stdout + r.stderr).not.toMatch(/adopt/);
    // The same documents (ids and installation), c.txt's deleted, none uploaded again.
    expect(docs(ws)).toEqual(before.filter((d) => d.name !== 'c.txt'));
    expect(await checkConvergence(ws)).toEqual(CONVERGED);
    // The next run has nothing to do.
    const again = await ws.sync();
    expect(again.code, again.stdout + again.stderr).toBe(0);
    expect(docs(ws)).toEqual(before.filter((d) => d.name !== 'c.txt'));
  });

  it('a state file copied to a second host (a cloned image) while the clone runs: the live writer holds the lease, the other writes nothing and names it; after identity reset and adopt the plan applies', { timeout: 120_000 }, async () => {
    ws = await createWorkspace();
    for (const n of ['a', 'b']) await ws.write(`${n}.txt`, n);
    expect((await ws.sync()).code).toBe(0);
    // The clone: the same folder content, the same state (so the same id), elsewhere.
    const share2 = join(ws.dir, 'share2');
    await cp(ws.share, share2, { recursive: true });
    await cp(join(ws.dir, 'state'), join(ws.dir, 'state2'), { recursive: true });
    await rm(join(ws.dir, 'state2', 'state.json.lock'), { force: true });
    const cfg2 = await configWith(ws, 'config2.json', (c) => {
      c.statePath = join(ws!.dir, 'state2', 'state.json');
      (c.mappings as Record<string, unknown>[])[0]!.path = share2;
      c.status = { listen: '127.0.0.1:0' };
    });
    await writeFile(join(share2, 'clone-only.txt'), 'B');
    // The clone's state was copied with the folder's old path: a real move for it, said so once.
    const b = await runCli(['sync', '--config', cfg2, '--folder-moved'], ws.env);
    expect(b.code, b.stdout + b.stderr).toBe(0);
    // The clone keeps running (its daemon): a live writer with our identity, holding the lease.
    const clone = await startDaemon(ws, { configPath: cfg2 });
    try {
      await waitFor(async () => (await fetch(`${clone.url}/readyz`, { signal: AbortSignal.timeout(10_000) })).status === 200, { timeout: 30_000, what: 'the clone holds the lease' });
      const before = docs(ws);
      const writes = writeRequests(ws.emu);
      // The first host: b.txt deleted, and a document of ours its state never recorded.
      await rm(join(ws.share, 'b.txt'));
      const a = await ws.sync();
      expect(a.code, a.stdout + a.stderr).toBe(1);
      expect(a.stdout + a.stderr).toMatch(/another dssync holds its lease .*\(host \S+, session [0-9a-f]+/);
      expect(docs(ws)).toEqual(before);
      expect(writeRequests(ws.emu)).toBe(writes);
    } finally {
      expect((await clone.stop()).code).toBe(0);
    }
    const before = docs(ws);

    // The clone takes a new identity: it no longer owns (nor touches) the first host's documents.
    const reset = await runCli(['identity', 'reset', '--config', cfg2], ws.env);
    expect(reset.code, reset.stdout + reset.stderr).toBe(0);
    expect(reset.stdout).toMatch(/installation id \S+ -> [0-9a-f]{16}/);
    const b2 = await runCli(['sync', '--config', cfg2], ws.env);
    expect(docs(ws).map((d) => d.id)).toEqual(before.map((d) => d.id));
    expect(b2.stdout + b2.stderr).toMatch(/dssync adopt/);
    // The first host keeps everything: it adopts the clone's upload, then its plan applies.
    const adopt = await ws.cli(['adopt', '--config', ws.configPath, '--mapping', 'name:Share']);
    expect(adopt.code, adopt.stdout + adopt.stderr).toBe(0);
    const a2 = await ws.sync();
    expect(a2.code, a2.stdout + a2.stderr).toBe(0);
    expect(await checkConvergence(ws)).toEqual(CONVERGED);
  });

  it('two configs sharing one state file: refused, naming statePath; the recorded folder is not switched', { timeout: 60_000 }, async () => {
    ws = await createWorkspace();
    await ws.write('a.txt', 'a');
    expect((await ws.sync()).code).toBe(0);
    const before = docs(ws);
    const share2 = join(ws.dir, 'share2');
    await mkdir(share2);
    await writeFile(join(share2, 'other.txt'), 'o');
    const cfg2 = await configWith(ws, 'config2.json', (c) => ((c.mappings as Record<string, unknown>[])[0]!.path = share2));
    const r = await runCli(['sync', '--config', cfg2], ws.env);
    expect(r.code).toBe(2);
    expect(r.stdout + r.stderr).toMatch(/records the folder .*share.*statePath/s);
    expect(docs(ws)).toEqual(before);
    const check = await runCli(['config', 'check', '--config', cfg2], ws.env);
    expect(check.stdout + check.stderr).toMatch(/installation id [0-9a-f]{16}: drawn at random and stored in the state file; state file \/\S+\/state\/state\.json$/m);
    expect(check.stdout + check.stderr).toMatch(/Give each its own "statePath"/);
    // The first config still owns and mirrors its folder.
    expect((await ws.sync()).code).toBe(0);
  });

  it('a pinned id (a pod recreated elsewhere with its state): the same owner; a bad pin is a named config error', { timeout: 60_000 }, async () => {
    ws = await createWorkspace();
    await ws.write('a.txt', 'a');
    expect((await ws.sync()).code).toBe(0);
    const before = docs(ws);
    const env = { ...ws.env, DSSYNC_INSTALLATION_ID: 'prod-pod-1' };
    const pinned = await runCli(['sync', '--config', ws.configPath], env);
    expect(pinned.code, pinned.stdout + pinned.stderr).toBe(0);
    // The documents the state records are re-marked with the pinned id, not uploaded again.
    expect(docs(ws).map((d) => [d.id, d.installation])).toEqual(before.map((d) => [d.id, 'prod-pod-1']));
    const bad = await runCli(['sync', '--config', ws.configPath], { ...ws.env, DSSYNC_INSTALLATION_ID: 'a b' });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/DSSYNC_INSTALLATION_ID "a b" is not an installation id/);
  });
});

/**
 * Issue 25.1 and 25.7 with the built daemon against the emulator: files not mirrored stay
 * listed after an incremental pass caused by another file and after a restart, with their
 * first sighting; `dssync status` says so (exit 1) meanwhile; fixing them clears them; the
 * pass history survives the restart (`dssync status --history`).
 */
import { access, chmod, constants, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Workspace } from '../../helpers/mirror-check.js';
import { recordsPath } from '../../../src/daemon/records-file.js';
import type { MappingStatus } from '../../../src/daemon/status/schema.js';
import { jsonOf, requireBuiltBinary, runCli } from '../cli/run-cli.js';
import { authHeader, daemonWorkspace, docAt, freePort, startDaemon, waitFor, type DaemonProcess } from './daemon-process.js';

let ws: Workspace | undefined;
const daemons: DaemonProcess[] = [];
beforeAll(() => requireBuiltBinary());
afterEach(async () => {
  for (const d of daemons.splice(0)) await d.kill();
  await ws?.close();
  ws = undefined;
});

async function start(w: Workspace): Promise<DaemonProcess> {
  const d = await startDaemon(w);
  daemons.push(d);
  return d;
}

const problemsOf = async (d: DaemonProcess): Promise<NonNullable<MappingStatus['problems']>> => (await d.status()).mappings[0]?.problems ?? [];

describe('dssync run: problems stay until fixed, and the pass history', () => {
  it('a too-large file, a file whose name cannot be mirrored and (when not root) an unreadable one stay listed across an incremental pass and a restart; fixing them clears them', { timeout: 180_000 }, async () => {
    // A known port: `dssync status` finds the daemon through the config.
    ws = await daemonWorkspace({ mapping: { maxFileBytes: 1000 }, config: { status: { listen: `127.0.0.1:${await freePort()}` } } });
    const w = ws;
    await w.write('ok.txt', 'fine');
    await w.write('big.txt', 'x'.repeat(2000));
    // A name that is not UTF-8: never mirrorable as it is, also for root.
    const badName = Buffer.concat([Buffer.from(`${w.share}/bad-`), Buffer.from([0xff]), Buffer.from('.txt')]);
    await writeFile(badName, 'bad name');
    const secret = join(w.share, 'secret.txt');
    await writeFile(secret, 'private');
    await chmod(secret, 0o000);
    // Root reads a 0000 file anyway: then it is not a problem, and not expected as one.
    const unreadable = await access(secret, constants.R_OK).then(
      () => false,
      () => true,
    );
    const expected = ['big.txt', 'bad-\ufffd.txt', ...(unreadable ? ['secret.txt'] : [])].sort();
    const listed = async (d: DaemonProcess): Promise<string[]> => (await problemsOf(d)).map((p) => p.path).sort();

    let d = await start(w);
    await waitFor(async () => (await listed(d)).length === expected.length, { timeout: 60_000, what: 'the problems of the first pass' });
    expect(await listed(d)).toEqual(expected);
    const first = await problemsOf(d);
    expect(first.find((p) => p.path === 'big.txt')).toMatchObject({ kind: 'too-large' });
    if (unreadable) expect(first.find((p) => p.path === 'secret.txt')).toMatchObject({ kind: 'unreadable' });

    // `dssync status`: not in sync, exit 1, the files named.
    const st = await runCli(['status', '--config', w.configPath], w.env);
    expect(st.code, st.stdout + st.stderr).toBe(1);
    expect(st.stdout).toContain('not mirrored (kept until fixed)');
    expect(st.stdout).toContain('big.txt');
    expect(st.stdout).not.toContain('All mappings ok');
    // /healthz: alive (200), with the count of files not mirrored.
    const hz = await d.healthz();
    expect(hz.httpStatus).toBe(200);
    expect(hz.body, JSON.stringify(await problemsOf(d))).toMatchObject({ status: 'problems', problems: { [(await d.status()).mappings[0]!.id]: expected.length } });

    // Another file changes: an incremental pass that does not look at the problems keeps them.
    await w.write('other.txt', 'another file');
    await waitFor(async () => docAt(w, 'other.txt').length === 1 && ((await d.status()).mappings[0]?.history ?? []).some((p) => p.kind === 'incremental' && p.uploaded === 1), {
      timeout: 60_000,
      what: 'the incremental pass of other.txt',
    });
    expect(await listed(d), JSON.stringify(await problemsOf(d))).toEqual(expected);

    // A restart: the list is back from the records file, with each first sighting.
    const records = JSON.parse(await readFile(recordsPath(w.statePath), 'utf8')) as { mappings: Record<string, { problems: { problems: { path: string }[] } }> };
    expect(Object.values(records.mappings)[0]!.problems.problems).toHaveLength(expected.length);
    expect((await d.stop()).code).toBe(0);
    // No daemon: `dssync status` reads the state and the records file, and still says not in sync.
    const offline = await runCli(['status', '--config', w.configPath], w.env);
    expect(offline.code, offline.stdout + offline.stderr).toBe(1);
    expect(offline.stdout).toMatch(/not mirrored \(kept until fixed; as the daemon last saved them\)[\s\S]*big\.txt: too-large/);
    d = await start(w);
    // The page's feed and chart are back too (feed-file.ts): other.txt's upload from before.
    const feed = (await (await fetch(`${d.url}/history`, { headers: authHeader(w) })).json()) as { activity: { item: { path: string; kind: string } }[]; points: { ops: number }[] };
    expect(feed.activity.map((e) => `${e.item.kind} ${e.item.path}`)).toContain('upload other.txt');
    expect(feed.points.some((p) => p.ops > 0)).toBe(true);
    const again = await problemsOf(d);
    expect(again.map((p) => p.path).sort()).toEqual(expected);
    expect(again.find((p) => p.path === 'big.txt')?.since).toBe(first.find((p) => p.path === 'big.txt')?.since);
    // Its start pass sees them again and keeps them (and their first sighting).
    await waitFor(async () => ((await d.status()).mappings[0]?.history ?? []).filter((p) => p.kind === 'start').length === 2, { timeout: 60_000, what: 'the start pass after the restart' });
    expect(await listed(d)).toEqual(expected);
    expect((await runCli(['status', '--config', w.configPath], w.env)).code).toBe(1);

    // --history: the passes of both runs.
    const hist = await runCli(['status', '--config', w.configPath, '--history', '--json'], w.env);
    expect(hist.code, hist.stderr).toBe(0);
    const h = jsonOf<{ source: string; mappings: { id: string; history: { kind: string; uploaded: number }[] }[] }>(hist);
    expect(h.source).toBe('daemon');
    const kinds = h.mappings[0]!.history.map((p) => p.kind);
    expect(kinds.filter((k) => k === 'start')).toHaveLength(2);
    expect(kinds).toContain('incremental');
    const text = await runCli(['status', '--config', w.configPath, '--history', '--mapping', h.mappings[0]!.id], w.env);
    expect(text.stdout).toMatch(/last \d+ pass\(es\), oldest first/);
    expect(text.stdout).toMatch(/start\s+\S+\s+(ok|NOT OK)/);
    const unknown = await runCli(['status', '--config', w.configPath, '--history', '--mapping', 'nope'], w.env);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('--mapping: no mapping "nope"');

    // Fixed: the big file made small (an event, an incremental pass), the bad name removed.
    await w.write('big.txt', 'small now');
    await rm(badName);
    await chmod(secret, 0o644);
    // The unreadable file's fix (a mode change) is an attribute event; a rescan finds it for sure.
    d.child.kill('SIGHUP');
    await waitFor(async () => (await problemsOf(d)).length === 0, { timeout: 60_000, what: 'the problems cleared' });
    expect(docAt(w, 'big.txt')).toHaveLength(1);
    if (unreadable) expect(docAt(w, 'secret.txt')).toHaveLength(1);
    const ok = await runCli(['status', '--config', w.configPath], w.env);
    expect(ok.code, ok.stdout).toBe(0);
    expect(ok.stdout).toContain('All mappings ok');
    expect((await d.healthz()).body.status).toBe('ok');
  });
});

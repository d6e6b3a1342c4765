/**
 * Issue 9, defect 4: the quick check must not take a same-size rewrite for an unchanged
 * file. The built `dssync sync` on a real folder against the emulator; each case asserts
 * what the service holds afterwards (the document's text), not only dssync's metadata.
 * The rule itself is tabled in test/unit/engine/racy.test.ts.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdir, readdir, readFile, rename, stat, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { promisify } from 'node:util';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { CONVERGED, checkConvergence, createWorkspace, type Workspace, fileDocuments } from '../../helpers/mirror-check.js';
import { requireBuiltBinary, runCli, type CliResult } from '../cli/run-cli.js';

const run = promisify(execFile);

let ws: Workspace | undefined;
let mounted: string | undefined;
beforeAll(() => requireBuiltBinary());
afterEach(async () => {
  if (mounted) await run('umount', [mounted]).catch(() => undefined);
  mounted = undefined;
  await ws?.close();
  ws = undefined;
});

/** What the service holds for the document of `path`: its text (the emulator's chunks). */
function serviceText(w: Workspace, path: string): string | undefined {
  const d = fileDocuments(w.emu, w.dataSourceId()).find((x) => x.metadata?.dssync_path === path);
  return d && w.emu.store.listChunks(d.document_id).map((c) => c.text).join('');
}

async function syncOk(w: Workspace, env: Record<string, string> = {}): Promise<CliResult> {
  const r = env.DSSYNC_TEST_HOOKS ? await runCli(['sync', '--config', w.configPath], { ...w.env, ...env }) : await w.sync();
  expect(r.code, r.stderr).toBe(0);
  return r;
}

/** An hour ago: far older than any hash, so only the stat fields can tell a change. */
const HOUR_AGO = new Date(Date.now() - 3_600_000);

describe('the quick check sees same-size rewrites (issue 9, defect 4)', () => {
  it('a rewrite whose mtime is put back (touch -r, rsync --times) is uploaded', { timeout: 60_000 }, async () => {
    ws = await createWorkspace();
    const file = join(ws.share, 'report.txt');
    await ws.write('report.txt', 'version one\n');
    await utimes(file, HOUR_AGO, HOUR_AGO);
    const before = await stat(file);
    await syncOk(ws);
    expect(serviceText(ws, 'report.txt')).toContain('version one');

    // Same size, and the mtime put back: only ctime (which cannot be set back) moved.
    await writeFile(file, 'version two\n');
    await utimes(file, HOUR_AGO, HOUR_AGO);
    const after = await stat(file);
    expect([after.size, after.mtimeMs]).toEqual([before.size, before.mtimeMs]);
    await syncOk(ws);
    expect(serviceText(ws, 'report.txt')).toContain('version two');
    expect(await checkConvergence(ws)).toEqual(CONVERGED);
  });

  it('two same-size files with equal mtimes swapped by renames are both uploaded', { timeout: 60_000 }, async () => {
    ws = await createWorkspace();
    const a = join(ws.share, 'a.txt');
    const b = join(ws.share, 'b.txt');
    await ws.write('a.txt', 'content A\n');
    await ws.write('b.txt', 'content B\n');
    await utimes(a, HOUR_AGO, HOUR_AGO);
    await utimes(b, HOUR_AGO, HOUR_AGO);
    await syncOk(ws);

    // mv a t; mv b a; mv t b — sizes and mtimes as before, the inodes swapped.
    const t = join(ws.share, 't.tmp');
    await rename(a, t);
    await rename(b, a);
    await rename(t, b);
    await syncOk(ws);
    expect(serviceText(ws, 'a.txt')).toContain('content B');
    expect(serviceText(ws, 'b.txt')).toContain('content A');
    expect(await checkConvergence(ws)).toEqual(CONVERGED);
  });

  /**
   * On a filesystem with 1-second timestamps (ext4 with 128-byte inodes, on a loop device:
   * needs root), two same-size writes in the same second leave size, mtime, ctime and inode
   * equal: only the racy rule (the entry's mtime was not safely older than its hash) makes
   * the next pass look at the content. The first write is made at the `before-hash` pause
   * (test-hooks.ts), at the start of a second, so that the hash follows it at once; the
   * second as soon as the emulator has the first version's metadata (the entry dssync
   * records holds the stat the hash saw). Whether both writes fell in the same second is
   * checked, not assumed: when they did not (a busy machine), mtime alone tells, the
   * attempt proves nothing and is repeated with a new file.
   */
  it('two writes within the timestamp granularity are uploaded (a 1-second filesystem)', { timeout: 180_000 }, async (ctx) => {
    ws = await createWorkspace();
    const image = join(ws.dir, 'coarse.img');
    try {
      await run('truncate', ['-s', '16M', image]);
      await run('mkfs.ext4', ['-q', '-F', '-I', '128', image]);
      await run('mount', ['-o', 'loop', image, ws.share]);
      mounted = ws.share;
    } catch (e) {
      ctx.skip(`cannot mount a 1-second ext4 on a loop device here (needs root, mkfs.ext4, losetup): ${(e as Error).message.split('\n')[0]}`);
      return;
    }
    const w = ws;
    const sha = (s: string): string => createHash('sha256').update(s).digest('hex');
    /** The hash in the metadata of the document of `name` (none before the data source exists). */
    const uploadedSha = (name: string): unknown =>
      w.emu.store
        .listDataSources()
        .flatMap((ds) => fileDocuments(w.emu, ds.data_source_id))
        .find((x) => x.metadata?.dssync_path === name)?.metadata?.dssync_sha256;

    let proved = false;
    for (let attempt = 0; attempt < 8 && !proved; attempt++) {
      const name = `racy-${attempt}.txt`;
      const file = join(w.share, name);
      const v1 = `v1 of attempt ${attempt}\n`;
      await writeFile(file, `v0 of attempt ${attempt}\n`);
      await utimes(file, HOUR_AGO, HOUR_AGO);
      // A folder per run: each process numbers its pauses from 0.
      const hooksDir = join(w.dir, `hooks-${attempt}`);
      await mkdir(hooksDir);

      // The first write happens while dssync waits just before hashing this file, early in a second.
      let first: { mtimeMs: number; ctimeMs: number } | undefined;
      const driver = answerPauses(hooksDir, async (detail) => {
        if (detail !== name || first !== undefined) return;
        while (Date.now() % 1000 > 100) await delay(1000 - (Date.now() % 1000));
        await writeFile(file, v1);
        first = await stat(file);
      });
      const syncing = runCli(['sync', '--config', w.configPath], { ...w.env, DSSYNC_TEST_HOOKS: `pause:before-hash=${hooksDir}` });
      let second: { mtimeMs: number; ctimeMs: number } | undefined;
      try {
        // The second write, once the first version is in (its entry is the stat the hash saw).
        for (let i = 0; i < 6000 && uploadedSha(name) !== sha(v1); i++) await delay(5);
        await writeFile(file, `v2 of attempt ${attempt}\n`);
        second = await stat(file);
      } finally {
        const r = await syncing;
        driver.stop();
        expect(r.code, r.stderr).toBe(0);
      }
      expect(first, 'the hash of the file was not paused').toBeDefined();
      expect(serviceText(w, name)).toContain('v1');
      if (second.mtimeMs !== first!.mtimeMs || second.ctimeMs !== first!.ctimeMs) continue;
      proved = true;
      // Every stat field as recorded: only the racy rule can see it.
      await syncOk(w);
      expect(serviceText(w, name)).toContain('v2');
    }
    // Two writes in one second of the wall clock cannot be forced (no fake clock reaches a
    // filesystem's timestamps): on a machine too busy for it in 8 tries, nothing was proved
    // either way, and the test says so instead of failing (the rule itself is tabled with
    // fakes in test/unit/engine/racy.test.ts).
    if (!proved) {
      ctx.skip('no attempt wrote twice within one second (a busy machine): the racy case was not reached');
      return;
    }
    expect(await checkConvergence(w)).toEqual(CONVERGED);
  });
});

/** Answers every pause of DSSYNC_TEST_HOOKS in `dir`: runs `act` with its detail, then resumes it. */
function answerPauses(dir: string, act: (detail: unknown) => Promise<void>): { stop(): void } {
  let stopped = false;
  const handled = new Set<string>();
  void (async () => {
    while (!stopped) {
      for (const name of await readdir(dir).catch(() => [] as string[])) {
        if (!name.endsWith('.paused') || handled.has(name)) continue;
        handled.add(name);
        await act(JSON.parse(await readFile(join(dir, name), 'utf8')) as unknown);
        await writeFile(join(dir, name.replace(/\.paused$/, '.resume')), '');
      }
      await new Promise((r) => setTimeout(r, 10));
    }
  })();
  return { stop: () => void (stopped = true) };
}

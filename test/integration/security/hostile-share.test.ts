/**
 * Security, against real `dssync sync` / `dssync run` processes: what someone who can write
 * to a mapped folder can try, with the attack's window made deterministic by the test-only
 * pauses of src/test-hooks.ts (DSSYNC_TEST_HOOKS), never by timing luck.
 *
 * - A file, or the folder above it, swapped for a symbolic link to a 0600 secret of the same
 *   size and mtime between the hash and the upload, or while the upload is about to stream,
 *   then swapped back (issue 10, defect 1): the secret's bytes never reach the service.
 * - A FIFO as the ignore file, and a mapped file swapped for a FIFO after the walk (defect 2):
 *   the daemon keeps answering, names the file, and stops on SIGTERM within 10 s.
 * - A hung main thread (defect 3): the watchdog ends the process.
 */
import { execFileSync } from 'node:child_process';
import { chmod, mkdir, rename, rm, stat, symlink, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runCli, type CliResult } from '../cli/run-cli.js';
import { daemonWorkspace, startDaemon, waitFor, type DaemonProcess } from '../daemon/daemon-process.js';
import { createWorkspace, type Workspace, fileDocuments, filesUploaded } from '../../helpers/mirror-check.js';
import { hookDriver, type HookDriver } from '../../helpers/hook-driver.js';

const SECRET = 'SERVICE-ACCOUNT-SECRET-0600-do-not-publish';

let ws: Workspace | undefined;
let daemon: DaemonProcess | undefined;
let driver: HookDriver | undefined;
afterEach(async () => {
  driver?.stop();
  driver = undefined;
  await daemon?.kill();
  daemon = undefined;
  await ws?.close();
  ws = undefined;
});

/** Everything the service holds for the workspace: names, metadata and chunk text. */
function serviceContent(w: Workspace): string {
  return w.emu.store
    .listDataSources()
    .flatMap((ds) => fileDocuments(w.emu, ds.data_source_id))
    .map((d) => JSON.stringify(d) + w.emu.store.listChunks(d.document_id).map((c) => c.text).join('\n'))
    .join('\n');
}

function docText(w: Workspace, path: string): string | undefined {
  for (const ds of w.emu.store.listDataSources()) {
    const d = fileDocuments(w.emu, ds.data_source_id).find((x) => x.metadata?.dssync_path === path);
    if (d) return w.emu.store.listChunks(d.document_id).map((c) => c.text).join('');
  }
  return undefined;
}

/** A 0600 secret outside the share, and a bait of the same size and mtime inside it. */
async function plantBait(w: Workspace, rel: string): Promise<{ secret: string; bait: string }> {
  const secret = join(w.dir, 'secret.txt');
  await writeFile(secret, SECRET, { mode: 0o600 });
  await chmod(secret, 0o600);
  const bait = join(w.share, rel);
  await mkdir(join(bait, '..'), { recursive: true });
  await writeFile(bait, 'b'.repeat(SECRET.length));
  const st = await stat(secret);
  await utimes(bait, st.atime, st.mtime); // touch -r secret bait
  return { secret, bait };
}

function sync(w: Workspace, hooks: string): Promise<CliResult> {
  return runCli(['sync', '--config', w.configPath, '--json'], { ...w.env, DSSYNC_TEST_HOOKS: hooks });
}

/** Resolves with the exit, or rejects if the process is still running after `ms`. */
async function exitWithin(d: DaemonProcess, ms: number): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`dssync run (pid ${d.pid}) still running ${ms} ms after the signal\n${d.stdout().slice(-3000)}`)), ms);
  });
  try {
    return await Promise.race([d.exited, late]);
  } finally {
    clearTimeout(timer);
  }
}

describe('security: a file swapped for a link to a secret (real dssync sync)', () => {
  for (const point of ['before-hash', 'upload-open', 'upload-send'] as const) {
    it(`swapped at ${point}, swapped back after the pass: the secret is never sent`, { timeout: 90_000 }, async () => {
      ws = await createWorkspace();
      const w = ws;
      await w.write('other.txt', 'an ordinary document');
      const { secret, bait } = await plantBait(w, 'b.txt');
      const aside = join(w.dir, 'b.aside');
      let swapped = false;
      driver = await hookDriver(join(w.dir, 'hooks'), [point], async (_p, _n, detail) => {
        if (swapped || !JSON.stringify(detail).includes('b.txt')) return;
        swapped = true;
        await rename(bait, aside);
        await symlink(secret, bait);
      });
      const first = await sync(w, driver.env);
      expect(swapped, `pauses seen: ${driver.seen.join('; ')}`).toBe(true);
      // The attacker puts the bait back, so that a quick check would find nothing to redo.
      await rm(bait);
      await rename(aside, bait);
      expect(serviceContent(w)).not.toContain(SECRET);
      expect(first.stdout + first.stderr).not.toContain(SECRET);
      // Whatever the first pass did, the next one ends with the bait's own content.
      const second = await sync(w, '');
      expect(second.code, second.stdout + second.stderr).toBe(0);
      expect(docText(w, 'b.txt')).toBe('b'.repeat(SECRET.length));
      expect(docText(w, 'other.txt')).toBe('an ordinary document');
      expect(serviceContent(w)).not.toContain(SECRET);
    });
  }

  for (const point of ['before-hash', 'upload-open', 'upload-send'] as const) {
    it(`the folder above a file swapped for a link to an outside folder at ${point}: nothing outside is sent`, { timeout: 90_000 }, async () => {
      ws = await createWorkspace();
      const w = ws;
      const outside = join(w.dir, 'outside');
      await mkdir(outside);
      const { secret } = await plantBait(w, 'team/notes.txt');
      await rename(secret, join(outside, 'notes.txt'));
      const team = join(w.share, 'team');
      let swapped = false;
      driver = await hookDriver(join(w.dir, 'hooks'), [point], async (_p, _n, detail) => {
        if (swapped || !JSON.stringify(detail).includes('notes.txt')) return;
        swapped = true;
        await rename(team, join(w.dir, 'team.aside'));
        await symlink(outside, team);
      });
      await sync(w, driver.env);
      expect(swapped, `pauses seen: ${driver.seen.join('; ')}`).toBe(true);
      expect(serviceContent(w)).not.toContain(SECRET);
      await rm(team);
      await rename(join(w.dir, 'team.aside'), team);
      const second = await sync(w, '');
      expect(second.code, second.stdout + second.stderr).toBe(0);
      expect(docText(w, 'team/notes.txt')).toBe('b'.repeat(SECRET.length));
      expect(serviceContent(w)).not.toContain(SECRET);
    });
  }
});

describe('security: FIFOs never freeze the daemon (real dssync run)', () => {
  it('a FIFO as the ignore file: the mapping is an outage naming it, the daemon answers and stops on SIGTERM within 10 s', { timeout: 90_000 }, async () => {
    ws = await daemonWorkspace();
    await ws.write('a.txt', 'alpha');
    execFileSync('mkfifo', [join(ws.share, '.dssyncignore')]);
    daemon = await startDaemon(ws);
    const d = daemon;
    // The mapping is an outage, and its status says why, naming the file.
    let reason = '';
    await waitFor(
      async () => {
        const m = (await d.status()).mappings[0];
        reason = m?.skipped.find((s) => s.path === '.dssyncignore')?.reason ?? '';
        return reason !== '';
      },
      { timeout: 30_000, what: 'the ignore file named in the status', describe: () => d.stdout().slice(-2000) },
    );
    expect(reason).toContain('.dssyncignore is a FIFO (named pipe), not a regular file');
    // The outage names the ignore file and what is wrong with it, not the folder (issue 25.10).
    expect(d.stdout()).toContain('(ignoreFile \\".dssyncignore\\") cannot be used:');
    expect(d.stdout()).toContain('treated as an outage, nothing was deleted');
    expect(d.stdout()).not.toContain('is the drive mounted');
    // It still answers health checks (503 degraded is an answer).
    expect([200, 503]).toContain((await d.healthz()).httpStatus);
    // Nothing was mirrored without the ignore file's rules.
    expect(filesUploaded(ws.emu)).toBe(0);
    d.child.kill('SIGTERM');
    const exit = await exitWithin(d, 10_000);
    expect(exit).toEqual({ code: 0, signal: null });
  });

  // A file of at most 256 KiB keeps the bytes its hash read for its upload (engine/mirror.ts
  // KEEP_CONTENT_BYTES): swapped after its hash, that version is sent and the FIFO never
  // opened; a larger one is opened again by its upload, which meets the FIFO.
  const LARGE = 'soon a pipe '.repeat(30_000);
  for (const [point, content, sent] of [
    ['before-hash', 'soon a pipe', undefined],
    ['upload-open', LARGE, undefined],
    ['upload-open', 'soon a pipe', 'soon a pipe'],
  ] as const) {
    it(`a mapped file of ${content.length} bytes swapped for a FIFO at ${point}: ${sent ? 'the version hashed sent' : 'skipped'}, the rest mirrored, the daemon answers and stops on SIGTERM within 10 s`, { timeout: 90_000 }, async () => {
      ws = await daemonWorkspace();
      const w = ws;
      await w.write('keep.txt', 'kept');
      await w.write('pipe.txt', content);
      let swapped = false;
      driver = await hookDriver(join(w.dir, 'hooks'), [point], async (_p, _n, detail) => {
        if (swapped || !JSON.stringify(detail).includes('pipe.txt')) return;
        swapped = true;
        await rm(join(w.share, 'pipe.txt'));
        execFileSync('mkfifo', [join(w.share, 'pipe.txt')]);
      });
      daemon = await startDaemon(w, { env: { DSSYNC_TEST_HOOKS: driver.env } });
      const d = daemon;
      await waitFor(() => docText(w, 'keep.txt') === 'kept' && swapped, { timeout: 60_000, what: 'keep.txt mirrored after the swap', describe: () => d.stdout().slice(-2000) });
      await waitFor(async () => (await d.healthz()).httpStatus === 200, { timeout: 30_000, what: '/healthz' });
      expect(docText(w, 'pipe.txt')).toBe(sent);
      d.child.kill('SIGTERM');
      const exit = await exitWithin(d, 10_000);
      expect(exit).toEqual({ code: 0, signal: null });
    });
  }
});

// dssync's native thread, and the worker it falls back to without its native modules.
const WATCHDOGS = [
  { thread: 'thread', env: {} },
  { thread: 'worker', env: { DSSYNC_NATIVE: '0' } },
] as const;

describe.each(WATCHDOGS)('security: the watchdog ($thread, real dssync run)', ({ thread, env }) => {
  it('a main thread blocked for good ends the process (SIGKILL from the watchdog thread)', { timeout: 90_000 }, async () => {
    ws = await daemonWorkspace();
    await ws.write('a.txt', 'alpha');
    daemon = await startDaemon(ws, {
      waitReady: false,
      env: { ...env, DSSYNC_WATCHDOG_SECONDS: '2', DSSYNC_TEST_HOOKS: 'block-main-thread-after-ms=500' },
    });
    const d = daemon;
    const exit = await exitWithin(d, 60_000);
    expect(exit.signal).toBe('SIGKILL');
    const fatal = d.logs().find((l) => l.level === 60);
    expect(fatal?.msg).toMatch(/^watchdog: the event loop has not answered for \d+ s \(limit 2 s\)/);
    expect(d.logs().some((l) => l.msg === 'watchdog started' && l.timeoutSeconds === 2 && l.thread === thread)).toBe(true);
  });

  it('an idle daemon is left alone by the watchdog, and stops cleanly', { timeout: 90_000 }, async () => {
    ws = await daemonWorkspace();
    await ws.write('a.txt', 'alpha');
    daemon = await startDaemon(ws, { env: { ...env, DSSYNC_WATCHDOG_SECONDS: '2' } });
    const d = daemon;
    expect(d.logs().find((l) => l.msg === 'watchdog started')?.thread).toBe(thread);
    await waitFor(() => docText(ws!, 'a.txt') === 'alpha', { timeout: 60_000, what: 'a.txt mirrored' });
    // Several watchdog periods of normal life: the process is still there and answers.
    await waitFor(async () => (await d.metrics()).length > 0 && d.logs().length > 0, { timeout: 10_000 });
    expect((await d.healthz()).httpStatus).toBe(200);
    d.child.kill('SIGTERM');
    expect(await exitWithin(d, 10_000)).toEqual({ code: 0, signal: null });
  });
});

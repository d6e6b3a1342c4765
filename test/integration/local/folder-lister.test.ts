/**
 * local/folder-lister.ts on real folders: a folder's entries and its files' lstat from a
 * worker thread in one answer; special files never opened; errors as the listing's own; a
 * worker blocked in a system call (a FIFO opened by a test hook, as a hung mount would
 * block it) holds up neither the event loop, nor other listings, nor a stop, nor the
 * process's exit; a worker slow but moving (a test hook holds each lstat) is not taken for
 * a stuck one.
 */
import { execFileSync, spawn } from 'node:child_process';
import { getEventListeners } from 'node:events';
import { closeSync, constants, existsSync, lstatSync, openSync, writeFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { FolderLister } from '../../../src/local/folder-lister.js';
import { ENTRY_DIR, ENTRY_FILE, ENTRY_LINK, ENTRY_OTHER, STAT_FIELDS, STAT_GONE, type FolderListing } from '../../../src/local/folder-listing.js';
import { FakeClock } from '../../helpers/fake-clock.js';
import { heldLstats } from '../../helpers/held-lstats.js';
import { waitFor } from '../../helpers/wait-for.js';
import { requireBuiltBinary } from '../cli/run-cli.js';

let dir: string;
let lister: FolderLister | undefined;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'dssync-lister-'));
});
afterEach(async () => {
  lister?.close();
  lister = undefined;
  await rm(dir, { recursive: true, force: true });
});

function entries(l: FolderListing): Record<string, number> {
  return Object.fromEntries(l.names.map((n, i) => [n, l.types[i]!]));
}

/** Opens the FIFO for writing once a reader waits on it (one must be coming): the reader's open returns. */
async function release(fifo: string): Promise<void> {
  for (;;) {
    try {
      closeSync(openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK));
      return;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENXIO') throw e;
      await new Promise((r) => setTimeout(r, 10));
    }
  }
}

describe('FolderLister', () => {
  it("answers a folder's entries with their types, and each file's lstat, without opening anything but the folder", async () => {
    await writeFile(join(dir, 'a.txt'), 'hello');
    await mkdir(join(dir, 'sub'));
    await symlink(join(dir, 'a.txt'), join(dir, 'link.txt'));
    execFileSync('mkfifo', [join(dir, 'pipe.txt')]);
    lister = new FolderLister();
    const l = await lister.list(dir);
    expect(entries(l)).toEqual({ 'a.txt': ENTRY_FILE, sub: ENTRY_DIR, 'link.txt': ENTRY_LINK, 'pipe.txt': ENTRY_OTHER });
    expect(l.realPath).toBe(dir);
    const i = l.names.indexOf('a.txt');
    const st = lstatSync(join(dir, 'a.txt'));
    expect([...l.stats!.subarray(i * STAT_FIELDS, (i + 1) * STAT_FIELDS)]).toEqual([5, st.mtimeMs, st.ctimeMs, st.dev, st.ino]);
    // Only files are stat-ed: the FIFO, the link and the folder are not.
    for (const name of ['sub', 'link.txt', 'pipe.txt']) expect(l.stats![l.names.indexOf(name) * STAT_FIELDS]).toBeNaN();
    expect(l.statErrors).toBeUndefined();
  });

  it('fails as the listing does: a missing folder, a file, a link refused with noFollow', async () => {
    await writeFile(join(dir, 'f.txt'), 'x');
    await mkdir(join(dir, 'target'));
    await writeFile(join(dir, 'target', 'in.txt'), 'x');
    await symlink(join(dir, 'target'), join(dir, 'link'));
    lister = new FolderLister();
    await expect(lister.list(join(dir, 'missing'))).rejects.toMatchObject({ code: 'ENOENT' });
    await expect(lister.list(join(dir, 'f.txt'))).rejects.toMatchObject({ code: 'ENOTDIR' });
    await expect(lister.list(join(dir, 'link'), { noFollow: true })).rejects.toMatchObject({ code: expect.stringMatching(/^(ELOOP|ENOTDIR)$/) });
    const followed = await lister.list(join(dir, 'link'));
    expect(followed.names).toEqual(['in.txt']);
    expect(followed.realPath).toBe(join(dir, 'target'));
  });

  it('marks a file its lstat does not find as gone: a name that is not UTF-8, decoded lossily', async () => {
    writeFileSync(Buffer.concat([Buffer.from(`${dir}/bad-`), Buffer.from([0xff]), Buffer.from('.txt')]), 'x');
    lister = new FolderLister();
    const l = await lister.list(dir);
    expect(l.names).toEqual(['bad-\uFFFD.txt']);
    expect(l.stats![0]).toBe(STAT_GONE);
  });

  it("takes a request's listener off the caller's signal once it is answered or refused: a pass's one signal gathers none", async () => {
    await mkdir(join(dir, 'ok'));
    await writeFile(join(dir, 'ok', 'a.txt'), 'a');
    lister = new FolderLister({ workers: 1 });
    const ac = new AbortController();
    const listings = [lister.list(join(dir, 'ok'), { signal: ac.signal }), lister.list(join(dir, 'missing'), { signal: ac.signal })];
    expect(getEventListeners(ac.signal, 'abort')).toHaveLength(2);
    await Promise.allSettled(listings);
    await expect(listings[1]).rejects.toMatchObject({ code: 'ENOENT' });
    expect(getEventListeners(ac.signal, 'abort')).toHaveLength(0);
  });

  it('a worker blocked in a system call holds up neither the event loop, nor the next listing, nor a stop', async () => {
    const fifo = join(dir, 'hang');
    execFileSync('mkfifo', [fifo]);
    await mkdir(join(dir, 'hung'));
    await mkdir(join(dir, 'ok'));
    await writeFile(join(dir, 'ok', 'a.txt'), 'a');
    const blocking = join(dir, 'blocking');
    const clock = new FakeClock(1_000);
    lister = new FolderLister({
      workers: 1,
      stuckMs: 5_000,
      clock,
      testHook: `if (path.endsWith('/hung')) { require('node:fs').writeFileSync(${JSON.stringify(blocking)}, ''); require('node:fs').openSync(${JSON.stringify(fifo)}, 'r'); }`,
    });
    const ac = new AbortController();
    const hung = lister.list(join(dir, 'hung'), { signal: ac.signal });
    // The event loop runs meanwhile.
    await waitFor(() => existsSync(blocking), { what: 'the worker to block' });
    // Still within stuckMs: the next request would wait behind it. Past it, another worker
    // takes the next listing.
    await clock.advance(5_001);
    const ok = await lister.list(join(dir, 'ok'));
    expect(ok.names).toEqual(['a.txt']);
    expect(lister.workerCount).toBe(2);
    // A stopping walk does not wait for the blocked one.
    ac.abort(new Error('stopping'));
    await expect(hung).rejects.toThrow('stopping');
    lister.close();
    expect(lister.workerCount).toBe(0);
    await expect(lister.list(join(dir, 'ok'))).rejects.toMatchObject({ code: 'ESTOPPED' });
    // Let the blocked thread end (it does, once its system call returns).
    await release(fifo);
  });

  it("posts a turn's requests to the worker in one message, and answers each as soon as it is ready: one blocked in the kernel holds no earlier one's answer", async () => {
    const fifo = join(dir, 'hang');
    execFileSync('mkfifo', [fifo]);
    for (const d of ['a', 'b', 'hung', 'c']) await mkdir(join(dir, d));
    await writeFile(join(dir, 'a', 'a.txt'), 'a');
    await writeFile(join(dir, 'b', 'b.txt'), 'b');
    await writeFile(join(dir, 'c', 'c.txt'), 'c');
    const posted = vi.spyOn(Worker.prototype, 'postMessage');
    try {
      lister = new FolderLister({ workers: 1, testHook: `if (path.endsWith('/hung')) require('node:fs').openSync(${JSON.stringify(fifo)}, 'r');` });
      const a = lister.list(join(dir, 'a'));
      const b = lister.list(join(dir, 'b'));
      const hung = lister.list(join(dir, 'hung'));
      const c = lister.list(join(dir, 'c'));
      expect((await a).names).toEqual(['a.txt']);
      expect((await b).names).toEqual(['b.txt']);
      expect(posted.mock.calls.map(([m]) => (m as unknown[]).length)).toEqual([4]);
      // c waits behind the blocked one, as it would on its own.
      await release(fifo);
      expect((await hung).names).toEqual([]);
      expect((await c).names).toEqual(['c.txt']);
    } finally {
      posted.mockRestore();
    }
  });

  it('a worker whose listing takes over stuckMs but keeps moving keeps the next requests: no other worker is started', async () => {
    const big = join(dir, 'big');
    await mkdir(big);
    const files = ['f0.txt', 'f1.txt', 'f2.txt', 'f3.txt'];
    for (const f of files) await writeFile(join(big, f), 'x');
    await mkdir(join(dir, 'small'));
    await writeFile(join(dir, 'small', 's.txt'), 's');
    await mkdir(join(dir, 'gates'));
    const armed = join(dir, 'armed');
    await writeFile(armed, '');
    const lstats = heldLstats(join(dir, 'gates'), armed, files);
    const clock = new FakeClock(1_000);
    lister = new FolderLister({ workers: 1, stuckMs: 5_000, clock, testEntryHook: lstats.hook });
    const listing = lister.list(big);
    const others: Promise<FolderListing>[] = [];
    // Each file held 3 s of the clock (12 s in all, over stuckMs); a request comes meanwhile.
    for (let i = 0; i < files.length; i++) {
      const name = await lstats.next();
      await clock.advance(3_000);
      others.push(lister.list(join(dir, 'small')));
      expect(lister.workerCount).toBe(1);
      lstats.release(name);
    }
    expect((await listing).names.sort()).toEqual(files);
    for (const o of others) expect((await o).names).toEqual(['s.txt']);
    expect(lister.workerCount).toBe(1);
  });

  it('an idle worker ends after idleMs; the next listing starts one', async () => {
    await writeFile(join(dir, 'a.txt'), 'a');
    const clock = new FakeClock(0);
    lister = new FolderLister({ workers: 1, idleMs: 10_000, clock });
    await lister.list(dir);
    expect(lister.workerCount).toBe(1);
    await clock.advance(9_999);
    expect(lister.workerCount).toBe(1);
    await clock.advance(1);
    expect(lister.workerCount).toBe(0);
    expect((await lister.list(dir)).names).toEqual(['a.txt']);
    expect(lister.workerCount).toBe(1);
  });
});

describe('FolderLister: the process exits though a worker is blocked in a system call', () => {
  const module = fileURLToPath(new URL('../../../dist/src/local/folder-lister.js', import.meta.url));

  /** A process whose lister's worker blocks on a FIFO; its listing is abandoned, then the process ends with `exitCode`. */
  function run(exitCode: number): Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }> {
    const fifo = join(dir, 'hang');
    const script = `
      import { FolderLister } from ${JSON.stringify(module)};
      const lister = new FolderLister({ testHook: ${JSON.stringify(`require('node:fs').writeSync(2, 'blocking\\n'); require('node:fs').openSync(${JSON.stringify(fifo)}, 'r');`)} });
      const ac = new AbortController();
      lister.list(${JSON.stringify(dir)}, { signal: ac.signal }).catch(() => undefined);
      process.once('SIGUSR2', () => { ac.abort(); lister.close(); process.exitCode = ${exitCode}; });
    `;
    return new Promise((resolve, reject) => {
      const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'ignore', 'pipe'] });
      let stderr = '';
      child.stderr.setEncoding('utf8').on('data', (d: string) => {
        stderr += d;
        if (d.includes('blocking')) child.kill('SIGUSR2');
      });
      child.on('error', reject);
      child.on('exit', (code, signal) => resolve({ code, signal, stderr }));
    });
  }

  it('without a blocked worker it exits as usual, a lister closed in the middle of a listing included', async () => {
    requireBuiltBinary();
    for (let i = 0; i < 2000; i++) writeFileSync(join(dir, `f${i}.txt`), 'x');
    const script = `
      import { FolderLister } from ${JSON.stringify(module)};
      const lister = new FolderLister();
      await lister.list(${JSON.stringify(dir)});
      lister.list(${JSON.stringify(dir)}).catch(() => undefined);
      lister.close();
    `;
    const r = await new Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }>((resolve, reject) => {
      const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'ignore', 'pipe'] });
      let stderr = '';
      child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
      child.on('error', reject);
      child.on('exit', (code, signal) => resolve({ code, signal, stderr }));
    });
    expect(r).toEqual({ code: 0, signal: null, stderr: '' });
  });

  it("lists under V8 flags on node's command line, which a worker refuses (--heap-growing-percent, --trace-gc)", async () => {
    requireBuiltBinary();
    for (let i = 0; i < 20; i++) writeFileSync(join(dir, `f${i}.txt`), 'x');
    const script = `
      import { FolderLister } from ${JSON.stringify(module)};
      const lister = new FolderLister();
      const listed = await lister.list(${JSON.stringify(dir)});
      console.log(listed.names.length);
      lister.close();
    `;
    const out = execFileSync(process.execPath, ['--heap-growing-percent=80', '--trace-gc', '--input-type=module', '-e', script], { encoding: 'utf8' });
    expect(out.trim().split('\n').at(-1)).toBe('20');
  });

  it('after a clean stop: ends by SIGTERM, saying why', async () => {
    requireBuiltBinary();
    execFileSync('mkfifo', [join(dir, 'hang')]);
    const r = await run(0);
    expect(r.signal).toBe('SIGTERM');
    expect(r.stderr).toContain('a folder listing or a file read is still blocked in the kernel');
  });

  it('after a failure: ends by SIGKILL', async () => {
    requireBuiltBinary();
    execFileSync('mkfifo', [join(dir, 'hang')]);
    const r = await run(1);
    expect(r.signal).toBe('SIGKILL');
  });
});

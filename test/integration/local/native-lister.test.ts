/**
 * The folder listing's native call (native/list-folder.c, the lister's worker's) on real
 * folders: its answer is the steps' answer (src/local/list-steps.ts over node:fs), entry for
 * entry and number for number (an mtime with nanoseconds included), for every kind of entry
 * and for the folder's own failures; it stops when its worker is told to, and moves the
 * progress count a hung call leaves still. The module must be built: CI builds it
 * (DSSYNC_REQUIRE_NATIVE=1); a machine without a C compiler skips these and says so.
 */
import { execFileSync } from 'node:child_process';
import { mkdtemp, mkdir, rm, symlink, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { FolderListing } from '../../../src/local/folder-listing.js';
import { listFolderSteps } from '../../../src/local/list-steps.js';
import { nativeLister } from '../../../src/local/native-lister.js';
import { nodeCalls, runSync } from '../../../src/local/sys-calls.js';
import { nodeFs } from '../../../src/local/fs.js';

const native = nativeLister({});
if (native === undefined && process.env.DSSYNC_REQUIRE_NATIVE === '1') throw new Error('the native list-folder module is required here (DSSYNC_REQUIRE_NATIVE=1)');
const SKIP = native === undefined ? ' (SKIPPED: the native list-folder module is not built)' : '';

const STOP = 1;
const PROGRESS = 2;
let root: string;
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'dssync-list-folder-'));
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

/** The answer as plain data (typed arrays as arrays, NaN kept), or the error's code and message. */
function outcome(f: () => FolderListing): unknown {
  try {
    const l = f();
    return { ...l, types: [...l.types], stats: [...l.stats].map((x) => (Number.isNaN(x) ? 'NaN' : x)) };
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    return { code: err.code, message: err.message };
  }
}

const flags = (): Int32Array => new Int32Array(new SharedArrayBuffer(16));
const steps = (path: string, noFollow = false): unknown => outcome(() => runSync(listFolderSteps(path, noFollow), nodeCalls));
const natively = (path: string, noFollow = false): unknown => outcome(() => native!.listFolder(path, noFollow, flags(), STOP, PROGRESS));

describe(`the folder listing's native call${SKIP}`, () => {
  it.skipIf(!native)('answers what the steps answer: files (mtimes to the nanosecond), folders, links, a FIFO, a name not UTF-8, in byte order', async () => {
    for (const name of ['b.txt', 'B.txt', 'a.txt', 'Ä.txt', '_x.md', 'é.txt', 'empty']) await writeFile(join(root, name), name === 'empty' ? '' : `${name}\n`);
    await utimes(join(root, 'a.txt'), new Date('2026-01-02T03:04:05.123Z'), 1_767_323_045.123_456_7);
    await mkdir(join(root, 'sub'));
    await symlink('a.txt', join(root, 'to-file'));
    await symlink('sub', join(root, 'to-folder'));
    await symlink('nowhere', join(root, 'dangling'));
    execFileSync('mkfifo', [join(root, 'fifo')]);
    // A name that is not valid UTF-8: both say its file is gone (the walk then says it cannot be mirrored).
    await writeFile(Buffer.concat([Buffer.from(`${root}/bad`), Buffer.from([0xff]), Buffer.from('.txt')]), 'x');
    const answer = natively(root) as { names: string[]; types: number[] };
    expect(answer).toEqual(steps(root));
    expect(answer.names).toEqual(['B.txt', '_x.md', 'a.txt', 'b.txt', 'bad\uFFFD.txt', 'dangling', 'empty', 'fifo', 'sub', 'to-file', 'to-folder', 'Ä.txt', 'é.txt']);
    // Through the lister's worker (LocalFs.listFolder), which makes this call.
    const viaWorker = await nodeFs.listFolder(root, { noFollow: false });
    expect(outcome(() => viaWorker)).toEqual(steps(root));
  });

  it.skipIf(!native)("the folder's own failures are the steps' errors: gone, not a folder, a link under O_NOFOLLOW", async () => {
    await writeFile(join(root, 'file'), 'x');
    await mkdir(join(root, 'real'));
    await symlink('real', join(root, 'link'));
    for (const [path, noFollow, code] of [
      [join(root, 'missing'), false, 'ENOENT'],
      [join(root, 'file'), false, 'ENOTDIR'],
      // O_DIRECTORY with O_NOFOLLOW on a link: Linux answers ENOTDIR (not ELOOP).
      [join(root, 'link'), true, 'ENOTDIR'],
    ] as const) {
      const got = natively(path, noFollow) as { code: string; message: string };
      expect(got).toEqual(steps(path, noFollow));
      expect(got.code).toBe(code);
      expect(got.message).toContain(`open '${path}'`);
    }
    // Followed when allowed: the link's folder is listed, under its kernel path.
    expect(natively(join(root, 'link'))).toEqual(steps(join(root, 'link')));
    expect((natively(join(root, 'link')) as FolderListing).realPath).toBe(join(root, 'real'));
  });

  it.skipIf(!native)('stops when its worker is told to (ESTOPPED), and moves the progress count after the read and each stat', async () => {
    for (let i = 0; i < 5; i++) await writeFile(join(root, `f${i}`), 'x');
    const f = flags();
    native!.listFolder(root, false, f, STOP, PROGRESS);
    expect(Atomics.load(f, PROGRESS)).toBeGreaterThanOrEqual(6);
    Atomics.store(f, STOP, 1);
    expect(() => native!.listFolder(root, false, f, STOP, PROGRESS)).toThrow(expect.objectContaining({ code: 'ESTOPPED' }));
    expect(() => native!.listFolder(root, false, new Int32Array(1), STOP, PROGRESS)).toThrow(TypeError);
  });

  it('is not used with DSSYNC_NATIVE=0: the worker runs the steps', () => {
    expect(nativeLister({ DSSYNC_NATIVE: '0' })).toBeUndefined();
  });
});

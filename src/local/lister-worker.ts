/**
 * The folder lister's worker thread (folder-lister.ts): lists folders, hashes small files and
 * reads them whole for an upload with node:fs's synchronous calls, running the same steps as
 * every other filesystem (list-steps.ts, hash-steps.ts). Shared with the main thread (workerData.flags, an
 * Int32Array): [BUSY] 1 while it works, [STOP] 1 once it must stop, [PROGRESS] a count it
 * bumps after each system call and each answer.
 */
import { createRequire } from 'node:module';
import { parentPort, workerData } from 'node:worker_threads';
import { hashSteps, readSteps } from './hash-steps.js';
import { listFolderSteps } from './list-steps.js';
import { BUSY, PROGRESS, STOP, type ListerAnswer, type ListerMessage, type ListerTask } from './folder-lister.js';
import { errorCode, nodeCalls, runSync, type CallObserver } from './sys-calls.js';
import { nativeLister } from './native-lister.js';

const data = workerData as { flags: SharedArrayBuffer; testHook?: string | undefined; testEntryHook?: string | undefined };
const flags = new Int32Array(data.flags);
const require = createRequire(import.meta.url);
type Hook = (path: string, req: NodeJS.Require) => void;
// Tests only: the bodies of functions of (path, require), run before each listing and before each file's lstat.
const testHook = data.testHook === undefined ? undefined : (new Function('path', 'require', data.testHook) as Hook);
const testEntryHook = data.testEntryHook === undefined ? undefined : (new Function('path', 'require', data.testEntryHook) as Hook);

const moved = (): void => void Atomics.add(flags, PROGRESS, 1);

const observer: CallObserver = {
  before(c) {
    if (c.name === 'close') return;
    if (Atomics.load(flags, STOP) !== 0) throw Object.assign(new Error('stopped'), { code: 'ESTOPPED' });
    if (c.name === 'lstat') testEntryHook?.(c.args[0], require);
  },
  after: moved,
};

/**
 * The listing's steps in one native call (native/list-folder.c: the same answer, a quarter of
 * the CPU), unless it is not built or the tests' hooks must run between the steps.
 */
const native = testHook === undefined && testEntryHook === undefined ? nativeLister() : undefined;

function answer(req: ListerTask): ListerAnswer {
  if ('hash' in req) return { id: req.id, hashed: runSync(hashSteps(req.hash), nodeCalls, observer) };
  if ('read' in req) return { id: req.id, readWhole: runSync(readSteps(req.read), nodeCalls, observer) };
  testHook?.(req.path, require);
  if (native !== undefined) return { id: req.id, listing: native.listFolder(req.path, req.noFollow, flags, STOP, PROGRESS) };
  return { id: req.id, listing: runSync(listFolderSteps(req.path, req.noFollow), nodeCalls, observer) };
}

function answerOrError(req: ListerTask): ListerAnswer {
  try {
    return answer(req);
  } catch (err) {
    return { id: req.id, error: { code: errorCode(err), message: err instanceof Error ? err.message : String(err), step: (err as { step?: string }).step } };
  } finally {
    moved();
  }
}

function post(a: ListerAnswer): void {
  if ('listing' in a) parentPort?.postMessage(a, [a.listing.types.buffer as ArrayBuffer, a.listing.stats.buffer as ArrayBuffer]);
  else if ('readWhole' in a && a.readWhole.bytes !== undefined) parentPort?.postMessage(a, [a.readWhole.bytes.buffer as ArrayBuffer]);
  else if ('hashed' in a && a.hashed.bytes !== undefined) parentPort?.postMessage(a, [a.hashed.bytes.buffer as ArrayBuffer]);
  else parentPort?.postMessage(a);
}

// BUSY is set before STOP is read: a main thread that sets STOP and then reads BUSY 0 knows
// this worker lists nothing more. The worker ends itself (never terminated from outside: a
// termination skips the finally below and would leave BUSY set for good). A message's
// requests run in order, each answered as soon as it is done (one blocked in the kernel holds
// no other's answer); once STOP is set, the rest are not run.
parentPort?.on('message', (msg: ListerMessage) => {
  Atomics.store(flags, BUSY, 1);
  const tasks = 'stop' in msg ? [] : msg;
  let stop = 'stop' in msg;
  try {
    for (const req of tasks) {
      stop = Atomics.load(flags, STOP) !== 0;
      if (stop) break;
      post(answerOrError(req));
    }
  } finally {
    Atomics.store(flags, BUSY, 0);
    Atomics.notify(flags, BUSY);
  }
  if (stop) process.exit(0);
});

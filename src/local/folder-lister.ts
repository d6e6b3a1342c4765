/**
 * Folders listed, and their files `lstat`ed, in worker threads (`LocalFs.listFolder` of
 * the real disk): a worker lists a folder with synchronous calls and answers once per
 * folder with the names and the numbers packed in typed arrays (folder-listing.ts), handed
 * over without a copy, so the main thread's event loop never waits on the filesystem. The
 * worker (lister-worker.ts) runs the steps every filesystem runs (list-steps.ts, and
 * hash-steps.ts for the small files hash.ts hashes and fs.ts opens for an upload) with
 * node:fs's synchronous calls.
 *
 * A hung filesystem (a dead network mount) blocks the worker in a system call, never the
 * main thread. A caller tells hung from slow by the listing's `progress` (a count the worker
 * bumps in shared memory after the folder's read and each file's `lstat`: a large folder on
 * a slow share keeps moving, a hung one does not), not by how long the whole listing takes.
 * Then:
 * - a request waiting on it rejects as soon as its `signal` aborts (a stopping walk);
 * - new requests go to another worker once that one has neither answered nor moved on for
 *   `stuckMs` (another mapping's walk is not held up; a long listing that moves keeps its
 *   worker), at most `maxWorkers` in all;
 * - nothing can interrupt a thread inside a system call: neither `close()` (which asks the
 *   worker to end) nor `Worker.terminate()` (V8 stops its JavaScript only once the call
 *   returns: on a hard NFS mount when the server answers, or never). And Node joins every
 *   worker thread when the process ends, so such a worker would keep a stopping daemon from
 *   exiting: at exit (see `onExit`), a worker still inside a listing after a short wait
 *   ends the process with a signal instead (SIGTERM's default action after a clean stop,
 *   SIGKILL otherwise), as it would have ended without workers (the kernel kills a thread
 *   waiting in a killable sleep, as NFS waits are).
 *
 * A worker idle for `idleMs` ends (a daemon between passes holds none); the next listing
 * starts one again (~30 ms).
 */
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { realClock, type Clock, type TimerHandle } from '../time/clock.js';
import type { FolderListing, ListingProgress } from './folder-listing.js';
import type { HashRequest, OpenRequest, RawHash, RawRead } from './hash-steps.js';

/**
 * Shared with each worker (Int32Array): [BUSY] 1 while it works, [STOP] 1 once it must
 * stop, [PROGRESS] a count it bumps as it moves on (a system call made, a request
 * answered): what a caller's ListingProgress reads.
 */
export const BUSY = 0;
export const STOP = 1;
export const PROGRESS = 2;
export const FLAGS = 3;

type Work = { path: string; noFollow: boolean } | { hash: HashRequest } | { read: OpenRequest };

export type ListerTask = Work & { id: number };

/**
 * What crosses to a worker in one message: the requests made in one turn of the event loop
 * (a folder's hashes, an upload batch's reads), or a stop. One message per turn, not per
 * file: a `postMessage` is a copy, a wake-up of the worker and a system call. Its answers
 * come one by one (ListerAnswer), each as soon as it is ready.
 */
export type ListerMessage = ListerTask[] | { stop: true };

export type ListerAnswer = { id: number; listing: FolderListing } | { id: number; hashed: RawHash } | { id: number; readWhole: RawRead } | { id: number; error: { code: string; message: string; step?: string | undefined } };

/** The worker's module: the built lister-worker.js beside this file (from the TypeScript sources, the build's). */
function workerUrl(): URL {
  const here = import.meta.url;
  return here.endsWith('.ts') ? new URL('../../dist/src/local/lister-worker.js', here) : new URL('./lister-worker.js', here);
}

export interface FolderListerOptions {
  /** Workers used at once when several folders wait. Default: 2, or 1 on a machine of 2 cores or fewer. */
  workers?: number | undefined;
  /** Workers in all, counting those stuck in the kernel. Default workers + 4. */
  maxWorkers?: number | undefined;
  /** A worker idle this long ends. Default 10 s. */
  idleMs?: number | undefined;
  /**
   * A worker that has neither answered nor moved on (its PROGRESS count) for this long while
   * it has requests is left alone. Default 30 s.
   */
  stuckMs?: number | undefined;
  clock?: Clock | undefined;
  /**
   * Tests only: the body of a function of `path` and `require` (of Node's own modules), run
   * in the worker before each listing (to make one block in a system call, as on a hung mount).
   */
  testHook?: string | undefined;
  /** Tests only: likewise, run before each file's `lstat` in a listing, with the file's path. */
  testEntryHook?: string | undefined;
}

type Answer = FolderListing | RawHash | RawRead;

interface Pending {
  resolve(answer: Answer): void;
  reject(error: unknown): void;
  /** The caller's signal, and the listener to take off it once the request is settled. */
  signal?: AbortSignal | undefined;
  onAbort?: (() => void) | undefined;
}

/** Takes a settled request's listener off its caller's signal. */
function unhook(p: Pending): void {
  if (p.onAbort !== undefined) p.signal?.removeEventListener('abort', p.onAbort);
}

interface ListerWorker {
  worker: Worker;
  flags: Int32Array;
  pending: Map<number, Pending>;
  /**
   * When it last answered, was handed work while idle, or (at the latest) moved on, as
   * far as `pick` can tell from its PROGRESS count: `count` as last looked at, at `countAt`.
   */
  lastProgress: number;
  count: number;
  countAt: number;
  idleTimer: TimerHandle | undefined;
  /** Ended, ending, or failed: takes no more requests. */
  retired: boolean;
  /** Requests of this turn of the event loop, posted together at its end (flush()). */
  outbox: ListerTask[];
}

/** Workers not yet exited, of every lister: looked at when the process exits. */
const live = new Set<ListerWorker>();
let exitHookInstalled = false;

/** How long the process's exit waits for a worker inside a listing before it ends it by a signal. */
const EXIT_WAIT_MS = 2000;

export class FolderLister {
  private readonly workers: ListerWorker[] = [];
  private readonly size: number;
  private readonly maxWorkers: number;
  private readonly idleMs: number;
  private readonly stuckMs: number;
  private readonly clock: Clock;
  private readonly testHook: string | undefined;
  private readonly testEntryHook: string | undefined;
  private nextId = 1;
  private closed = false;

  constructor(opts: FolderListerOptions = {}) {
    this.size = Math.max(1, opts.workers ?? (availableParallelism() > 2 ? 2 : 1));
    this.maxWorkers = Math.max(this.size, opts.maxWorkers ?? this.size + 4);
    this.idleMs = opts.idleMs ?? 10_000;
    this.stuckMs = opts.stuckMs ?? 30_000;
    this.clock = opts.clock ?? realClock;
    this.testHook = opts.testHook;
    this.testEntryHook = opts.testEntryHook;
  }

  /** Workers running (stuck ones included). */
  get workerCount(): number {
    return this.workers.length;
  }

  /** A folder's listing (LocalFs.listFolder); `progress` follows the worker that holds it. */
  list(path: string, opts: { noFollow?: boolean | undefined; signal?: AbortSignal | undefined; progress?: ListingProgress | undefined } = {}): Promise<FolderListing> {
    return this.request({ path, noFollow: opts.noFollow === true }, opts.signal, opts.progress) as Promise<FolderListing>;
  }

  /** One file hashed with synchronous calls (hash.ts decides what the facts mean). */
  hash(req: HashRequest, signal?: AbortSignal | undefined): Promise<RawHash> {
    return this.request({ hash: req }, signal) as Promise<RawHash>;
  }

  /** One small file opened, checked and read whole with synchronous calls (its bytes handed over without a copy). */
  read(req: OpenRequest): Promise<RawRead> {
    return this.request({ read: req }, undefined) as Promise<RawRead>;
  }

  private request(message: Work, signal: AbortSignal | undefined, progress?: ListingProgress | undefined): Promise<Answer> {
    if (this.closed) return Promise.reject(listerClosed());
    if (signal?.aborted) return Promise.reject(signal.reason);
    const w = this.pick();
    // A worker runs its requests one after another: its count is this request's progress,
    // or that of the queue before it.
    progress?.follow(() => Atomics.load(w.flags, PROGRESS));
    const id = this.nextId++;
    return new Promise<Answer>((resolve, reject) => {
      const p: Pending = { resolve, reject };
      if (signal !== undefined) {
        p.signal = signal;
        p.onAbort = (): void => {
          if (w.pending.delete(id)) {
            this.settled(w);
            reject(signal.reason);
          }
        };
        signal.addEventListener('abort', p.onAbort, { once: true });
      }
      w.pending.set(id, p);
      if (w.pending.size === 1) {
        w.lastProgress = this.clock.monotonic();
        if (w.idleTimer !== undefined) this.clock.clearTimeout(w.idleTimer);
        w.idleTimer = undefined;
        // Only a worker with work keeps the process alive.
        w.worker.ref();
      }
      if (w.outbox.push({ id, ...message }) === 1) setImmediate(() => this.flush(w));
    });
  }

  /** Posts a worker's outbox in one message (none to a retired worker: its requests rejected). */
  private flush(w: ListerWorker): void {
    const batch = w.outbox;
    w.outbox = [];
    if (!w.retired && batch.length > 0) w.worker.postMessage(batch satisfies ListerMessage);
  }

  /** Ends every worker; requests waiting reject. Does not wait (see the module comment). */
  close(): void {
    this.closed = true;
    for (const w of [...this.workers]) this.retire(w, listerClosed());
  }

  /** The least busy worker not stuck; a new one while fewer than `size` are busy, or all are stuck. */
  private pick(): ListerWorker {
    const now = this.clock.monotonic();
    let best: ListerWorker | undefined;
    let usable = 0;
    for (const w of this.workers) {
      const count = Atomics.load(w.flags, PROGRESS);
      if (count !== w.count) {
        // It moved since the last look, at some time after it: that time counts, never a
        // later one (a worker blocked since is not taken for one that moves).
        w.lastProgress = Math.max(w.lastProgress, w.countAt);
        w.count = count;
      }
      w.countAt = now;
      if (w.pending.size > 0 && now - w.lastProgress > this.stuckMs) continue;
      usable++;
      if (best === undefined || w.pending.size < best.pending.size) best = w;
    }
    if ((best === undefined || (best.pending.size > 0 && usable < this.size)) && this.workers.length < this.maxWorkers) return this.spawn();
    // All stuck and no room for another: wait behind the one that answered last.
    return best ?? this.workers.reduce((a, b) => (b.lastProgress > a.lastProgress ? b : a));
  }

  private spawn(): ListerWorker {
    installExitHook();
    const flags = new Int32Array(new SharedArrayBuffer(FLAGS * 4));
    // None of the process's flags: the worker needs none, and a worker refuses V8's own
    // (--heap-growing-percent, --jitless, --trace-gc), which would make every folder unreadable.
    const worker = new Worker(workerUrl(), { execArgv: [], workerData: { flags: flags.buffer, testHook: this.testHook, testEntryHook: this.testEntryHook }, stdout: false, stderr: false });
    worker.unref();
    const now = this.clock.monotonic();
    const w: ListerWorker = { worker, flags, pending: new Map(), lastProgress: now, count: 0, countAt: now, idleTimer: undefined, retired: false, outbox: [] };
    this.workers.push(w);
    live.add(w);
    worker.on('message', (a: ListerAnswer) => {
      const p = w.pending.get(a.id);
      w.lastProgress = this.clock.monotonic();
      if (!p) return; // abandoned (its signal aborted)
      w.pending.delete(a.id);
      this.settled(w);
      unhook(p);
      if ('error' in a) p.reject(Object.assign(new Error(a.error.message), { code: a.error.code, step: a.error.step }));
      else p.resolve('hashed' in a ? a.hashed : 'readWhole' in a ? a.readWhole : a.listing);
    });
    worker.on('error', (e) => this.retire(w, Object.assign(e, { code: 'EWORKER' })));
    worker.on('exit', () => {
      live.delete(w);
      this.retire(w, Object.assign(new Error('the folder lister ended'), { code: 'EWORKER' }));
    });
    return w;
  }

  /** After a request is answered or abandoned: an idle worker ends after idleMs. */
  private settled(w: ListerWorker): void {
    if (w.pending.size > 0 || w.retired) return;
    w.worker.unref();
    if (w.idleTimer !== undefined) this.clock.clearTimeout(w.idleTimer);
    w.idleTimer = this.clock.setTimeout(() => {
      w.idleTimer = undefined;
      if (w.pending.size === 0) this.retire(w, undefined);
    }, this.idleMs);
  }

  private retire(w: ListerWorker, error: unknown): void {
    const i = this.workers.indexOf(w);
    if (i >= 0) this.workers.splice(i, 1);
    if (w.idleTimer !== undefined) this.clock.clearTimeout(w.idleTimer);
    w.idleTimer = undefined;
    const pending = [...w.pending.values()];
    w.pending.clear();
    for (const p of pending) {
      unhook(p);
      p.reject(error);
    }
    if (w.retired) return;
    w.retired = true;
    // The worker stops within its current listing (it looks at STOP between entries) and
    // ends at its next message: at once when idle, when the call returns if it is blocked
    // in a system call (module comment). Nobody waits for it; it keeps nothing alive.
    Atomics.store(w.flags, STOP, 1);
    try {
      w.worker.postMessage({ stop: true } satisfies ListerMessage);
    } catch {
      // already gone
    }
    w.worker.unref();
  }
}

const listerClosed = (): Error => Object.assign(new Error('the folder lister is closed'), { code: 'ESTOPPED' });

let shared: FolderLister | undefined;

/** The process's lister (nodeFs.listFolder). */
export function sharedFolderLister(): FolderLister {
  shared ??= new FolderLister();
  return shared;
}

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', onExit);
}

/**
 * When the process exits, Node joins every worker thread: a worker blocked in a system
 * call would hold the exit forever. Each is asked to stop; one still inside a listing
 * after EXIT_WAIT_MS ends the process by a signal.
 */
function onExit(code: number): void {
  for (const w of live) Atomics.store(w.flags, STOP, 1);
  // A bare monotonic read on purpose: the exit hook runs synchronously, after every clock's timers.
  const deadline = performance.now() + EXIT_WAIT_MS;
  for (const w of live) {
    while (Atomics.load(w.flags, BUSY) === 1) {
      const left = deadline - performance.now();
      if (left <= 0) return endStuck(code);
      Atomics.wait(w.flags, BUSY, 1, left);
    }
  }
}

function endStuck(code: number): void {
  try {
    process.stderr.write('dssync: a folder listing or a file read is still blocked in the kernel (a hung mount?); ending the process without waiting for it\n');
  } catch {
    // nothing more to say
  }
  if (code === 0) {
    // What SIGTERM does without a handler: a clean stop for a service manager.
    process.removeAllListeners('SIGTERM');
    process.kill(process.pid, 'SIGTERM');
  } else {
    process.kill(process.pid, 'SIGKILL');
  }
}

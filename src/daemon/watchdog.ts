/**
 * The watchdog: a hung event loop ends the process, so that systemd restarts it.
 *
 * The main thread bumps a counter every second (an unref'd timer: it keeps nothing alive).
 * Another thread, which keeps running when the main one is stuck in a synchronous call, looks
 * at the counter every half second; when it has not moved for `timeoutSeconds`, it writes one
 * fatal JSON log line straight to stdout (fd 1: the main thread's logger cannot run) and sends
 * SIGKILL to the process. That thread is dssync's own native one (native/watchdog.c): a plain
 * thread, ~9 MB less than a worker's JavaScript isolate. Where that module is not there
 * (src/native.ts), it is a worker thread running the same loop in JavaScript on its own
 * event loop. SIGKILL, because a stuck main thread never runs a SIGTERM handler, and neither
 * thread can call process.exit() for the whole process. The exit status is therefore "killed
 * by signal 9" (a shell shows 137; systemd shows code=killed, status=9/KILL), which
 * `Restart=on-failure` restarts; the state file is written atomically and open intents are
 * settled at the next start, so this is as safe as any crash.
 *
 * Why not `WatchdogSec=` with sd_notify: Node cannot send a datagram to the unix socket in
 * NOTIFY_SOCKET without a native addon, and spawning `systemd-notify` every few seconds
 * needs NotifyAccess=all and races with systemd's attribution of the message to the unit.
 * The worker gives the same guarantee everywhere (under systemd, in a container, in tests).
 * See docs/security.md.
 */
import { Worker } from 'node:worker_threads';
import { loadNativeModule } from '../native.js';

export const DEFAULT_WATCHDOG_SECONDS = 60;

export interface WatchdogOptions {
  /** Silence of the main thread after which the process is killed. */
  timeoutSeconds: number;
}

export interface RunningWatchdog {
  /** 'thread': dssync's native thread; 'worker': a worker thread (the native module is not there). */
  kind: 'thread' | 'worker';
  stop(): Promise<void>;
}

/** native/watchdog.c's functions. */
interface NativeWatchdog {
  start(timeoutSeconds: number, pid: number): unknown;
  beat(handle: unknown): void;
  stop(handle: unknown): void;
}

/**
 * The timeout from DSSYNC_WATCHDOG_SECONDS (default 60; 0 turns the watchdog off). A value
 * that is not a number of seconds keeps the default, with a problem to log (a typo must not
 * turn the watchdog off, nor stop the daemon).
 */
export function watchdogSecondsFromEnv(env: NodeJS.ProcessEnv = process.env): { seconds: number; problem?: string } {
  const raw = env.DSSYNC_WATCHDOG_SECONDS;
  if (raw === undefined || raw.trim() === '') return { seconds: DEFAULT_WATCHDOG_SECONDS };
  const n = Number(raw);
  if (!Number.isFinite(n) || n < 0) {
    return {
      seconds: DEFAULT_WATCHDOG_SECONDS,
      problem: `DSSYNC_WATCHDOG_SECONDS must be a number of seconds (0 turns the watchdog off), not ${JSON.stringify(raw)}; using ${DEFAULT_WATCHDOG_SECONDS}`,
    };
  }
  return { seconds: n };
}

// Plain JavaScript, evaluated in the worker: no module to locate at run time (the same code
// runs from dist/ and under vitest). Its bare clock reads are on purpose: it watches the main
// thread, whose clock it cannot share.
const WORKER_SOURCE = `
const { workerData } = require('node:worker_threads');
const { writeSync } = require('node:fs');
const beat = new Int32Array(workerData.buffer);
let last = Atomics.load(beat, 0);
let lastChange = performance.now();
setInterval(() => {
  const now = performance.now();
  const value = Atomics.load(beat, 0);
  if (value !== last) {
    last = value;
    lastChange = now;
    return;
  }
  if (now - lastChange < workerData.timeoutMs) return;
  const line = JSON.stringify({
    level: 60,
    time: new Date().toISOString(),
    pid: workerData.pid,
    msg: 'watchdog: the event loop has not answered for ' + Math.round((now - lastChange) / 1000) +
      ' s (limit ' + workerData.timeoutMs / 1000 + ' s); ending the process with SIGKILL so that it is restarted',
  });
  try { writeSync(1, line + '\\n'); } catch {}
  process.kill(workerData.pid, 'SIGKILL');
}, 500);
`;

/** Starts the watchdog; undefined when it is turned off (timeout 0). */
export function startWatchdog(o: WatchdogOptions): RunningWatchdog | undefined {
  if (!(o.timeoutSeconds > 0)) return undefined;
  const loaded = loadNativeModule<NativeWatchdog>('watchdog');
  if ('module' in loaded) {
    try {
      return startThread(loaded.module, o.timeoutSeconds);
    } catch {
      // A thread that cannot start (EAGAIN): the worker watches instead.
    }
  }
  return startWorker(o.timeoutSeconds);
}

function startThread(native: NativeWatchdog, timeoutSeconds: number): RunningWatchdog {
  const handle = native.start(timeoutSeconds, process.pid);
  const timer = setInterval(() => native.beat(handle), 1000);
  timer.unref();
  return {
    kind: 'thread',
    stop() {
      clearInterval(timer);
      native.stop(handle);
      return Promise.resolve();
    },
  };
}

function startWorker(timeoutSeconds: number): RunningWatchdog {
  const buffer = new SharedArrayBuffer(4);
  const beat = new Int32Array(buffer);
  const timer = setInterval(() => Atomics.add(beat, 0, 1), 1000);
  timer.unref();
  const worker = new Worker(WORKER_SOURCE, {
    eval: true,
    workerData: { buffer, timeoutMs: timeoutSeconds * 1000, pid: process.pid },
    // Small: it holds one timer.
    resourceLimits: { maxOldGenerationSizeMb: 8, maxYoungGenerationSizeMb: 2 },
    stdout: false,
    stderr: false,
  });
  worker.unref();
  // A watchdog that fails to start must not take the daemon down with it.
  worker.on('error', () => undefined);
  return {
    kind: 'worker',
    async stop() {
      clearInterval(timer);
      await worker.terminate().catch(() => undefined);
    },
  };
}

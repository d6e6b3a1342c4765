/**
 * Hooks for tests that need a real `dssync run`/`sync` process to stop at an exact point
 * (the window between hashing a file and uploading it, where an attacker would swap it),
 * or to misbehave on purpose (a blocked main thread, for the watchdog). TEST-ONLY: they
 * are read from DSSYNC_TEST_HOOKS and nothing else; without that variable every function
 * here returns at once and does nothing. docs/security.md lists them.
 *
 * DSSYNC_TEST_HOOKS is a comma-separated list of entries:
 * - `pause:POINT=DIR` — at POINT (before-hash, upload-open, upload-send, lease-claimed, data-source-naming) the process writes
 *   DIR/POINT.N.paused (N counts from 0; its content is what is about to be read or sent,
 *   as JSON) and waits, without blocking anything else, until DIR/POINT.N.resume exists
 *   (or 2 minutes have passed);
 * - `block-main-thread-after-ms=MS` — MS milliseconds after the daemon started, the main
 *   thread blocks for good (a hung event loop that only the watchdog can end);
 * - `wall-offset-file=FILE` — the process's wall clock (Date.now) reads FILE's number of
 *   milliseconds ahead (negative: behind), read again every 50 ms: chrony stepping this
 *   process's clock, and no other's (the monotonic clock is not moved). Once a new offset
 *   applies, FILE.applied holds it (a test waits for that, not for time);
 * - `lease-settle-ms=MS` — the lease's settle wait is MS ms and a claim is trusted only when
 *   written within two thirds of it (the lease's rule, settle > claim latency, kept at a
 *   scale where a claim on the same machine takes milliseconds): the test suite's hundreds
 *   of claims do not each wait 3 s. Tests of the lease itself run with the real timing.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { access, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/** A pause ends by itself after this long. */
const PAUSE_LIMIT_MS = 120_000;

export type PausePoint = 'before-hash' | 'upload-open' | 'upload-send' | 'lease-claimed' | 'data-source-naming';

interface Hooks {
  pauses: Map<string, string>;
  blockMainThreadAfterMs: number | undefined;
  wallOffsetFile: string | undefined;
  leaseSettleMs: number | undefined;
}

let parsed: Hooks | undefined;
const counters = new Map<string, number>();

function hooks(): Hooks {
  if (parsed) return parsed;
  const h: Hooks = { pauses: new Map(), blockMainThreadAfterMs: undefined, wallOffsetFile: undefined, leaseSettleMs: undefined };
  for (const entry of (process.env.DSSYNC_TEST_HOOKS ?? '').split(',')) {
    const eq = entry.indexOf('=');
    if (eq < 0) continue;
    const key = entry.slice(0, eq).trim();
    const value = entry.slice(eq + 1).trim();
    if (key.startsWith('pause:')) h.pauses.set(key.slice('pause:'.length), value);
    else if (key === 'block-main-thread-after-ms' && Number.isFinite(Number(value))) h.blockMainThreadAfterMs = Number(value);
    else if (key === 'wall-offset-file') h.wallOffsetFile = value;
    else if (key === 'lease-settle-ms' && Number(value) > 0) h.leaseSettleMs = Number(value);
  }
  parsed = h;
  return h;
}

/** Test-only: waits at `point` when a test asked for it; otherwise returns at once. */
export async function testPause(point: PausePoint, detail: unknown): Promise<void> {
  if (process.env.DSSYNC_TEST_HOOKS === undefined) return;
  const dir = hooks().pauses.get(point);
  if (dir === undefined) return;
  const n = counters.get(point) ?? 0;
  counters.set(point, n + 1);
  // Written aside then renamed: a test never reads half a file.
  const paused = join(dir, `${point}.${n}.paused`);
  await writeFile(`${paused}.tmp`, JSON.stringify(detail));
  await rename(`${paused}.tmp`, paused);
  const resume = join(dir, `${point}.${n}.resume`);
  // A test that died without resuming must not leave the process paused for ever.
  const giveUpAt = Date.now() + PAUSE_LIMIT_MS;
  while (Date.now() < giveUpAt) {
    try {
      await access(resume);
      return;
    } catch {
      await new Promise((r) => setTimeout(r, 20));
    }
  }
}

/** Test-only: the lease's settle wait a test asked for (see above; engine/lease.ts leaseTimingSettling), or undefined. */
export function testLeaseSettleMs(): number | undefined {
  if (process.env.DSSYNC_TEST_HOOKS === undefined) return undefined;
  return hooks().leaseSettleMs;
}

/** Test-only: blocks the main thread for good after the delay a test asked for. */
export function testBlockMainThread(): void {
  if (process.env.DSSYNC_TEST_HOOKS === undefined) return;
  const ms = hooks().blockMainThreadAfterMs;
  if (ms === undefined) return;
  setTimeout(() => {
    // Atomics.wait on a value nobody changes: the event loop stops for good, as a hung
    // synchronous call would stop it.
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);
  }, ms);
}

/** Test-only: offsets Date.now by the number in the file a test named (see above). */
export function testWallOffset(): void {
  if (process.env.DSSYNC_TEST_HOOKS === undefined) return;
  const file = hooks().wallOffsetFile;
  if (file === undefined) return;
  const realNow = Date.now.bind(Date);
  let offset = 0;
  const read = (): void => {
    try {
      const n = Number(readFileSync(file, 'utf8').trim());
      if (Number.isFinite(n) && n !== offset) {
        offset = n;
        writeFileSync(`${file}.applied`, String(n));
      }
    } catch {
      // No file yet: no offset.
    }
  };
  read();
  Date.now = () => realNow() + offset;
  setInterval(read, 50).unref();
}

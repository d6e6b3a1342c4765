/**
 * daemon/reclaim.ts in a real process: after the allocations of a pass, and more of them
 * for a few seconds after it (as the folder watch's set-up makes), the Reclaimer's
 * collections give back the young generation V8 grew for them (32 MB resident at rest
 * otherwise), not only the pass's objects.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { requireBuiltBinary } from '../cli/run-cli.js';

const dist = (path: string): string => JSON.stringify(fileURLToPath(new URL(`../../../dist/src/${path}`, import.meta.url)));

/**
 * A process that allocates as a pass does, then reclaims while it goes on allocating for
 * 6.5 s; prints the young generation's size after the pass and once the Reclaimer is done.
 */
const SCRIPT = `
  import { Reclaimer, SHRINK_TRIES } from ${dist('daemon/reclaim.js')};
  import { collectGarbage } from ${dist('gc.js')};
  import { realClock } from ${dist('time/clock.js')};
  import { getHeapSpaceStatistics } from 'node:v8';
  const young = () => getHeapSpaceStatistics().find((s) => s.space_name === 'new_space').space_size;
  let collections = 0;
  // The clock's timers keep no process alive (a daemon's do not); this one does until the report.
  const alive = setInterval(() => undefined, 1000);
  const logger = { debug() {}, warn(o, msg) { process.stderr.write(msg + '\\n'); } };
  const collect = () => {
    const done = collectGarbage();
    const last = ++collections === 1 + SHRINK_TRIES;
    if (collections >= 2) setImmediate(() => {
      if (!last && young() > 2 * 1024 * 1024) return;
      process.stdout.write(JSON.stringify({ afterPass, atRest: young() }));
      clearInterval(alive);
    });
    return done;
  };
  // Made at start, as the daemon's: it takes the young generation's size then.
  const reclaimer = new Reclaimer({ clock: realClock, logger, collect });
  let held = [];
  for (let i = 0; i < 3e6; i++) {
    held.push({ n: i, name: 'doc-' + i });
    if (held.length > 200000) held = [];
  }
  held = [];
  const afterPass = young();
  const churnUntil = performance.now() + 6500;
  const churn = setInterval(() => {
    if (performance.now() > churnUntil) clearInterval(churn);
    for (let i = 0; i < 20000; i++) held.push({ n: i, name: 'doc-' + i });
    held = [];
  }, 10);
  reclaimer.afterFullPass();
`;

function run(): Promise<{ afterPass: number; atRest: number }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', SCRIPT], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 && out ? resolve(JSON.parse(out) as { afterPass: number; atRest: number }) : reject(new Error(`exit ${code}: ${err}`))));
  });
}

describe('Reclaimer in a real process', () => {
  it('gives back the young generation grown by a pass', async () => {
    requireBuiltBinary();
    const { afterPass, atRest } = await run();
    const MB = 1024 * 1024;
    // The allocations grew it to its maximum (16 MB a semi-space on 64 bits)...
    expect(afterPass).toBeGreaterThan(8 * MB);
    // ...and the second collection shrinks it back to its first size (1 MB).
    expect(atRest).toBeLessThanOrEqual(2 * MB);
  }, 60_000);
});

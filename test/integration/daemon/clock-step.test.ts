/**
 * Issue 23, defect 7: chrony stepping the wall clock of a running daemon (an hour back at a
 * VM's boot). The daemon's wall clock is stepped through the test hook `wall-offset-file`
 * (src/test-hooks.ts: Date.now of that process only; its monotonic clock and the host's are
 * untouched). A file written just before the step must still be mirrored after its quiet
 * window: deadlines run on the monotonic clock. The step must land inside the window; where
 * it did not (a slow machine), the case runs again with a longer window.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { daemonTests } from '../../helpers/daemon-test.js';
import { docAt, waitConverged, waitFor } from './daemon-process.js';

const daemons = daemonTests();
let hookDir = '';
beforeAll(async () => {
  hookDir = await mkdtemp(join(tmpdir(), 'dssync-clock-'));
});
afterAll(async () => {
  await rm(hookDir, { recursive: true, force: true });
});

/** Quiet windows tried in turn: the step must land inside one, however slow the machine. */
const WINDOWS_MS = [3_000, 12_000, 48_000];

describe('dssync run: the wall clock steps', () => {
  for (const stepMs of [-3_600_000, 3_600_000]) {
    it(`a file written just before a ${stepMs < 0 ? 'backward' : 'forward'} step of 1 h is mirrored after its quiet window`, { timeout: 240_000 }, async () => {
      for (const debounceMs of WINDOWS_MS) {
        const offsetFile = join(hookDir, `offset${stepMs}-${debounceMs}`);
        const { w, d } = await daemons.start({
          config: { debounceMs },
          files: { 'a.txt': 'alpha' },
          env: { DSSYNC_TEST_HOOKS: `wall-offset-file=${offsetFile}` },
        });
        await w.write('b.txt', 'bravo, written just before the step');
        await waitFor(async () => (await d.status()).mappings.every((m) => m.pending > 0), { timeout: 10_000, what: 'the write to be pending' });
        await writeFile(offsetFile, String(stepMs));
        await waitFor(() => readFile(`${offsetFile}.applied`, 'utf8').then((s) => s === String(stepMs), () => false), { timeout: 10_000, what: 'the step to apply' });
        // A step after the window proves nothing: this machine needs a longer window.
        if (!(await d.status()).mappings.every((m) => m.pending > 0)) {
          await d.kill();
          await w.close();
          continue;
        }
        // Before the fix a backward step held the file for the hour (the quiet window counted on Date.now).
        await waitConverged(w, 'the file written before the step', 30_000 + debounceMs);
        expect(docAt(w, 'b.txt')).toHaveLength(1);
        return;
      }
      throw new Error(`the step never landed inside the quiet window (tried ${WINDOWS_MS.join(', ')} ms)`);
    });
  }
});

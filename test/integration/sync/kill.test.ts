/**
 * kill -9 of a real `dssync sync` process at arbitrary moments, with local changes between
 * the runs: the next pass must converge with nothing lost, duplicated, orphaned or stale
 * (DESIGN §4). Where the kills land varies from run to run; the assertion holds for all.
 */
import { spawn } from 'node:child_process';
import { rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { CONVERGED, checkConvergence, createWorkspace, type Workspace } from '../../helpers/mirror-check.js';
import { BIN, requireBuiltBinary } from '../cli/run-cli.js';

let ws: Workspace | undefined;
beforeAll(() => requireBuiltBinary());
afterEach(async () => {
  await ws?.close();
  ws = undefined;
});

/** A small deterministic generator, so a failure can be replayed from its seed. */
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

describe('kill -9 during sync', () => {
  it('converges after repeated kills with local churn in between', { timeout: 180_000 }, async () => {
    // A fixed seed (DSSYNC_TEST_SEED to try another): the same kills every run.
    const seed = Number(process.env.DSSYNC_TEST_SEED ?? 42);
    const random = rng(seed);
    ws = await createWorkspace({
      emulator: { faults: { latencyMs: 4 } },
      config: { queue: { requestsPerSecond: 500, concurrency: 4, uploadBatchFiles: 5 } },
    });
    let next = 0;
    const live: string[] = [];
    const add = async (n: number) => {
      for (let i = 0; i < n; i++) {
        const p = `d${next % 7}/f${next}.txt`;
        await ws!.write(p, `file ${next} ${random()}`);
        live.push(p);
        next++;
      }
    };
    await add(150);

    let kills = 0;
    for (let round = 0; round < 6; round++) {
      const child = spawn(process.execPath, [BIN, 'sync', '--config', ws.configPath], {
        env: { PATH: process.env.PATH ?? '', ...ws.env },
        stdio: 'ignore',
      });
      let done = false;
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve())).then(() => void (done = true));
      // Killed after a number of the service's requests drawn from the seed (issue 27.9: not
      // after a random sleep, which killed at a different point on a busy machine), or not
      // at all when the pass ends first.
      const killAt = ws.emu.stats().requests + 3 + Math.floor(random() * 40);
      while (!done && ws.emu.stats().requests < killAt) await new Promise((r) => setTimeout(r, 5));
      if (child.exitCode === null) {
        child.kill('SIGKILL');
        kills++;
      }
      await exited;

      // Churn while it is down: adds, edits, renames, deletes.
      await add(10);
      for (let i = 0; i < 5 && live.length > 0; i++) {
        const idx = Math.floor(random() * live.length);
        const p = live[idx]!;
        const op = random();
        if (op < 0.4) await ws.write(p, `edited ${random()}`);
        else if (op < 0.7) {
          const to = p.replace('.txt', `-r${round}.txt`);
          await rename(join(ws.share, p), join(ws.share, to));
          live[idx] = to;
        } else {
          await rm(join(ws.share, p));
          live.splice(idx, 1);
        }
      }
    }

    let code: number | null = 1;
    for (let i = 0; i < 3 && code !== 0; i++) code = (await ws.sync()).code;
    expect(code, `seed ${seed}`).toBe(0);
    expect(kills, `seed ${seed}`).toBeGreaterThan(0);
    if (process.env.DSSYNC_TEST_VERBOSE) console.log(`kills ${kills}, seed ${seed}`);
    expect(await checkConvergence(ws), `seed ${seed}`).toEqual(CONVERGED);
  });
});

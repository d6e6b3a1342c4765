#!/usr/bin/env node
/**
 * `npm run sim -- --runs N --seed S [--path P --replay R] [--max-commands M] [--shrink 1]`: the
 * simulation (test/sim/) with these settings, through vitest. The flags map to SIM_RUNS,
 * SIM_SEED, SIM_PATH, SIM_REPLAY, SIM_MAX_COMMANDS and SIM_SHRINK (which still work on their own). A
 * failure prints the seed, the path and the shrunk history ending in /*replayPath="R"*\/:
 * `npm run sim -- --seed S --path P --replay R` replays exactly that history.
 */
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

const FLAGS = { '--runs': 'SIM_RUNS', '--seed': 'SIM_SEED', '--path': 'SIM_PATH', '--replay': 'SIM_REPLAY', '--max-commands': 'SIM_MAX_COMMANDS', '--shrink': 'SIM_SHRINK' };
const TEXT = new Set(['SIM_PATH', 'SIM_REPLAY']);
const env = { ...process.env };
const args = process.argv.slice(2);
for (let i = 0; i < args.length; i++) {
  const [flag, inline] = args[i].split('=', 2);
  const name = FLAGS[flag];
  if (!name) {
    console.error(`sim: unknown argument ${args[i]} (expected ${Object.keys(FLAGS).join(', ')})`);
    process.exit(2);
  }
  const value = inline ?? args[++i];
  if (value === undefined || (!TEXT.has(name) && !/^\d+$/.test(value))) {
    console.error(`sim: ${flag} needs ${TEXT.has(name) ? 'the value a failure printed' : 'a whole number'}`);
    process.exit(2);
  }
  env[name] = value;
}
const vitest = join(dirname(createRequire(import.meta.url).resolve('vitest/package.json')), 'vitest.mjs');
// The simulation runs in the slow tier (vitest.config.ts); this command runs its own budget.
env.SIM_RUNS ??= '1000';
const r = spawnSync(process.execPath, [vitest, 'run', '--project', 'slow', 'test/sim/sim.test.ts'], { stdio: 'inherit', env });
process.exit(r.status ?? 1);

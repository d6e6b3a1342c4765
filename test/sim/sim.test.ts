/**
 * The deterministic simulation (issue 9, docs/reliability.md "The simulation"): fast-check
 * generates histories of local changes, people's and another installation's actions on the
 * data source, service faults, crashes, restarts, config changes and the passing of time;
 * the REAL daemon parts of one mapping (world.ts) live through them. After each history,
 * once quiet, the invariants must hold (invariants.ts).
 *
 *   npm run sim -- --runs 100000 --seed 7      (or SIM_RUNS / SIM_SEED)
 *   npm run sim -- --seed S --path P --replay R   replays a failure exactly (R: its replayPath)
 * A failure prints the seed, the path and the shrunk history.
 */
import fc from 'fast-check';
import { describe, it } from 'vitest';
import type { NameRule } from '../../src/engine/service-names.js';
import { commands, configArb, FLAGS } from './commands.js';
import { checkInvariants } from './invariants.js';
import { World, type Totals } from './world.js';

const RUNS = Number(process.env['SIM_RUNS'] ?? 1000);
const SEED = Number(process.env['SIM_SEED'] ?? 42);
const PATH = process.env['SIM_PATH'] || undefined;
/** The commands' own replay path (the replayPath="…" printed after a counterexample). */
const REPLAY = process.env['SIM_REPLAY'] || undefined;
const MAX_COMMANDS = Number(process.env['SIM_MAX_COMMANDS'] ?? 40);
/** A long run stops at its first failure without shrinking it; SIM_SHRINK=1 replays that path and shrinks it. */
const SHRINK = process.env['SIM_SHRINK'] === '1';

const variantArb = fc.record({
  updateClears: fc.boolean(),
  paging: fc.constantFrom<'none' | 'offset' | 'cursor'>('none', 'offset', 'cursor'),
  pageSize: fc.constantFrom(2, 3),
  // The service keeps names as given (mostly), or rewrites them (a cut reaching into the upload mark's second copy: 44 bytes).
  nameRule: FLAGS.nameRules ? fc.constantFrom<NameRule | undefined>(undefined, undefined, undefined, { noExtension: true }, { suffix: ' (1)' }, { maxBytes: 44 }, { lower: true, maxBytes: 44 }) : fc.constant(undefined),
  renamesIgnored: FLAGS.nameRules ? fc.constantFrom(false, false, false, true) : fc.constant(false),
  // The daemon's first process created the data source, under its provisional name (alone, or with a replica starting beside it).
  born: fc.constantFrom<'alone' | 'raced' | undefined>(undefined, 'alone', 'raced'),
});

/** A long run says how far it got every so many histories (a stopped run still has figures). */
const PROGRESS_EVERY = 5_000;

function summary(t: Totals, t0: number): string {
  return (
    `${t.histories} histories (seed ${SEED}), ${t.commands} commands, ${t.passes} passes, ${t.crashes} crashes, ${t.restarts} restarts, ` +
    `${t.faults} faults injected, ${t.lateCommits} late commits, ${((Date.now() - t0) / 1000).toFixed(1)} s`
  );
}

/** The property every history must satisfy: once quiet, the invariants hold. */
function historyProperty(totals: Totals, t0: number, replayPath: string | undefined) {
  return fc.asyncProperty(configArb, variantArb, fc.commands(commands(), { maxCommands: MAX_COMMANDS, size: '+1', ...(replayPath ? { replayPath } : {}) }), async (config, variant, cmds) => {
    const w = new World(config, variant);
    // A file no command removes keeps the folder non-empty: an emptied folder is refused
    // as an outage on purpose (guards.ts), which would make the invariants false by design.
    w.local.write('keep.txt', 'keep');
    await w.start();
    try {
      await fc.asyncModelRun(() => ({ model: {}, real: w }), cmds);
      await checkInvariants(w);
    } finally {
      if (++totals.histories % PROGRESS_EVERY === 0) console.log(`simulation: ${summary(totals, t0)} so far, no violation`);
      totals.commands += w.commandsRun;
      totals.passes += w.passes;
      totals.crashes += w.crashes;
      totals.restarts += w.restarts;
      totals.faults += w.service.counters.faults;
      totals.lateCommits += w.service.counters.lateCommits;
    }
  });
}

const noTotals = (): Totals => ({ histories: 0, commands: 0, passes: 0, crashes: 0, restarts: 0, faults: 0, lateCommits: 0 });

describe('simulation (issue 9)', () => {
  it(`${RUNS} histories from seed ${SEED} converge and touch nobody else's documents`, async () => {
    const t0 = Date.now();
    const totals = noTotals();
    const property = historyProperty(totals, t0, REPLAY);
    try {
      await fc.assert(property, { numRuns: RUNS, seed: SEED, ...(PATH ? { path: PATH, endOnFailure: !SHRINK } : {}), verbose: 1 });
    } finally {
      const flags = Object.entries(FLAGS).filter(([, on]) => !on).map(([k]) => k);
      console.log(`simulation: ${summary(totals, t0)}${flags.length ? `; classes off: ${flags.join(', ')}` : ''}`);
    }
  }, 3_600_000);
});

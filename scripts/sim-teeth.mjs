#!/usr/bin/env node
/**
 * `npm run sim:teeth`: proves the simulation's teeth (docs/reliability.md, "The simulation").
 * For each bench/teeth/<fix>.patch (a small patch that reverts one fix of issue 9), a
 * temporary git worktree of HEAD gets the patch, and the simulation runs there with the CI
 * budget (1,000 histories, seed 42, or --runs N --seed S): the fix is proven when the
 * simulation fails. Prints a table (fix, found?, histories until the failure, the shrunk
 * history) and exits 1 when a reverted fix went unnoticed. Commit before running: the
 * worktree is HEAD. `--only name` runs the patches whose names start so (comma-separated). A patch that no
 * longer applies is reported as a failed row naming it.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const args = process.argv.slice(2);
const opt = (name, def) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : def;
};
const runs = opt('--runs', '1000');
const seed = opt('--seed', '42');
const only = opt('--only', undefined);
const repo = resolve('.');
const dir = join(repo, 'bench', 'teeth');
const patches = readdirSync(dir).filter((f) => f.endsWith('.patch') && (!only || only.split(',').some((o) => f.startsWith(o)))).sort();

const rows = [];
for (const patch of patches) {
  const name = patch.replace(/\.patch$/, '');
  const wt = mkdtempSync(join(tmpdir(), `dssync-teeth-${name}-`));
  try {
    execFileSync('git', ['worktree', 'add', '--detach', '--force', wt, 'HEAD'], { cwd: repo, stdio: 'ignore' });
    symlinkSync(join(repo, 'node_modules'), join(wt, 'node_modules'));
    // A patch that no longer applies (the code moved on) is a failed row naming it, not a
    // crash: the other patches still run and the table says which one needs re-making.
    const applied = spawnSync('git', ['apply', join(dir, patch)], { cwd: wt, encoding: 'utf8' });
    if (applied.status !== 0) {
      const why = `the patch does not apply: ${(applied.stderr.split('\n').find((l) => l.startsWith('error:')) ?? 'git apply failed').replace(/^error: /, '')}`;
      rows.push({ name, found: false, after: '-', seconds: '0.0', history: '', why, stale: true });
      console.log(`${name}: DOES NOT APPLY (${why})`);
      continue;
    }
    const t0 = Date.now();
    const r = spawnSync(process.execPath, ['scripts/sim.mjs', '--runs', runs, '--seed', seed], { cwd: wt, encoding: 'utf8', env: { ...process.env, FORCE_COLOR: '0', NO_COLOR: '1' } });
    const out = `${r.stdout}\n${r.stderr}`;
    const after = /Property failed after (\d+) tests/.exec(out)?.[1];
    const history = /Counterexample: \[.*?\},\{.*?\},(.*) \/\*replayPath/.exec(out)?.[1] ?? '';
    const why = /Caused by: \w+: ([^\n]*)/.exec(out)?.[1] ?? '';
    rows.push({ name, found: r.status !== 0 && after !== undefined, after: after ?? '-', seconds: ((Date.now() - t0) / 1000).toFixed(1), history, why });
    console.log(`${name}: ${after ? `found after ${after} histories` : 'NOT FOUND'} (${rows.at(-1).seconds} s)${history ? `\n  shrunk: ${history}\n  ${why}` : ''}`);
  } finally {
    spawnSync('git', ['worktree', 'remove', '--force', wt], { cwd: repo, stdio: 'ignore' });
    rmSync(wt, { recursive: true, force: true });
  }
}
console.log(`\n| reverted fix | found | histories until the failure (of ${runs}, seed ${seed}) | shrunk history |`);
console.log('|---|---|---|---|');
for (const r of rows) console.log(`| \`${r.name}\` | ${r.found ? 'yes' : r.stale ? '**patch does not apply**' : '**no**'} | ${r.after} | ${(r.stale ? r.why : r.history).replace(/\|/g, '\\|')} |`);
process.exit(rows.every((r) => r.found) ? 0 : 1);

/**
 * `npm run chaos`: dssync's reliability run (docs/reliability.md). Real `dssync run`
 * processes against the emulator: a kill -9 loop during a 5,000-file initial mirror with
 * local churn, service faults, local faults. Writes bench/results/chaos.json: the top-level
 * figures `kills`, `lost`, `duplicates`, `orphans`, `stale` (sums over every scenario, all
 * must be 0 but kills), `tokenLeaks`, and each scenario's detail; prints a Markdown summary.
 *
 *   CHAOS_QUICK=1      the short run (6 kills, 10 s outages, fewer files): under 5 minutes
 *   CHAOS_SEED=n       replay a run
 *   CHAOS_ONLY=a,b     only these groups: kill, service, local
 *   CHAOS_CASES=x,y    only the cases whose names start with these
 *   CHAOS_KEEP=1       keep each scenario's folder (logs, state) for a look
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { cpus, totalmem } from 'node:os';
import { fileURLToPath } from 'node:url';
import { canMount, runLocalCases, type LocalResult } from './chaos/scenarios/local.js';
import { killLoop, type KillResult } from './chaos/scenarios/kill.js';
import { runServiceCase, serviceCases, type ServiceResult } from './chaos/scenarios/service.js';
import { TOKEN } from './chaos/workspace.js';
import { log } from './chaos/util.js';

const quick = process.env.CHAOS_QUICK === '1';
const seed = Number(process.env.CHAOS_SEED ?? Date.now() % 1_000_000);
const only = new Set((process.env.CHAOS_ONLY ?? 'kill,service,local').split(',').map((s) => s.trim()));
const cases = process.env.CHAOS_CASES?.split(',').map((s) => s.trim());
const RESULTS = fileURLToPath(new URL('../../bench/results/', import.meta.url));

const SETTINGS = quick
  ? { files: 5000, kills: 6, killAfterMs: [800, 4000] as [number, number], serviceFiles: 120, churnMs: 5_000, outageMs: 10_000, localFiles: 150 }
  : { files: 5000, kills: 25, killAfterMs: [500, 4000] as [number, number], serviceFiles: 1000, churnMs: 20_000, outageMs: 60_000, localFiles: 500 };

type Scenario = KillResult | ServiceResult | LocalResult | { name: string; error: string };

function counts(s: Scenario): { lost: number; duplicates: number; orphans: number; stale: number } {
  if ('error' in s) return { lost: 0, duplicates: 0, orphans: 0, stale: 0 };
  if ('result' in s) return { lost: s.result.lost.length, duplicates: s.result.duplicates.length, orphans: s.result.orphans.length, stale: s.result.stale.length };
  return { lost: s.lost, duplicates: s.duplicates, orphans: s.orphans, stale: s.stale };
}

async function guarded<T extends Scenario>(name: string, run: () => Promise<T>): Promise<Scenario> {
  try {
    return await run();
  } catch (e) {
    log(`${name} FAILED: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
    return { name, error: e instanceof Error ? e.message : String(e) };
  }
}

async function main(): Promise<number> {
  const t0 = Date.now();
  log(`chaos run (${quick ? 'quick' : 'full'}), seed ${seed}`);
  const scenarios: Scenario[] = [];
  const notes: string[] = [];
  if (only.has('kill') && (!cases || cases.some((c) => 'kill-loop'.startsWith(c)))) {
    scenarios.push(
      await guarded('kill-loop', () =>
        killLoop({ files: SETTINGS.files, kills: SETTINGS.kills, seed, killAfterMs: SETTINGS.killAfterMs, churnPerSecond: 10, settleTimeoutMs: 300_000 }),
      ),
    );
  }
  if (only.has('service')) {
    for (const c of serviceCases(SETTINGS.outageMs, quick)) {
      if (cases && !cases.some((n) => c.name.startsWith(n))) continue;
      scenarios.push(
        await guarded(c.name, () =>
          runServiceCase(c, { files: SETTINGS.serviceFiles, churnMs: SETTINGS.churnMs, churnPerSecond: 10, seed: seed + scenarios.length, settleTimeoutMs: 300_000 }),
        ),
      );
    }
    if (quick) notes.push(`quick run: outages last ${SETTINGS.outageMs / 1000} s instead of 60 s; the 429 storm with an HTTP-date Retry-After runs in the full run only`);
  }
  if (only.has('local')) {
    if (!canMount()) notes.push('tmpfs cannot be mounted here: the unmount and disk-full cases were skipped');
    if (quick) notes.push('quick run: the folder-by-folder deletion case runs in the full run only');
    const local = await runLocalCases({ files: SETTINGS.localFiles, seed, quick, only: cases }).catch((e: unknown) => [
      { name: 'local', error: e instanceof Error ? e.message : String(e) },
    ]);
    scenarios.push(...local);
  }

  const sums = scenarios.map(counts).reduce((a, b) => ({ lost: a.lost + b.lost, duplicates: a.duplicates + b.duplicates, orphans: a.orphans + b.orphans, stale: a.stale + b.stale }), {
    lost: 0,
    duplicates: 0,
    orphans: 0,
    stale: 0,
  });
  const kills = scenarios.reduce((n, s) => n + ('kills' in s ? s.kills : 0), 0);
  const tokenLeaks = scenarios.flatMap((s) => ('tokenLeaks' in s ? s.tokenLeaks : []));
  const failed = scenarios.filter((s) => 'error' in s || !('converged' in s) || !s.converged).map((s) => s.name);
  const report = {
    mode: quick ? 'quick' : 'full',
    seed,
    startedAt: new Date(t0).toISOString(),
    totalSeconds: Math.round((Date.now() - t0) / 1000),
    machine: { cpus: cpus().length, memoryGiB: Math.round(totalmem() / 2 ** 30), node: process.version },
    kills,
    ...sums,
    tokenLeaks: tokenLeaks.length,
    converged: failed.length === 0,
    notConverged: failed,
    notes,
    scenarios,
  };
  await mkdir(RESULTS, { recursive: true });
  const file = `${RESULTS}chaos.json`;
  await writeFile(file, `${JSON.stringify(report, null, 2)}\n`);
  // The report is an artefact too.
  if ((await readFile(file, 'utf8')).includes(TOKEN)) tokenLeaks.push(file);
  process.stdout.write(`\n${summary(report)}\n`);
  log(`wrote ${file} in ${report.totalSeconds} s`);
  const ok = failed.length === 0 && tokenLeaks.length === 0 && sums.lost + sums.duplicates + sums.orphans + sums.stale === 0;
  return ok ? 0 : 1;
}

/** The Markdown summary (docs/reliability.md carries the one of the committed run). */
function summary(r: { mode: string; seed: number; totalSeconds: number; kills: number; lost: number; duplicates: number; orphans: number; stale: number; tokenLeaks: number; scenarios: Scenario[] }): string {
  const s = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;
  const lines = [
    `chaos ${r.mode} run, seed ${r.seed}, ${r.totalSeconds} s: kills ${r.kills}, lost ${r.lost}, duplicates ${r.duplicates}, orphans ${r.orphans}, stale ${r.stale}, token leaks ${r.tokenLeaks}`,
    '',
    '| scenario | converged | lost | dup. | orphans | stale | detail |',
    '|---|---|---|---|---|---|---|',
  ];
  for (const x of r.scenarios) {
    const c = counts(x);
    let detail: string;
    if ('error' in x) detail = `error: ${x.error}`;
    else if ('kills' in x)
      detail = `${x.kills} kills (${x.killsDuringInitialMirror} during the initial mirror, ${x.restartsWithOpenIntents} left open intents), ${x.files} files + churn ${x.churn.adds}/${x.churn.edits}/${x.churn.renames}/${x.churn.deletes} (add/edit/rename/delete), settled in ${s(x.convergeMs)}`;
    else if ('retries' in x)
      detail = `retries ${x.retries}, throttled ${x.throttled}, injected: ${x.emulator.injectedErrors} errors, ${x.emulator.ambiguous} ambiguous, ${x.emulator.rateLimited} 429, ${x.emulator.dropped} dropped; converged ${s(x.convergeMs)} after the episode (${s(x.totalMs)} in all)`;
    else
      detail = `during the fault: ${x.duringFault.deletes} deletions${x.churnDuringFault ? ' (churn)' : ''}, daemon ${x.duringFault.daemonAlive ? 'alive' : 'DEAD'}, state ${x.duringFault.stateReadable ? 'readable' : 'CORRUPT'}; re-uploads ${x.reuploads}; converged ${s(x.convergeMs)} after`;
    const converged = 'error' in x ? 'no' : x.converged ? 'yes' : 'NO';
    lines.push(`| ${x.name} | ${converged} | ${c.lost} | ${c.duplicates} | ${c.orphans} | ${c.stale} | ${detail} |`);
  }
  return lines.join('\n');
}

main().then(
  (code) => (process.exitCode = code),
  (e: unknown) => {
    console.error(e);
    process.exitCode = 1;
  },
);

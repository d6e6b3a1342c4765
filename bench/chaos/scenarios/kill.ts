/**
 * Scenario 1, the kill loop: a large initial mirror with local churn going on the whole
 * time, and `kill -9` of the daemon at random moments, restarted at once each time. At the
 * end, the daemon is left to settle and the data source is compared with the folder.
 */
import { readStateFile } from '../../../src/state/store.js';
import { Churn } from '../churn.js';
import { ChaosWorkspace, type Convergence } from '../workspace.js';
import { between, log, rng, sleep } from '../util.js';

export interface KillOptions {
  files: number;
  kills: number;
  seed: number;
  /** Random moment of each kill after the (re)start: [min, max) ms. */
  killAfterMs: [number, number];
  churnPerSecond: number;
  settleTimeoutMs: number;
}

export interface KillResult {
  name: 'kill-loop';
  seed: number;
  files: number;
  kills: number;
  /** Kills that landed while the initial mirror was still incomplete. */
  killsDuringInitialMirror: number;
  churn: Churn['counts'];
  filesAtEnd: number;
  documentsAtEnd: number;
  converged: boolean;
  convergeMs: number;
  totalMs: number;
  /** Documents uploaded over the run (the initial files, churn adds/edits and re-sends). */
  filesUploaded: number;
  uploadRequests: number;
  requests: number;
  /** Restarts whose daemon found open intents (a kill landed between an upload and its record). */
  restartsWithOpenIntents: number;
  /** State files a kill left unreadable (must be none: writes are atomic). */
  unreadableStates: string[];
  result: Convergence;
  tokenLeaks: string[];
}

export async function killLoop(o: KillOptions): Promise<KillResult> {
  const random = rng(o.seed);
  const cw = await ChaosWorkspace.create('kill-loop');
  const t0 = Date.now();
  try {
    const churn = new Churn(cw.share, random, 50);
    await churn.seed(o.files);
    log(`kill loop: ${o.files} files written, seed ${o.seed}`);
    let daemon = await cw.startDaemon();
    churn.start(o.churnPerSecond);
    let kills = 0;
    let duringInitial = 0;
    let withIntents = 0;
    const unreadableStates: string[] = [];
    for (let k = 0; k < o.kills; k++) {
      await sleep(between(random, o.killAfterMs[0], o.killAfterMs[1]));
      const ds = cw.dataSourceId();
      const docs = ds ? cw.ws.emu.store.listDocuments(ds).length : 0;
      if (docs < o.files) duringInitial++;
      await daemon.kill9();
      kills++;
      // Churn goes on while the daemon is down, then it comes back.
      await sleep(between(random, 0, 500));
      // What the kill left behind: the state file must be readable (atomic writes), and may
      // hold open intents (a kill between a remote write and its record).
      try {
        const st = await readStateFile(cw.ws.statePath);
        if (Object.values(st?.mappings ?? {}).some((m) => Object.keys(m.intents).length > 0)) withIntents++;
      } catch (e) {
        unreadableStates.push(e instanceof Error ? e.message : String(e));
      }
      daemon = await cw.startDaemon();
      log(`kill ${kills}/${o.kills}: ${docs} documents in the data source`);
    }
    await churn.stop();
    log('kill loop: churn stopped, waiting for the daemon to settle');
    const settled = await cw.converge(daemon, o.settleTimeoutMs);
    const stats = cw.ws.emu.stats();
    const ds = cw.dataSourceId();
    const local = churn.files.length;
    await churn.rescan();
    await daemon.stop();
    const result: KillResult = {
      name: 'kill-loop',
      seed: o.seed,
      files: o.files,
      kills,
      killsDuringInitialMirror: duringInitial,
      churn: { ...churn.counts },
      filesAtEnd: churn.files.length || local,
      documentsAtEnd: ds ? cw.ws.emu.store.listDocuments(ds).length : 0,
      converged: settled.converged,
      convergeMs: settled.ms,
      totalMs: Date.now() - t0,
      filesUploaded: stats.filesUploaded,
      uploadRequests: stats.uploads,
      requests: stats.requests,
      restartsWithOpenIntents: withIntents,
      unreadableStates,
      result: settled.result,
      tokenLeaks: await cw.tokenLeaks(),
    };
    if (!settled.converged) log(`kill loop did NOT converge: ${JSON.stringify(summarise(settled.result))}\n${daemon.tail(30)}`);
    return result;
  } finally {
    await cw.close();
  }
}

export function summarise(c: Convergence): Record<string, number | string[]> {
  return {
    lost: c.lost.length,
    duplicates: c.duplicates.length,
    orphans: c.orphans.length,
    stale: c.stale.length,
    examples: [...c.lost, ...c.duplicates, ...c.orphans, ...c.stale].slice(0, 5),
  };
}

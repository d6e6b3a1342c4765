/**
 * restart and footprint: a large tree already mirrored (the setup mirrors it with generous
 * settings, not measured); then `dssync run` (default settings) starts over it.
 * restart: seconds from the start of the process until its first full pass has ended, the
 * remote writes it made (its lease's apart), the file content it read, its peak memory; a
 * run that did not take its lease from the marker kept beside the state (a first start
 * under the lease: lib/restart-proof.ts) fails.
 * footprint: the same daemon, idle, watching the tree: memory once the reclaim after the
 * pass is done and after settling, CPU over a quiet window, the state file's size and the
 * time of its last write (a full re-encode).
 */
import { execFileSync } from 'node:child_process';
import { mkdir, stat, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { RACY_MARGIN_MS } from '../../src/engine/racy.js';
import type { RunningEmulator } from '@dssync/emulator';
import type { BenchContext } from '../lib/context.js';
import { runSync, startDaemon, writeConfig } from '../lib/dssync.js';
import { checkMirror, countLeaseWrites, countListings, startService, writeRequests } from '../lib/service.js';
import { leaveFirstLease, seedFirstMirror } from '../lib/seed.js';
import { keepSet, openKeptSet, restoreKeptSet } from '../lib/kept-set.js';
import { notARestart } from '../lib/restart-proof.js';
import { RECLAIM_WAIT_MS, waitForReclaim } from '../lib/reclaim-wait.js';
import { treeLayout, writeTree, type TreeFile, type TreeSpec } from '../lib/tree.js';
import { log, mapLimit, round } from '../lib/util.js';
import { waitForWatching } from './daemon-changes.js';
import { renewalInterval, restPerHour } from '../lib/rest-rate.js';

export interface RestartFigures {
  files: number;
  seconds: number;
  /**
   * The daemon's CPU (user + system, every thread) from its start to the end of the first
   * pass, read right after its log says so: steadier than `seconds` on a shared machine for
   * telling two builds apart (docs/performance.md "Session 24").
   */
  cpuSeconds: number;
  /** The mirror's own writes (POST/PUT/DELETE), its lease's not counted. */
  writes: number;
  /** The writes for the mapping's lease (docs/reliability.md, "The lease"): the claim (a restart makes no marker). */
  leaseWrites: number;
  /** Listings of the data source begun by the end of the first pass: 1, its own (the lease's marker is read by the id kept beside the state). */
  listings: number;
  requests: number;
  contentBytesRead: number;
  rssMB: number;
  setupSeconds: number;
  /** Peak RSS of the setup's `dssync sync` (the first mirror); NaN when seeded. */
  setupRssMB: number;
  /** With RestartSpec.setupCapRps: the first mirror's requests (429s included), its 429s, and the seconds the cap allows for those accepted. */
  setupCapRps?: number;
  setupRequests?: number;
  setupResponses429?: number;
  setupAllowedSeconds?: number;
  /** setupSeconds / setupAllowedSeconds: 1 is a first mirror as fast as the service's limit lets it be. */
  setupOverAllowed?: number;
  /** The first mirror was written directly, not run (RestartSpec.seeded). */
  seeded?: true;
  /** ...and put back from a kept set (BENCH_SCALE_DIR): setupSeconds is that, not the seeding. */
  keptSet?: true;
}

export interface FootprintFigures {
  files: number;
  folders: number;
  watchedFolders: number;
  rssMB: number;
  cpuPercent: number;
  stateFileMB: number;
  stateWriteMs: number;
  stateLoadMs: number | undefined;
  /** From the end of the pass to the end of the reclaim's collections (s); undefined when it did not report within the wait's bound. */
  reclaimSeconds: number | undefined;
  /**
   * At rest (issue 39.7): the requests the service received from the idle daemon over
   * restSeconds (Sizes.restWindowSeconds), those that were its lease's renewals, and the rate
   * per hour; the hourly rescan's listing (a page per 1,000 documents) comes on top.
   */
  restSeconds: number;
  restRequests: number;
  restLeaseWrites: number;
  /** The median time between two of the lease's renewals, the one before the window counted (s). */
  restRenewalSeconds: number | undefined;
  restRequestsPerHour: number;
  /** The daemon's own view when idle (its status): JS heap used and reserved, memory outside the heap (MB). */
  heapUsedMB?: number | undefined;
  heapTotalMB?: number | undefined;
  externalMB?: number | undefined;
}

/** Generous settings for the unmeasured setup mirror. */
const SETUP_QUEUE = { queue: { concurrency: 32, requestsPerSecond: 100_000 }, ingestionCheck: { enabled: false } };

/** Above this many files the setup's `dssync sync` runs with a heap limit of SETUP_HEAP_MB. */
const SETUP_DEFAULT_HEAP_FILES = 300_000;
const SETUP_HEAP_MB = 8192;

/** The tree of a restart run: restart uses sizes.restartFiles/Folders, scale its own. */
export interface RestartSpec {
  name: string;
  files: number;
  folders: number;
  /** File sizes (bytes): small files keep a tree of a million files quick to write. */
  minBytes: number;
  maxBytes: number;
  /**
   * Write the first mirror's result (state and documents: lib/seed.ts) instead of running
   * `dssync sync`: at a million files the setup mirror alone takes hours on this machine.
   */
  seeded?: boolean | undefined;
  /** With `seeded`: build the tree, state, documents and lease once in this folder and reuse them (BENCH_SCALE_DIR, lib/kept-set.ts). */
  keptDir?: string | undefined;
  /**
   * Without `seeded`: the setup mirror runs as a user's first mirror (default settings, the
   * service at the bench's latency and limited to this many accepted requests/s) and is
   * timed against what that limit allows. Undefined or 0: generous settings, no latency.
   */
  setupCapRps?: number | undefined;
}

/** A setup mirror against a service limited to `cap` accepted requests/s: its requests, and its time over what the limit allows them. */
function againstCap(emu: RunningEmulator, cap: number, seconds: number, what: string): Pick<RestartFigures, 'setupCapRps' | 'setupRequests' | 'setupResponses429' | 'setupAllowedSeconds' | 'setupOverAllowed'> {
  const s = emu.stats();
  const allowed = (s.requests - s.rateLimited) / cap;
  const over = round(seconds / allowed, 3);
  log(`${what}, limited to ${cap} accepted requests/s: ${s.requests} requests (${s.rateLimited} answered 429), ${allowed.toFixed(1)} s allowed by the limit, ${over}× that taken`);
  return { setupCapRps: cap, setupRequests: s.requests, setupResponses429: s.rateLimited, setupAllowedSeconds: round(allowed), setupOverAllowed: over };
}

export async function runRestart(
  ctx: BenchContext,
  spec: RestartSpec = { name: 'restart', files: ctx.sizes.restartFiles, folders: ctx.sizes.restartFolders, minBytes: 512, maxBytes: 2048 },
): Promise<{ restart: RestartFigures; footprint: FootprintFigures }> {
  const { sizes } = ctx;
  // A kept set (BENCH_SCALE_DIR, seeded runs only): the tree, state and documents are built
  // once in that folder and put back as seeded before every run (lib/kept-set.ts).
  const keptDir = spec.seeded ? spec.keptDir : undefined;
  const dir = keptDir ?? join(ctx.tmp, spec.name);
  const share = join(dir, 'share');
  const statePath = join(dir, 'state', 'state.json');
  const treeSpec: TreeSpec = { files: spec.files, folders: spec.folders, minBytes: spec.minBytes, maxBytes: spec.maxBytes, seed: 2 };
  const kept = keptDir ? await openKeptSet(keptDir, treeSpec) : undefined;
  await mkdir(dir, { recursive: true });
  let t0 = performance.now();
  let files: TreeFile[];
  if (kept) {
    files = treeLayout(treeSpec);
    log(`${spec.name}: reusing the kept set in ${keptDir} (${files.length} files, built ${kept.info.builtAt})`);
  } else {
    files = await writeTree(share, treeSpec);
    log(`${spec.name}: tree of ${files.length} files in ${spec.folders} folders written in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    // A share's files were written long before dssync hashes them. Files hashed within
    // RACY_MARGIN_MS of their last mtime or ctime change are "racy" and read once more by the
    // next pass (src/engine/racy.ts): what a restart right after the setup would measure
    // instead of the restart itself. utimes puts the mtime back but moves the ctime (which
    // cannot be set back), so the setup starts once the margin has passed.
    const lastWeek = new Date(Date.now() - 7 * 86_400_000);
    await mapLimit(files, 64, (f) => utimes(join(share, f.rel), lastWeek, lastWeek));
    await sleep(RACY_MARGIN_MS + 500);
  }

  const emu = await startService();
  try {
    t0 = performance.now();
    let setupRssMB = NaN;
    const cap = spec.seeded ? 0 : (spec.setupCapRps ?? 0);
    const setupConfig = await writeConfig({ dir, baseUrl: emu.url, share, name: 'setup', extra: SETUP_QUEUE });
    // Past 300,000 files the unmeasured setup may need more heap than Node.js's default
    // limit (~4 GB on this machine); its peak RSS is still reported as measured.
    const setupEnv: Record<string, string> = spec.files > SETUP_DEFAULT_HEAP_FILES ? { NODE_OPTIONS: `--max-old-space-size=${SETUP_HEAP_MB}` } : {};
    if (kept && keptDir) {
      await restoreKeptSet(keptDir, kept, emu);
      log(`${spec.name}: kept state and ${kept.info.documents} documents put back in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
      if (kept.withoutLease) {
        // Seeded before the lease: measured as it is, the restart would be the mapping's first start under it.
        await keepSet(keptDir, { tree: treeSpec, hashedAt: kept.info.hashedAt }, await leaveFirstLease(emu, setupConfig, setupEnv));
        log(`${spec.name}: the kept set predated the lease: given the first mirror's lease by dssync sync and kept again (format 2) in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
      }
    } else if (spec.seeded) {
      const hashedAt = Date.now();
      await seedFirstMirror({ emu, share, files, statePath, mappingId: 'bench', dataSourceName: 'Bench', hashedAt });
      const snap = await leaveFirstLease(emu, setupConfig, setupEnv);
      log(`${spec.name}: first mirror of ${files.length} files seeded (state and documents written directly, its lease left by dssync sync) in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
      if (keptDir) {
        await keepSet(keptDir, { tree: treeSpec, hashedAt }, snap);
        log(`${spec.name}: set kept in ${keptDir} for the next runs`);
      }
    } else {
      if (cap > 0) emu.setFaults({ latencyMs: sizes.latencyMs, rateLimitRps: cap });
      const setup = await runSync(cap > 0 ? await writeConfig({ dir, baseUrl: emu.url, share, name: 'setup-capped' }) : setupConfig, setupEnv);
      if (setup.code !== 0) throw new Error(`${spec.name} setup: dssync sync exited ${setup.code}:\n${setup.stderr.slice(-3000)}`);
      setupRssMB = setup.peakRssMB;
      log(`${spec.name}: setup mirror of ${files.length} files in ${((performance.now() - t0) / 1000).toFixed(1)} s, peak RSS ${Math.round(setupRssMB)} MB`);
    }
    const setupSeconds = (performance.now() - t0) / 1000;
    const capped = cap > 0 ? againstCap(emu, cap, setupSeconds, `${spec.name}: the setup mirror ran at ${sizes.latencyMs} ms per request`) : {};

    emu.setFaults({ latencyMs: sizes.latencyMs });
    emu.resetStats();
    const leaseWrites = countLeaseWrites(emu);
    const listings = countListings(emu);
    const configPath = await writeConfig({ dir, baseUrl: emu.url, share });
    // BENCH_BEFORE_START: a command run right before the daemon starts (a cold cache: the
    // kept set's filesystem mounted again; docs/performance.md, "A cold cache").
    const before = process.env.BENCH_BEFORE_START;
    if (before) {
      execFileSync('/bin/sh', ['-c', before], { stdio: 'inherit' });
      log(`${spec.name}: ran BENCH_BEFORE_START before the daemon's start`);
    }
    const daemon = await startDaemon(configPath);
    try {
      let peak = 0;
      const sampler = setInterval(() => {
        const m = daemon.memory();
        if (m) peak = Math.max(peak, m.peakRssMB);
      }, 100);
      // The daemon's own log line, so that the measurement does not poll (and slow) it.
      const passDone = await daemon.waitForLog('the first full pass', (l) => l.msg === 'full pass done', 1_800_000);
      const cpuSeconds = daemon.cpuSeconds() ?? NaN;
      const listingsBegun = listings.begun();
      clearInterval(sampler);
      const seconds = (passDone.time - daemon.spawnedAtMs) / 1000;
      const status = await daemon.status();
      const mapping = status.mappings[0]!;
      const last = mapping.lastPass!;
      if (!last.ok || last.uploaded !== 0 || last.replaced !== 0) throw new Error(`restart: the first pass was not a clean no-op: ${JSON.stringify(last)}`);
      const notOne = notARestart({ listingsBegun, markersMade: leaseWrites.made(), markerUsed: mapping.lease?.documentId });
      if (notOne.length > 0) throw new Error(`${spec.name}: not measured: this was not a restart from the lease marker kept beside the state: ${notOne.join('; ')}`);
      const restart: RestartFigures = {
        files: files.length,
        seconds: round(seconds),
        cpuSeconds: round(cpuSeconds),
        writes: writeRequests(emu) - leaseWrites.count(),
        leaseWrites: leaseWrites.count(),
        listings: listingsBegun,
        requests: emu.stats().requests,
        contentBytesRead: (await daemon.metric('dssync_content_bytes_read_total')) ?? NaN,
        rssMB: round(Math.max(peak, daemon.memory()?.peakRssMB ?? 0), 0),
        setupSeconds: round(setupSeconds, 1),
        setupRssMB: round(setupRssMB, 0),
        ...capped,
        ...(spec.seeded ? { seeded: true } : {}),
        ...(kept ? { keptSet: true } : {}),
      };
      // A kept tree touched since it was seeded is read again: not the restart measured.
      if (kept && restart.contentBytesRead !== 0) log(`${spec.name}: WARNING: ${restart.contentBytesRead} bytes of content read: the kept tree in ${keptDir} changed since it was seeded; remove the folder to build it again`);
      log(`${spec.name}: ${restart.seconds} s (CPU ${restart.cpuSeconds} s), lease taken from the remembered marker (${restart.listings} listing), ${restart.requests} requests, ${restart.writes} writes (and ${restart.leaseWrites} for the lease), ${restart.contentBytesRead} content bytes read, peak RSS ${restart.rssMB} MB`);

      // footprint
      await waitForWatching(daemon, spec.folders, 900_000);
      const reclaimed = await waitForReclaim(daemon.waitForLog, passDone.time);
      if (reclaimed === undefined) log(`footprint: WARNING: the daemon's reclaim did not report within ${RECLAIM_WAIT_MS / 1000} s of its pass: sampled without it`);
      await sleep(sizes.settleSeconds * 1000);
      const after = await daemon.status();
      const rssMB = daemon.memory()?.rssMB ?? NaN;
      const cpu0 = daemon.cpuSeconds() ?? NaN;
      const requests0 = emu.stats().requests;
      const lease0 = leaseWrites.count();
      const w0 = performance.now();
      await sleep(sizes.cpuWindowSeconds * 1000);
      const cpuPercent = (100 * ((daemon.cpuSeconds() ?? NaN) - cpu0)) / ((performance.now() - w0) / 1000);
      await sleep(Math.max(0, sizes.restWindowSeconds * 1000 - (performance.now() - w0)));
      const restSeconds = (performance.now() - w0) / 1000;
      const restRequests = emu.stats().requests - requests0;
      const restLease = leaseWrites.count() - lease0;
      const renewal = renewalInterval(leaseWrites.times().slice(-restLease - 1));
      // The snapshot and its journal (either may be absent: a small state may not be folded yet).
      const sizeOf = (p: string): Promise<number> => stat(p).then((st) => st.size, () => 0);
      const stateBytes = (await sizeOf(join(dir, 'state', 'state.json'))) + (await sizeOf(join(dir, 'state', 'state.json.journal')));
      const footprint: FootprintFigures = {
        files: files.length,
        folders: spec.folders,
        watchedFolders: after.mappings[0]?.watchedDirs ?? 0,
        rssMB: round(rssMB, 0),
        cpuPercent: round(cpuPercent, 2),
        stateFileMB: round(stateBytes / 1024 / 1024, 1),
        stateWriteMs: round(after.state?.lastWriteMs ?? NaN, 0),
        stateLoadMs: after.state?.loadMs === undefined ? undefined : round(after.state.loadMs, 0),
        reclaimSeconds: reclaimed === undefined ? undefined : round(reclaimed.afterPassSeconds, 1),
        restSeconds: round(restSeconds, 1),
        restRequests,
        restLeaseWrites: restLease,
        restRenewalSeconds: renewal === undefined ? undefined : round(renewal / 1000, 2),
        restRequestsPerHour: restPerHour(restRequests, restLease, restSeconds, renewal),
        heapUsedMB: after.memory?.heapUsedMB,
        heapTotalMB: after.memory?.heapTotalMB,
        externalMB: after.memory?.externalMB,
      };
      log(`footprint: RSS ${footprint.rssMB} MB (reclaim done ${footprint.reclaimSeconds ?? '(not seen)'} s after the pass at ${reclaimed?.rssMB ?? '?'} MB; heap ${footprint.heapUsedMB} of ${footprint.heapTotalMB} MB, external ${footprint.externalMB} MB), CPU ${footprint.cpuPercent} %, ${footprint.restRequests} requests in ${footprint.restSeconds} s at rest (${footprint.restLeaseWrites} the lease's, one every ${footprint.restRenewalSeconds ?? '?'} s: ${footprint.restRequestsPerHour} an hour), state ${footprint.stateFileMB} MB written in ${footprint.stateWriteMs} ms`);
      // BENCH_HOLD_FILE: the idle daemon's pid is written there, and the daemon kept at rest
      // until the file is removed (to read its memory from outside: docs/performance.md).
      const hold = process.env.BENCH_HOLD_FILE;
      if (hold) {
        await writeFile(hold, String(daemon.pid));
        while (await stat(hold).then(() => true, () => false)) await sleep(1000);
      }
      return { restart, footprint };
    } finally {
      await daemon.stop();
      // A kept set's documents were checked against its tree when it was built; a run that
      // wrote nothing but its lease left them as they were (reading a million files again costs minutes).
      const mirrorWrites = writeRequests(emu) - leaseWrites.count();
      leaseWrites.stop();
      listings.stop();
      const check = kept && mirrorWrites === 0 ? { ok: true, problems: [] } : await checkMirror(emu, share, files.map((f) => f.rel));
      if (!check.ok) log(`${spec.name}: WARNING: the data source is not in sync: ${check.problems.slice(0, 5).join('; ')}`);
    }
  } finally {
    await emu.close();
  }
}


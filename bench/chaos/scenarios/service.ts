/**
 * Scenario 2, service faults: the faults a real service shows (5xx, answers lost after the
 * write was done, 429 storms with and without Retry-After, latency spikes, an outage),
 * injected by the emulator while the daemon mirrors a folder that keeps changing. Each
 * case reports whether it converged, the duplicates, the retries and the time to converge.
 */
import type { FaultOptions } from '@dssync/emulator';
import { Churn } from '../churn.js';
import type { DaemonProcess } from '../daemon.js';
import { OutageProxy } from '../proxy.js';
import { log, rng, sleep } from '../util.js';
import { ChaosWorkspace, type Convergence } from '../workspace.js';
import { summarise } from './kill.js';

export interface ServiceCase {
  name: string;
  description: string;
  /** Faults set before the daemon starts. */
  faults: FaultOptions;
  /**
   * Runs while the folder churns (after `faults` are set and the daemon started); resolves
   * when the fault episode is over. Faults still set then stay on until convergence.
   */
  episode?: (ctx: EpisodeContext) => Promise<void>;
  /** Faults in force while converging (default: none). */
  after?: FaultOptions;
  /** Route the daemon through the outage proxy. */
  proxy?: boolean;
}

export interface EpisodeContext {
  cw: ChaosWorkspace;
  daemon: DaemonProcess;
  proxy: OutageProxy | undefined;
  random: () => number;
  setFaults(f: FaultOptions): void;
}

export interface ServiceResult {
  name: string;
  description: string;
  files: number;
  churn: Churn['counts'];
  converged: boolean;
  /** From the end of the fault episode to convergence. */
  convergeMs: number;
  /** From the daemon's start to convergence. */
  totalMs: number;
  /** The daemon's own counters (/status). */
  requests: number;
  retries: number;
  throttled: number;
  /** The emulator's counters. */
  emulator: { requests: number; injectedErrors: number; ambiguous: number; rateLimited: number; dropped: number; uploads: number; filesUploaded: number; deletes: number };
  documentsAtEnd: number;
  filesAtEnd: number;
  lost: number;
  duplicates: number;
  orphans: number;
  stale: number;
  examples: string[];
  degradedReasonsSeen: string[];
  tokenLeaks: string[];
}

export interface ServiceRunOptions {
  files: number;
  churnMs: number;
  churnPerSecond: number;
  seed: number;
  settleTimeoutMs: number;
}

export async function runServiceCase(c: ServiceCase, o: ServiceRunOptions): Promise<ServiceResult> {
  const random = rng(o.seed);
  const cw = await ChaosWorkspace.create(c.name);
  let proxy: OutageProxy | undefined;
  try {
    if (c.proxy) {
      const target = new URL(cw.ws.emu.url);
      proxy = new OutageProxy(target.hostname, Number(target.port));
      await proxy.up();
      const url = proxy.url;
      await cw.updateConfig((cfg) => (cfg.baseUrl = url));
    }
    const churn = new Churn(cw.share, random, 20);
    await churn.seed(o.files);
    cw.ws.emu.setFaults(c.faults);
    log(`${c.name}: ${o.files} files, faults ${JSON.stringify(c.faults)}`);
    const t0 = Date.now();
    const daemon = await cw.startDaemon();
    const degraded = new Set<string>();
    const watch = setInterval(() => {
      daemon
        .status()
        .then((s) => s.mappings.forEach((m) => m.degraded.forEach((r) => degraded.add(r.replace(/\d+/g, 'N').slice(0, 200)))))
        .catch(() => undefined);
    }, 1000);
    churn.start(o.churnPerSecond);
    const episode = c.episode?.({ cw, daemon, proxy, random, setFaults: (f) => cw.ws.emu.setFaults(f) }) ?? sleep(o.churnMs);
    await Promise.all([episode, sleep(o.churnMs)]);
    await churn.stop();
    cw.ws.emu.setFaults(c.after ?? {});
    await proxy?.up();
    const tEpisode = Date.now();
    const settled = await cw.converge(daemon, o.settleTimeoutMs);
    clearInterval(watch);
    const status = settled.status ?? (await daemon.status());
    const stats = cw.ws.emu.stats();
    const ds = cw.dataSourceId();
    await churn.rescan();
    await daemon.stop();
    const sum = summarise(settled.result);
    const result: ServiceResult = {
      name: c.name,
      description: c.description,
      files: o.files,
      churn: { ...churn.counts },
      converged: settled.converged,
      convergeMs: settled.ms,
      totalMs: tEpisode + settled.ms - t0,
      requests: status.requests.total,
      retries: status.requests.retries,
      throttled: status.requests.throttled,
      emulator: {
        requests: stats.requests,
        injectedErrors: stats.injectedErrors,
        ambiguous: stats.ambiguous,
        rateLimited: stats.rateLimited,
        dropped: stats.dropped,
        uploads: stats.uploads,
        filesUploaded: stats.filesUploaded,
        deletes: countRoute(stats.byRoute, 'DELETE '),
      },
      documentsAtEnd: ds ? cw.ws.emu.store.listDocuments(ds).length : 0,
      filesAtEnd: churn.files.length,
      lost: settled.result.lost.length,
      duplicates: settled.result.duplicates.length,
      orphans: settled.result.orphans.length,
      stale: settled.result.stale.length,
      examples: sum.examples as string[],
      degradedReasonsSeen: [...degraded].slice(0, 10),
      tokenLeaks: await cw.tokenLeaks(),
    };
    log(`${c.name}: converged ${result.converged} in ${Math.round(result.convergeMs / 100) / 10} s after the episode; retries ${result.retries}; ${JSON.stringify(sum)}`);
    if (!settled.converged) log(daemon.tail(30));
    return result;
  } finally {
    await proxy?.down();
    await cw.close();
  }
}

export function countRoute(byRoute: Record<string, number>, prefix: string): number {
  return Object.entries(byRoute)
    .filter(([k]) => k.startsWith(prefix))
    .reduce((n, [, v]) => n + v, 0);
}

/** The cases of the issue; `outageMs` is 60 s in a full run. */
export function serviceCases(outageMs: number, quick = false): ServiceCase[] {
  const spikes = async (ctx: EpisodeContext, totalMs: number): Promise<void> => {
    const end = Date.now() + totalMs;
    while (Date.now() < end) {
      ctx.setFaults({ latencyMs: 2000 });
      await sleep(3000);
      ctx.setFaults({});
      await sleep(3000);
    }
  };
  const all: ServiceCase[] = [
    { name: 'errors-5xx-10pct', description: '10 % of requests answered 500/502/503', faults: { errorRate: 0.1, seed: 11 }, after: { errorRate: 0.1, seed: 12 } },
    {
      name: 'ambiguous-5pct',
      description: '5 % of writes carried out, then the connection dropped before the answer',
      faults: { ambiguousRate: 0.05, seed: 21 },
      after: { ambiguousRate: 0.05, seed: 22 },
    },
    { name: 'dropped-5pct', description: '5 % of connections dropped before anything was done', faults: { dropRate: 0.05, seed: 31 }, after: { dropRate: 0.05, seed: 32 } },
    {
      name: 'storm-429-retry-after-seconds',
      description: '429 storm (limit 5 requests/s) with Retry-After in seconds, then lifted',
      faults: { rateLimitRps: 5, retryAfter: 'seconds' },
    },
    {
      name: 'storm-429-retry-after-date',
      description: '429 storm (limit 5 requests/s) with Retry-After as an HTTP date, then lifted',
      faults: { rateLimitRps: 5, retryAfter: 'date' },
    },
    {
      name: 'storm-429-no-retry-after',
      description: '429 storm (limit 5 requests/s) without Retry-After, then lifted',
      faults: { rateLimitRps: 5, retryAfter: 'none' },
    },
    {
      name: 'latency-spikes-2s',
      description: '2 s latency on every request, 3 s on / 3 s off, while the folder changes',
      faults: {},
      episode: (ctx) => spikes(ctx, 18_000),
    },
    {
      name: `outage-503-${outageMs / 1000}s`,
      description: `the service answers 503 to everything for ${outageMs / 1000} s (maintenance), during the initial mirror`,
      faults: {},
      episode: async (ctx) => {
        await sleep(1500);
        ctx.setFaults({ down: true });
        await sleep(outageMs);
        ctx.setFaults({});
      },
    },
    {
      name: `outage-refused-${outageMs / 1000}s`,
      description: `the service unreachable (connections refused and reset) for ${outageMs / 1000} s, during the initial mirror`,
      faults: {},
      proxy: true,
      episode: async (ctx) => {
        await sleep(1500);
        await ctx.proxy!.down();
        await sleep(outageMs);
        await ctx.proxy!.up();
      },
    },
  ];
  return quick ? all.filter((c) => c.name !== 'storm-429-retry-after-date') : all;
}

export type { Convergence };

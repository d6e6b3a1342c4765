/**
 * Found by the chaos kill loop: a file renamed during the daemon's start, after the first
 * full pass had listed its folder and before the watcher was ready, was seen by neither,
 * and stayed missing from the data source until the hourly rescan. The watcher now comes
 * first, then the first full pass.
 */
import { describe, expect, it } from 'vitest';
import type { Config, MappingConfig } from '../../../src/config/types.js';
import { MappingRunner, type MappingRunnerDeps } from '../../../src/daemon/mapping/runner.js';
import type { Mirror } from '../../../src/engine/mirror.js';
import type { PassReport } from '../../../src/engine/pass-report.js';
import type { Watcher } from '../../../src/local/watch/watcher.js';
import { silentLogger } from '../../../src/log.js';
import type { StateStore } from '../../../src/state/store.js';
import { FakeClock } from '../../helpers/fake-clock.js';

/** Time never moves here: only the order of the watcher's readiness and the first pass matters. */
const clock = new FakeClock();
const settle = (): Promise<void> => clock.settle();

function deferred<T>(): { promise: Promise<T>; resolve: (v: T) => void; reject: (e: unknown) => void } {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

const report = (): PassReport => ({
  mappingId: 'm1',
  ok: true,
  dryRun: false,
  ops: [],
  counts: { uploaded: 0, replaced: 0, renamed: 0, updated: 0, deleted: 0, adopted: 0, forgotten: 0, unchanged: 0, skipped: 0, failed: 0 },
  failures: [],
  skipped: [],
  startedAt: '',
  finishedAt: '',
});

function setup(opts: { paused?: boolean } = {}) {
  const passes: { resolve: (r: PassReport) => void }[] = [];
  let builds = 0;
  const mirror = {
    mappingId: 'm1',
    dataSourceId: 'ds-1',
    fullPass: () => new Promise<PassReport>((resolve) => passes.push({ resolve })),
    changedPass: () => Promise.resolve(report()),
  } as unknown as Mirror;
  const ready = deferred<Watcher>();
  const built = deferred<Mirror>();
  const deps: MappingRunnerDeps = {
    config: { debounceMs: 300, rescanIntervalSeconds: 3600, ingestionCheck: { enabled: false, delaySeconds: 0 } } as unknown as Config,
    mapping: { id: 'm1', path: '/srv/share', dataSourceId: 'ds-1', include: ['**/*.txt'], exclude: [], ignoreFile: '', watch: { mode: 'events', pollIntervalSeconds: 10, pollBudgetPercent: 5 } } as unknown as MappingConfig,
    index: 0,
    api: {} as MappingRunnerDeps['api'],
    state: { mapping: () => ({ files: new Map() }), fileCount: () => 0 } as unknown as StateStore,
    logger: silentLogger,
    clock,
    random: () => 0.5,
    buildMirror: () => {
      builds++;
      return built.promise;
    },
    watch: () => ready.promise,
    ...(opts.paused ? { records: { paused: { since: '2026-01-01T00:00:00.000Z' } } as MappingRunnerDeps['records'] } : {}),
  };
  const watcher: Watcher = { root: '/srv/share', close: () => Promise.resolve(), watchedDirs: () => 1 };
  return {
    runner: new MappingRunner(deps),
    passes,
    ready: () => ready.resolve(watcher),
    fail: () => ready.reject(new Error('ENOSPC: inotify watch limit reached')),
    build: () => built.resolve(mirror),
    builds: () => builds,
  };
}

describe('MappingRunner at start: the watcher before the first scan', () => {
  it('the first full pass starts once the watcher is ready, so no change falls between them', async () => {
    const { runner, passes, ready, build } = setup();
    runner.start();
    build();
    await settle();
    expect(passes).toHaveLength(0); // the watcher is not ready: no scan yet
    ready();
    await settle();
    expect(passes).toHaveLength(1);
    passes[0]!.resolve(report());
    await settle();
    expect(passes).toHaveLength(1);
    await runner.stop(8_000);
  });

  it('a watcher that cannot start does not hold the first pass back', async () => {
    const { runner, passes, fail, build } = setup();
    runner.start();
    build();
    fail();
    await settle();
    expect(passes).toHaveLength(1);
    expect(runner.status().degraded.join()).toMatch(/not watching/);
    passes[0]!.resolve(report());
    await settle();
    await runner.stop(8_000);
  });

  it('the data source is resolved, and the lease claimed, while the watcher is set up: once for the first pass too', async () => {
    // The claim's settle wait (engine/lease.ts, 3 s) runs beside the watch's set-up, not after it.
    const { runner, passes, ready, build, builds } = setup();
    runner.start();
    await settle();
    expect(builds()).toBe(1); // the watcher is not ready, the resolution (and the lease's start) under way
    expect(passes).toHaveLength(0);
    ready();
    await settle();
    expect(passes).toHaveLength(0); // the first pass waits for the resolution in flight, not a second one
    build();
    await settle();
    expect(passes).toHaveLength(1);
    expect(builds()).toBe(1);
    passes[0]!.resolve(report());
    await settle();
    await runner.stop(8_000);
  });

  it('a mapping paused at start makes no request: nothing is resolved until it is resumed', async () => {
    const { runner, ready, builds } = setup({ paused: true });
    runner.start();
    ready();
    await settle();
    expect(builds()).toBe(0);
    await runner.stop(8_000);
  });
});

/**
 * MappingRunner's scheduling on a fake clock, with a fake Mirror and a fake watcher: retries
 * with back-off after a failing pass, says why it is degraded, recovers to 'watching'; runs
 * one pass at a time and plans what changed meanwhile afterwards; turns watcher batches into
 * pass scopes; stops cleanly.
 */
import { describe, expect, it } from 'vitest';
import { ApiError } from '../../../src/api/errors.js';
import { DataSourceMissingError } from '../../../src/engine/data-source.js';
import type { Config, MappingConfig } from '../../../src/config/types.js';
import type { Mirror, PassOptions } from '../../../src/engine/mirror.js';
import type { ChangeScope } from '../../../src/engine/local-side.js';
import type { PassReport } from '../../../src/engine/pass-report.js';
import type { FileFailure } from '../../../src/engine/executor.js';
import type { RawEvent } from '../../../src/local/watch/aggregator.js';
import { WatchError, type Watcher, type WatcherOptions } from '../../../src/local/watch/watcher.js';
import { silentLogger } from '../../../src/log.js';
import type { StateStore } from '../../../src/state/store.js';
import { MappingRunner, type MappingRunnerDeps } from '../../../src/daemon/mapping/runner.js';
import { retryDelayMs } from '../../../src/daemon/mapping/schedule.js';
import { FakeClock } from '../../helpers/fake-clock.js';

interface Call {
  kind: 'full' | 'changes';
  scope?: ChangeScope;
  signal: AbortSignal | undefined;
  resolve(r: PassReport): void;
  reject(e: unknown): void;
}

/** A Mirror whose passes end when the test says so; counts passes running at once. */
class FakeMirror {
  readonly calls: Call[] = [];
  running = 0;
  maxRunning = 0;
  readonly mappingId = 'm1';
  readonly dataSourceId = 'ds-1';

  fullPass(opts: PassOptions = {}): Promise<PassReport> {
    return this.call('full', undefined, opts.signal);
  }
  changedPass(scope: ChangeScope, opts: PassOptions = {}): Promise<PassReport> {
    return this.call('changes', scope, opts.signal);
  }
  last(): Call {
    const c = this.calls.at(-1);
    if (!c) throw new Error('no pass was started');
    return c;
  }
  private call(kind: 'full' | 'changes', scope: ChangeScope | undefined, signal: AbortSignal | undefined): Promise<PassReport> {
    this.running++;
    this.maxRunning = Math.max(this.maxRunning, this.running);
    return new Promise<PassReport>((resolve, reject) => {
      const done = (): void => {
        this.running--;
      };
      this.calls.push({
        kind,
        ...(scope ? { scope } : {}),
        signal,
        resolve: (r) => {
          done();
          resolve(r);
        },
        reject: (e) => {
          done();
          reject(e);
        },
      });
    });
  }
}

function report(failures: FileFailure[] = [], extra: Partial<PassReport> = {}): PassReport {
  const at = new Date(0).toISOString();
  return {
    mappingId: 'm1',
    ok: failures.length === 0,
    dryRun: false,
    ops: [],
    counts: { uploaded: 0, replaced: 0, renamed: 0, updated: 0, deleted: 0, adopted: 0, forgotten: 0, unchanged: 0, skipped: 0, failed: failures.length },
    failures,
    skipped: [],
    startedAt: at,
    finishedAt: at,
    ...extra,
  };
}

const serviceDown = (): ApiError =>
  new ApiError({ code: 'E_SERVER', status: 503, method: 'GET', path: '/datastore/v1/data-sources/ds-1/documents', message: 'GET /datastore/v1/data-sources/ds-1/documents: 503 Service Unavailable', retryable: true });

function setup(o: { buildFails?: number; watchFails?: number; rescanIntervalSeconds?: number; holdStart?: number; buildError?: (n: number) => unknown; api?: Partial<MappingRunnerDeps['api']> } = {}) {
  const clock = new FakeClock(1_000_000);
  const mirror = new FakeMirror();
  let builds = 0;
  let watcherOpts: WatcherOptions | undefined;
  let watcherClosed = false;
  let watchStarts = 0;
  /** Start number `o.holdStart` is ready only when released (a first poll cycle that takes time) or its signal aborts. */
  let releaseStart: (() => void) | undefined;
  const config = { debounceMs: 300, rescanIntervalSeconds: o.rescanIntervalSeconds ?? 3600, ingestionCheck: { enabled: false, delaySeconds: 0 } } as unknown as Config;
  const mapping = { id: 'm1', path: '/srv/share', dataSourceId: 'ds-1', include: ['**/*.txt'], exclude: [], ignoreFile: '', watch: { mode: 'events', pollIntervalSeconds: 10, pollBudgetPercent: 5 } } as unknown as MappingConfig;
  const state = { mapping: () => ({ files: new Map([['a.txt', {}], ['b.txt', {}]]) }), fileCount: () => 2 } as unknown as StateStore;
  const deps: MappingRunnerDeps = {
    config,
    mapping,
    index: 0,
    api: (o.api ?? {}) as MappingRunnerDeps['api'],
    state,
    logger: silentLogger,
    clock,
    random: () => 0.5, // no jitter: delays are exactly 5 s, 10 s, ...
    buildMirror: () => {
      builds++;
      if (builds <= (o.buildFails ?? 0)) return Promise.reject(new Error('connect ECONNREFUSED 127.0.0.1:443'));
      const err = o.buildError?.(builds);
      if (err !== undefined) return Promise.reject(err);
      return Promise.resolve(mirror as unknown as Mirror);
    },
    watch: (opts) => {
      watchStarts++;
      if (watchStarts <= (o.watchFails ?? 0)) return Promise.reject(new WatchError('E_WATCH_ROOT_UNUSABLE', opts.root, `cannot watch ${opts.root}: ENOENT`, true));
      watcherClosed = false;
      watcherOpts = opts;
      const w: Watcher = {
        root: opts.root,
        close: () => {
          watcherClosed = true;
          return Promise.resolve();
        },
        watchedDirs: () => 1,
      };
      if (watchStarts !== o.holdStart) return Promise.resolve(w);
      return new Promise<Watcher>((resolve) => {
        releaseStart = () => resolve(w);
        opts.signal?.addEventListener('abort', () => resolve(w), { once: true });
      });
    },
  };
  const runner = new MappingRunner(deps);
  const emit = (e: Omit<RawEvent, 'at'>): void => {
    if (!watcherOpts) throw new Error('the watcher was not started');
    // Stamped by the clock the runner gave the watcher (the real watcher does the same).
    watcherOpts.onEvent({ ...e, at: watcherOpts.clock.monotonic() });
  };
  const watchError = (e: WatchError): void => {
    if (!watcherOpts) throw new Error('the watcher was not started');
    watcherOpts.onError(e);
  };
  return { clock, mirror, runner, emit, watchError, builds: () => builds, watchStarts: () => watchStarts, watcherClosed: () => watcherClosed, releaseStart: () => releaseStart?.() };
}

const notFound = (path: string): ApiError => new ApiError({ code: 'E_NOT_FOUND', status: 404, method: 'GET', path, message: `GET ${path}: 404 Not Found` });

describe('MappingRunner, its data source gone (issue 23, defect 9)', () => {
  it('a 404 of the pass and a 404 for the data source: the mirror is dropped and the next attempt looks it up again', async () => {
    const gets: string[] = [];
    const api = {
      getDataSource: (id: string) => {
        gets.push(id);
        return Promise.reject(notFound(`/datastore/v1/data-sources/${id}`));
      },
    };
    const { clock, mirror, runner, builds } = setup({ api });
    runner.start();
    await clock.settle();
    mirror.last().reject(notFound('/datastore/v1/data-sources/ds-1/documents'));
    await clock.settle();
    expect(gets).toEqual(['ds-1']);
    const s = runner.status();
    expect(s.phase).toBe('degraded');
    expect(s.dataSourceNotice).toContain('data source ds-1 of mapping m1 no longer exists (deleted in the App?)');
    expect(builds()).toBe(1);
    await clock.advance(5_000);
    expect(builds()).toBe(2);
    mirror.last().resolve(report());
    await clock.settle();
    expect(runner.status().phase).toBe('watching');
    await runner.stop(8_000);
  });

  it('a 404 of an upload while the data source exists: the same mirror is retried', async () => {
    const api = { getDataSource: (id: string) => Promise.resolve({ id, raw: {} }) };
    const { clock, mirror, runner, builds } = setup({ api });
    runner.start();
    await clock.settle();
    mirror.last().resolve(report([{ path: 'a.txt', op: 'update-meta', code: 'E_NOT_FOUND', status: 404, message: 'document gone' }]));
    await clock.advance(5_000);
    expect(builds()).toBe(1);
    expect(mirror.calls).toHaveLength(2);
    expect(runner.status().dataSourceNotice).toBeUndefined();
    mirror.last().resolve(report());
    await clock.settle();
    await runner.stop(8_000);
  });

  it('a data source by id that no longer exists stops the mapping (no retries) until a reload', async () => {
    const missing = new DataSourceMissingError('data source ds-1 (mappings[0].dataSourceId) does not exist for this organization');
    const { clock, mirror, runner, builds } = setup({ buildError: (n) => (n === 1 ? missing : undefined) });
    runner.start();
    await clock.settle();
    expect(builds()).toBe(1);
    const s = runner.status();
    expect(s.phase).toBe('degraded');
    expect(s.degraded).toEqual([expect.stringContaining('mapping stopped: data source ds-1')]);
    expect(s.degraded[0]).toContain('reload (SIGHUP)');
    await clock.advance(3_600_000);
    expect(builds()).toBe(1);
    expect(mirror.calls).toHaveLength(0);

    await runner.reload();
    await clock.settle();
    expect(builds()).toBe(2);
    expect(mirror.calls.map((c) => c.kind)).toEqual(['full']);
    mirror.last().resolve(report());
    await clock.settle();
    expect(runner.status()).toMatchObject({ phase: 'watching', degraded: [] });
    await runner.stop(8_000);
  });
});

describe('MappingRunner', () => {
  it('retries a failing full pass with exponential back-off, degraded with the reason, then recovers to watching', async () => {
    const { clock, mirror, runner } = setup();
    runner.start();
    await clock.settle();
    expect(mirror.calls.map((c) => c.kind)).toEqual(['full']);
    expect(runner.status().phase).toBe('syncing');

    mirror.last().reject(serviceDown());
    await clock.settle();
    let s = runner.status();
    expect(s.phase).toBe('degraded');
    expect(s.degraded).toEqual([expect.stringContaining('503 Service Unavailable')]);
    expect(s.recentErrors.at(-1)?.message).toContain('503');
    expect(clock.delays()).toContain(retryDelayMs(1, () => 0.5));

    // No retry before the back-off is over; one right after it.
    await clock.advance(4_999);
    expect(mirror.calls).toHaveLength(1);
    await clock.advance(1);
    expect(mirror.calls.map((c) => c.kind)).toEqual(['full', 'full']);

    // A second failure doubles the delay.
    mirror.last().reject(serviceDown());
    await clock.advance(9_999);
    expect(mirror.calls).toHaveLength(2);
    await clock.advance(1);
    expect(mirror.calls).toHaveLength(3);

    mirror.last().resolve(report());
    await clock.settle();
    s = runner.status();
    expect(s.phase).toBe('watching');
    expect(s.degraded).toEqual([]);
    expect(s.lastFullPassOkAt).toBeDefined();
    expect(s.filesTracked).toBe(2);
    // The periodic rescan (3600 s ± 10 %) is what is scheduled now.
    expect(clock.delays().some((d) => d >= 3_240_000 && d <= 3_960_000)).toBe(true);
    await runner.stop(8_000);
  });

  it('says the service is unreachable when the data source cannot even be resolved, and retries after the back-off (not in a loop)', async () => {
    const { clock, mirror, runner, builds } = setup({ buildFails: 2 });
    runner.start();
    await clock.settle();
    expect(builds()).toBe(1);
    expect(runner.status()).toMatchObject({ phase: 'degraded', degraded: [expect.stringContaining('ECONNREFUSED')] });
    await clock.advance(4_999);
    expect(builds()).toBe(1);
    await clock.advance(1);
    expect(builds()).toBe(2);
    await clock.advance(9_999);
    expect(builds()).toBe(2);
    await clock.advance(1);
    expect(builds()).toBe(3);
    mirror.last().resolve(report());
    await clock.settle();
    expect(runner.status()).toMatchObject({ phase: 'watching', degraded: [] });
    await runner.stop(8_000);
  });

  it('marks the mapping degraded when operations of a pass fail, and settles them with a full pass after the back-off', async () => {
    const { clock, mirror, runner, emit } = setup();
    runner.start();
    await clock.settle();
    mirror.last().resolve(report());
    await clock.settle();

    emit({ kind: 'change', path: 'a.txt', size: 3 });
    await clock.advance(2_000);
    expect(mirror.last()).toMatchObject({ kind: 'changes', scope: { files: ['a.txt'], dirs: [] } });
    mirror.last().resolve(report([{ path: 'a.txt', op: 'replace', code: 'E_SERVER', status: 503, message: 'POST upload: 503 Service Unavailable' }]));
    await clock.settle();
    expect(runner.status()).toMatchObject({ phase: 'degraded', degraded: [expect.stringMatching(/1 operation\(s\) failed.*replace a\.txt.*503/)] });

    await clock.advance(5_000);
    expect(mirror.last().kind).toBe('full');
    mirror.last().resolve(report());
    await clock.settle();
    expect(runner.status()).toMatchObject({ phase: 'watching', degraded: [] });
    await runner.stop(8_000);
  });

  it('rescanIntervalSeconds 0: one full pass at start, no periodic rescan (not passes back to back)', async () => {
    const { clock, mirror, runner, emit } = setup({ rescanIntervalSeconds: 0 });
    runner.start();
    await clock.settle();
    mirror.last().resolve(report());
    await clock.advance(10_000);
    expect(mirror.calls.map((c) => c.kind)).toEqual(['full']);
    expect(runner.status().nextRescanAt).toBeUndefined();
    emit({ kind: 'change', path: 'a.txt', size: 1 });
    await clock.advance(2_000);
    mirror.last().resolve(report());
    await clock.advance(7 * 24 * 3_600_000);
    expect(mirror.calls.map((c) => c.kind)).toEqual(['full', 'changes']);
    await runner.stop(8_000);
  });

  // What a recorded failure means comes from errors.ts's disposition, as for the executor:
  // the runner used to keep its own list (413 and 415), and retried 400/422 refusals as
  // failures every back-off although the executor had set the file aside.
  const notAnOutage: [string, FileFailure][] = [
    ['413', { path: 'huge.pdf', op: 'upload', code: 'E_PAYLOAD_TOO_LARGE', status: 413, message: 'too large' }],
    ['415', { path: 'a.bin', op: 'upload', code: 'E_UNSUPPORTED_TYPE', status: 415, message: 'unsupported' }],
    ['400 (a name the service refuses)', { path: 'x'.repeat(1100), op: 'upload', code: 'E_BAD_REQUEST', status: 400, message: 'name too long' }],
    ['422', { path: 'b.txt', op: 'upload', code: 'E_BAD_REQUEST', status: 422, message: 'unprocessable' }],
  ];
  for (const [name, failure] of notAnOutage) {
    it(`does not count a file the service refused (${name}) as an outage: no retry, not degraded`, async () => {
      const { clock, mirror, runner } = setup();
      runner.start();
      await clock.settle();
      mirror.last().resolve(report([failure]));
      await clock.settle();
      expect(runner.status()).toMatchObject({ phase: 'watching', degraded: [] });
      await clock.advance(60_000);
      expect(mirror.calls).toHaveLength(1);
      await runner.stop(8_000);
    });
  }

  it('a lost answer alone is not an outage: not degraded, a full pass settles it', async () => {
    const { clock, mirror, runner } = setup();
    runner.start();
    await clock.settle();
    mirror.last().resolve(report([{ path: '', op: 'upload', code: 'E_CONNECTION', ambiguous: true, message: 'an upload answer was lost' }], { needsFullPass: true }));
    await clock.settle();
    expect(runner.status()).toMatchObject({ phase: 'watching', degraded: [] });
    await runner.stop(8_000);
  });

  it('a recorded 401 on a file is a failure (retried after the back-off), like any failure of the service', async () => {
    const { clock, mirror, runner } = setup();
    runner.start();
    await clock.settle();
    mirror.last().resolve(report([{ path: 'a.txt', op: 'upload', code: 'E_UNAUTHORIZED', status: 401, message: '401 Unauthorized' }]));
    await clock.settle();
    expect(runner.status().phase).toBe('degraded');
    await clock.advance(retryDelayMs(1, () => 0.5));
    expect(mirror.calls.map((c) => c.kind)).toEqual(['full', 'full']);
    mirror.last().resolve(report());
    await runner.stop(8_000);
  });

  it('a pass refused for the credentials says so (the disposition decides, not a list of codes)', async () => {
    const { clock, mirror, runner } = setup();
    runner.start();
    await clock.settle();
    mirror.last().reject(new ApiError({ code: 'E_FORBIDDEN', status: 403, message: '403 Forbidden: organization not accessible' }));
    await clock.settle();
    expect(runner.status().degraded).toEqual([expect.stringContaining('the service refused the credentials: 403 Forbidden')]);
    await runner.stop(8_000);
  });

  it('reload (SIGHUP, settings unchanged): the watcher restarts with the ignore file read again, and a full pass runs at once, back-off or not', async () => {
    const { clock, mirror, runner, watchStarts, watcherClosed } = setup();
    runner.start();
    await clock.settle();
    mirror.last().reject(serviceDown());
    await clock.settle();
    expect(runner.status().phase).toBe('degraded');
    expect(clock.delays()).toContain(retryDelayMs(1, () => 0.5));

    await runner.reload();
    // The data source is looked up again first (it may have been deleted or renamed in the App).
    await clock.settle();
    expect(watchStarts()).toBe(2);
    expect(watcherClosed()).toBe(false);
    expect(mirror.calls.map((c) => c.kind)).toEqual(['full', 'full']);
    mirror.last().resolve(report());
    await clock.settle();
    expect(runner.status().phase).toBe('watching');
    await runner.stop(8_000);
  });

  it('runs one pass at a time; changes seen during a pass are planned together afterwards', async () => {
    const { clock, mirror, runner, emit } = setup();
    runner.start();
    await clock.settle();
    expect(mirror.calls).toHaveLength(1); // the startup full pass, still running

    emit({ kind: 'change', path: 'a.txt', size: 1 });
    emit({ kind: 'add', path: 'b.txt', size: 1 });
    await clock.advance(2_000);
    emit({ kind: 'change', path: 'c.txt', size: 1 });
    await clock.advance(2_000);
    // Both batches are ready, but the full pass has not ended: nothing else started.
    expect(mirror.calls).toHaveLength(1);
    expect(runner.status().pending).toBe(3);

    mirror.last().resolve(report());
    await clock.settle();
    expect(mirror.calls).toHaveLength(2);
    expect(mirror.last()).toMatchObject({ kind: 'changes', scope: { files: ['a.txt', 'b.txt', 'c.txt'], dirs: [] } });
    // A size change a moment after a.txt's release is growth: it waits for the stability
    // window (2 s plus a quarter of how long it has been changing), not just the debounce.
    emit({ kind: 'change', path: 'a.txt', size: 2 });
    await clock.advance(4_000);
    expect(mirror.calls).toHaveLength(2);
    mirror.last().resolve(report());
    await clock.settle();
    expect(mirror.last()).toMatchObject({ kind: 'changes', scope: { files: ['a.txt'], dirs: [] } });
    mirror.last().resolve(report());
    await clock.settle();
    expect(mirror.maxRunning).toBe(1);
    expect(runner.status()).toMatchObject({ phase: 'watching', pending: 0 });
    await runner.stop(8_000);
  });

  it('looks at a folder event\'s own path too (a file replaced by a folder of the same name)', async () => {
    const { clock, mirror, runner, emit } = setup();
    runner.start();
    await clock.settle();
    mirror.last().resolve(report());
    await clock.settle();
    emit({ kind: 'addDir', path: 'shape.txt' });
    await clock.advance(3_000);
    expect(mirror.last()).toMatchObject({ kind: 'changes', scope: { files: ['shape.txt'], dirs: ['shape.txt'] } });
    mirror.last().resolve(report());
    await runner.stop(8_000);
  });

  it('asks for a full pass when the watcher lost events', async () => {
    const { clock, mirror, runner, emit } = setup();
    runner.start();
    await clock.settle();
    mirror.last().resolve(report());
    await clock.settle();
    emit({ kind: 'raw', path: '' }); // the mapped folder itself: only a full look can tell
    await clock.advance(1_000);
    expect(mirror.last().kind).toBe('full');
    mirror.last().resolve(report());
    await runner.stop(8_000);
  });

  it('stops: closes the watcher, lets the running pass end, and starts nothing afterwards', async () => {
    const { clock, mirror, runner, emit, watcherClosed } = setup();
    runner.start();
    await clock.settle();
    emit({ kind: 'change', path: 'a.txt', size: 1 });
    await clock.advance(2_000);
    let stopped = false;
    const stopping = runner.stop(7_000).then(() => (stopped = true));
    await clock.settle();
    expect(watcherClosed()).toBe(true);
    expect(stopped).toBe(false); // the pass is still running
    mirror.last().resolve(report());
    await stopping;
    await clock.advance(3_600_000 * 2);
    expect(mirror.calls).toHaveLength(1);
    expect(runner.status().phase).toBe('stopped');
  });

  it('aborts a pass that outlives the stop grace period', async () => {
    const { clock, mirror, runner } = setup();
    runner.start();
    await clock.settle();
    let stopped = false;
    const stopping = runner.stop(7_000).then(() => (stopped = true));
    await clock.advance(6_999);
    expect(stopped).toBe(false);
    expect(mirror.last().signal?.aborted).toBe(false);
    await clock.advance(1);
    // The mirror sees the abort through its signal and ends the pass with an error.
    expect(mirror.last().signal?.aborted).toBe(true);
    mirror.last().reject(new Error('aborted'));
    await stopping;
    expect(stopped).toBe(true);
    expect(runner.status().phase).toBe('stopped');
  });
});

describe('MappingRunner: back-off and the watcher', () => {
  it('holds watcher changes during the back-off; the retry\'s full pass covers them', async () => {
    const { clock, mirror, runner, emit } = setup();
    runner.start();
    await clock.settle();
    mirror.last().reject(serviceDown());
    await clock.settle();
    emit({ kind: 'change', path: 'a.txt', size: 1 });
    await clock.advance(4_000);
    expect(mirror.calls).toHaveLength(1);
    expect(runner.status().pending).toBe(1);
    await clock.advance(1_000);
    expect(mirror.calls.map((c) => c.kind)).toEqual(['full', 'full']);
    expect(runner.status().pending).toBe(0);
    mirror.last().resolve(report());
    await clock.settle();
    expect(mirror.calls).toHaveLength(2);
    expect(runner.status().phase).toBe('watching');
    await runner.stop(8_000);
  });

  it('a vanished folder: degraded naming it; when it is watched again, a full pass runs at once despite the pass back-off', async () => {
    const { clock, mirror, runner, watchError, watchStarts } = setup();
    runner.start();
    await clock.settle();
    mirror.last().resolve(report());
    await clock.settle();

    watchError(new WatchError('E_WATCH_ROOT_GONE', '/srv/share', 'the watched folder /srv/share is gone', true));
    await clock.advance(200);
    expect(runner.status().degraded).toEqual([expect.stringContaining('/srv/share')]);
    // The rescan the lost events ask for finds the folder missing: blocked, retried later.
    expect(mirror.last().kind).toBe('full');
    const outage = { ok: false as const, kind: 'outage' as const, deletes: 0, message: 'the mapped folder /srv/share is missing: treated as an outage' };
    mirror.last().resolve(report([], { blocked: outage }));
    await clock.settle();
    expect(runner.status().degraded).toHaveLength(2);

    // The watcher is started again after its own back-off (5 s from the error, before the
    // pass's retry, due 5 s after the blocked pass); the folder is back: a full pass now.
    const calls = mirror.calls.length;
    await clock.advance(4_800);
    expect(watchStarts()).toBe(2);
    expect(mirror.calls).toHaveLength(calls + 1);
    await clock.advance(10_000); // the pass's own retry was cancelled: no second pass
    expect(mirror.calls).toHaveLength(calls + 1);
    mirror.last().resolve(report());
    await clock.settle();
    expect(runner.status()).toMatchObject({ phase: 'watching', degraded: [] });
    await runner.stop(8_000);
  });

  it('a mount change: the new watcher is started, and the full pass runs only once it is ready (its first poll cycle learned the tree)', async () => {
    const { clock, mirror, runner, watchError, watchStarts, releaseStart } = setup({ holdStart: 2 });
    runner.start();
    await clock.settle();
    mirror.last().resolve(report());
    await clock.settle();
    const calls = mirror.calls.length;

    watchError(new WatchError('E_WATCH_MOUNTS_CHANGED', '/srv/share', 'the filesystems mounted on or below /srv/share changed', true));
    await clock.advance(1_000);
    expect(watchStarts()).toBe(2);
    // A pass now could miss what changes before the new poller has learned the tree.
    expect(mirror.calls).toHaveLength(calls);
    releaseStart();
    await clock.advance(1_000);
    expect(mirror.calls.map((c) => c.kind).slice(calls)).toEqual(['full']);
    mirror.last().resolve(report());
    await clock.settle();
    await runner.stop(8_000);
  });

  it('a stop while the watcher start waits for its first poll cycle: the start is told to give up, and the stop ends', async () => {
    const { clock, runner, watchStarts, watcherClosed } = setup({ holdStart: 1 });
    runner.start();
    await clock.settle();
    expect(watchStarts()).toBe(1);
    await runner.stop(8_000); // without the signal, it would wait for the cycle forever
    expect(watcherClosed()).toBe(true);
  });

  it('a folder that cannot be watched at start: degraded, watched again with back-off, then a full pass', async () => {
    const { clock, mirror, runner, watchStarts } = setup({ watchFails: 2 });
    runner.start();
    await clock.settle();
    mirror.last().resolve(report());
    await clock.settle();
    expect(runner.status()).toMatchObject({ phase: 'degraded', degraded: [expect.stringContaining('not watching /srv/share')] });
    await clock.advance(5_000);
    expect(watchStarts()).toBe(2);
    await clock.advance(9_999);
    expect(watchStarts()).toBe(2);
    await clock.advance(1);
    expect(watchStarts()).toBe(3);
    expect(mirror.calls.map((c) => c.kind)).toEqual(['full', 'full']);
    mirror.last().resolve(report());
    await clock.settle();
    expect(runner.status()).toMatchObject({ phase: 'watching', degraded: [] });
    await runner.stop(8_000);
  });
});

// Issue 23, defect 7: chrony stepping the wall clock (an hour back at a VM's boot) stalled
// the daemon for the size of the step; every timer and deadline now runs on the monotonic clock.
describe('MappingRunner: the wall clock steps', () => {
  for (const stepMs of [-3_600_000, 3_600_000]) {
    const way = stepMs < 0 ? 'back' : 'forward';
    it(`a file written just before the wall clock steps ${way} 1 h is still sent after its quiet window`, async () => {
      const { clock, mirror, runner, emit } = setup();
      runner.start();
      await clock.settle();
      mirror.last().resolve(report());
      await clock.settle();

      emit({ kind: 'change', path: 'a.txt', size: 3 });
      clock.stepWall(stepMs);
      await clock.advance(1_999);
      expect(mirror.calls.map((c) => c.kind)).toEqual(['full']);
      await clock.advance(1);
      expect(mirror.last()).toMatchObject({ kind: 'changes', scope: { files: ['a.txt'], dirs: [] } });
      mirror.last().resolve(report());
      await clock.settle();
      await runner.stop(8_000);
    });

    it(`a mapping waiting to retry still retries after its back-off when the wall clock steps ${way} 1 h`, async () => {
      const { clock, mirror, runner } = setup();
      runner.start();
      await clock.settle();
      mirror.last().reject(serviceDown());
      await clock.settle();
      expect(runner.status().phase).toBe('degraded');

      clock.stepWall(stepMs);
      await clock.advance(4_999);
      expect(mirror.calls).toHaveLength(1);
      await clock.advance(1);
      expect(mirror.calls.map((c) => c.kind)).toEqual(['full', 'full']);
      mirror.last().resolve(report());
      await clock.settle();
      expect(runner.status()).toMatchObject({ phase: 'watching', degraded: [] });
      await runner.stop(8_000);
    });
  }

  it('a forward step fires nothing early: the periodic rescan stays an hour away, the status shows it on the new wall clock', async () => {
    const { clock, mirror, runner } = setup();
    runner.start();
    await clock.settle();
    mirror.last().resolve(report());
    await clock.settle();
    const before = Date.parse(runner.status().nextRescanAt ?? '');

    clock.stepWall(2 * 3_600_000);
    await clock.advance(60_000);
    expect(mirror.calls.map((c) => c.kind)).toEqual(['full']);
    // Shown where it now falls on the (stepped) wall clock: the same monotonic deadline.
    expect(Date.parse(runner.status().nextRescanAt ?? '')).toBe(before + 2 * 3_600_000);
    await runner.stop(8_000);
  });
});

// Issue 23, defect 6: a full pass sets aside a file changed within the stability window;
// the runner looks at it again once the window has passed.
describe('MappingRunner: files a pass set aside', () => {
  it('runs an incremental pass of the set-aside files after the stability window, and counts them as pending meanwhile', async () => {
    const { clock, mirror, runner } = setup();
    runner.start();
    await clock.settle();
    mirror.last().resolve(report([], { settling: ['big.txt'] }));
    await clock.settle();
    expect(runner.status().pending).toBe(1);
    await clock.advance(1_999);
    expect(mirror.calls).toHaveLength(1);
    await clock.advance(1);
    expect(mirror.last()).toMatchObject({ kind: 'changes', scope: { files: ['big.txt'], dirs: [] } });
    mirror.last().resolve(report());
    await clock.settle();
    expect(runner.status().pending).toBe(0);
    await runner.stop(8_000);
  });
});

/**
 * A pass lets each file's record go once its operation has ended (executor.ts executePlan,
 * mirror.ts pass): a first mirror of a million files otherwise holds every record, ~0.5 KB
 * each, to its end (docs/performance.md, "Session 22"). Checked with weak references and a
 * full collection made in the middle of the pass.
 */
import { describe, expect, it } from 'vitest';
import type { DocumentRecord, UploadFile } from '../../../src/api/records.js';
import { Mirror } from '../../../src/engine/mirror.js';
import { collectGarbage } from '../../../src/gc.js';
import type { Op } from '../../../src/engine/plan.js';
import { FakeApi } from '../../helpers/fake-api.js';
import { FakeClock } from '../../helpers/fake-clock.js';
import { HashedLocal } from '../../helpers/hashed-local.js';
import { MirrorMemoryState as State } from '../../helpers/memory-state.js';

const silent = { info() {}, warn() {}, error() {}, debug() {}, child() { return silent; } } as never;

/** Before its third upload request, collects garbage and counts the planned records still alive. */
class CollectingApi extends FakeApi {
  refs: { path: string; ref: WeakRef<object> }[] = [];
  alive: string[] | undefined;
  private batches = 0;
  override async uploadDocuments(dataSourceId: string, files: UploadFile[]): Promise<DocumentRecord[]> {
    if (++this.batches === 3) {
      // A new task: weak references made in an earlier one no longer hold their targets.
      await new Promise((resolve) => setImmediate(resolve));
      // The fake's own log of calls holds every request's files: not the mirror's to let go.
      this.calls.length = 0;
      expect(collectGarbage()).toBe(true);
      this.alive = this.refs.filter((r) => r.ref.deref() !== undefined).map((r) => r.path);
    }
    return super.uploadDocuments(dataSourceId, files);
  }
}

describe('a pass lets go of what it has done', () => {
  it("a first mirror's records of files already uploaded are collected while later batches are sent", async () => {
    const clock = new FakeClock(Date.parse('2026-11-30T00:00:00Z'));
    const api = new CollectingApi();
    const local = new HashedLocal();
    const paths = Array.from({ length: 40 }, (_, i) => `f${String(i).padStart(2, '0')}.txt`);
    for (const p of paths) local.write(p, p, clock.now() - 60_000);
    const spec = { mappingId: 'm1', installationId: 'inst-A', formerInstallationIds: [], root: '/srv/share', dataSourceId: 'ds1', prune: 'ours', maxDeletePercent: 100, massDeleteMinimum: 100, batchFiles: 10, batchBytes: 1e9, concurrency: 1 } as const;
    const onPlan = (ops: readonly Op[]): void => {
      for (const op of ops) if (op.kind === 'upload') api.refs.push({ path: op.path, ref: new WeakRef(op.file) });
    };
    const mirror = new Mirror({ spec, api, state: new State(), local, logger: silent, now: () => clock.now(), monotonic: () => clock.monotonic(), onPlan });

    const report = await mirror.fullPass();

    expect(report.ok).toBe(true);
    expect(report.counts.uploaded).toBe(40);
    expect(api.refs).toHaveLength(40);
    // The two batches sent are gone; what is still held is the batch being sent and the next.
    const alive = new Set(api.alive);
    expect(paths.slice(0, 20).filter((p) => alive.has(p))).toEqual([]);
    expect(alive.size).toBeLessThanOrEqual(20);
  });
});

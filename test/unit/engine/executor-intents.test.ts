/**
 * Upload intents and the state file: every upload is sent only after its intent is durable,
 * and each intent is begun right before its own batch (its start is what the settle window
 * of a later process counts from); batches starting side by side share a durable write.
 */
import { describe, expect, it } from 'vitest';
import { executePlan } from '../../../src/engine/executor.js';
import { documentFields } from '../../../src/engine/document-fields.js';
import type { HashedFile, Op } from '../../../src/engine/plan.js';
import { silentLogger } from '../../../src/log.js';
import type { Intent } from '../../../src/state/schema.js';
import { FakeApi, apiError } from '../../helpers/fake-api.js';
import { MemoryState } from '../../helpers/memory-state.js';
import { neverOpened } from '../../helpers/upload-file.js';

/** Intents become durable together, one "write" per turn of the event loop (group commit). */
class GroupCommitState extends MemoryState {
  writes = 0;
  readonly durable = new Set<string>();
  private pending: { paths: string[]; resolve: () => void }[] = [];
  override async beginIntent(id: string, intent: Omit<Intent, 'id' | 'startedAt'>): Promise<string> {
    const intentId = await super.beginIntent(id, intent);
    const paths = intent.kind === 'upload' ? (intent as Extract<Intent, { kind: 'upload' }>).files.map((f) => f.uploadName ?? f.path) : [];
    await new Promise<void>((resolve) => {
      if (this.pending.length === 0) setImmediate(() => this.commit());
      this.pending.push({ paths, resolve });
    });
    return intentId;
  }
  private commit(): void {
    this.writes++;
    for (const p of this.pending.splice(0)) {
      for (const path of p.paths) this.durable.add(path);
      p.resolve();
    }
  }
}

/**
 * A service that takes a little time per request, so that batches start one after another:
 * 1 to 3 turns of the event loop's microtasks (no timers: the same interleaving every run).
 */
class SlowApi extends FakeApi {
  private n = 0;
  private async pause(): Promise<void> {
    const turns = 1 + (this.n++ % 3);
    for (let i = 0; i < turns * 4; i++) await Promise.resolve();
  }
  override async uploadDocuments(...args: Parameters<FakeApi['uploadDocuments']>): ReturnType<FakeApi['uploadDocuments']> {
    await this.pause();
    return super.uploadDocuments(...args);
  }
  override async updateDocument(...args: Parameters<FakeApi['updateDocument']>): ReturnType<FakeApi['updateDocument']> {
    await this.pause();
    return super.updateDocument(...args);
  }
}

const file = (i: number): HashedFile => ({ path: `f${i}.txt`, diskPath: `/srv/share/f${i}.txt`, size: 10, mtimeMs: 1000, sha256: `h${i}` });

describe('executePlan: upload intents', () => {
  it('sends each upload after its intent is durable, and begins no intent ahead of its batch (issue 23, defect 4)', async () => {
    const api = new SlowApi();
    const state = new GroupCommitState();
    const sentBeforeDurable: string[] = [];
    // Upload requests already sent when each intent was begun (in the order begun).
    const sentAtBegin: number[] = [];
    const begin = state.beginIntent.bind(state);
    state.beginIntent = (id, intent) => {
      sentAtBegin.push(api.count('uploadDocuments'));
      return begin(id, intent);
    };
    api.failBefore = (op, arg) => {
      if (op === 'uploadDocuments') for (const f of arg as { name: string }[]) if (!state.durable.has(f.name)) sentBeforeDurable.push(f.name);
      return undefined;
    };
    const ops: Op[] = Array.from({ length: 40 }, (_, i) => ({ kind: 'upload', path: `f${i}.txt`, file: file(i) }));
    const result = await executePlan(ops, {
      api,
      state,
      mappingId: 'm1',
      dataSourceId: 'ds1',
      desired: (f) => documentFields({ mappingId: 'm1', root: '/srv/share' }, f),
      batchFiles: 1, // 40 batches
      batchBytes: 1 << 20,
      concurrency: 4,
      now: () => 0,
      logger: silentLogger,
        open: neverOpened,
    });
    expect(result.failures).toEqual([]);
    expect(api.count('uploadDocuments')).toBe(40);
    expect(sentAtBegin).toHaveLength(40);
    expect(sentBeforeDurable).toEqual([]);
    // An intent's start is what an earlier process's settle window counts from: the k-th is
    // begun when at most `concurrency` batches are in flight before it, never many ahead.
    sentAtBegin.forEach((sent, k) => expect(sent).toBeGreaterThanOrEqual(k - 4));
    // The batches running side by side at the start share one write.
    expect(state.writes).toBeLessThan(40);
    // Every intent was ended once its documents had their metadata.
    expect(Object.keys(state.m.intents)).toEqual([]);
  });
});

describe('executePlan: an upload answer names our documents (issue 9, found by the simulation)', () => {
  const opts = (api: FakeApi, state: MemoryState, preexisting?: (path: string) => string[]) => ({
    api,
    state,
    mappingId: 'm1',
    dataSourceId: 'ds1',
    desired: (f: HashedFile) => documentFields({ mappingId: 'm1', root: '/srv/share' }, f),
    batchFiles: 10,
    batchBytes: 1 << 20,
    concurrency: 2,
    now: () => 0,
    logger: silentLogger,
        open: neverOpened,
    preexisting,
  });

  it('records the ids the upload returned in its intent before the metadata update, which then fails', async () => {
    const api = new FakeApi();
    const state = new MemoryState();
    const seen: (string | undefined)[][] = [];
    api.failBefore = (op) => {
      if (op !== 'updateDocument') return undefined;
      // When the metadata update is sent, the intent already names the documents.
      seen.push(Object.values(state.m.intents).flatMap((i) => (i.kind === 'upload' ? i.files.map((f) => f.documentId) : [])));
      return apiError('E_SERVER', 503, { retryable: true });
    };
    const ops: Op[] = [0, 1].map((i) => ({ kind: 'upload', path: `f${i}.txt`, file: file(i) }));
    const result = await executePlan(ops, opts(api, state));
    expect(result.failures.map((f) => f.path).sort()).toEqual(['f0.txt', 'f1.txt']);
    const ids = api.list().map((d) => d.id).sort();
    expect(seen[0]?.slice().sort()).toEqual(ids);
    const [intent] = Object.values(state.m.intents);
    expect(intent?.kind === 'upload' && intent.files.map((f) => f.documentId)).toEqual(ids);
  });

  it("an unmarked upload sent without a fresh listing makes its answer's ids durable before the metadata update; with one, or marked, it does not wait", async () => {
    for (const [fresh, renamesIgnored] of [
      [false, true],
      [true, true],
      [false, false],
    ] as const) {
      const api = new FakeApi();
      const state = new (class extends MemoryState {
        durableIds: (string | undefined)[] = [];
        async flush(): Promise<void> {
          this.durableIds = Object.values(this.m.intents).flatMap((i) => (i.kind === 'upload' ? i.files.map((f) => f.documentId) : []));
        }
      })();
      const atUpdate: (string | undefined)[][] = [];
      api.failBefore = (op) => {
        if (op === 'updateDocument') atUpdate.push([...state.durableIds]);
        return undefined;
      };
      await executePlan([{ kind: 'upload', path: 'f0.txt', file: file(0) }], { ...opts(api, state), preexistingFresh: fresh, names: { verified: true, known: renamesIgnored ? { renamesIgnored } : {} } });
      // A marked upload is told by the nonce its intent journalled before the send: no fsync more.
      expect(atUpdate).toEqual([!fresh && renamesIgnored ? [api.list()[0]!.id] : []]);
    }
  });

  it('an intent of files sent under their real names records the unmarked documents already named like them (never its upload)', async () => {
    const api = new FakeApi();
    const state = new MemoryState();
    api.failBefore = (op) => (op === 'uploadDocuments' ? apiError('E_TIMEOUT', undefined, { ambiguous: true }) : undefined);
    const ops: Op[] = [0, 1].map((i) => ({ kind: 'upload', path: `f${i}.txt`, file: file(i) }));
    // A service that ignores new names: uploads go unmarked, told by name and size after a lost answer.
    await executePlan(ops, { ...opts(api, state, (p) => (p === 'f1.txt' ? ['p1', 'p2'] : [])), names: { verified: true, known: { renamesIgnored: true } } });
    const [intent] = Object.values(state.m.intents);
    expect(intent?.kind === 'upload' && intent.preexisting).toEqual(['p1', 'p2']);
    expect(intent?.kind === 'upload' && intent.files.map((f) => [f.documentId, f.uploadName])).toEqual([
      [undefined, undefined],
      [undefined, undefined],
    ]);
  });

  it('an intent of marked uploads records no preexisting documents: each is told by its mark (issue 27.7)', async () => {
    const api = new FakeApi();
    const state = new MemoryState();
    api.failBefore = (op) => (op === 'uploadDocuments' ? apiError('E_TIMEOUT', undefined, { ambiguous: true }) : undefined);
    const ops: Op[] = [0, 1].map((i) => ({ kind: 'upload', path: `f${i}.txt`, file: file(i) }));
    await executePlan(ops, { ...opts(api, state, (p) => (p === 'f1.txt' ? ['p1', 'p2'] : [])), preexistingFresh: true });
    const [intent] = Object.values(state.m.intents);
    expect(intent?.kind === 'upload' && intent.files.every((f) => f.uploadName !== undefined)).toBe(true);
    expect(intent?.kind === 'upload' && [intent.preexisting, intent.preexistingFresh]).toEqual([undefined, undefined]);
  });
});

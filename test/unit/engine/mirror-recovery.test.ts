/**
 * Recovery without commands (issue 34, cases 4, 5 and 9) at the mirror's level: a state that
 * lost what its own process wrote converges once the pass holds the mapping's lease
 * (owner.ts rows O4, O9, O10), and stays conservative without it.
 */
import { describe, expect, it } from 'vitest';
import type { LeaseView } from '../../../src/engine/lease-view.js';
import { Mirror, type MirrorState } from '../../../src/engine/mirror.js';
import { FileTable } from '../../../src/state/file-table.js';
import type { MappingState, PassRecord } from '../../../src/state/schema.js';
import { FakeApi } from '../../helpers/fake-api.js';
import { FakeClock } from '../../helpers/fake-clock.js';
import { HashedLocal } from '../../helpers/hashed-local.js';
import { MemoryState } from '../../helpers/memory-state.js';

/** A state; `sessions: false` is one that records no writer sessions (documents carry none, as 0.1.0's). */
class State extends MemoryState implements MirrorState {
  readonly recordSession?: (id: string, session: string, at: number) => boolean;
  constructor(sessions = true) {
    super();
    if (sessions) {
      this.recordSession = (_id, session, at) => {
        if (this.m.sessions?.[session] !== undefined) return false;
        this.m.sessions = { ...this.m.sessions, [session]: at };
        return true;
      };
    }
  }
  /** The identity's former ids (StateStore.addFormerIds): what the next process is built with. */
  formerIds: string[] = [];
  addFormerIds(ids: readonly string[]): boolean {
    const added = ids.filter((id) => !this.formerIds.includes(id));
    this.formerIds.push(...added);
    return added.length > 0;
  }
  ensureMapping(): MappingState {
    return this.m;
  }
  setLastPass(_id: string, _p: PassRecord): void {}
  async flush(): Promise<void> {}
  /** Replaces what it records with `m` (a restore from a backup). */
  restore(m: MappingState): void {
    Object.assign(this.m, copyOf(m));
  }
}

function copyOf(m: MappingState): MappingState {
  return { ...m, files: FileTable.of(Object.fromEntries(m.files.entries())), intents: { ...m.intents }, sessions: { ...m.sessions } };
}

const silent = { info() {}, warn() {}, error() {}, debug() {}, child() { return silent; } } as never;
const HELD: LeaseView = { held: true };

function world() {
  const clock = new FakeClock(Date.parse('2026-11-28T00:00:00Z'));
  const api = new FakeApi();
  const local = new HashedLocal();
  /** A process: a new mirror (a new writer session) over `state`, as installation `installationId`, with the lease as it sees it. */
  const spec = { mappingId: 'm1', root: '/srv/share', dataSourceId: 'ds1', prune: 'ours', maxDeletePercent: 100, massDeleteMinimum: 100, batchFiles: 10, batchBytes: 1e9, concurrency: 2 } as const;
  const clocks = { now: () => clock.now(), monotonic: () => clock.monotonic() };
  const processOf = (state: State, installationId = 'inst-A', lease?: LeaseView, stabilityMs?: number) =>
    new Mirror({ spec: { ...spec, installationId, formerInstallationIds: [...state.formerIds] }, api, state, local, logger: silent, ...clocks, lease: () => lease, stabilityMs });
  /** Path -> [document ids, sessions] as the data source holds them. */
  const held = () => {
    const out: Record<string, { ids: string[]; sessions: string[] }> = {};
    for (const d of api.list()) {
      const path = String(d.metadata.dssync_path ?? d.name);
      out[path] ??= { ids: [], sessions: [] };
      out[path].ids.push(d.id);
      out[path].sessions.push(String(d.metadata.dssync_session ?? '-'));
    }
    return out;
  };
  return { clock, api, local, processOf, held };
}

describe('recovery without commands (issue 34)', () => {
  it('case 4: the state restored from a backup converges once the pass holds the lease; without it nothing is written', async () => {
    const { local, processOf, held } = world();
    const state = new State();
    local.write('a.txt', 'a1', 1000);
    local.write('b.txt', 'b1', 1000);
    local.write('d.txt', 'd1', 1000);
    expect((await processOf(state).fullPass()).ok).toBe(true);
    const backup = copyOf(state.m);
    // Written after the backup by a later process: a edited, c new, d deleted.
    local.write('a.txt', 'a2 edited', 1000);
    local.write('c.txt', 'c1', 1000);
    local.files.delete('d.txt');
    expect((await processOf(state).fullPass()).ok).toBe(true);
    const before = held();
    state.restore(backup);

    const unsure = await processOf(state).fullPass();
    expect(unsure.identityConflict).toBe('another-writer');
    expect(held()).toEqual(before);

    const sessionsBefore = new Set(Object.keys(state.m.sessions ?? {}));
    const restored = processOf(state, 'inst-A', HELD);
    const r = await restored.fullPass();
    expect(r.ok).toBe(true);
    expect(r.counts.uploaded + r.counts.replaced).toBe(0);
    const after = held();
    expect(Object.keys(after).sort()).toEqual(['a.txt', 'b.txt', 'c.txt']);
    // Each file keeps the one document it had, now recorded and carrying the restored process's session.
    for (const path of ['a.txt', 'c.txt']) {
      expect(after[path]!.ids).toEqual(before[path]!.ids);
      expect(state.m.files.documentIdOf(path)).toBe(after[path]!.ids[0]);
    }
    // The restored process's session: the one its pass recorded (not "the newest by time": the
    // fake clock gives every session the same time, and digit-only keys come first in a record).
    const newest = Object.keys(state.m.sessions ?? {}).filter((s) => !sessionsBefore.has(s));
    expect(newest).toHaveLength(1);
    expect(after['c.txt']!.sessions).toEqual(newest);
    expect(after['a.txt']!.sessions).toEqual(newest);
    // In step from then on: another pass does nothing.
    const again = await restored.fullPass();
    expect(again.counts).toMatchObject({ uploaded: 0, replaced: 0, renamed: 0, updated: 0, deleted: 0, adopted: 0, forgotten: 0 });
  });

  it('case 5: 0.1.0 upgraded under a new host name (the derived id changed): recorded documents stay ours; a changed file is replaced, a deleted one deleted', async () => {
    const { api, local, processOf, held } = world();
    const state = new State(false);
    local.write('a.txt', 'a1', 1000);
    local.write('b.txt', 'b1', 1000);
    expect((await processOf(state, 'derived-old').fullPass()).ok).toBe(true);
    local.write('a.txt', 'a2 edited', 1000);
    local.files.delete('b.txt');
    const r = await processOf(state, 'derived-new').fullPass();
    expect(r.ok).toBe(true);
    expect(r.conflicts ?? []).toEqual([]);
    expect(Object.keys(held())).toEqual(['a.txt']);
    expect(held()['a.txt']!.ids).toHaveLength(1);
    expect(api.list()[0]!.metadata.dssync_installation).toBe('derived-new');
  });

  it('case 5, a file set aside by the first pass under the new id: its follow-up asks for a full pass, which re-marks the document with no upload', async () => {
    const { clock, api, local, processOf } = world();
    const state = new State(false);
    local.write('a.txt', 'a1', 1000);
    local.write('keep.txt', 'k', 1000);
    expect((await processOf(state, 'derived-old').fullPass()).ok).toBe(true);
    // chmod just before the upgraded daemon's first pass: a new ctime, the same content.
    local.files.set('a.txt', { ...local.files.get('a.txt')!, ctimeMs: clock.now() });
    const upgraded = processOf(state, 'derived-new', undefined, 2_000);
    expect((await upgraded.fullPass()).settling).toEqual(['a.txt']);
    await clock.advance(2_000);
    // The follow-up has no listing to re-mark the document with.
    expect((await upgraded.changedPass({ files: ['a.txt'], dirs: [] })).needsFullPass).toBe(true);
    const r = await upgraded.fullPass();
    expect(r.counts.uploaded).toBe(0);
    expect(api.list().map((d) => [d.metadata.dssync_path, d.metadata.dssync_installation])).toEqual([
      ['a.txt', 'derived-new'],
      ['keep.txt', 'derived-new'],
    ]);
  });

  it('case 5 across processes: the former id a listing taught is kept in the state, so a document of it left unrecorded is recovered by the next process, when no recorded document carries that id any more', async () => {
    const { api, local, processOf, held } = world();
    const state = new State(false);
    local.write('a.txt', 'a1', 1000);
    local.write('b.txt', 'b1', 1000);
    expect((await processOf(state, 'derived-old').fullPass()).ok).toBe(true);
    // b.txt's entry never reached 0.1.0's disk (its journal cut short): its document carries the old id, unrecorded.
    state.m.files.delete('b.txt');
    const before = held();

    // Under the new host name, without the lease: a.txt's document re-marked (O4), b.txt's held (O13).
    const first = await processOf(state, 'derived-new').fullPass();
    expect(first.counts.uploaded).toBe(0);
    expect(state.formerIds).toEqual(['derived-old']);
    expect(api.list().find((d) => d.metadata.dssync_path === 'a.txt')!.metadata.dssync_installation).toBe('derived-new');
    expect(state.m.files.documentIdOf('b.txt')).toBeUndefined();

    // The next process holds the lease: b.txt's document is recovered, nothing uploaded again.
    const r = await processOf(state, 'derived-new', HELD).fullPass();
    expect(r.ok).toBe(true);
    expect(r.counts.uploaded).toBe(0);
    expect(held()['b.txt']!.ids).toEqual(before['b.txt']!.ids);
    expect(state.m.files.documentIdOf('b.txt')).toBe(before['b.txt']!.ids[0]);
    expect(api.list().map((d) => d.metadata.dssync_installation)).toEqual(['derived-new', 'derived-new']);
  });

  it('case 9: documents without a writer session (adopted, or 0.1.0\'s) and a lost state with its identity kept: recovered with the lease, never uploaded again', async () => {
    const { local, processOf, held } = world();
    const old = new State(false);
    local.write('a.txt', 'a1', 1000);
    local.write('b.txt', 'b1', 1000);
    await processOf(old).fullPass();
    const before = held();
    expect(before['a.txt']!.sessions).toEqual(['-']);
    const lost = new State();
    expect((await processOf(lost).fullPass()).identityConflict).toBe('another-writer');
    const r = await processOf(lost, 'inst-A', HELD).fullPass();
    expect(r.ok).toBe(true);
    expect(r.counts.uploaded).toBe(0);
    const after = held();
    expect(after['a.txt']!.ids).toEqual(before['a.txt']!.ids);
    expect(after['b.txt']!.ids).toEqual(before['b.txt']!.ids);
    expect(after['a.txt']!.sessions[0]).not.toBe('-');
  });

  it('a lease held by another live session: its documents stay another writer\'s, nothing is written', async () => {
    const { local, processOf, held } = world();
    const first = new State();
    local.write('a.txt', 'a1', 1000);
    await processOf(first).fullPass();
    const live = Object.keys(first.m.sessions ?? {})[0]!;
    const before = held();
    const r = await processOf(new State(), 'inst-A', { held: false, liveSession: live }).fullPass();
    expect(r.identityConflict).toBe('another-writer');
    expect(held()).toEqual(before);
  });
});

/**
 * `dssync adopt` asks the owner rule (owner.ts): it takes what the plan would not take as
 * its own, writes this process's session into what it takes (issue 34, case 9), and refuses
 * a live lease holder's documents without `force` (case 11).
 */
import { describe, expect, it } from 'vitest';
import { adoptDocuments, type AdoptState } from '../../../src/engine/adopt.js';
import { documentFields } from '../../../src/engine/document-fields.js';
import type { Intent, MappingState, StateIdentity } from '../../../src/state/schema.js';
import { newMappingState } from '../../../src/state/validate.js';
import { FakeApi } from '../../helpers/fake-api.js';

class State implements AdoptState {
  identity: StateIdentity | undefined = { installationId: 'inst-A', origin: 'drawn', formerIds: [] };
  m: MappingState | undefined;
  intents: Omit<Intent, 'id' | 'startedAt'>[] = [];
  setIdentity(identity: StateIdentity): void {
    this.identity = identity;
  }
  hasRecords(): boolean {
    return this.m !== undefined;
  }
  mapping(): MappingState | undefined {
    return this.m;
  }
  ensureMapping(_id: string, dataSourceId: string, root: string): MappingState {
    return (this.m ??= newMappingState(dataSourceId, root));
  }
  async beginIntent(_id: string, intent: Omit<Extract<Intent, { kind: 'upload' }>, 'id' | 'startedAt'>): Promise<string> {
    this.intents.push(intent);
    return 'i1';
  }
  recordSession(_id: string, session: string, at: number): boolean {
    this.m!.sessions = { ...this.m!.sessions, [session]: at };
    return true;
  }
}

function written(api: FakeApi, id: string, path: string, installationId: string, session?: string): void {
  const f = documentFields({ mappingId: 'm1', installationId, session, root: '/srv' }, { path, sha256: `sha-${path}`, size: 1, mtimeMs: 1 });
  api.add({ id, name: f.name, url: f.url, metadata: f.metadata, dataSourceId: 'ds1' });
}

const input = (api: FakeApi, state: State, extra: Partial<Parameters<typeof adoptDocuments>[0]> = {}) =>
  adoptDocuments({ api, state, config: { statePath: '/var/lib/dssync/state.json' }, mapping: { id: 'm1', path: '/srv' }, dataSourceId: 'ds1', dryRun: false, now: () => 1, ...extra });

describe('dssync adopt', () => {
  it('writes this process\'s session and our id into every document it takes, and records that session first', async () => {
    const api = new FakeApi();
    written(api, 'x1', 'a.txt', 'inst-B');
    written(api, 'x2', 'b.txt', 'inst-B');
    const state = new State();
    const r = await input(api, state);
    expect(r.adopted.map((a) => a.documentId)).toEqual(['x1', 'x2']);
    const sessions = Object.keys(state.m?.sessions ?? {});
    expect(sessions).toHaveLength(1);
    for (const d of api.list()) {
      expect(d.metadata.dssync_installation).toBe('inst-A');
      expect(d.metadata.dssync_session).toBe(sessions[0]);
    }
  });

  it('leaves what the plan takes as its own: our upload whose state entry a crash lost (an open intent sent its path)', async () => {
    const api = new FakeApi();
    written(api, 'n1', 'a.txt', 'inst-A', 'aaaa0001');
    const state = new State();
    const m = state.ensureMapping('m1', 'ds1', '/srv');
    m.sessions = { aaaa0001: 1 };
    m.intents = { i0: { kind: 'upload', id: 'i0', startedAt: 't', files: [{ path: 'a.txt', size: 1, mtimeMs: 1, sha256: 'sha-a.txt' }] } };
    const r = await input(api, state);
    expect(r.adopted).toEqual([]);
    expect(api.list()[0]!.metadata.dssync_session).toBe('aaaa0001');
  });

  it('refuses, naming the session, documents of a writer that holds the live lease; --force takes them', async () => {
    const api = new FakeApi();
    written(api, 'x1', 'a.txt', 'inst-A', 'c1c1c1c1');
    const state = new State();
    const lease = { held: false, liveSession: 'c1c1c1c1' };
    const refused = await input(api, state, { lease });
    expect(refused.refused).toMatch(/session c1c1c1c1, which holds the mapping's lease and is live/);
    expect(refused.adopted).toEqual([]);
    expect(state.intents).toEqual([]);
    expect(api.list()[0]!.metadata.dssync_session).toBe('c1c1c1c1');
    const forced = await input(api, state, { lease, force: true });
    expect(forced.adopted.map((a) => a.documentId)).toEqual(['x1']);
    expect(api.list()[0]!.metadata.dssync_session).not.toBe('c1c1c1c1');
  });

  it('never takes the lease\'s marker document', async () => {
    const api = new FakeApi();
    api.add({ id: 'l1', name: '.dssync-lease-m1', metadata: { dssync_lease: 'm1', dssync_mapping: 'm1', dssync_path: '.dssync-lease', dssync_sha256: 'x', dssync_installation: 'inst-B' }, dataSourceId: 'ds1' });
    const r = await input(api, new State());
    expect(r.adopted).toEqual([]);
  });
});

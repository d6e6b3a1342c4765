/**
 * A corrupt or missing state keeps its identity from `<statePath>.identity.json`
 * (state/identity-file.ts) and recognises its own documents from the listing
 * (engine/rebuild.ts); a clone's documents stay someone else's.
 */
import { describe, expect, it } from 'vitest';
import { readStateFile, StateStore } from '../../../src/state/store.js';
import { encodeStateToString } from '../../../src/state/encoder.js';
import { establishIdentity } from '../../../src/engine/installation.js';
import { identityPathOf, missingIdentityOps } from '../../../src/state/identity-file.js';
import type { StateFile } from '../../../src/state/schema.js';
import { rebuildFromListing } from '../../../src/engine/rebuild.js';
import { documentFields } from '../../../src/engine/document-fields.js';
import { silentLogger } from '../../../src/log.js';
import { captureLogger, MemFs } from './fakes.js';
import { FakeClock } from '../../helpers/fake-clock.js';
import { FakeApi } from '../../helpers/fake-api.js';
import { garbageStateText } from '../../helpers/state-fixture.js';

const PATH = '/var/lib/dssync/state.json';
const ID_PATH = identityPathOf(PATH);
const T0 = Date.UTC(2026, 10, 26, 22, 0, 0);

async function open(fs: MemFs, logger = silentLogger) {
  return StateStore.open(PATH, { fs, clock: new FakeClock(T0), lock: false, logger, onCorrupt: 'reset' });
}

/** A state that synced once: identity, a mapping, a session, one file. */
async function synced(fs: MemFs) {
  const store = await open(fs);
  store.setIdentity({ installationId: 'inst-A', origin: 'drawn', formerIds: [] });
  store.ensureMapping('m1', 'ds-1', '/srv/share');
  store.recordSession('m1', 'aaaa0001', T0);
  store.setFile('m1', 'a.txt', { documentId: 'd1', size: 1, mtimeMs: 1, sha256: 'h1', syncedAt: '2026-11-26T22:00:00.000Z' });
  await store.close();
}

function doc(id: string, path: string, sha256: string, session: string | undefined, installationId = 'inst-A') {
  const f = documentFields({ mappingId: 'm1', installationId, session, root: '/srv/share' }, { path, sha256, size: 1, mtimeMs: 1 });
  return { id, name: f.name, url: f.url, metadata: f.metadata, raw: {} };
}

describe('the identity file', () => {
  it('is written beside the state (0600) with the identity, each mapping and its sessions; not rewritten when nothing of them changed', async () => {
    const fs = new MemFs();
    await synced(fs);
    const rec = JSON.parse(fs.text(ID_PATH) ?? '{}') as Record<string, unknown>;
    expect(rec).toEqual({ version: 1, installationId: 'inst-A', origin: 'drawn', formerIds: [], mappings: { m1: { dataSourceId: 'ds-1', root: '/srv/share', sessions: { aaaa0001: T0 } } } });
    expect(fs.files.get(ID_PATH)?.mode).toBe(0o600);
    fs.writes = [];
    const store = await open(fs);
    store.setFile('m1', 'b.txt', { documentId: 'd2', size: 1, mtimeMs: 1, sha256: 'h2', syncedAt: '2026-11-26T22:00:00.000Z' });
    await store.close();
    expect(fs.writes.filter((p) => p === ID_PATH)).toEqual([]);
  });

  it('a corrupt state keeps the identity, mapping and sessions, says so, and the rebuild is pending until done (also across a restart)', async () => {
    const fs = new MemFs();
    await synced(fs);
    fs.put(PATH, garbageStateText());
    const { logger, lines } = captureLogger();
    const store = await open(fs, logger);
    expect(store.identity).toEqual({ installationId: 'inst-A', origin: 'drawn', formerIds: [] });
    expect(store.mapping('m1')?.sessions).toEqual({ aaaa0001: T0 });
    expect(store.mapping('m1')?.root).toBe('/srv/share');
    expect(store.mapping('m1')?.files.size).toBe(0);
    expect(store.recovery).toMatchObject({ kind: 'corrupt', identity: 'recovered', mappings: ['m1'] });
    expect(lines().some((l) => String(l['msg']).includes('kept the installation\'s identity (inst-A)'))).toBe(true);
    expect(store.needsRebuild('m1')).toBe(true);
    await store.close();
    // A crash before the rebuild: the next start rebuilds.
    const again = await open(fs);
    expect(again.recovery).toBeUndefined();
    expect(again.needsRebuild('m1')).toBe(true);
    await again.rebuilt('m1');
    expect(again.needsRebuild('m1')).toBe(false);
    await again.close();
    expect((await open(fs)).needsRebuild('m1')).toBe(false);
  });

  it('a missing state with the identity file beside it recovers the same way, and says it was missing', async () => {
    const fs = new MemFs();
    await synced(fs);
    fs.files.delete(PATH);
    fs.files.delete(`${PATH}.journal`);
    const store = await open(fs);
    expect(store.recovery).toMatchObject({ kind: 'missing', identity: 'recovered' });
    expect(store.identity?.installationId).toBe('inst-A');
  });

  it('former ids a listing taught (addFormerIds) are kept across a restart, in the identity file, and after the state is lost', async () => {
    const fs = new MemFs();
    await synced(fs);
    const store = await open(fs);
    expect(store.addFormerIds(['derived-old', 'inst-A'])).toBe(true);
    expect(store.addFormerIds(['derived-old'])).toBe(false);
    await store.close();
    expect((await open(fs)).identity).toEqual({ installationId: 'inst-A', origin: 'drawn', formerIds: ['derived-old'] });
    expect((JSON.parse(fs.text(ID_PATH) ?? '{}') as { formerIds?: string[] }).formerIds).toEqual(['derived-old']);
    fs.files.delete(PATH);
    fs.files.delete(`${PATH}.journal`);
    expect((await open(fs)).identity?.formerIds).toEqual(['derived-old']);
  });

  it('a state that kept its identity but not the former ids its identity file holds (a damaged journal) gets them back; another id in the file changes nothing', () => {
    const state = { identity: { installationId: 'inst-A', origin: 'drawn', formerIds: ['x'] }, mappings: {} } as unknown as StateFile;
    const record = { version: 1, installationId: 'inst-A', origin: 'drawn', formerIds: ['x', 'derived-old'], mappings: {} } as const;
    expect(missingIdentityOps(state, { ...record, formerIds: [...record.formerIds] })).toEqual([['identity', 'inst-A', 'drawn', ['x', 'derived-old']]]);
    expect(missingIdentityOps(state, { ...record, installationId: 'inst-B', formerIds: ['y'] })).toEqual([]);
  });

  it('a state that lost its identity record with no damage to see (a snapshot written without one, as the 0.1.0 upgrade writes it, and its journal emptied) takes the identity file\'s, never draws over it', async () => {
    const fs = new MemFs();
    await synced(fs);
    const state = await readStateFile(PATH, fs);
    fs.put(PATH, encodeStateToString({ ...state!, identity: undefined }));
    fs.put(`${PATH}.journal`, '');
    const { logger, lines } = captureLogger();
    const store = await open(fs, logger);
    expect(store.identity).toEqual({ installationId: 'inst-A', origin: 'drawn', formerIds: [] });
    expect(lines().some((l) => String(l['msg']).includes('holds of the installation\'s identity (inst-A): kept from it'))).toBe(true);
    expect(establishIdentity(store, { statePath: PATH, draw: () => 'inst-NEW' }).installationId).toBe('inst-A');
    await store.close();
    expect((JSON.parse(fs.text(ID_PATH) ?? '{}') as { installationId?: string }).installationId).toBe('inst-A');
  });

  it('a state whose journal lost the record of a former id (cut short after a snapshot, no damage to see) gets it back from the identity file; a file of another id adds nothing', async () => {
    const fs = new MemFs();
    await synced(fs);
    const store = await open(fs);
    store.addFormerIds(['derived-old']);
    await store.close();
    const state = await readStateFile(PATH, fs);
    const lost = encodeStateToString({ ...state!, identity: { installationId: 'inst-A', origin: 'drawn', formerIds: [] } });
    fs.put(PATH, lost);
    fs.put(`${PATH}.journal`, '');
    expect((await open(fs)).identity?.formerIds).toEqual(['derived-old']);
    // After `identity reset` cut short before the file was rewritten: the file's older id restores nothing.
    fs.put(PATH, encodeStateToString({ ...state!, identity: { installationId: 'inst-B', origin: 'drawn', formerIds: [] }, mappings: {} }));
    fs.put(`${PATH}.journal`, '');
    fs.put(ID_PATH, JSON.stringify({ version: 1, installationId: 'inst-A', origin: 'drawn', formerIds: ['derived-old'], mappings: { m1: { dataSourceId: 'ds-1', root: '/srv/share', sessions: {} } } }));
    const reset = await open(fs);
    expect(reset.identity).toEqual({ installationId: 'inst-B', origin: 'drawn', formerIds: [] });
    expect(reset.mapping('m1')).toBeUndefined();
  });

  it('a corrupt state without an identity file starts with no identity (as before: adopt)', async () => {
    const fs = new MemFs();
    fs.put(PATH, 'garbage');
    const store = await open(fs);
    expect(store.identity).toBeUndefined();
    expect(store.recovery).toMatchObject({ kind: 'corrupt', identity: 'none' });
  });
});

describe('rebuildFromListing', () => {
  it('records the documents of our ids and a recorded session; leaves a clone\'s, another installation\'s and session-less ones to the planner', async () => {
    const fs = new MemFs();
    await synced(fs);
    fs.put(PATH, 'garbage');
    const store = await open(fs);
    const api = new FakeApi();
    api.addDocument('ds-1', doc('d1', 'a.txt', 'h1', 'aaaa0001'));
    api.addDocument('ds-1', doc('d2', 'gone.txt', 'h2', 'aaaa0001'));
    api.addDocument('ds-1', doc('x1', 'clone.txt', 'h3', 'c1c1c1c1'));
    api.addDocument('ds-1', doc('x2', 'old.txt', 'h4', undefined));
    api.addDocument('ds-1', doc('x3', 'b.txt', 'h5', 'aaaa0001', 'inst-B'));
    const r = await rebuildFromListing({ api, state: store, mappingId: 'm1', dataSourceId: 'ds-1', installationId: 'inst-A', formerInstallationIds: [], logger: silentLogger, now: () => T0 });
    expect(r).toEqual({ recorded: 2 });
    expect([...store.mapping('m1')!.files.keys()].sort()).toEqual(['a.txt', 'gone.txt']);
    expect(store.mapping('m1')!.files.documentIdOf('gone.txt')).toBe('d2');
    expect(store.needsRebuild('m1')).toBe(false);
    // Done once: a second call lists nothing.
    const calls = api.count('listDocuments');
    expect(await rebuildFromListing({ api, state: store, mappingId: 'm1', dataSourceId: 'ds-1', installationId: 'inst-A', formerInstallationIds: [], logger: silentLogger, now: () => T0 })).toBeUndefined();
    expect(api.count('listDocuments')).toBe(calls);
  });
});

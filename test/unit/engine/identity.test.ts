/**
 * The installation's identity (issue 23, defect 1): drawn with a new state and kept in it,
 * derived once for a state written before ids were stored, pinned by the config, and the
 * state's record of it across a restart and an upgrade from a version-3 file without it.
 */
import { describe, expect, it } from 'vitest';
import { establishIdentity, installationIdFor, type IdentityHolder } from '../../../src/engine/installation.js';
import type { StateIdentity } from '../../../src/state/schema.js';
import { StateStore } from '../../../src/state/store.js';
import { MAX_SESSIONS } from '../../../src/state/ops.js';
import { encodeStateToString } from '../../../src/state/encoder.js';
import { newMappingState, newState } from '../../../src/state/validate.js';
import { MemFs } from '../state/fakes.js';
import { FakeClock } from '../../helpers/fake-clock.js';
import { toFormat3 } from '../../helpers/state-v3.js';

class Holder implements IdentityHolder {
  identity: StateIdentity | undefined;
  writes = 0;
  constructor(
    private readonly records: boolean,
    identity?: StateIdentity,
  ) {
    this.identity = identity;
  }
  setIdentity(i: StateIdentity): void {
    this.identity = i;
    this.writes++;
  }
  hasRecords(): boolean {
    return this.records;
  }
}

const PATH = '/var/lib/dssync/state.json';
let n = 0;
const draw = (): string => `drawn${++n}`;

describe('establishIdentity', () => {
  it('a new state draws a random id and stores it; host and path play no part afterwards', () => {
    const state = new Holder(false);
    const a = establishIdentity(state, { statePath: PATH, host: 'h1', draw });
    expect(a).toEqual({ installationId: expect.stringMatching(/^drawn/), origin: 'drawn', formerIds: [] });
    expect(state.identity).toEqual(a);
    // Renamed host, another spelling of the path: the same id.
    expect(establishIdentity(state, { statePath: '/var/lib/private/dssync/state.json', host: 'h2', draw })).toEqual(a);
  });

  it('the real draw is 16 hex digits, and two states draw different ids', () => {
    const a = establishIdentity(new Holder(false), { statePath: PATH }).installationId;
    const b = establishIdentity(new Holder(false), { statePath: PATH }).installationId;
    expect(a).toMatch(/^[0-9a-f]{16}$/);
    expect(a).not.toBe(b);
  });

  it('an existing state without a stored id keeps the id the old rule derived: its documents stay its own', () => {
    const state = new Holder(true);
    const id = establishIdentity(state, { statePath: PATH, host: 'h1', draw });
    expect(id).toEqual({ installationId: installationIdFor(PATH, 'h1'), origin: 'derived', formerIds: [] });
    expect(establishIdentity(state, { statePath: PATH, host: 'renamed', draw }).installationId).toBe(installationIdFor(PATH, 'h1'));
  });

  it('a pin wins and is stored; the id it replaces becomes a former id', () => {
    const state = new Holder(true, { installationId: 'abc123', origin: 'drawn', formerIds: [] });
    expect(establishIdentity(state, { statePath: PATH, pinned: 'prod-eu-1', draw })).toEqual({ installationId: 'prod-eu-1', origin: 'pinned', formerIds: ['abc123'] });
    expect(establishIdentity(state, { statePath: PATH, pinned: 'prod-eu-2', draw })).toEqual({ installationId: 'prod-eu-2', origin: 'pinned', formerIds: ['abc123', 'prod-eu-1'] });
    // Back to an earlier pin: it is no longer a former id of itself.
    expect(establishIdentity(state, { statePath: PATH, pinned: 'abc123', draw }).formerIds).toEqual(['prod-eu-1', 'prod-eu-2']);
  });

  it('a pin on an old state without a stored id keeps the derived id as a former one; on a new state there is none', () => {
    expect(establishIdentity(new Holder(true), { statePath: PATH, host: 'h1', pinned: 'pod-1', draw }).formerIds).toEqual([installationIdFor(PATH, 'h1')]);
    expect(establishIdentity(new Holder(false), { statePath: PATH, host: 'h1', pinned: 'pod-1', draw }).formerIds).toEqual([]);
  });

  it('a removed pin keeps the id the state holds (its documents carry it)', () => {
    const state = new Holder(true, { installationId: 'pod-1', origin: 'pinned', formerIds: [] });
    expect(establishIdentity(state, { statePath: PATH, draw }).installationId).toBe('pod-1');
  });
});

describe('the state keeps the identity', () => {
  const clock = () => new FakeClock();
  it('across a restart (journal) and a fold (snapshot header)', async () => {
    const fs = new MemFs();
    const s1 = await StateStore.open(PATH, { fs, clock: clock(), lock: false });
    const id = establishIdentity(s1, { statePath: PATH, draw });
    s1.ensureMapping('m', 'ds1', '/srv');
    await s1.close();
    const s2 = await StateStore.open(PATH, { fs, clock: clock(), lock: false });
    expect(s2.identity).toEqual(id);
    await s2.fold();
    await s2.close();
    const s3 = await StateStore.open(PATH, { fs, clock: clock(), lock: false });
    expect(s3.identity).toEqual(id);
    expect(fs.text(PATH)).toContain(`"installationId":"${id.installationId}"`);
    await s3.close();
  });

  it('writer sessions are kept across a restart (journal) and a fold (the mapping\'s line), the oldest dropped past MAX_SESSIONS', async () => {
    const fs = new MemFs();
    const s1 = await StateStore.open(PATH, { fs, clock: clock(), lock: false });
    s1.ensureMapping('m', 'ds1', '/srv');
    s1.recordSession('m', 'aaaa0001', 1);
    s1.recordSession('m', 'aaaa0001', 5);
    await s1.close();
    const s2 = await StateStore.open(PATH, { fs, clock: clock(), lock: false });
    expect({ ...s2.mapping('m')!.sessions }).toEqual({ aaaa0001: 1 });
    await s2.fold();
    await s2.close();
    const s3 = await StateStore.open(PATH, { fs, clock: clock(), lock: false });
    expect({ ...s3.mapping('m')!.sessions }).toEqual({ aaaa0001: 1 });
    for (let i = 0; i < MAX_SESSIONS; i++) s3.recordSession('m', `b${String(i).padStart(7, '0')}`, 10 + i);
    expect(Object.keys(s3.mapping('m')!.sessions!)).toHaveLength(MAX_SESSIONS);
    expect(s3.mapping('m')!.sessions!['aaaa0001']).toBeUndefined();
    await s3.close();
  });

  it('a session just recorded is never the one dropped, even when times tie and its key is all digits', async () => {
    const s = await StateStore.open(PATH, { fs: new MemFs(), clock: clock(), lock: false });
    s.ensureMapping('m', 'ds1', '/srv');
    for (let i = 0; i < MAX_SESSIONS; i++) s.recordSession('m', `c${String(i).padStart(7, '0')}`, 7);
    // A digit-only key sorts first in a record; at the same time it is still the newest.
    s.recordSession('m', '39776268', 7);
    const kept = s.mapping('m')!.sessions!;
    expect(Object.keys(kept)).toHaveLength(MAX_SESSIONS);
    expect(kept['39776268']).toBe(7);
    await s.close();
  });

  it('a version-3 state file written before ids were stored loads, and takes the derived id', async () => {
    const fs = new MemFs();
    const old = newState();
    old.mappings['m'] = newMappingState('ds1', '/srv');
    old.mappings['m'].files.set('a.txt', { documentId: 'd1', size: 1, mtimeMs: 1, sha256: 'a'.repeat(64), syncedAt: '2026-01-01T00:00:00.000Z' });
    const text = toFormat3(encodeStateToString(old));
    expect(text.split('\n')[0]).toBe('dssync-state 3 {"journalSeq":0}');
    fs.put(PATH, text);
    const s = await StateStore.open(PATH, { fs, clock: clock(), lock: false });
    expect(s.identity).toBeUndefined();
    expect(s.mapping('m')?.files.get('a.txt')?.documentId).toBe('d1');
    expect(establishIdentity(s, { statePath: PATH, host: 'h1', draw })).toEqual({ installationId: installationIdFor(PATH, 'h1'), origin: 'derived', formerIds: [] });
    await s.close();
    const again = await StateStore.open(PATH, { fs, clock: clock(), lock: false });
    expect(again.identity?.installationId).toBe(installationIdFor(PATH, 'h1'));
    await again.close();
  });

  it('a damaged identity in the header is reported as corrupt, naming it', async () => {
    const fs = new MemFs();
    const text = encodeStateToString(newState()).replace('"journalSeq":0}', '"journalSeq":0,"identity":{"installationId":""}}');
    fs.put(PATH, text);
    await expect(StateStore.open(PATH, { fs, clock: clock(), lock: false })).rejects.toThrow(/"identity" in the header/);
  });
});

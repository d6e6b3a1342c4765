/**
 * How a mapping's data source is found (engine/data-source.ts), with the fake service: a
 * mapping by name follows the id the state records (a rename in the App is followed and
 * reported, never a second data source created), a recorded one that is gone is replaced by
 * the name's (found or created) and said so, a config that names another is a new choice.
 */
import { describe, expect, it } from 'vitest';
import { birthOutcome, DataSourceMissingError, dataSourceGone, provisionalName, resolveDataSource } from '../../../src/engine/data-source.js';
import { ApiError } from '../../../src/api/errors.js';
import { FakeApi } from '../../helpers/fake-api.js';

const byName = { dataSource: { name: 'Handbook', llmConnectorIds: ['conn-1'] } };
const where = 'mappings[0]';

function api(): FakeApi {
  return new FakeApi({ dataSources: 'listed' });
}

describe('resolveDataSource, a mapping by name', () => {
  it('without a record: found by name, or created', async () => {
    const a = api();
    const created = await resolveDataSource(a, byName, where, { create: true });
    expect(created.created).toBe(true);
    expect(created.notice).toBeUndefined();
    const found = await resolveDataSource(a, byName, where, { create: true });
    expect(found).toMatchObject({ id: created.id, created: false });
    expect(found.notice).toBeUndefined();
  });

  it('follows the recorded data source renamed in the App, reports it, creates nothing', async () => {
    const a = api();
    a.addDataSource('ds-old', 'Handbook 2023');
    const r = await resolveDataSource(a, byName, where, { create: true, mappingId: 'name:Handbook', recorded: { dataSourceId: 'ds-old', configuredName: 'Handbook' } });
    expect(r.id).toBe('ds-old');
    expect(r.created).toBe(false);
    expect(r.notice).toContain('data source ds-old was renamed to "Handbook 2023" in the App');
    expect(r.notice).toContain('dssync follows it by id');
    expect(r.notice).toContain('"dataSourceId": "ds-old", keeping "id": "name:Handbook"');
    expect(a.count('createDataSource')).toBe(0);
  });

  it('a state older than the recorded name is followed the same way', async () => {
    const a = api();
    a.addDataSource('ds-old', 'Renamed');
    const r = await resolveDataSource(a, byName, where, { create: true, recorded: { dataSourceId: 'ds-old' } });
    expect(r).toMatchObject({ id: 'ds-old', created: false });
    expect(r.notice).toMatch(/renamed to "Renamed"/);
  });

  it('another data source now carrying the name is named and not used', async () => {
    const a = api();
    a.addDataSource('ds-old', 'Archive');
    a.addDataSource('ds-new', 'Handbook');
    const r = await resolveDataSource(a, byName, where, { create: true, recorded: { dataSourceId: 'ds-old', configuredName: 'Handbook' } });
    expect(r.id).toBe('ds-old');
    expect(r.notice).toContain('ds-new, now named "Handbook", is not used');
  });

  it('the recorded one still named as configured: followed silently, even beside a namesake', async () => {
    const a = api();
    a.addDataSource('ds-old', 'Handbook');
    a.addDataSource('ds-twin', 'Handbook');
    const r = await resolveDataSource(a, byName, where, { create: true, recorded: { dataSourceId: 'ds-old', configuredName: 'Handbook' } });
    expect(r.id).toBe('ds-old');
    expect(r.notice).toBeUndefined();
  });

  it('the recorded one deleted: created again by name, the replacement said', async () => {
    const a = api();
    const r = await resolveDataSource(a, byName, where, { create: true, recorded: { dataSourceId: 'ds-gone', configuredName: 'Handbook' } });
    expect(r.created).toBe(true);
    expect(r.replaces).toBe('ds-gone');
    expect(r.notice).toMatch(/data source ds-gone, recorded for this mapping, no longer exists \(deleted in the App\?\); created a new one, ds_\d+, named "Handbook"/);
  });

  it('the recorded one deleted and another named so: that one is used, the replacement said', async () => {
    const a = api();
    a.addDataSource('ds-other', 'Handbook');
    const r = await resolveDataSource(a, byName, where, { create: true, recorded: { dataSourceId: 'ds-gone' } });
    expect(r).toMatchObject({ id: 'ds-other', created: false, replaces: 'ds-gone' });
    expect(r.notice).toContain('now mirroring into ds-other, found by the name "Handbook"');
  });

  it('the recorded one deleted, creation not allowed (a dry run): what a sync would do', async () => {
    const err = await resolveDataSource(api(), byName, where, { create: false, recorded: { dataSourceId: 'ds-gone' } }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DataSourceMissingError);
    expect((err as DataSourceMissingError).wouldCreate).toBe(true);
    expect((err as Error).message).toMatch(/ds-gone, recorded for this mapping, no longer exists .* a sync would create it/);
  });

  it('the config naming another than the recorded name: looked up by name afresh', async () => {
    const a = api();
    a.addDataSource('ds-old', 'Handbook');
    const r = await resolveDataSource(a, { dataSource: { name: 'Manual', llmConnectorIds: ['conn-1'] } }, where, { create: true, recorded: { dataSourceId: 'ds-old', configuredName: 'Handbook' } });
    expect(r.created).toBe(true);
    expect(r.id).not.toBe('ds-old');
    expect(r.notice).toBeUndefined();
  });
});

describe('resolveDataSource, a mapping by id', () => {
  it('gone: a configuration error naming the fix; the record does not matter', async () => {
    const a = api();
    a.addDataSource('ds-x', 'Handbook');
    const err = await resolveDataSource(a, { dataSourceId: 'ds-gone' }, where, { create: true, recorded: { dataSourceId: 'ds-x' } }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DataSourceMissingError);
    expect((err as Error).message).toMatch(/ds-gone \(mappings\[0\]\.dataSourceId\) does not exist .*the mapping stops until the config names another/);
    expect(a.count('createDataSource')).toBe(0);
  });
});

describe('a data source created under its provisional name (a lease names it)', () => {
  it('is created so, which no lookup by name finds; its record followed later says it still wants its name', async () => {
    const a = api();
    const created = await resolveDataSource(a, byName, where, { create: true, provisional: true });
    expect(created).toMatchObject({ created: true, birth: { name: 'Handbook', fresh: true } });
    expect(a.dataSources.get(created.id)!.name).toBe(provisionalName('Handbook'));
    // Another process looking it up by name does not find it: it would create its own.
    await expect(resolveDataSource(a, byName, where, { create: false })).rejects.toMatchObject({ wouldCreate: true });
    // The run that created it stopped before naming it: the next follows its record, and names it.
    const again = await resolveDataSource(a, byName, where, { create: true, provisional: true, recorded: { dataSourceId: created.id, configuredName: 'Handbook' } });
    expect(again).toMatchObject({ id: created.id, created: false, birth: { name: 'Handbook', fresh: false } });
    expect(again.notice).toBeUndefined();
    expect(a.count('createDataSource')).toBe(1);
  });

  it('reached by id before it has its name: the creator\'s claim is awaited as for a copied state (a birth not fresh), and the name it takes is known', async () => {
    const a = api();
    a.addDataSource('ds-p', provisionalName('Team share'));
    a.addDataSource('ds-n', 'Handbook (dssync: being set up) archive');
    expect(await resolveDataSource(a, { dataSourceId: 'ds-p' }, where, { create: true })).toMatchObject({ id: 'ds-p', birth: { name: 'Team share', fresh: false, byId: true } });
    expect((await resolveDataSource(a, { dataSourceId: 'ds-n' }, where, { create: true })).birth).toBeUndefined();
  });

  it('without a lease to name it, a data source is created under its name', async () => {
    const a = api();
    const created = await resolveDataSource(a, byName, where, { create: true });
    expect(created.birth).toBeUndefined();
    expect(a.dataSources.get(created.id)!.name).toBe('Handbook');
  });

  it('birthOutcome: takes its name unless another data source has it', () => {
    const mine = { id: 'ds-2', name: provisionalName('Handbook') };
    expect(birthOutcome('ds-2', 'Handbook', [mine])).toEqual({ kind: 'name' });
    expect(birthOutcome('ds-2', 'Handbook', [mine, { id: 'ds-1', name: provisionalName('Handbook') }])).toEqual({ kind: 'name' });
    expect(birthOutcome('ds-2', 'Handbook', [mine, { id: 'ds-3', name: 'Handbook 2' }])).toEqual({ kind: 'name' });
    expect(birthOutcome('ds-2', 'Handbook', [{ id: 'ds-9', name: 'Handbook' }, mine])).toEqual({ kind: 'giveWay', to: 'ds-9' });
    // Already named (a renaming whose answer was lost): nothing to give way to.
    expect(birthOutcome('ds-2', 'Handbook', [{ id: 'ds-2', name: 'Handbook' }])).toEqual({ kind: 'name' });
  });
});

describe('dataSourceGone', () => {
  it('true on 404 only', async () => {
    const a = api();
    a.addDataSource('ds-1', 'Handbook');
    expect(await dataSourceGone(a, 'ds-1')).toBe(false);
    expect(await dataSourceGone(a, 'ds-2')).toBe(true);
    a.failBefore = () => new ApiError({ code: 'E_CONNECTION', message: 'connection reset' });
    expect(await dataSourceGone(a, 'ds-2')).toBe(false);
  });
});

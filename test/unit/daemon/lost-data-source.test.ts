/**
 * Issue 38.3: a data source gone under a pass is decided in one place (build-mirror.ts
 * lostDataSource), which `dssync sync` and the daemon both call: one message and one exit
 * code per case, by name and by id.
 */
import { describe, expect, it } from 'vitest';
import { describeFailure } from '../../../src/cli/exit.js';
import type { MappingConfig } from '../../../src/config/types.js';
import { lostDataSource } from '../../../src/daemon/mapping/build-mirror.js';
import { FakeApi } from '../../helpers/fake-api.js';

const byName = { id: 'name:Share', path: '/srv/share', dataSource: { name: 'Share', llmConnectorIds: ['c'] } } as unknown as MappingConfig;
const byId = { id: 'ds:ds-1', path: '/srv/share', dataSourceId: 'ds-1' } as unknown as MappingConfig;

describe('a data source gone under a pass', () => {
  it('by name: the next pass finds or creates it (exit 1)', async () => {
    const api = new FakeApi({ dataSources: 'listed' });
    const lost = await lostDataSource(api, byName, 0, 'ds-1');
    expect(lost?.message).toBe(
      'data source ds-1 of mapping name:Share no longer exists (deleted in the App?): looked up again by the name "Share" (and created when absent) at the next pass; every file is uploaded again',
    );
    expect(describeFailure(lost).exitCode).toBe(1);
  });

  it('by id: the mapping stops until the config names another (exit 2), naming the setting', async () => {
    const api = new FakeApi({ dataSources: 'listed' });
    const lost = await lostDataSource(api, byId, 3, 'ds-1');
    expect(lost?.message).toBe('data source ds-1 of mapping ds:ds-1 no longer exists (deleted in the App?): the mapping stops until the config names another data source (mappings[3].dataSourceId)');
    expect(describeFailure(lost).exitCode).toBe(2);
  });

  it('still there (a document 404, or the question unanswered): the pass keeps its own outcome', async () => {
    const api = new FakeApi({ dataSources: 'listed' });
    api.dataSources.set('ds-1', { id: 'ds-1', name: 'Share', raw: {} });
    expect(await lostDataSource(api, byName, 0, 'ds-1')).toBeUndefined();
  });
});

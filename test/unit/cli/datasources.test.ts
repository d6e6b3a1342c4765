import { describe, expect, it } from 'vitest';
import { getChunk, listChunks } from '../../../src/cli/commands/chunks.js';
import { listAppDataSources } from '../../../src/cli/commands/apps.js';
import {
  connectorIds,
  createDataSource,
  deleteDataSource,
  getDataSource,
  listDataSources,
  updateDataSource,
} from '../../../src/cli/commands/datasources.js';
import { CliError, describeFailure, ExitCode } from '../../../src/cli/exit.js';
import { FakeApi, fakeContext } from '../../helpers/fake-api.js';
import { rejectionOf } from '../../helpers/rejection.js';

function failure(p: Promise<unknown> | (() => unknown)): Promise<CliError> {
  return rejectionOf(p, CliError);
}

describe('--connector', () => {
  it('accepts repeated options and comma lists, without duplicates', () => {
    expect(connectorIds(['a', 'b,c', 'a'])).toEqual(['a', 'b', 'c']);
  });
  it('refuses an empty id as a usage error', async () => {
    expect(describeFailure(await failure(() => connectorIds(['a', '']))).exitCode).toBe(ExitCode.USAGE);
    expect(describeFailure(await failure(() => connectorIds([]))).exitCode).toBe(ExitCode.USAGE);
  });
});

describe('data source operations', () => {
  it('create sends name and connector ids, and prints the record', async () => {
    const api = new FakeApi({ dataSources: 'listed' });
    const ctx = fakeContext(api, true);
    await createDataSource(ctx, 'Handbook', ['conn-1', 'conn-2']);
    expect(api.calls[0]).toMatchObject({ op: 'createDataSource', args: [{ name: 'Handbook', llmConnectorIds: ['conn-1', 'conn-2'] }] });
    expect(JSON.parse(ctx.printed())).toMatchObject({ id: 'ds_1', name: 'Handbook', raw: { id: 'ds_1' } });
  });

  it('list prints a table, or an array with --json', async () => {
    const api = new FakeApi({ dataSources: 'listed' });
    api.addDataSource('ds_a', 'A');
    const human = fakeContext(api);
    await listDataSources(human);
    expect(human.printed()).toBe('ID    NAME  CONNECTORS\nds_a  A     conn-1\n');
    const json = fakeContext(api, true);
    await listDataSources(json);
    expect(JSON.parse(json.printed())).toEqual([
      { id: 'ds_a', name: 'A', llmConnectorIds: ['conn-1'], raw: { data_source_id: 'ds_a', name: 'A' } },
    ]);
  });

  it('an unknown id fails with exit 1 naming the id, for get (nor a name), update and delete (which take ids, and say how to find one)', async () => {
    const api = new FakeApi({ dataSources: 'listed' });
    const got = await failure(() => getDataSource(fakeContext(api), 'ds_x'));
    expect(describeFailure(got).exitCode).toBe(ExitCode.FAILURE);
    expect(got.message).toBe('no data source has the id or the name "ds_x" (`dssync datasources list` shows each one\'s id and name)');
    for (const run of [() => updateDataSource(fakeContext(api), 'ds_x', 'n'), () => deleteDataSource(fakeContext(api), 'ds_x')]) {
      const e = await failure(run);
      expect(describeFailure(e).exitCode).toBe(ExitCode.FAILURE);
      expect(e.message).toBe("data source ds_x not found (this takes a data source id; `dssync datasources list` shows each one's id and name)");
    }
    expect(api.ops()).not.toContain('deleteDataSource');
  });

  it('delete prints what it deleted', async () => {
    const api = new FakeApi({ dataSources: 'listed' });
    api.addDataSource('ds_a', 'A');
    const ctx = fakeContext(api);
    await deleteDataSource(ctx, 'ds_a');
    expect(ctx.printed()).toBe('Deleted data source ds_a.\n');
    expect(api.dataSources.size).toBe(0);
  });
});

describe('chunks and apps', () => {
  it('a missing chunk names the chunk and the document', async () => {
    const api = new FakeApi({ dataSources: 'listed' });
    const e = await failure(getChunk(fakeContext(api), 'doc_1', 'c_9'));
    expect(e.message).toBe('chunk c_9 of document doc_1 not found');
  });

  it('listing the chunks of a missing document names it', async () => {
    const api = new FakeApi({ dataSources: 'listed' });
    api.addDataSource('ds_1', 'A');
    const e = await failure(listChunks(fakeContext(api), 'ds_1', 'doc_9'));
    expect(e.message).toBe('document doc_9 not found in data source ds_1');
  });

  it('lists the data sources of an App; an unknown App is named', async () => {
    const api = new FakeApi({ dataSources: 'listed' });
    api.addDataSource('ds_1', 'A');
    api.apps.set('app_1', ['ds_1']);
    const ctx = fakeContext(api);
    await listAppDataSources(ctx, 'app_1');
    expect(ctx.printed()).toContain('ds_1');
    expect((await failure(listAppDataSources(fakeContext(api), 'app_9'))).message).toBe('app app_9 not found');
  });
});

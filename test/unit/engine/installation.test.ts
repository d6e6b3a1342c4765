import { describe, expect, it } from 'vitest';
import { installationIdFor, resolvedIn, sharedDataSourceProblems } from '../../../src/engine/installation.js';
import { buildMetadata, readMeta } from '../../../src/engine/metadata.js';

describe('installationIdFor', () => {
  it('is stable for one host and state path, and differs for another path or host', () => {
    const a = installationIdFor('/var/lib/dssync/state.json', 'h1');
    expect(a).toMatch(/^[0-9a-f]{16}$/);
    expect(installationIdFor('/var/lib/dssync/../dssync/state.json', 'h1')).toBe(a);
    expect(installationIdFor('/var/lib/dssync/state2.json', 'h1')).not.toBe(a);
    expect(installationIdFor('/var/lib/dssync/state.json', 'h2')).not.toBe(a);
  });

  it('travels in the metadata with the mapping id', () => {
    const m = buildMetadata(undefined, { path: 'a', sha256: 'h', size: 1, mtimeMs: 1, mappingId: 'm', installationId: 'i1' });
    expect(readMeta({ id: 'd', metadata: m, raw: {} })).toMatchObject({ mappingId: 'm', installationId: 'i1' });
    const old = buildMetadata(undefined, { path: 'a', sha256: 'h', size: 1, mtimeMs: 1, mappingId: 'm' });
    expect(readMeta({ id: 'd', metadata: old, raw: {} })?.installationId).toBeUndefined();
  });
});

describe('sharedDataSourceProblems', () => {
  it('flags mappings of one config on one data source, by id or by name', () => {
    expect(sharedDataSourceProblems([{ id: 'a', dataSourceId: 'ds1' }, { id: 'b', dataSourceId: 'ds2' }])).toEqual([]);
    const [p] = sharedDataSourceProblems([{ id: 'a', dataSourceId: 'ds1' }, { id: 'b', dataSourceId: 'ds1' }]);
    expect(p).toMatch(/mappings "a", "b" write into the same data source \(id "ds1"\).*its own data source/);
    expect(sharedDataSourceProblems([{ id: 'a', dataSource: { name: 'P' } }, { id: 'b', dataSource: { name: 'P' } }])).toHaveLength(1);
  });

  it('flags one mapping by name and one by id once the name resolves to that id', () => {
    const mappings = [{ id: 'a', dataSource: { name: 'P' } }, { id: 'b', dataSourceId: 'ds1' }];
    expect(sharedDataSourceProblems(mappings)).toEqual([]);
    const [p] = sharedDataSourceProblems(mappings, resolvedIn([{ id: 'ds1', name: 'P' }, { id: 'ds2', name: 'Q' }]));
    expect(p).toMatch(/mappings "a", "b" write into the same data source \(id "ds1"\)/);
    // A name the listing does not hold once: unknown, judged by the config alone.
    expect(sharedDataSourceProblems(mappings, resolvedIn([{ id: 'ds1', name: 'P' }, { id: 'ds3', name: 'P' }]))).toEqual([]);
  });
});

/**
 * The listing check (mirror.ts `checkListing`): a listing that lacks a document the state
 * records, which still exists, stops the pass before anything is changed (a list cut short
 * would otherwise be planned from: its files uploaded again, as duplicates). A listing that
 * confirms every recorded document needs no look-up.
 */
import { describe, expect, it } from 'vitest';
import type { ListDocumentsOptions } from '../../../src/api/api.js';
import { Mirror } from '../../../src/engine/mirror.js';
import { FakeApi } from '../../helpers/fake-api.js';
import { FakeClock } from '../../helpers/fake-clock.js';
import { HashedLocal } from '../../helpers/hashed-local.js';
import { MirrorMemoryState as State } from '../../helpers/memory-state.js';

const silent = { info() {}, warn() {}, error() {}, debug() {}, child() { return silent; } } as never;

/** The FakeApi whose listings leave out the documents named in `hidden` (a list cut short). */
class CutListing extends FakeApi {
  hidden = new Set<string>();
  override listDocuments(dataSourceId: string, opts?: ListDocumentsOptions): ReturnType<FakeApi['listDocuments']> {
    const keep = opts?.keep;
    return super.listDocuments(dataSourceId, { ...opts, keep: (doc) => !this.hidden.has(doc.id) && (keep === undefined || keep(doc)) }).then((docs) => docs.filter((d) => !this.hidden.has(d.id)));
  }
}

function world() {
  const clock = new FakeClock(Date.parse('2026-11-28T00:00:00Z'));
  const api = new CutListing();
  const local = new HashedLocal();
  const state = new State();
  const spec = { mappingId: 'm1', installationId: 'inst-A', formerInstallationIds: [], root: '/srv/share', dataSourceId: 'ds1', prune: 'ours', maxDeletePercent: 100, massDeleteMinimum: 100, batchFiles: 10, batchBytes: 1e9, concurrency: 2 } as const;
  const mirror = (): Mirror => new Mirror({ spec, api, state, local, logger: silent, now: () => clock.now(), monotonic: () => clock.monotonic() });
  return { api, local, state, mirror };
}

describe('the listing check', () => {
  it('a listing lacking a recorded document that exists stops the pass: nothing is uploaded again', async () => {
    const { api, local, state, mirror } = world();
    for (const p of ['a.txt', 'b.txt', 'c.txt']) local.write(p, p, 1000);
    expect((await mirror().fullPass()).ok).toBe(true);
    api.hidden.add(state.m.files.documentIdOf('b.txt')!);
    const uploads = api.count('uploadDocuments');
    await expect(mirror().fullPass()).rejects.toThrow(/lacks document .* \(b\.txt\), which exists; 1 known document/);
    expect(api.count('uploadDocuments')).toBe(uploads);
    expect(api.count('getDocument')).toBe(1);
  });

  it('a listing confirming every recorded document looks none up, and the pass changes nothing', async () => {
    const { api, local, mirror } = world();
    for (const p of ['a.txt', 'b.txt', 'c.txt']) local.write(p, p, 1000);
    expect((await mirror().fullPass()).ok).toBe(true);
    const r = await mirror().fullPass();
    expect(r.counts).toMatchObject({ uploaded: 0, replaced: 0, renamed: 0, updated: 0, deleted: 0, adopted: 0, forgotten: 0, unchanged: 3 });
    expect(api.count('getDocument')).toBe(0);
  });
});

/**
 * A damaged journal is not a torn tail (docs/reliability.md, "Damage and torn tails"), on
 * real files: a state that is its journal alone (as every release before 0.4.0 left a state
 * under 8 MiB), damaged in each way a disk or a power cut damages it. Only an incomplete last
 * record after valid ones is cut; anything else keeps a copy of the file as it was (0600),
 * recovers every valid record before and after the damage, restores from the identity file
 * what the damage took, and says so.
 */
import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { frameRecord } from '../../../src/state/journal.js';
import type { StateOp } from '../../../src/state/ops.js';
import { encodeIdentityRecord, type IdentityRecord } from '../../../src/state/identity-file.js';
import { readStateFile, StateStore } from '../../../src/state/store.js';
import { FakeClock } from '../../helpers/fake-clock.js';
import { captureLogger } from '../../unit/state/fakes.js';

const ID = 'a1b2c3d4e5f60718';
const IDENTITY: IdentityRecord = { version: 1, installationId: ID, origin: 'drawn', formerIds: [], mappings: { m: { dataSourceId: 'ds', root: '/srv/m', sessions: { s1: 1000 } } } };
const file = (doc: string): [string, number, number, string, string] => [doc, 1, 1000, 'h'.repeat(64), '2026-11-28T00:00:00.000Z'];
/** Three records: the identity and mapping with file a, then b, then c. */
const RECORDS: StateOp[][] = [
  [
    ['identity', ID, 'drawn', []],
    ['map', 'm', 'ds', '/srv/m'],
    ['session', 'm', 's1', 1000],
    ['set', 'm', 'a', file('doc-a')],
  ],
  [['set', 'm', 'b', file('doc-b')]],
  [['set', 'm', 'c', file('doc-c')]],
];

let dir: string;
let statePath: string;
let journalPath: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'dssync-damage-'));
  statePath = join(dir, 'state.json');
  journalPath = `${statePath}.journal`;
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

function journal(): { bytes: Buffer; starts: number[] } {
  let seq = 1;
  const recs = RECORDS.map((ops) => {
    const r = frameRecord(seq, ops);
    seq += ops.length;
    return r;
  });
  return { bytes: Buffer.concat(recs), starts: recs.map((_, i) => recs.slice(0, i).reduce((n, r) => n + r.length, 0)) };
}

async function openWith(journalBytes: Buffer, withIdentity = true) {
  await writeFile(journalPath, journalBytes, { mode: 0o600 });
  if (withIdentity) await writeFile(`${statePath}.identity.json`, encodeIdentityRecord(IDENTITY), { mode: 0o600 });
  const log = captureLogger();
  const store = await StateStore.open(statePath, { logger: log.logger, clock: new FakeClock(Date.parse('2026-11-28T12:00:00Z')), onCorrupt: 'reset' });
  return { store, warnings: () => log.lines().filter((l) => l['level'] === 40).map((l) => String(l['msg'])) };
}

const files = (store: StateStore): string[] => [...(store.mapping('m')?.files.keys() ?? [])].sort();

async function copies(): Promise<string[]> {
  return (await readdir(dir)).filter((f) => f.includes('.damaged-'));
}

describe('a damaged journal', () => {
  for (const [which, index, survivors] of [
    ['the first', 0, ['b', 'c']],
    ['a middle', 1, ['a', 'c']],
    ['the last', 2, ['a', 'b']],
  ] as const) {
    it(`one flipped byte in ${which} record: a copy kept (0600, every byte), every other record recovered, the identity kept`, async () => {
      const { bytes, starts } = journal();
      const damaged = Buffer.from(bytes);
      const at = (starts[index] ?? 0) + 24;
      damaged[at] = (damaged[at] ?? 0) ^ 0x01;
      const { store, warnings } = await openWith(damaged);
      expect(files(store)).toEqual(survivors);
      expect(store.identity?.installationId).toBe(ID);
      expect(store.recovery).toMatchObject({ kind: 'damaged', identity: 'recovered', mappings: ['m'] });
      const [copy] = await copies();
      expect(copy).toBe('state.json.journal.damaged-2026-11-28T12-00-00-000Z');
      expect(await readFile(join(dir, copy ?? ''))).toEqual(damaged);
      expect((await stat(join(dir, copy ?? ''))).mode & 0o777).toBe(0o600);
      const warning = warnings().find((w) => w.includes('is damaged'));
      expect(warning).toContain(copy);
      expect(warning).toMatch(/recovered 2 valid record\(s\).*lost \d+ byte\(s\) holding op\(s\) \d+-(\d+|\?)/);
      await store.close();
      // What was recovered is on disk: a reload (no damage left) gives the same files.
      expect([...((await readStateFile(statePath))?.mappings['m']?.files.keys() ?? [])].sort()).toEqual(survivors);
      const again = await StateStore.open(statePath, { lock: true });
      expect(again.recovery).toBeUndefined();
      expect(files(again)).toEqual(survivors);
      await again.close();
    });
  }

  it('a cut inside the first and only record: nothing else holds it, so it is kept as a copy, not cut; the identity file restores who owns the documents', async () => {
    const cut = journal().bytes.subarray(0, 40);
    const { store, warnings } = await openWith(cut);
    expect(files(store)).toEqual([]);
    expect(store.identity?.installationId).toBe(ID);
    expect(store.mapping('m')?.sessions).toEqual({ s1: 1000 });
    expect(store.recovery).toMatchObject({ kind: 'damaged', identity: 'recovered', mappings: ['m'] });
    expect(await readFile(join(dir, (await copies())[0] ?? ''))).toEqual(cut);
    expect(warnings().some((w) => w.includes('is damaged'))).toBe(true);
    await store.close();
  });

  it('an incomplete last record after valid ones is a torn tail: cut in place, no copy', async () => {
    const { bytes, starts } = journal();
    const torn = bytes.subarray(0, (starts[2] ?? 0) + 30);
    const { store, warnings } = await openWith(torn);
    expect(files(store)).toEqual(['a', 'b']);
    expect(store.recovery).toBeUndefined();
    expect(await copies()).toEqual([]);
    expect(warnings().some((w) => w.includes('a write cut short by a crash'))).toBe(true);
    await store.close();
  });
});

describe('a lost state beside its identity file', () => {
  it('a 0-byte journal and no snapshot: a warning says the state is lost, the identity file is used and its id kept', async () => {
    const { store, warnings } = await openWith(Buffer.alloc(0));
    expect(store.recovery).toMatchObject({ kind: 'empty', identity: 'recovered', mappings: ['m'] });
    expect(store.identity?.installationId).toBe(ID);
    expect(warnings().some((w) => w.includes('is lost: no snapshot and an empty journal') && w.includes(ID))).toBe(true);
    store.setLastPass('m', { startedAt: 'a', finishedAt: 'b', ok: true, summary: {} });
    await store.close();
    const kept = JSON.parse(await readFile(`${statePath}.identity.json`, 'utf8')) as IdentityRecord;
    expect(kept.installationId).toBe(ID);
  });

  it('a 0-byte journal without an identity file: the warning says a new id is drawn', async () => {
    const { store, warnings } = await openWith(Buffer.alloc(0), false);
    expect(store.recovery).toMatchObject({ kind: 'empty', identity: 'none' });
    expect(store.identity).toBeUndefined();
    expect(warnings().some((w) => w.includes('is lost') && w.includes('new installation id'))).toBe(true);
    await store.close();
  });
});

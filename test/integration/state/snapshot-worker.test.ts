/**
 * A large snapshot's rows are encoded in a worker thread (state/rows-encoder.ts,
 * snapshot-worker.ts), so that no durable write waits for the encoding on the main thread:
 * the file holds the same bytes as an encoding in this thread, changes made meanwhile belong
 * to the next snapshot, and a worker that fails leaves the previous snapshot as it was.
 * A worker that cannot start leaves the snapshot to this thread. The worker is the built
 * module: `npm run build` first.
 */
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { setImmediate as turn } from 'node:timers/promises';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { nodeStateFs } from '../../../src/state/atomic-file.js';
import { StateCodec, encodeStateToString, type SliceOptions } from '../../../src/state/encoder.js';
import { CHUNK_ROWS } from '../../../src/state/file-table.js';
import { startRowsEncoder } from '../../../src/state/rows-encoder.js';
import type { FileEntry, StateFile } from '../../../src/state/schema.js';
import { SnapshotFile, type SnapshotWorker } from '../../../src/state/snapshot-file.js';
import { readStateFile, StateStore } from '../../../src/state/store.js';
import { newMappingState, newState } from '../../../src/state/validate.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'dssync-snapshot-worker-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

function entry(i: number): FileEntry {
  const e: FileEntry = { documentId: `0f8e4c1a-7b2d-4e5f-9a6b-${String(i).padStart(12, '0')}`, size: i, mtimeMs: 1_700_000_000_000.123 + i, sha256: i.toString(16).padStart(64, 'c'), syncedAt: new Date(1_700_000_000_000 + 1000 * Math.floor(i / 20)).toISOString() };
  // Every form a row takes: the racy check's fields or none, an id and a hash of no packed shape, a name to quote.
  if (i % 3 === 0) Object.assign(e, { hashedAt: 2000 + i, ctimeMs: 1000.25 + i, dev: 2049, ino: 10_000 + i });
  if (i % 101 === 0) Object.assign(e, { documentId: `odd id ${i}`, sha256: `h${i}` });
  return e;
}

function state(files: number): StateFile {
  const s = newState();
  s.journalSeq = 7;
  const m = newMappingState('ds-1', '/srv/share');
  for (let i = 0; i < files; i++) m.files.set(`dept-${i % 37}/a "quoted" é name ${i}.txt`, entry(i));
  s.mappings['docs'] = m;
  const other = newMappingState('ds-2', '/srv/other');
  for (let i = 0; i < 10; i++) other.files.set(`o${i}`, entry(i));
  s.mappings['other'] = other;
  return s;
}

/** Yields after every chunk of rows, and changes the state there, as the engine's writes would. */
function changingSlices(change: () => void): SliceOptions {
  return {
    sliceMs: 0,
    now: () => 0,
    yieldNow: async () => {
      change();
      await turn();
    },
  };
}

describe('a snapshot encoded in a worker thread', () => {
  it('holds the bytes this thread would write, of the state as it was when taken, whatever changes meanwhile', async () => {
    const files = 9 * CHUNK_ROWS + 17; // several batches, the last one short
    const s = state(files);
    const m = s.mappings['docs']!;
    const expected = encodeStateToString(s);
    let n = 0;
    const change = (): void => {
      const path = `dept-${(n * 7) % 37}/a "quoted" é name ${n * 7}.txt`;
      if (n % 2) m.files.set(path, entry(99_999));
      else m.files.delete(path);
      if (n % 5 === 0) m.files.set(`new-${n}`, entry(n));
      n++;
    };
    let started = 0;
    const worker: SnapshotWorker = {
      minRows: 1000,
      start: () => {
        started++;
        return startRowsEncoder();
      },
    };
    const path = join(dir, 'state.json');
    await new SnapshotFile(path, nodeStateFs, new StateCodec(), { slices: changingSlices(change), worker }).write(s);
    expect(started).toBe(1);
    expect(n).toBeGreaterThan(5); // it did change rows between chunks
    expect(await readFile(path, 'utf8')).toBe(expected);
    // The changes are the next snapshot's.
    await new SnapshotFile(path, nodeStateFs, new StateCodec(), { slices: changingSlices(() => undefined), worker }).write(s);
    expect(await readFile(path, 'utf8')).toBe(encodeStateToString(s));
  });

  it('a worker that ends mid-way fails the write, leaving the previous snapshot and no temp file', async () => {
    const path = join(dir, 'state.json');
    const s = state(3 * CHUNK_ROWS);
    await writeFile(path, encodeStateToString(state(5)));
    const before = await readFile(path, 'utf8');
    const dies = new URL(`data:text/javascript,${encodeURIComponent("import { parentPort } from 'node:worker_threads'; parentPort.on('message', () => process.exit(3)); parentPort.postMessage({ ready: true });")}`);
    const worker: SnapshotWorker = { minRows: 1, start: () => startRowsEncoder(dies) };
    const file = new SnapshotFile(path, nodeStateFs, new StateCodec(), { slices: changingSlices(() => undefined), worker });
    await expect(file.write(s)).rejects.toThrow(/the snapshot's worker ended \(exit code 3\)/);
    expect(file.stats.failures).toBe(1);
    expect(await readFile(path, 'utf8')).toBe(before);
    expect(await readdir(dir)).toEqual(['state.json']);
  });

  it('a store of 50,000 files folds through it, and reads back what it holds', async () => {
    const path = join(dir, 'state.json');
    await writeFile(path, encodeStateToString(state(50_000)), { mode: 0o600 });
    const store = await StateStore.open(path, { writeDelayMs: 5 });
    for (let i = 0; i < 100; i++) store.setFile('docs', `changed-${i}`, entry(i));
    await store.flush();
    await store.fold();
    expect(store.writeStats.snapshot.writes).toBe(1);
    const held = JSON.stringify(store.mapping('docs'));
    await store.close();
    expect(JSON.stringify((await readStateFile(path))?.mappings['docs'])).toBe(held);
  });

  it('a worker that cannot start leaves the fold to this thread: the same bytes, the journal cut, one warning however many folds', async () => {
    const path = join(dir, 'state.json');
    await writeFile(path, encodeStateToString(state(3 * CHUNK_ROWS)), { mode: 0o600 });
    // What a broken install gives: the worker's module missing.
    const missing = new URL('./no-such-snapshot-worker.js', pathToFileURL(join(dir, '/')));
    let starts = 0;
    const worker: SnapshotWorker = {
      minRows: 1,
      start: () => {
        starts++;
        return startRowsEncoder(missing);
      },
    };
    const warnings: string[] = [];
    const logger = pino({ level: 'warn' }, { write: (line: string) => void warnings.push(JSON.parse(line).msg as string) });
    const store = await StateStore.open(path, { writeDelayMs: 5, snapshotWorker: worker, logger });
    for (let fold = 1; fold <= 2; fold++) {
      for (let i = 0; i < 50; i++) store.setFile('docs', `changed-${fold}-${i}`, entry(i));
      await store.flush();
      expect(store.writeStats.journalBytes).toBeGreaterThan(0);
      await store.fold();
      expect(store.writeStats.snapshot.writes).toBe(fold);
      expect(store.writeStats.journalBytes).toBe(0);
      const held = await readStateFile(path);
      expect(held?.mappings['docs']?.files.get(`changed-${fold}-49`)).toEqual(entry(49));
      expect(await readFile(path, 'utf8')).toBe(encodeStateToString(held!));
    }
    await store.close();
    expect(starts).toBe(2); // every fold tries a worker again
    expect(warnings.filter((w) => w.includes('worker thread could not start'))).toHaveLength(1);
    expect(warnings.join('\n')).not.toMatch(/could not be written/);
    expect((await readdir(dir)).filter((f) => f.includes('.tmp'))).toEqual([]);
  });
});

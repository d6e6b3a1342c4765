import { describe, expect, it } from 'vitest';
import { entryFor } from '../../../src/engine/executor.js';
import { FileTable } from '../../../src/state/file-table.js';

describe("entryFor: a synced file's state entry", () => {
  it('records the sync time to the whole second, so that a burst of uploads shares one value', () => {
    const file = { path: 'a.txt', size: 5, mtimeMs: 1_700_000_000_000.5, sha256: 'a'.repeat(64), hashedAt: 1_700_000_001_000 };
    const at = Date.UTC(2026, 10, 30, 19, 56, 13, 987);
    const e = entryFor(file, 'doc-1', () => at);
    expect(e).toEqual({ documentId: 'doc-1', size: 5, mtimeMs: file.mtimeMs, sha256: file.sha256, syncedAt: '2026-11-30T19:56:13.000Z', hashedAt: file.hashedAt });
    // A thousand uploads within one second: one distinct value in the table.
    const t = new FileTable();
    for (let i = 0; i < 1000; i++) t.set(`f${i}`, entryFor({ ...file, path: `f${i}` }, `doc-${i}`, () => at - 987 + i));
    expect(new Set([...t.entries()].map(([, x]) => x.syncedAt))).toEqual(new Set(['2026-11-30T19:56:13.000Z']));
  });
});

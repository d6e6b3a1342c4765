/**
 * The quick check's rule (issue 9, defect 4): git's rule against racily clean entries, with
 * a fake clock. Each row: the entry as recorded at the hash, the stat now, the clock now.
 */
import { describe, expect, it } from 'vitest';
import { needsHash, RACY_MARGIN_MS, sameStat, type StatNow } from '../../../src/engine/racy.js';
import type { FileEntry } from '../../../src/state/schema.js';

const T = Date.parse('2026-11-23T10:00:00Z');
/** Hashed a minute after its last write, at T; stat fields as a real filesystem gives them. */
const entry: FileEntry = { documentId: 'd1', size: 10, mtimeMs: T - 60_000, ctimeMs: T - 60_000, dev: 2049, ino: 77, sha256: 'h1', syncedAt: 't', hashedAt: T };
const stat: StatNow = { size: 10, mtimeMs: T - 60_000, ctimeMs: T - 60_000, dev: 2049, ino: 77 };
const later = T + 3_600_000;

const cases: [name: string, entry: FileEntry | undefined, stat: StatNow, now: number, expected: boolean][] = [
  ['no entry: a new file', undefined, stat, later, true],
  ['nothing changed, hashed well after its mtime: the state vouches', entry, stat, later, false],
  ['another size', entry, { ...stat, size: 11 }, later, true],
  ['another mtime (an ordinary edit)', entry, { ...stat, mtimeMs: T + 5 }, later, true],
  ['a same-size rewrite whose mtime was put back (touch -r, rsync --times): only ctime tells', entry, { ...stat, ctimeMs: T + 5_000 }, later, true],
  ['two same-size files with equal mtimes swapped by renames: another inode', entry, { ...stat, ino: 78, ctimeMs: T + 5_000 }, later, true],
  ['the same swap where the filesystem keeps ctime equal: the inode still tells', entry, { ...stat, ino: 78 }, later, true],
  ['another device (the folder is now another mount)', entry, { ...stat, dev: 2050 }, later, true],
  ['mtime sub-millisecond apart (nanosecond filesystems): another mtime', entry, { ...stat, mtimeMs: entry.mtimeMs + 0.001 }, later, true],
  [
    'racy: written in the same second as the hash (a second write in that tick would look the same)',
    { ...entry, mtimeMs: T - 300, ctimeMs: T - 300 },
    { ...stat, mtimeMs: T - 300, ctimeMs: T - 300 },
    later,
    true,
  ],
  [
    'racy: mtime exactly the margin before the hash',
    { ...entry, mtimeMs: T - RACY_MARGIN_MS, ctimeMs: T - RACY_MARGIN_MS },
    { ...stat, mtimeMs: T - RACY_MARGIN_MS, ctimeMs: T - RACY_MARGIN_MS },
    later,
    true,
  ],
  [
    'not racy: mtime just over the margin before the hash',
    { ...entry, mtimeMs: T - RACY_MARGIN_MS - 1, ctimeMs: T - RACY_MARGIN_MS - 1 },
    { ...stat, mtimeMs: T - RACY_MARGIN_MS - 1, ctimeMs: T - RACY_MARGIN_MS - 1 },
    later,
    false,
  ],
  [
    'racy by ctime: renamed (or mtime put back) in the tick of the hash, an old mtime (found by the simulation)',
    { ...entry, ctimeMs: T },
    { ...stat, ctimeMs: T },
    later,
    true,
  ],
  [
    'not racy: ctime and mtime both over the margin before the hash',
    { ...entry, ctimeMs: T - RACY_MARGIN_MS - 1 },
    { ...stat, ctimeMs: T - RACY_MARGIN_MS - 1 },
    later,
    false,
  ],
  ['racy: an mtime in the future of the hash (a server clock ahead)', { ...entry, mtimeMs: T + 10_000 }, { ...stat, mtimeMs: T + 10_000 }, later, true],
  ['an entry of an older version (no hash time): hashed once more', { documentId: 'd1', size: 10, mtimeMs: T - 60_000, sha256: 'h1', syncedAt: 't' }, stat, later, true],
  ['the clock set back since the hash: no order to rely on', entry, stat, T - 3_600_000, true],
  ['a stat that gives no ctime, device or inode: an unknown field never vouches, hashed', entry, { size: 10, mtimeMs: T - 60_000 }, later, true],
  ['an entry of an older version without ctime, device or inode: hashed once more', { ...entry, ctimeMs: undefined, dev: undefined, ino: undefined }, stat, later, true],
];

describe('needsHash (racy.ts)', () => {
  for (const [name, e, s, now, expected] of cases) {
    it(name, () => {
      expect(needsHash(e, s, now)).toBe(expected);
    });
  }
});

/** The one rule of "unchanged" (sameStat): every row is [name, recorded, now, same]. */
const sameRows: [name: string, recorded: StatNow, now: StatNow, same: boolean][] = [
  ['every field known and equal', stat, { ...stat }, true],
  ['another size', stat, { ...stat, size: 11 }, false],
  ['another mtime', stat, { ...stat, mtimeMs: stat.mtimeMs + 1 }, false],
  ['another ctime', stat, { ...stat, ctimeMs: T }, false],
  ['another device', stat, { ...stat, dev: 2050 }, false],
  ['another inode', stat, { ...stat, ino: 78 }, false],
  ['ctime unknown now', stat, { ...stat, ctimeMs: undefined }, false],
  ['ctime unknown in the record', { ...stat, ctimeMs: undefined }, stat, false],
  ['device unknown in the record (an older state)', { ...stat, dev: undefined }, stat, false],
  ['inode unknown now', stat, { ...stat, ino: undefined }, false],
  ['ctime, device and inode unknown on both sides: unknown never vouches', { size: 10, mtimeMs: T }, { size: 10, mtimeMs: T }, false],
];

describe('sameStat (racy.ts): an unknown field never vouches for "unchanged"', () => {
  for (const [name, recorded, now, same] of sameRows) {
    it(name, () => {
      expect(sameStat(recorded, now)).toBe(same);
    });
  }
});

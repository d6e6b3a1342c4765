/**
 * The compact table of a mapping's files (file-table.ts): the same entries as a record of
 * objects would hold, under random sets and deletes; its lines are the encoder's tuples;
 * a pinned chunk keeps its lines through every kind of change.
 */
import { isDeepStrictEqual } from 'node:util';
import { describe, expect, it } from 'vitest';
import { CHUNK_ROWS, FileTable } from '../../../src/state/file-table.js';
import type { FileEntry } from '../../../src/state/schema.js';
import { entryToTuple } from '../../../src/state/validate.js';

function rng(seed: number): (n: number) => number {
  return (n) => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    return seed % n;
  };
}

const HEX = '0123456789abcdef';

/** Entries of every shape: full, partial and no stat fields, odd hashes, odd numbers. */
function randomEntry(rnd: (n: number) => number, i: number): FileEntry {
  const shaKind = rnd(10);
  const sha256 =
    shaKind === 0 ? `${i}`.padStart(64, 'A') // uppercase: not packed (it must come back as it was)
    : shaKind === 1 ? 'h'
    : shaKind === 2 ? ''
    : Array.from({ length: 64 }, () => HEX[rnd(16)]).join('');
  const numbers = [0, -0, 1, 1.5, 1e21, 2 ** 53 + 2, 1_795_083_271_582.999, 1_700_000_000_001.1235, 4_294_967_297, -3.25];
  const n = (): number => numbers[rnd(numbers.length)] as number;
  const hex = (n: number): string => Array.from({ length: n }, () => HEX[rnd(16)]).join('');
  const idKind = rnd(9);
  // Ids of every form: packed by shape (doc_ + 32 digits, a UUID, an ObjectId, a short or
  // empty one), or kept as strings (uppercase, too many digits, the shapes' own placeholder,
  // one shape of hundreds).
  const documentId =
    idKind === 0 ? `doc_${hex(32)}`
    : idKind === 1 ? `${hex(8)}-${hex(4)}-${hex(4)}-${hex(4)}-${hex(12)}`
    : idKind === 2 ? hex(24)
    : idKind === 3 ? `d-${rnd(1000)}`
    : idKind === 4 ? (rnd(2) ? '' : 'ab')
    : idKind === 5 ? hex(24).toUpperCase()
    : idKind === 6 ? hex(33 + rnd(40))
    : idKind === 7 ? `x\uffff${hex(4)}`
    : `${'z'.repeat(rnd(400))}${hex(6)}`;
  const e: FileEntry = { documentId, size: n(), mtimeMs: n(), sha256, syncedAt: new Date(1_700_000_000_000 + rnd(30) * 1000).toISOString() };
  const kind = rnd(4);
  if (kind === 0) return e;
  if (kind === 1) return { ...e, hashedAt: n(), ctimeMs: n(), dev: n(), ino: n() };
  const out: FileEntry = { ...e };
  if (rnd(2)) out.hashedAt = n();
  if (rnd(2)) out.ctimeMs = n();
  if (rnd(2)) out.dev = n();
  if (rnd(2)) out.ino = n();
  return out;
}

/** What the encoder wrote for an entry before the table: the line of its tuple. */
function lineOf(path: string, e: FileEntry): string {
  return `${JSON.stringify([path, ...entryToTuple(e)])}\n`;
}

/** Mostly ASCII; some in Latin-1, in other scripts, with a surrogate pair or a lone surrogate (kept as strings: path-column.ts). */
function pathOf(rnd: (n: number) => number): string {
  switch (rnd(50)) {
    case 0:
      return '__proto__';
    case 1:
      return `café/été-${rnd(40)}.txt`;
    case 2:
      return `日本/文書-${rnd(40)}.txt`;
    case 3:
      return `emoji-\u{1F600}/${rnd(40)}`;
    case 4:
      return `lone-\ud800/${rnd(10)}`;
    default:
      return `dir-${rnd(40)}/f${rnd(2500)}.txt`;
  }
}

function linesOf(table: FileTable): string[] {
  const out: string[] = [];
  for (const c of table.pin()) out.push(...table.encodePinned(c).text.split('\n').filter((l) => l !== ''));
  return out.sort();
}

describe('FileTable', () => {
  it('holds what a record of the entries holds, under random sets and deletes; its marks, what a set of those paths holds', () => {
    const rnd = rng(7);
    const table = new FileTable();
    const model = new Map<string, FileEntry>();
    // A pass's marks (EntryMarks) against a Set of the same paths: an entry's mark ends with it.
    const marks = table.marks();
    const marked = new Set<string>();
    for (let step = 0; step < 20_000; step++) {
      const path = pathOf(rnd);
      if (rnd(3) === 0) {
        expect(table.delete(path)).toBe(model.delete(path));
        marked.delete(path);
      } else if (rnd(4) === 0) {
        // Marked (an entry) or unmarked; a path without an entry cannot be marked.
        if (!model.has(path)) expect(() => marks.add(path)).toThrow(/no entry/);
        else if (rnd(3) === 0) expect(marks.delete(path)).toBe(marked.delete(path));
        else {
          expect(marks.add(`${path}`)).toBe(marks);
          marked.add(path);
        }
      } else {
        const e = randomEntry(rnd, step);
        // Some as a loaded line, into rows reused or new: the path's mark stays with its entry.
        if (rnd(4) === 0) table.setTuple(path, entryToTuple(e), 0);
        else table.set(path, e);
        model.set(path, e);
      }
      if (step % 997 === 0 || step === 19_999) {
        expect(marks.size).toBe(marked.size);
        expect([...marks].sort()).toEqual([...marked].sort());
        for (const p of model.keys()) expect(marks.has(`${p}`)).toBe(marked.has(p));
        expect(table.size).toBe(model.size);
        expect([...table.keys()].sort()).toEqual([...model.keys()].sort());
        for (const [p, e] of model) {
          // Read back exactly: the same fields, no others (absent, not undefined).
          expect(table.get(p)).toStrictEqual(e);
          expect(table.documentIdOf(p)).toBe(e.documentId);
          expect(table.statOf(p)).toStrictEqual({ size: e.size, mtimeMs: e.mtimeMs, hashedAt: e.hashedAt, ctimeMs: e.ctimeMs, dev: e.dev, ino: e.ino });
          expect(table.sha256Of(p)).toBe(e.sha256);
          expect(table.has(p)).toBe(true);
          // The path, when (and only when) both id and content are the entry's.
          expect(table.recording(`${p}`, e.documentId, e.sha256)).toStrictEqual({ path: p, size: e.size, mtimeMs: e.mtimeMs });
          expect(table.recording(p, `${e.documentId}x`, e.sha256)).toBeUndefined();
          expect(table.recording(p, e.documentId.slice(0, -1) + (e.documentId.endsWith('0') ? '1' : '0'), e.sha256)).toBeUndefined();
          expect(table.recording(p, e.documentId, e.sha256.slice(0, -1) + (e.sha256.endsWith('0') ? '1' : '0'))).toBeUndefined();
        }
        expect(linesOf(table)).toEqual([...model].map(([p, e]) => lineOf(p, e).slice(0, -1)).sort());
      }
    }
    expect(table.get('not/there')).toBeUndefined();
    expect(table.documentIdOf('not/there')).toBeUndefined();
    expect(table.statOf('not/there')).toBeUndefined();
    expect(marks.has('not/there')).toBe(false);
    expect(table.has('not/there')).toBe(false);
    expect(table.recording('not/there', 'd', 'a'.repeat(64))).toBeUndefined();
    const copy = table.clone();
    expect(copy.toJSON()).toEqual(table.toJSON());
    copy.set('only/in/copy', randomEntry(rnd, 1));
    expect(table.has('only/in/copy')).toBe(false);
  });

  it('finds the path of a document id as a map of the ids in row order would', () => {
    const rnd = rng(9);
    const table = new FileTable();
    for (let step = 0; step < 5000; step++) {
      const path = `d${rnd(40)}/f${rnd(200)}`;
      if (rnd(4) === 0) table.delete(path);
      else table.set(path, randomEntry(rnd, step)); // ids repeat: several paths may hold one
    }
    const model = new Map<string, string>();
    for (const [path, e] of table.entries()) model.set(e.documentId, path);
    const find = table.documentIndex();
    for (const [id, path] of model) expect(find(id)).toBe(path);
    expect(find('not-an-id')).toBeUndefined();
    expect(new FileTable().documentIndex()('x')).toBeUndefined();
  });

  it('holds its rows across blocks of columns (a table past its first block), and more devices than its device column indexes', () => {
    const rnd = rng(13);
    // Entries of every shape, each used for many rows: the rows differ by path.
    const shapes = Array.from({ length: 500 }, (_, i) => randomEntry(rnd, i));
    const rows = 70_000; // past the first block's 65,536 rows: a second block is added
    const table = new FileTable();
    const model = new Map<string, FileEntry>();
    for (let i = 0; i < rows; i++) {
      // Most on a device of their own: 63,000 devices here, 3,000 more below, past the
      // 65,534 a table indexes (the rest are kept by row).
      const shape = shapes[i % shapes.length]!;
      const e = i % 10 === 0 ? shape : { ...shape, dev: 1_000 + i };
      table.set(`big/${i}`, e);
      model.set(`big/${i}`, e);
    }
    for (let i = 0; i < rows; i += 7) {
      table.delete(`big/${i}`);
      model.delete(`big/${i}`);
    }
    for (let i = 0; i < 3000; i++) {
      const e = { ...randomEntry(rnd, i), dev: 500_000 + i };
      table.set(`again/${i}`, e); // into freed rows, in every block
      model.set(`again/${i}`, e);
    }
    expect(table.size).toBe(model.size);
    // One assertion over every row (an expect() per row is slow at this size).
    expect([...model].filter(([p, e]) => !isDeepStrictEqual(table.get(p), e)).map(([p]) => p)).toEqual([]);
    const copy = table.clone();
    expect(copy.size).toBe(model.size);
    for (const p of ['big/1', 'big/65537', `big/${rows - 1}`, 'again/2998', 'again/2999']) expect(copy.get(p)).toStrictEqual(model.get(p));
    expect(linesOf(copy)).toEqual(linesOf(table));
  });

  it("gives back each entry's device as it was set: -0, unknown, one shared, one of its own", () => {
    const table = new FileTable();
    const base = { documentId: 'doc_1', size: 1, mtimeMs: 2, sha256: 'a'.repeat(64), syncedAt: '2026-11-30T00:00:00.000Z', hashedAt: 3, ctimeMs: 4, ino: 5 };
    const devs = [-0, 0, 2049, 2049, 2 ** 53 - 1, undefined];
    devs.forEach((dev, i) => table.set(`f${i}`, { ...base, dev }));
    devs.forEach((dev, i) => expect(Object.is(table.statOf(`f${i}`)!.dev, dev)).toBe(true));
    table.delete('f0');
    table.set('f9', { ...base, dev: 7 }); // into f0's row
    expect(table.statOf('f9')!.dev).toBe(7);
    // Unknown: absent from the entry, not undefined.
    expect(table.get('f5')).toStrictEqual(base);
  });

  it('a read entry is a copy: changing it changes nothing', () => {
    const table = FileTable.of({ a: { documentId: 'd', size: 1, mtimeMs: 2, sha256: 'f'.repeat(64), syncedAt: 't' } });
    const e = table.get('a') as FileEntry;
    e.size = 99;
    expect(table.get('a')?.size).toBe(1);
  });

  it('forgets a syncedAt value no entry uses any more, and reuses its slot', () => {
    const table = new FileTable();
    const at = (i: number): string => new Date(i * 1000).toISOString();
    for (let round = 0; round < 50; round++) {
      for (let i = 0; i < 100; i++) table.set(`f${i}`, { documentId: 'd', size: 1, mtimeMs: 1, sha256: 'h', syncedAt: at(round * 100 + i) });
    }
    for (let i = 0; i < 100; i++) expect(table.get(`f${i}`)?.syncedAt).toBe(at(4900 + i));
    // 100 values held, not 5,000 (its private bookkeeping, looked at directly).
    expect((table as unknown as { syncedIndex: Map<string, number> }).syncedIndex.size).toBe(100);
  });

  it('packs the document ids of common forms (no string kept per file)', () => {
    const rnd = rng(5);
    const table = new FileTable();
    const hex = (n: number): string => Array.from({ length: n }, () => HEX[rnd(16)]).join('');
    const ids = new Map<string, string>();
    for (let i = 0; i < 3000; i++) {
      const id = i % 3 === 0 ? `doc_${hex(32)}` : i % 3 === 1 ? `${hex(8)}-${hex(4)}-${hex(4)}-${hex(4)}-${hex(12)}` : hex(24);
      ids.set(`f${i}`, id);
      table.set(`f${i}`, { documentId: id, size: 1, mtimeMs: 1, sha256: hex(64), syncedAt: 't' });
    }
    for (const [p, id] of ids) expect(table.documentIdOf(p)).toBe(id);
    const internals = table as unknown as { oddIds: Map<number, string> | undefined; oddSha: Map<number, string> | undefined; shapes: unknown[] };
    expect(internals.oddIds?.size ?? 0).toBe(0);
    expect(internals.oddSha?.size ?? 0).toBe(0);
    expect(internals.shapes.length).toBe(4); // three shapes and the unused 0
  });

  it('a pinned chunk keeps its lines through sets, deletes, reused rows and new rows', () => {
    const rnd = rng(11);
    const table = new FileTable();
    const n = 3 * CHUNK_ROWS + 17;
    for (let i = 0; i < n; i++) table.set(`p${i}`, randomEntry(rnd, i));
    for (let i = 0; i < n; i += 5) table.delete(`p${i}`); // free rows before the snapshot
    const before = linesOf(table);
    const chunks = table.pin();
    const encoded: string[] = [];
    for (const c of chunks) {
      // Changes of every kind before each chunk is encoded.
      for (let k = 0; k < 40; k++) {
        const i = rnd(n + 200);
        const r = rnd(3);
        if (r === 0) table.delete(`p${i}`);
        else table.set(r === 1 ? `p${i}` : `new${i}`, randomEntry(rnd, i));
      }
      encoded.push(...table.encodePinned(c).text.split('\n').filter((l) => l !== ''));
    }
    expect(encoded.sort()).toEqual(before);
  });

  it('writes the lines of a loaded table in the order they were read', () => {
    const rnd = rng(3);
    const table = new FileTable();
    const lines: string[] = [];
    for (let i = 0; i < 2 * CHUNK_ROWS + 5; i++) {
      const path = `z/${rnd(1_000_000)}-${i}`;
      const e = randomEntry(rnd, i);
      const t = JSON.parse(lineOf(path, e)) as unknown[];
      table.setTuple(path, t, 1);
      lines.push(lineOf(path, e));
    }
    const out = table.pin().map((c) => table.encodePinned(c).text).join('');
    expect(out).toBe(lines.join(''));
  });
});

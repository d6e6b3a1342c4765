import { describe, expect, it } from 'vitest';
import { decodeState } from '../../../src/state/decode.js';
import { StateCodec, encodeStateToString } from '../../../src/state/encoder.js';
import { CHUNK_ROWS } from '../../../src/state/file-table.js';
import { newMappingState, newState } from '../../../src/state/validate.js';
import { StateCorruptError, StateFormatRetiredError, StateVersionError } from '../../../src/state/errors.js';
import type { FileEntry, StateFile } from '../../../src/state/schema.js';
import { stateFileText } from '../../helpers/state-fixture.js';
import { toFormat3, toFormat4 } from '../../helpers/state-v3.js';

const FILE = '/var/lib/dssync/state.json';

function entry(i: number): FileEntry {
  return {
    documentId: `doc-${i}`,
    size: 100 + i,
    mtimeMs: 1_700_000_000_000.25 + i,
    sha256: `${i}`.padStart(64, 'a'),
    syncedAt: new Date(1_700_000_000_000 + i).toISOString(),
  };
}

function sample(): StateFile {
  const s = newState();
  const m = newMappingState('ds-1', '/srv/share/handbook');
  m.files.set('a.txt', entry(1));
  m.files.set('dir/é ü "quoted" \\ back.pdf', entry(2));
  m.files.set('__proto__', entry(3));
  m.files.set('constructor', entry(4));
  m.intents['i1'] = {
    kind: 'upload',
    id: 'i1',
    startedAt: '2026-01-01T00:00:00.000Z',
    files: [{ path: 'new.txt', size: 3, mtimeMs: 5, sha256: 'ff', replacesDocumentId: 'doc-9' }],
  };
  m.intents['i2'] = { kind: 'upload', id: 'i2', startedAt: '2026-01-01T00:00:01.000Z', files: [{ path: 'x', size: 1, mtimeMs: 2, sha256: 'aa', documentId: 'doc-1' }] };
  m.rejected['huge.bin'] = { size: 1e9, mtimeMs: 7, status: 413, reason: 'too large', at: '2026-01-01T00:00:00.000Z' };
  m.lastPass = { startedAt: 'a', finishedAt: 'b', ok: true, summary: { uploaded: 2 } };
  s.mappings['handbook'] = m;
  s.mappings['empty'] = newMappingState('ds-2', '/srv/empty');
  return s;
}

/** What decoding `text` throws (undefined when it decodes). */
function decodeError(text: string): unknown {
  try {
    decodeState(FILE, text);
  } catch (e) {
    return e;
  }
  return undefined;
}

/** A plain-object copy, so that toEqual compares content and not prototypes. */
function plain(s: StateFile): unknown {
  return JSON.parse(JSON.stringify(s));
}

describe('state codec', () => {
  it('round-trips every part of the state, including awkward paths', () => {
    const s = sample();
    const text = encodeStateToString(s);
    const back = decodeState(FILE, text).state;
    expect(plain(back)).toEqual(plain(s));
    // Paths are data: `__proto__` and `constructor` are ordinary keys.
    expect(back.mappings['handbook']?.files.get('__proto__')).toEqual(entry(3));
    expect(back.mappings['handbook']?.files.get('constructor')).toEqual(entry(4));
  });

  it('writes a header, a line per mapping followed by a line per file (a tuple), and an end line', () => {
    const s = sample();
    s.journalSeq = 17;
    const lines = encodeStateToString(s).split('\n');
    expect(lines[0]).toBe('dssync-state 5 {"needs":"0.3.0","journalSeq":17}');
    expect(lines[1]).toMatch(/^\{"mapping":"handbook","dataSourceId":"ds-1","root":"\/srv\/share\/handbook","intents":\{"i1":/);
    expect(lines).toContain('["a.txt","doc-1",101,1700000000001.25,"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa1","2023-11-14T22:13:20.001Z"]');
    expect(lines.filter((l) => l.startsWith('[')).length).toBe(4); // files carry no key names
    expect(lines.join('\n')).not.toContain('"documentId":"doc-2"');
    expect(lines[6]).toBe('{"mapping":"empty","dataSourceId":"ds-2","root":"/srv/empty","intents":{},"rejected":{}}');
    // The end line counts the 7 lines above it; the file ends with its newline.
    expect(lines[7]).toMatch(/^end 7 [0-9a-f]{8}$/);
    expect(lines[8]).toBe('');
  });

  it('keeps the racy check\'s stat fields (hash time, ctime, device, inode), null when unknown', () => {
    const s = newState();
    const m = newMappingState('ds-1', '/srv/share');
    m.files.set('full.txt', { ...entry(1), hashedAt: 1_700_000_060_000.5, ctimeMs: 1_700_000_000_001.1235, dev: 2049, ino: 123456789 });
    m.files.set('partial.txt', { ...entry(2), hashedAt: 1_700_000_060_000 });
    s.mappings['m'] = m;
    const text = encodeStateToString(s);
    expect(text).toContain(',1700000060000.5,1700000000001.1235,2049,123456789]');
    expect(text).toContain(',1700000060000,null,null,null]');
    expect(plain(decodeState(FILE, text).state)).toEqual(plain(s));
  });

  it('refuses a file tuple with a stat field that is not a number or null, naming its line', () => {
    const good = stateFileText({ m: { dataSourceId: 'ds-1', root: '/srv', files: { 'a.txt': { documentId: 'doc-1', size: 10, mtimeMs: 1000, sha256: 'h1', syncedAt: 't', hashedAt: 1, ctimeMs: 2, dev: 3, ino: 4 } } } });
    const bad = good.replace('"t",1,2,3,4]', '"t",1,"x",3,4]');
    expect(bad).not.toBe(good);
    expect(() => decodeState(FILE, bad)).toThrow(/line 3: not a \[path, documentId, size, mtimeMs, sha256, syncedAt, hashedAt, ctimeMs, dev, ino\] file line/);
  });

  it('cached encoding always equals a fresh one under random mutations', () => {
    // Deterministic pseudo-random sequence.
    let seed = 42;
    const rnd = (n: number) => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed % n;
    };
    const s = newState();
    const codec = new StateCodec();
    const ids = ['m1', 'm2'];
    for (const id of ids) {
      s.mappings[id] = newMappingState(`ds-${id}`, `/r/${id}`);
    }
    for (let step = 0; step < 3000; step++) {
      const id = ids[rnd(2)] as string;
      const m = s.mappings[id];
      if (!m) throw new Error('missing mapping');
      const path = `p${rnd(3 * CHUNK_ROWS)}`;
      const op = rnd(10);
      if (op < 6) {
        m.files.set(path, entry(step));
      } else if (op < 9) {
        m.files.delete(path);
      } else {
        m.root = `/r/${step}`;
        codec.headChanged(id);
      }
      if (step % 97 === 0) {
        const cached = Buffer.concat(codec.encode(s)).toString();
        expect(cached).toBe(encodeStateToString(s));
        expect(plain(decodeState(FILE, cached).state)).toEqual(plain(s));
      }
    }
  });

  it('a snapshot encoded in slices holds the state at snapshot time, and later writes see later changes', async () => {
    const s = newState();
    const codec = new StateCodec();
    const m = newMappingState('ds', '/r');
    s.mappings['m'] = m;
    // Enough chunks of rows (the unit of a slice) to change many between two of them.
    const N = 16 * CHUNK_ROWS;
    for (let i = 0; i < N; i++) m.files.set(`f${i}`, Object.freeze(entry(i)));
    codec.encode(s); // everything cached
    // Stale a few buckets, then snapshot.
    for (let i = 0; i < 300; i++) {
      m.files.set(`f${i * 7}`, entry(10_000 + i));
    }
    const expected = encodeStateToString(s);
    const plan = codec.snapshot(s);
    // Work done between slices, as the store's callers would: replace and delete entries.
    let n = 0;
    const change = (): void => {
      const path = `f${(n++ * 7) % N}`;
      if (n % 2) m.files.set(path, entry(99_999));
      else m.files.delete(path);
      if (n % 5 === 0) m.files.set(`new-${n}`, entry(n)); // new paths too
    };
    const written: Buffer[] = [];
    const result = await plan.run({ sliceMs: 0, now: () => 0, yieldNow: async () => change() }, async (chunks) => {
      written.push(...chunks);
      change(); // a write to the file is a turn of the event loop too
    });
    expect(n).toBeGreaterThan(10); // it did yield between chunks
    expect(Buffer.concat(written).toString()).toBe(expected);
    expect(result.bytes).toBe(Buffer.byteLength(expected));
    // Buckets changed during the slices were not cached with their old content.
    expect(Buffer.concat(codec.encode(s)).toString()).toBe(encodeStateToString(s));
  });

  describe('refuses a damaged file with StateCorruptError naming it', () => {
    const good = encodeStateToString(sample());
    const lines = good.split('\n');
    /** `good` with line i replaced (and the end line kept: its count and checksum no longer match). */
    const withLine = (i: number, text: string): string => lines.map((l, k) => (k === i ? text : l)).join('\n');
    const cases: [string, string, RegExp][] = [
      ['empty', '', /empty/],
      ['blank', '  \n', /empty/],
      ['not JSON', 'hello', /cut short/],
      ['truncated', good.slice(0, Math.floor(good.length / 2)), /no end line after line \d+: the file is cut short/],
      ['no end line', lines.slice(0, -2).join('\n') + '\n', /no end line after line 7/],
      ['a line lost', [...lines.slice(0, 3), ...lines.slice(4)].join('\n'), /the end line \(after line 6\): it counts 7 lines above it, the file has 6/],
      ['a byte changed', good.replace('"doc-1"', '"doc-7"'), /its checksum does not match/],
      ['bytes after the end line', `${good}["x"]\n`, /bytes after the end line/],
      ['another header', withLine(0, 'something 3 {}'), /line 1: the first line is not "dssync-state <version> \{…\}"/],
      ['a version it does not know', withLine(0, 'dssync-state 2 {"journalSeq":0}'), /line 1: version 2 is not one this dssync can read/],
      ['no journalSeq', withLine(0, 'dssync-state 3 {}'), /"journalSeq" is missing/],
      ['a file line before any mapping', `dssync-state 3 {"journalSeq":0}\n["a","d",1,1,"h","t"]\nend 2 00000000\n`, /line 2: a file line before any mapping line/],
      ['a file line that is not a tuple', withLine(3, '["a","d",null,1,"h","t"]'), /line 4: not a \[path, documentId, size/],
      ['a line that is not JSON', withLine(3, '["a","d",1'), /line 4: not JSON/],
      ['an unknown line', withLine(3, 'hello'), /line 4: not a header, mapping, file or end line/],
      ['a mapping twice', withLine(6, lines[1] ?? ''), /line 7: mapping "handbook" twice/],
      ['a mapping line without its id', withLine(6, '{"dataSourceId":"d","root":"/","intents":{},"rejected":{}}'), /line 7: a mapping line without "mapping"/],
      [
        'an intent whose id differs from its key (in a mapping line)',
        withLine(6, '{"mapping":"x","dataSourceId":"d","root":"/","intents":{"x":{"kind":"upload","id":"y","startedAt":"t","files":[]}},"rejected":{}}'),
        /line 7: mappings\.x\.intents\.x: id "y" differs from its key/,
      ],
    ];
    for (const [name, text, detail] of cases) {
      it(name, () => {
        const err = decodeError(text);
        expect(err).toBeInstanceOf(StateCorruptError);
        const e = err as StateCorruptError;
        expect(e.file).toBe(FILE);
        expect(e.message).toContain(FILE);
        expect(e.detail).toMatch(detail);
      });
    }

    it('every truncation of a valid file', () => {
      for (let cut = 0; cut < good.length; cut++) {
        expect(() => decodeState(FILE, good.slice(0, cut))).toThrow(StateCorruptError);
      }
    });
  });

  it('refuses a file of a newer version with a clear error naming both formats and the release to install', () => {
    expect(() => decodeState(FILE, 'dssync-state 6 {"needs":"0.4.0","journalSeq":0,"more":1}\n')).toThrow(
      `state file ${FILE} is in state format 6, written by dssync 0.4.0 or newer; this dssync reads formats up to 5 (that of dssync 0.3.0): install dssync 0.4.0 or newer, or restore the state backup`,
    );
    // Without "needs" (or with a header this format cannot parse): refused all the same.
    for (const text of ['dssync-state 6 {"journalSeq":0}\n', 'dssync-state 6 not json\n']) {
      expect(() => decodeState(FILE, text)).toThrow(StateVersionError);
      expect(() => decodeState(FILE, text)).toThrow(`state file ${FILE} is in state format 6, written by a newer dssync; this dssync reads formats up to 5 (that of dssync 0.3.0): install dssync newer than this one`);
    }
  });

  it('refuses one JSON object (formats 1 and 2, no longer read), whole or cut short, naming the file and the release that reads it', () => {
    const texts = [
      '{"version":2,"journalSeq":0,"mappings":{"m":{"dataSourceId":"ds-1","root":"/srv","intents":{},"rejected":{},"files":[]}}}',
      '{"version":1,"mappings":{"m":{"dataSour',
      ' \n {"version":6}',
      '{',
    ];
    for (const text of texts) {
      const err = decodeError(text);
      // Not corrupt: onCorrupt 'reset' would move it aside and rebuild a state that owns nothing.
      expect(err).toBeInstanceOf(StateFormatRetiredError);
      expect(err).not.toBeInstanceOf(StateCorruptError);
      expect((err as StateFormatRetiredError).file).toBe(FILE);
      expect((err as Error).message).toContain(`state file ${FILE} is one JSON object: state format 1 or 2`);
      expect((err as Error).message).toContain('Run dssync 0.3.0 once with this state');
    }
  });

  /** A state of one mapping holding one file, as an older format would have it. */
  const oneFileState = (journalSeq: number): StateFile => {
    const s = newState();
    s.journalSeq = journalSeq;
    s.mappings['m'] = newMappingState('ds1', '/srv');
    s.mappings['m'].files.set('a.txt', { documentId: 'd1', size: 1, mtimeMs: 1, sha256: 'a'.repeat(64), syncedAt: '2026-01-01T00:00:00.000Z' });
    return s;
  };

  it('reads a format-4 file (dssync 0.2.0: no writer sessions) as a migration from 4, to be rewritten as 5', () => {
    const s = oneFileState(3);
    const old = toFormat4(encodeStateToString(s));
    expect(old.split('\n')[0]).toBe('dssync-state 4 {"needs":"0.2.0","journalSeq":3}');
    const decoded = decodeState(FILE, old);
    expect(decoded.migratedFrom).toBe(4);
    expect(decoded.state.mappings['m']?.sessions).toBeUndefined();
    expect(decoded.state.mappings['m']?.files.get('a.txt')?.documentId).toBe('d1');
  });

  it('reads a format-3 file (dssync 0.1.0: no "needs", no identity) as a migration from 3', () => {
    const s = oneFileState(9);
    const old = toFormat3(encodeStateToString(s));
    expect(old.split('\n')[0]).toBe('dssync-state 3 {"journalSeq":9}');
    const decoded = decodeState(FILE, old);
    expect(decoded.migratedFrom).toBe(3);
    expect(decoded.state.journalSeq).toBe(9);
    expect(decoded.state.identity).toBeUndefined();
    expect(decoded.state.mappings['m']?.files.get('a.txt')?.documentId).toBe('d1');
  });
});

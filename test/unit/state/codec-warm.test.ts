import { describe, expect, it } from 'vitest';
import { StateCodec, encodeStateToString, newMappingState, newState } from '../../../src/state/codec.js';
import type { FileEntry, StateFile } from '../../../src/state/schema.js';

function entry(i: number): FileEntry {
  return Object.freeze({ documentId: `doc-${i}`, size: i, mtimeMs: 1_700_000_000_000 + i, sha256: `${i}`.padStart(64, 'b'), syncedAt: new Date(i).toISOString() });
}

function loaded(n: number): { s: StateFile; codec: StateCodec; m: ReturnType<typeof newMappingState> } {
  const s = newState();
  const m = newMappingState('ds', '/r');
  for (let i = 0; i < n; i++) m.files[`dir/f${i}.txt`] = entry(i);
  s.mappings['m'] = m;
  const codec = new StateCodec();
  codec.indexMapping('m', m); // as after a load: every bucket stale
  return { s, codec, m };
}

describe('StateCodec.warm (encoding ahead of the first write after a load)', () => {
  it('leaves nothing for the first write to encode, and the write is exact', async () => {
    const { s, codec } = loaded(5000);
    let yields = 0;
    await codec.warm(s, { sliceMs: 0, now: () => 0, yieldNow: async () => void yields++ });
    expect(yields).toBeGreaterThan(10); // in slices, not one block
    const plan = codec.snapshot(s);
    let slices = 0;
    const result = await plan.run({ sliceMs: 0, now: () => 0, yieldNow: async () => void slices++ });
    expect(slices).toBe(0); // every bucket was already encoded
    expect(Buffer.concat(result.chunks).toString()).toBe(encodeStateToString(s));
  });

  it('never caches a bucket changed while it warms, and a write during the warm-up stays exact', async () => {
    const { s, codec, m } = loaded(3000);
    let n = 0;
    let written: string | undefined;
    let expected: string | undefined;
    await codec.warm(s, {
      sliceMs: 0,
      now: () => 0,
      yieldNow: async () => {
        n++;
        codec.setFile('m', m, `dir/f${(n * 13) % 3000}.txt`, n % 3 ? entry(50_000 + n) : undefined);
        if (n === 20) {
          // A write in the middle of the warm-up.
          expected = encodeStateToString(s);
          written = Buffer.concat(codec.encode(s)).toString();
        }
      },
    });
    expect(written).toBe(expected);
    expect(Buffer.concat(codec.encode(s)).toString()).toBe(encodeStateToString(s));
  });

  it('stops at a mapping replaced meanwhile (a reset), leaving its new cache alone', async () => {
    const { s, codec } = loaded(2000);
    await codec.warm(s, {
      sliceMs: 0,
      now: () => 0,
      yieldNow: async () => {
        if (s.mappings['m']?.root === '/r') {
          const fresh = newMappingState('ds-2', '/r2');
          fresh.files['only.txt'] = entry(1);
          s.mappings['m'] = fresh;
          codec.indexMapping('m', fresh);
        }
      },
    });
    expect(Buffer.concat(codec.encode(s)).toString()).toBe(encodeStateToString(s));
  });
});

describe('StateCodec.fileCount', () => {
  it('counts the files of a mapping through every addition, replacement and deletion', () => {
    const { codec, m } = loaded(1000);
    expect(codec.fileCount('m', m)).toBe(1000);
    codec.setFile('m', m, 'dir/f1.txt', entry(5)); // replaced: same count
    codec.setFile('m', m, 'new/a.txt', entry(6));
    codec.setFile('m', m, 'dir/f2.txt', undefined);
    codec.setFile('m', m, 'not/there.txt', undefined);
    expect(codec.fileCount('m', m)).toBe(Object.keys(m.files).length);
    expect(codec.fileCount('m', m)).toBe(1000);
  });
});

import { describe, expect, it } from 'vitest';
import { StateCodec } from '../../../src/state/encoder.js';
import { newMappingState, newState } from '../../../src/state/validate.js';
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

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
  for (let i = 0; i < n; i++) m.files.set(`dir/f${i}.txt`, entry(i));
  s.mappings['m'] = m;
  const codec = new StateCodec();
  return { s, codec, m };
}

describe('FileTable.size (what StateStore.fileCount answers)', () => {
  it('counts the files of a mapping through every addition, replacement and deletion', () => {
    const { m } = loaded(1000);
    expect(m.files.size).toBe(1000);
    m.files.set('dir/f1.txt', entry(5)); // replaced: same count
    m.files.set('new/a.txt', entry(6));
    m.files.delete('dir/f2.txt');
    m.files.delete('not/there.txt');
    expect(m.files.size).toBe([...m.files.keys()].length);
    expect(m.files.size).toBe(1000);
  });
});

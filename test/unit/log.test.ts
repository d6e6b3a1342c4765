import { describe, expect, it } from 'vitest';
import { compactFields } from '../../src/log.js';

describe('one line per log event on a terminal (issue 14.14)', () => {
  it('keeps the fields that say something, as key=value on one line', () => {
    const line = compactFields({
      level: 30,
      time: 1,
      pid: 7,
      msg: 'full pass done',
      mapping: 'name:Share',
      kind: 'full',
      ok: false,
      uploaded: 3,
      replaced: 0,
      deleted: 0,
      failed: 0,
      ms: 101,
    });
    expect(line).toBe('  mapping=name:Share kind=full ok=false uploaded=3 ms=101');
  });

  it('flattens objects and lists, quotes values with spaces, escapes control characters', () => {
    expect(compactFields({ msg: 'm', holder: { pid: 3, host: 'vm' }, mappings: ['a', 'b'], empty: [], reason: 'too big (3 > 1)', path: 'evil\x1b[2J\nname' })).toBe(
      '  holder.pid=3 holder.host=vm mappings=a,b reason="too big (3 > 1)" path=evil\\x1b[2J\\nname',
    );
    expect(compactFields({ msg: 'only a message' })).toBe('');
  });
});

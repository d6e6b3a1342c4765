/**
 * inotify's records as read(2) returns them (inotify-events.ts): decoded in order, names
 * without their NUL padding, an event about the folder itself without a name, fs.watch's
 * event type for each mask.
 */
import { describe, expect, it } from 'vitest';
import { eventType, forEachEvent, IN_ATTRIB, IN_CREATE, IN_DELETE_SELF, IN_IGNORED, IN_MODIFY, IN_MOVED_FROM, IN_Q_OVERFLOW } from '../../../../src/local/watch/inotify-events.js';
import { IN_ISDIR, records } from './inotify-records.js';

describe('forEachEvent', () => {
  it('decodes every record of a read in order: descriptor, mask, name without padding', () => {
    const buf = records([
      { wd: 1, mask: IN_CREATE, name: 'report.docx' },
      { wd: 2, mask: IN_MODIFY, name: 'a' },
      { wd: 1, mask: IN_DELETE_SELF },
      { wd: -1, mask: IN_Q_OVERFLOW },
      { wd: 3, mask: IN_CREATE | IN_ISDIR, name: 'Ünïcode folder' },
    ]);
    const seen: unknown[] = [];
    forEachEvent(buf, (wd, mask, name) => seen.push([wd, mask, name]));
    expect(seen).toEqual([
      [1, IN_CREATE, 'report.docx'],
      [2, IN_MODIFY, 'a'],
      [1, IN_DELETE_SELF, undefined],
      [-1, IN_Q_OVERFLOW, undefined],
      [3, IN_CREATE | IN_ISDIR, 'Ünïcode folder'],
    ]);
  });

  it('a name that is not UTF-8 is decoded as fs.watch decodes it; a record cut short ends the walk', () => {
    const bad = records([{ wd: 4, mask: IN_CREATE, raw: Buffer.from([0x66, 0xff, 0x67]) }]);
    const seen: unknown[] = [];
    forEachEvent(bad, (wd, mask, name) => seen.push(name));
    expect(seen).toEqual([Buffer.from([0x66, 0xff, 0x67]).toString('utf8')]);

    const two = records([{ wd: 1, mask: IN_CREATE, name: 'whole' }, { wd: 1, mask: IN_CREATE, name: 'cut' }]);
    const names: unknown[] = [];
    forEachEvent(two.subarray(0, two.length - 4), (wd, mask, name) => names.push(name));
    expect(names).toEqual(['whole']);
  });
});

describe('eventType', () => {
  it("is fs.watch's: 'change' for a write or an attribute alone, 'rename' for anything else", () => {
    expect(eventType(IN_MODIFY)).toBe('change');
    expect(eventType(IN_ATTRIB)).toBe('change');
    expect(eventType(IN_MODIFY | IN_ATTRIB)).toBe('change');
    expect(eventType(IN_CREATE)).toBe('rename');
    expect(eventType(IN_MOVED_FROM)).toBe('rename');
    expect(eventType(IN_DELETE_SELF)).toBe('rename');
    expect(eventType(IN_IGNORED)).toBe('rename');
    expect(eventType(IN_CREATE | IN_ISDIR)).toBe('rename');
  });
});

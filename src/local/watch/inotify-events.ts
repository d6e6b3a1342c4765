/**
 * inotify's event records, as read(2) returns them from an instance (inotify(7)):
 *
 *   struct inotify_event { int32 wd; uint32 mask; uint32 cookie; uint32 len; char name[len]; }
 *
 * in the machine's byte order (little-endian on every platform Node.js builds for Linux but
 * s390x and ppc64 big-endian, which it reads as such). `name` is NUL-padded to `len` bytes,
 * and empty when the event is about the watched folder itself.
 */
import { endianness } from 'node:os';

export const IN_MODIFY = 0x2;
export const IN_ATTRIB = 0x4;
export const IN_MOVED_FROM = 0x40;
export const IN_MOVED_TO = 0x80;
export const IN_CREATE = 0x100;
export const IN_DELETE = 0x200;
export const IN_DELETE_SELF = 0x400;
export const IN_MOVE_SELF = 0x800;
export const IN_UNMOUNT = 0x2000;
export const IN_Q_OVERFLOW = 0x4000;
export const IN_IGNORED = 0x8000;
export const IN_ONLYDIR = 0x1000000;
export const IN_DONT_FOLLOW = 0x2000000;

/**
 * What a folder's watch asks for: what libuv's fs.watch asks for (so both say the same), on
 * the folder itself only: a folder swapped for a symbolic link between its lstat and its
 * watch fails (ENOTDIR) instead of watching where the link points.
 */
export const WATCH_MASK = IN_ATTRIB | IN_CREATE | IN_MODIFY | IN_DELETE | IN_DELETE_SELF | IN_MOVE_SELF | IN_MOVED_FROM | IN_MOVED_TO | IN_ONLYDIR | IN_DONT_FOLLOW;

const HEADER_BYTES = 16;
const LITTLE = endianness() === 'LE';

/**
 * fs.watch's event type for a mask, as libuv gives it: 'change' for a write or an attribute
 * change alone, 'rename' for anything else (created, deleted, moved, the folder itself gone).
 */
export function eventType(mask: number): 'rename' | 'change' {
  return (mask & ~(IN_ATTRIB | IN_MODIFY)) === 0 ? 'change' : 'rename';
}

/**
 * Calls `fn` for each record of `buf`, in order: its watch descriptor, its mask and its name
 * (undefined for an event about the watched folder itself; a name that is not UTF-8 is
 * decoded as fs.watch decodes it, with U+FFFD). A record cut short (which read(2) never
 * returns) ends the walk.
 */
export function forEachEvent(buf: Buffer, fn: (wd: number, mask: number, name: string | undefined) => void): void {
  let at = 0;
  while (at + HEADER_BYTES <= buf.length) {
    const wd = LITTLE ? buf.readInt32LE(at) : buf.readInt32BE(at);
    const mask = LITTLE ? buf.readUInt32LE(at + 4) : buf.readUInt32BE(at + 4);
    const len = LITTLE ? buf.readUInt32LE(at + 12) : buf.readUInt32BE(at + 12);
    const start = at + HEADER_BYTES;
    const end = start + len;
    if (end > buf.length) return;
    let name: string | undefined;
    if (len > 0) {
      const nul = buf.indexOf(0, start);
      const stop = nul < 0 || nul > end ? end : nul;
      if (stop > start) name = buf.toString('utf8', start, stop);
    }
    fn(wd, mask, name);
    at = end;
  }
}

/** inotify records for tests, laid out as read(2) returns them (inotify(7)). */
import { endianness } from 'node:os';

/** A created entry that is a folder: the kernel adds this bit (dssync does not read it). */
export const IN_ISDIR = 0x40000000;

export /** Records laid out as the kernel lays them out: names NUL-padded to a multiple of 16 bytes. */
function records(list: { wd: number; mask: number; name?: string; raw?: Buffer }[]): Buffer {
  const le = endianness() === 'LE';
  return Buffer.concat(
    list.map(({ wd, mask, name, raw }) => {
      const bytes = raw ?? (name === undefined ? Buffer.alloc(0) : Buffer.from(name, 'utf8'));
      const len = bytes.length === 0 ? 0 : Math.ceil((bytes.length + 1) / 16) * 16;
      const b = Buffer.alloc(16 + len);
      if (le) {
        b.writeInt32LE(wd, 0);
        b.writeUInt32LE(mask, 4);
        b.writeUInt32LE(len, 12);
      } else {
        b.writeInt32BE(wd, 0);
        b.writeUInt32BE(mask, 4);
        b.writeUInt32BE(len, 12);
      }
      bytes.copy(b, 16);
      return b;
    }),
  );
}

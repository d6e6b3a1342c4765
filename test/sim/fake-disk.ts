/**
 * The disk under the REAL StateStore (its one seam, StateFs in src/state/atomic-file.ts),
 * with what a crash keeps, as POSIX promises it and no more:
 * - a file's bytes are durable once fsync'd (`sync()`); bytes written since are lost at a
 *   crash, except that a torn append may leave any prefix of them;
 * - a name (create, rename, unlink) is durable once its folder is fsync'd.
 * crash() turns the disk into what survived; the process that wrote it is gone, and every
 * handle or call it still makes throws (a dead process changes nothing any more).
 */
import type { StateFileHandle, StateFs } from '../../src/state/atomic-file.js';
import { fsError, parentOf } from '../helpers/fake-local.js';

interface Inode {
  data: Buffer;
  durable: Buffer;
}

export class FakeDisk {
  /** Names as the running process sees them. */
  private names = new Map<string, Inode>();
  /** Names as they are on the platter. */
  private durableNames = new Map<string, Inode>();
  private generation = 0;
  crashes = 0;

  /** What a backup (a volume snapshot) of the disk holds now: every durable file's durable bytes. */
  backup(): Map<string, Buffer> {
    return new Map([...this.durableNames].map(([path, n]) => [path, n.durable]));
  }

  /** The disk as `backup` saw it (no process runs: World.restoreBackup stops it first). */
  restore(files: ReadonlyMap<string, Buffer>): void {
    this.names = new Map([...files].map(([path, data]) => [path, { data, durable: data }]));
    this.durableNames = new Map(this.names);
  }

  /** A StateFs for one process; dead after the next crash(). */
  fs(): StateFs {
    const gen = this.generation;
    const alive = (path: string): void => {
      if (gen !== this.generation) throw fsError('EIO', `${path} (the process crashed)`);
    };
    const get = (path: string): Inode => {
      const n = this.names.get(path);
      if (!n) throw fsError('ENOENT', path);
      return n;
    };
    const handle = (path: string, inode: Inode | undefined, append: boolean): StateFileHandle => ({
      read: async (buffer, offset, length, position) => {
        alive(path);
        if (!inode) throw fsError('EISDIR', path);
        return { bytesRead: inode.data.copy(buffer, offset, position, Math.min(inode.data.length, position + length)) };
      },
      writev: async (buffers) => {
        alive(path);
        if (!inode) throw fsError('EBADF', path);
        const add = Buffer.concat(buffers);
        inode.data = append ? Buffer.concat([inode.data, add]) : Buffer.concat([inode.data, add]);
        return { bytesWritten: add.length };
      },
      sync: async () => {
        alive(path);
        if (inode) inode.durable = inode.data;
        else this.syncDir(path);
      },
      truncate: async (len) => {
        alive(path);
        if (inode) inode.data = inode.data.subarray(0, len);
      },
      close: async () => undefined,
    });
    return {
      readFile: async (path) => {
        alive(path);
        return get(path).data.toString('utf8');
      },
      open: async (path, flags) => {
        alive(path);
        if (this.isDir(path)) return handle(path, undefined, false);
        let n = this.names.get(path);
        if (flags === 'wx') {
          if (n) throw fsError('EEXIST', path);
          n = { data: Buffer.alloc(0), durable: Buffer.alloc(0) };
          this.names.set(path, n);
        } else if (flags === 'a') {
          if (!n) {
            n = { data: Buffer.alloc(0), durable: Buffer.alloc(0) };
            this.names.set(path, n);
          }
        } else if (!n) {
          throw fsError('ENOENT', path);
        }
        return handle(path, n, flags === 'a');
      },
      rename: async (from, to) => {
        alive(from);
        const n = get(from);
        this.names.delete(from);
        this.names.set(to, n);
      },
      unlink: async (path) => {
        alive(path);
        get(path);
        this.names.delete(path);
      },
      mkdir: async () => undefined,
      stat: async (path) => {
        alive(path);
        if (this.isDir(path)) return { mode: 0o40700 };
        get(path);
        return { mode: 0o100600 };
      },
      chmod: async (path) => {
        alive(path);
      },
      readdir: async (path) => {
        alive(path);
        const prefix = `${path}/`;
        return [...this.names.keys()].filter((p) => p.startsWith(prefix) && !p.slice(prefix.length).includes('/')).map((p) => p.slice(prefix.length));
      },
    };
  }

  /** The state folder is the only folder: everything else is a file. */
  private isDir(path: string): boolean {
    return ![...this.names.keys()].includes(path) && [...this.names.keys()].some((p) => parentOf(p) === path);
  }

  /** fsync of a folder: its names, as they are now, become durable. */
  private syncDir(dir: string): void {
    for (const p of [...this.durableNames.keys()]) if (parentOf(p) === dir && !this.names.has(p)) this.durableNames.delete(p);
    for (const [p, n] of this.names) if (parentOf(p) === dir) this.durableNames.set(p, n);
  }

  /**
   * The machine stops: only what reached the platter survives. `torn` (0..1) keeps that
   * share of the bytes appended to a file and not yet fsync'd (a write cut short).
   */
  crash(torn: number): void {
    this.generation++;
    this.crashes++;
    const survivors = new Map<string, Inode>();
    for (const [p, n] of this.durableNames) {
      let data = n.durable;
      const extra = n.data.length - n.durable.length;
      if (torn > 0 && extra > 0 && n.data.subarray(0, n.durable.length).equals(n.durable)) {
        data = n.data.subarray(0, n.durable.length + Math.floor(extra * torn));
      }
      const inode = { data, durable: data };
      survivors.set(p, inode);
    }
    this.names = survivors;
    this.durableNames = new Map(survivors);
  }

  /** A clean stop: the process is gone, the files are as it left them. */
  stopProcess(): void {
    this.generation++;
  }

  /** Bytes of each state file now (for the summary). */
  sizes(): Record<string, number> {
    return Object.fromEntries([...this.names].map(([p, n]) => [p, n.data.length]));
  }
}

/**
 * Fakes for the state store's unit tests: an in-memory file system with fault injection and
 * gates, and a log capture (the fake clock is test/helpers/fake-clock.ts).
 */
import { dirname } from 'node:path';
import { createLogger, type Logger } from '../../../src/log.js';
import type { StateFileHandle, StateFs } from '../../../src/state/atomic-file.js';

type Op = 'open' | 'writev' | 'sync' | 'rename' | 'readFile' | 'truncate';

function fsError(code: string, op: string, path: string): NodeJS.ErrnoException {
  const messages: Record<string, string> = {
    ENOENT: 'no such file or directory',
    EEXIST: 'file already exists',
    ENOSPC: 'no space left on device',
    EACCES: 'permission denied',
  };
  const err = new Error(`${code}: ${messages[code] ?? 'error'}, ${op} '${path}'`) as NodeJS.ErrnoException;
  err.code = code;
  return err;
}

interface MemFile {
  data: Buffer;
  mode: number;
}

export class MemFs implements StateFs {
  readonly files = new Map<string, MemFile>();
  readonly dirs = new Set<string>(['/']);
  /** Completed renames onto a path that does not look like a temp file: one per state write. */
  renames: string[] = [];
  /** Paths of completed writev calls, in order (a journal append is one). */
  writes: string[] = [];
  private faults: { op: Op; code: string; times: number }[] = [];
  private gates: { op: Op; wait: Promise<void> }[] = [];

  /** The next `times` calls of `op` fail with `code` (ENOSPC, EACCES...). */
  fail(op: Op, code: string, times = 1): void {
    this.faults.push({ op, code, times });
  }

  /** The next call of `op` waits until the returned function is called. */
  gate(op: Op): () => void {
    let release!: () => void;
    const wait = new Promise<void>((r) => (release = r));
    this.gates.push({ op, wait });
    return release;
  }

  text(path: string): string | undefined {
    return this.files.get(path)?.data.toString('utf8');
  }

  put(path: string, text: string, mode = 0o600): void {
    this.dirs.add(dirname(path));
    this.files.set(path, { data: Buffer.from(text), mode });
  }

  /** Called before every step (the crash tests copy the disk there). */
  onStep: ((op: Op, path: string) => void) | undefined;

  /** A copy of the disk as it is now: what a crash at this moment would leave. */
  image(): MemFs {
    const copy = new MemFs();
    for (const d of this.dirs) copy.dirs.add(d);
    for (const [p, f] of this.files) copy.files.set(p, { data: Buffer.from(f.data), mode: f.mode });
    return copy;
  }

  private async step(op: Op, path: string): Promise<void> {
    this.onStep?.(op, path);
    const gi = this.gates.findIndex((g) => g.op === op);
    if (gi >= 0) {
      const [g] = this.gates.splice(gi, 1);
      await g?.wait;
    }
    const f = this.faults.find((x) => x.op === op && x.times > 0);
    if (f) {
      f.times--;
      throw fsError(f.code, op, path);
    }
  }

  async readFile(path: string): Promise<string> {
    await this.step('readFile', path);
    const f = this.files.get(path);
    if (!f) throw fsError('ENOENT', 'open', path);
    return f.data.toString('utf8');
  }

  async open(path: string, flags: string, mode = 0o666): Promise<StateFileHandle> {
    await this.step('open', path);
    if (flags === 'r') {
      const f = this.files.get(path);
      if (!this.dirs.has(path) && !f) throw fsError('ENOENT', 'open', path);
      return {
        // A read of the file from its start is a 'readFile' step (faults and gates apply).
        read: async (buffer: Buffer, offset: number, length: number, position: number) => {
          if (position === 0) await this.step('readFile', path);
          if (!f) throw fsError('EISDIR', 'read', path);
          const n = f.data.copy(buffer, offset, position, Math.min(f.data.length, position + length));
          return { bytesRead: n };
        },
        writev: async () => ({ bytesWritten: 0 }),
        sync: async () => undefined,
        truncate: async () => undefined,
        close: async () => undefined,
      };
    }
    if (!this.dirs.has(dirname(path))) throw fsError('ENOENT', 'open', path);
    if (flags.includes('x') && this.files.has(path)) throw fsError('EEXIST', 'open', path);
    const existing = this.files.get(path);
    if (flags === 'r+' && !existing) throw fsError('ENOENT', 'open', path);
    // 'a' and 'r+' keep the file's content ('r+' is only used to truncate); 'w'/'wx' start empty.
    const file: MemFile = (flags === 'a' || flags === 'r+') && existing ? existing : { data: Buffer.alloc(0), mode };
    this.files.set(path, file);
    return {
      read: async () => {
        throw fsError('EBADF', 'read', path);
      },
      truncate: async (len: number) => {
        await this.step('truncate', path);
        file.data = file.data.subarray(0, len);
      },
      writev: async (buffers: Buffer[]) => {
        await this.step('writev', path);
        const n = buffers.reduce((a, b) => a + b.length, 0);
        file.data = Buffer.concat([file.data, ...buffers]);
        this.writes.push(path);
        return { bytesWritten: n };
      },
      sync: () => this.step('sync', path),
      close: async () => undefined,
    };
  }

  async rename(from: string, to: string): Promise<void> {
    await this.step('rename', from);
    const f = this.files.get(from);
    if (!f) throw fsError('ENOENT', 'rename', from);
    this.files.delete(from);
    this.files.set(to, f);
    this.renames.push(to);
  }

  async unlink(path: string): Promise<void> {
    if (!this.files.delete(path)) throw fsError('ENOENT', 'unlink', path);
  }

  async mkdir(path: string, _options: { recursive: true; mode: number }): Promise<string | undefined> {
    for (let p = path; !this.dirs.has(p); p = dirname(p)) this.dirs.add(p);
    return undefined;
  }

  async stat(path: string): Promise<{ mode: number }> {
    const f = this.files.get(path);
    if (!f) throw fsError('ENOENT', 'stat', path);
    return { mode: 0o100000 | f.mode };
  }

  async chmod(path: string, mode: number): Promise<void> {
    const f = this.files.get(path);
    if (!f) throw fsError('ENOENT', 'chmod', path);
    f.mode = mode;
  }

  async readdir(path: string): Promise<string[]> {
    const prefix = path.endsWith('/') ? path : `${path}/`;
    return [...this.files.keys()].filter((p) => dirname(p) === path).map((p) => p.slice(prefix.length));
  }
}

/** Lets every pending promise chain (in-memory I/O) run to completion. */
export async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise<void>((r) => setImmediate(r));
}

export function captureLogger(): { logger: Logger; lines: () => Record<string, unknown>[] } {
  const raw: string[] = [];
  const logger = createLogger({ level: 'debug', destination: { write: (s: string) => void raw.push(s) } });
  return { logger, lines: () => raw.map((l) => JSON.parse(l) as Record<string, unknown>) };
}
